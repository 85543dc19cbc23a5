"""run_child: one request in, one schema-checked result out, with start-up and run deadlines, from real children."""

from __future__ import annotations

import os
from pathlib import Path
import sys
import textwrap
import time

import pytest
from pydantic import BaseModel

from hotfloat.sandbox import Bind, GiB, SandboxPolicy, child_env, hotfloat_binds, run_child

POLICY = SandboxPolicy(max_processes=32, address_space_bytes=4 * GiB, memory_bytes=1 * GiB, cpu_seconds=30)


class Answer(BaseModel):
    total: int
    secret_seen: bool


def _child(tmp_path, body: str, **kw):
    """Runs a child script that can import hotfloat (as the admission worker and bench child do)."""
    script = tmp_path / "tool" / "child.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text("import os, sys, time\nfrom hotfloat.sandbox import channel\n" + textwrap.dedent(body))
    binds, pythonpath = hotfloat_binds()
    lines: list[str] = []
    outcome = run_child(
        [sys.executable, "-s", "-B", "/tool/child.py"],
        Answer,
        request={"numbers": [1, 2, 3]},
        policy=POLICY,
        sandboxed=True,
        binds=[*binds, Bind(script.parent, "/tool")],
        env=child_env({"PYTHONPATH": pythonpath}, home="/tmp"),
        on_line=lines.append,
        **{"startup_s": 30, "timeout_s": 30, **kw},
    )
    return outcome, lines


def test_a_request_is_answered_with_a_validated_result(tmp_path, monkeypatch):
    monkeypatch.setenv("HOTFLOAT_WALLET_SECRET", "canary")
    outcome, lines = _child(
        tmp_path,
        """
        req = channel.request()
        channel.ready()
        print("progress 1 of 1", flush=True)
        channel.reply({"total": sum(req["numbers"]), "secret_seen": "HOTFLOAT_WALLET_SECRET" in os.environ})
    """,
    )
    assert outcome.kind == "ok", outcome
    assert outcome.result == Answer(total=6, secret_seen=False)
    assert "progress 1 of 1" in lines and {"namespaces", "seccomp", "pids"} <= outcome.bounds


def test_a_child_that_never_becomes_ready_hits_the_start_up_deadline(tmp_path):
    started = time.monotonic()
    outcome, _ = _child(tmp_path, "time.sleep(60)\n", startup_s=2)
    assert outcome.kind == "startup_timeout" and outcome.result is None
    assert time.monotonic() - started < 30


def test_a_hanging_child_hits_the_run_deadline_and_its_descendants_die(tmp_path):
    marker = f"hang-{os.getpid()}-{time.time_ns()}"
    outcome, _ = _child(
        tmp_path,
        f"""
        channel.ready()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", {marker!r}])
        time.sleep(60)
    """,
        timeout_s=2,
    )
    assert outcome.kind == "timeout", outcome
    time.sleep(0.2)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and marker.encode() in _cmdline(p)]


@pytest.mark.parametrize(
    ("body", "kind", "detail"),
    [
        ('channel.ready(); channel.reply({"total": "many", "secret_seen": False})', "malformed", "malformed result"),
        ("channel.ready(); sys.exit(3)", "no_result", "exit status 3"),
        ('os.write(int(os.environ["HOTFLOAT_RESULT_FD"]), b"{}" * 100)', "malformed", "malformed result"),
    ],
)
def test_garbage_or_silence_is_reported_not_trusted(tmp_path, body, kind, detail):
    outcome, _ = _child(tmp_path, body + "\n")
    assert outcome.kind == kind and outcome.result is None and detail in outcome.detail, outcome


def test_an_oversized_result_is_refused(tmp_path):
    outcome, _ = _child(tmp_path, 'channel.ready(); channel.reply({"pad": "x" * 100000})\n', max_result_bytes=1000)
    assert outcome.kind == "malformed" and "larger than" in outcome.detail


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


class Seen(BaseModel):
    payload_module: str
    checkout_visible: bool


def test_extra_site_directories_are_importable_but_the_checkout_stays_outside(tmp_path, monkeypatch):
    """A device payload's site directory (on PYTHONPATH, outside the checkout) is bound read-only at its own path;
    checkout entries are not: hotfloat itself comes from /hotfloat-lib."""
    site = tmp_path / "payload-site"
    site.mkdir()
    (site / "payload_mod.py").write_text("NAME = 'from the payload'\n")
    checkout = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(checkout / "libs" / "hotfloat"), str(site)]))
    binds, pythonpath = hotfloat_binds()
    script = tmp_path / "tool" / "child.py"
    script.parent.mkdir()
    script.write_text(
        textwrap.dedent(f"""
        import os
        from hotfloat.sandbox import channel
        import payload_mod
        channel.ready()
        seen = os.path.exists({str(checkout / "libs")!r})
        channel.reply({{"payload_module": payload_mod.NAME, "checkout_visible": seen}})
    """)
    )
    outcome = run_child(
        [sys.executable, "-s", "-B", "/tool/child.py"],
        Seen,
        request={},
        policy=POLICY,
        sandboxed=True,
        binds=[*binds, Bind(script.parent, "/tool")],
        env=child_env({"PYTHONPATH": pythonpath}, home="/tmp"),
        startup_s=30,
        timeout_s=30,
    )
    assert outcome.result == Seen(payload_module="from the payload", checkout_visible=False), outcome


def test_a_sandbox_that_cannot_start_raises_and_leaks_no_descriptor(tmp_path, monkeypatch):
    from hotfloat.errors import SandboxUnavailable
    from hotfloat.sandbox import process

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap: fail closed
    process._probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable):
            _child(tmp_path, "channel.ready()\n")
    finally:
        monkeypatch.undo()
        process._probe.cache_clear()
    assert len(os.listdir("/proc/self/fd")) == before
