"""Progress where nobody watches a terminal: a log gets one timestamped line per step, none repeated."""

import re

from hotfloat.cli.output import StepLines, progress


def test_progress_off_a_terminal_writes_each_new_step_once_with_its_time(capsys):
    with progress() as bar:  # pytest's stderr is not a terminal
        assert isinstance(bar, StepLines)
        task = bar.add_task("qualify", total=10)
        bar.update(task, description="booting 0B, 2B", completed=0)
        bar.update(task, description="booting 0B, 2B", completed=0)
        bar.advance(task)
        bar.update(task, description="round 1", completed=1)
    lines = capsys.readouterr().err.splitlines()
    assert [re.sub(r"^\[ *\d+\.\d s\] ", "", line) for line in lines] == ["booting 0B, 2B", "round 1"]
    assert all(re.match(r"^\[ *\d+\.\d s\] ", line) for line in lines)
