"""The control channel between an engine's host process and SGLang's schedulers (hotfloat.seams.control and the
plugin), without SGLang: a stand-in scheduler arms as the plugin does, with the settings it took from the channel,
serves a round of slot calls and answers the host; the host enables the twin, reads the counts and collects the
round's audit, which the validator opens. The host process itself never arms, and nothing goes through a file."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hotfloat.audit.config import AuditConfig
from hotfloat.audit.kinds import ROWWISE
from hotfloat.qualify.audit import audit_round
from hotfloat.engine.worker import audit_parts
from hotfloat.seams import ENV_TWIN_OF
from hotfloat.seams.control import ENV_CONTROL, ENV_OWNER, ControlError, ControlServer

HERE = Path(__file__).parent
SGLANG_PLUGIN = str(HERE.parents[1] / "libs/hotfloat_sglang")
SCHEDULER = textwrap.dedent("""
    import os, sys, torch
    from hotfloat.seams.control import serve
    from hotfloat_sglang import plugin

    conn = plugin.arm_scheduler()
    router = plugin.router()
    for _ in range(4):
        x = torch.randn(3, 64, dtype=torch.bfloat16)
        router.silu_and_mul(x, stock=lambda x: torch.nn.functional.silu(x[:, :32]) * x[:, 32:])
        w = torch.ones(32, dtype=torch.bfloat16)
        router.rmsnorm(x[:, :32], w, 1e-6, stock=lambda x, w, eps: (x.float() * torch.rsqrt(
            x.float().pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype))
    print("serving", flush=True)
    serve(conn, plugin.handle)
""")


@pytest.fixture
def scheduler(tmp_path):
    cfg = AuditConfig((1 << 62) + 4, keep=2, rows=2, slots=ROWWISE)
    server = ControlServer({"audit": cfg.to_wire()})
    env = {**os.environ, ENV_TWIN_OF: str(HERE / "fixtures/engine_exact"), "HOTFLOAT_SEAMS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([SGLANG_PLUGIN, os.environ.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-c", SCHEDULER], env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "serving"
        server.wait(1, 30)
        yield server, cfg, tmp_path
    finally:
        proc.kill()
        proc.wait()
        server.close()


def test_the_host_enables_the_twin_reads_counts_and_collects_each_round(scheduler):
    server, cfg, cwd = scheduler
    ((twin, _),) = server.ask({"op": "twin", "slots": ["norm.rmsnorm", "attention.decode"]}, 30)
    assert twin == {"twin": ["norm.rmsnorm"]}
    ((counts, _),) = server.ask({"op": "counts"}, 30)
    assert counts["identity"] is None and counts["counts"]["activation.silu_and_mul"] == {
        "routed": 4,
        "stock": 0,
    }  # the twin counts its sites
    ((head, data),) = server.ask({"op": "audit"}, 30)
    entries, at = [], 0
    for e in head["entries"]:
        n = 8 * e.pop("words")
        entries.append((e, data[at : at + n]))
        at += n
    rec = audit_round(0, "B", 0, audit_parts(head | {"entries": entries}, 0), cfg)
    assert rec.error is None and {s: a.calls_audited for s, a in rec.slots.items()} == {
        "activation.silu_and_mul": 2,
        "norm.rmsnorm": 2,
    }
    ((again, _),) = server.ask({"op": "audit"}, 30)
    assert again["entries"] == [] and all(s["calls"] == 0 for s in again["strata"])  # the next round began
    with pytest.raises(ControlError, match="unknown request"):
        server.ask({"op": "dump-everything"}, 30)
    assert list(cwd.iterdir()) == []  # nothing went through a file


def test_the_host_process_never_arms(monkeypatch):
    sys.path.insert(0, SGLANG_PLUGIN)
    from hotfloat_sglang import plugin

    monkeypatch.setenv("HOTFLOAT_SEAMS", "1")
    monkeypatch.setenv(ENV_OWNER, str(os.getpid()))
    monkeypatch.setenv("HOTFLOAT_ARMED_BUNDLE", str(HERE / "fixtures/silu_exact"))
    plugin.activate()
    assert plugin.router() is None


def test_a_scheduler_without_its_channel_refuses_to_arm(tmp_path):
    env = {**os.environ, ENV_CONTROL: "hotfloat-nobody-listens", "HOTFLOAT_SEAMS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([SGLANG_PLUGIN, os.environ.get("PYTHONPATH", "")])
    got = subprocess.run(
        [sys.executable, "-c", "from hotfloat_sglang import plugin; plugin.arm_scheduler()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode != 0 and "could not open the host's control channel" in got.stderr


def test_any_failure_while_activating_ends_the_scheduler(tmp_path):
    """SGLang logs and ignores an exception from a plugin, and the engine would then serve stock unaudited: a
    scheduler whose activation fails in any way exits, loudly."""
    server = ControlServer({"audit": {"key": "not a number"}})
    env = {**os.environ, "HOTFLOAT_SEAMS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([SGLANG_PLUGIN, os.environ.get("PYTHONPATH", "")])
    try:
        got = subprocess.run(
            [sys.executable, "-c", "from hotfloat_sglang import plugin; plugin.activate()"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.close()
    assert got.returncode != 0 and "FATAL: activation failed" in got.stderr and "ValueError" in got.stderr
