"""tools/device/run.sh, the one entry point of a device call: it lists its recipes, refuses a bad call before running
anything, runs each recipe under its limit and packs what each wrote into one archive; and no code names a device
script that is gone."""

import re
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEVICE = ROOT / "tools" / "device"


def run(*args: str, out: Path | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", **({"OUT": str(out)} if out else {})}
    return subprocess.run(
        ["bash", str(DEVICE / "run.sh"), *args], capture_output=True, text=True, timeout=120, env=env, cwd="/"
    )


def test_the_entry_point_is_alone_and_lists_every_recipe_by_its_first_line():
    assert sorted(p.name for p in DEVICE.iterdir() if p.is_file()) == ["run.sh"]
    listed = run("list")
    names = sorted(p.stem for p in (DEVICE / "recipes").glob("*.sh"))
    assert listed.returncode == 0 and [line.split(":")[0] for line in listed.stdout.splitlines()] == names
    for name in ("engine_install", "qualify_sglang", "prefill", "bench_stock", "slot_share", "verify", "sandbox"):
        assert name in names
    assert {"calibrate", "seams_live", "env"} <= set(names)


def test_a_bad_call_is_refused_before_anything_runs(tmp_path):
    for args, says in (
        ((), "usage:"),
        (("qualify_sglang",), "is not RECIPE:SECONDS"),
        (("nope:30",), "no recipe 'nope'"),
    ):
        p = run(*args, out=tmp_path)
        assert p.returncode == 2 and says in p.stderr, (args, p.stderr)
    assert list(tmp_path.iterdir()) == []


def test_each_recipe_runs_under_its_limit_and_everything_lands_in_one_archive(tmp_path):
    """memory_plan without the SGLang payload stops at once: its log and exit code still come back, packed."""
    p = run("memory_plan:30", "memory_plan:30", out=tmp_path)
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["results.tgz", "summary.txt"]
    assert re.fullmatch(r"(memory_plan rc=1 in \d+s\n){2}", (tmp_path / "summary.txt").read_text())
    with tarfile.open(tmp_path / "results.tgz") as tar:
        log = tar.extractfile("./memory_plan/run.log").read().decode()
    assert "no SGLang payload" in log and "engine_install" in log


def test_no_code_names_a_device_script_that_is_gone():
    """Docs keep the commands of past calls as they ran (docs/device-runs.md maps them to today's recipes); code,
    tests, the Makefile and the README must name only what exists."""
    files = [p for top in ("libs/hotfloat", "services", "tools", "tests") for p in (ROOT / top).rglob("*.py")]
    files += [*(ROOT / "tools").rglob("*.sh"), ROOT / "Makefile", ROOT / "README.md"]
    gone = {
        f"{p.relative_to(ROOT)}: {m}"
        for p in files
        for m in re.findall(r"tools/device/[\w/.*<>]+\.(?:sh|py)", p.read_text())
        if not re.search(r"[*<]", m) and not (ROOT / m).exists()
    }
    assert gone == set()
