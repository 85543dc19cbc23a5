"""docs/kernel-authors.md is run, not just read: every `$ hotfloat ...` line of its walk-through runs here in order
(on CPU), and its slot table is the registry's."""

import json
import re
import shlex
import subprocess
import sys

from hotfloat.slots import SLOTS, Role

from ..conftest import REPO

DOC = (REPO / "docs" / "kernel-authors.md").read_text()
COMMANDS = re.findall(r"^    \$ (hotfloat .+)$", DOC, re.M)


def test_walkthrough_goes_from_new_to_a_dry_run_commitment():
    verbs = [" ".join(shlex.split(c)[1:3]) for c in COMMANDS]
    assert verbs[0].startswith("new ") and verbs[-1].startswith("chain submit") and "--dry-run" in COMMANDS[-1]
    for step in ("scan", "verify", "bench", "chain package", "hash"):
        assert any(v.startswith(step) for v in verbs), step


def test_every_walkthrough_command_runs(tmp_path):
    outputs = []
    for command in COMMANDS:
        argv = [sys.executable, "-m", "hotfloat.cli", *shlex.split(command)[1:]]
        p = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"$ {command}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
        outputs.append(p.stdout)
    identity = outputs[COMMANDS.index(next(c for c in COMMANDS if c.startswith("hotfloat hash")))].strip()
    assert json.loads(outputs[-1].strip())["h"] == identity  # the dry run commits the packaged identity


def test_slot_table_is_the_registry():
    rows = {
        m.group(1): m.groups()
        for m in re.finditer(
            r"^\| `([a-z_.]+)` \| `([^`]+)` \| ([a-z_ ]+) \| ([a-z0-9 ]+) \| "
            r"(\d+) \|$",
            DOC,
            re.M,
        )
    }
    assert set(rows) == set(SLOTS)
    for name, spec in SLOTS.items():
        _, call, writes, dtypes, ranks = rows[name]
        assert call == spec.signature()
        assert writes.split() == [a.name for a in spec.of_role(Role.OUTPUT)]
        assert dtypes.split() == list(spec.dtypes) and int(ranks) == spec.world_size
