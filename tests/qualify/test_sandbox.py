"""Engine processes run in the candidate sandbox: a hostile kernel armed in qualification, probing for the
validator's files, home, secrets and network and for traces of earlier engines, computes the right answer and sees
nothing; the same probe run unsandboxed sees what it looks for, so the assertions can fail.

The probe runs on the kernel's first call and raises "LEAK: ..." naming whatever it found; the engine reports the
exception, so a leak shows as a FAIL whose reason names it.
"""

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.errors import SandboxUnavailable
from hotfloat.qualify import QualifyOptions, qualify_bundle
from hotfloat.qualify.host import staged
from hotfloat.qualify.records import EngineSpec
from hotfloat.qualify.runner import Launch, run_engine
from hotfloat.qualify.workload import make_workload

OPTS = QualifyOptions(seed=5, passes=1, warmup_passes=0, rule=QualifyOptions().rule.model_copy(update={"max_pairs": 1}))

PROBE = """
import os
import socket

import torch

CANARIES = {canaries!r}
SECRET = {secret!r}
PORT = {port}
MARKER = {marker!r}


def _probe():
    seen = []
    for path, content in CANARIES.items():
        try:
            with open(path) as f:
                if content in f.read():
                    seen.append(f"read {{path}}")
        except OSError:
            pass
    if any(SECRET in v for v in os.environ.values()):
        seen.append("env secret")
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        seen.append("tcp connect")
    except OSError:
        pass
    places = [os.path.join(d, MARKER) for d in {{"/tmp", "/dev/shm", os.environ.get("TMPDIR", "/tmp")}}]
    seen += [f"marker {{p}} from an earlier engine" for p in places if os.path.exists(p)]
    for p in places:
        try:
            with open(p, "w") as f:
                f.write("x")
        except OSError:
            pass
    return seen


def run(x, out):
    if not getattr(run, "probed", False):
        run.probed = True
        seen = _probe()
        if seen:
            raise RuntimeError("LEAK: " + "; ".join(seen))
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""


@pytest.fixture
def probe(tmp_path, make_bundle, monkeypatch):
    """A probing bundle, its canaries planted outside it (a file, the validator's HOME, an env secret), a TCP
    listener on the host's loopback, and a /tmp marker name removed afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    canary, home_canary = tmp_path / "canary.txt", home / ".netrc"
    canary.write_text(f"canary-{secrets.token_hex(8)}")
    home_canary.write_text(f"home-{secrets.token_hex(8)}")
    secret = f"secret-{secrets.token_hex(8)}"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HOTFLOAT_PROBE_TOKEN", secret)
    marker = f"hotfloat-probe-{secrets.token_hex(6)}"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        source = PROBE.format(canaries={str(canary): canary.read_text(), str(home_canary): home_canary.read_text()},
                              secret=secret, port=listener.getsockname()[1], marker=marker)
        yield make_bundle(source, name="probe"), listener
    for d in ("/tmp", "/dev/shm"):
        Path(d, marker).unlink(missing_ok=True)


def _connected(listener) -> bool:
    try:
        listener.accept()[0].close()
        return True
    except BlockingIOError:
        return False


def test_a_hostile_kernel_in_the_sandbox_sees_nothing_and_the_qualification_proceeds(probe):
    bundle, listener = probe
    r = qualify_bundle(bundle, OPTS)
    assert r.evidence.sandboxed
    assert "LEAK" not in r.reason and all(f.ok for f in r.evidence.frames), r.reason
    assert r.evidence.decision.gate == "PASS", r.reason
    assert sum(r.evidence.frames[1].routed.values()) > 0, "the probing kernel was never called"
    assert not _connected(listener)


def test_the_same_kernel_unsandboxed_sees_the_canaries_and_the_network(probe):
    bundle, listener = probe
    r = qualify_bundle(bundle, OPTS.model_copy(update={"sandboxed": False}))
    assert not r.evidence.sandboxed
    assert r.status == "FAIL" and "LEAK" in r.reason, r.reason
    assert "canary.txt" in r.reason and ".netrc" in r.reason and "tcp connect" in r.reason, r.reason
    assert _connected(listener)


@pytest.mark.parametrize("sandboxed", [True, False])
def test_an_engine_leaves_nothing_in_tmp_for_the_next(probe, sandboxed):
    """Two engines in a row from the shared warm fork server: the second must not find the first one's marker
    (unsandboxed, it does: both see the host's /tmp)."""
    bundle, listener = probe
    b = load_bundle(bundle)
    engine = EngineSpec(preset="tiny", dtype="fp32", device="cpu")
    workload = make_workload("tiny", 512, passes=1, warmup_passes=0, seed=1)
    with staged({"c": b}, sandboxed=sandboxed) as paths:
        frames = [run_engine(i, "C", engine, workload, paths["c"], b.identity, Launch(sandboxed=sandboxed))[0]
                  for i in range(2)]
    if sandboxed:
        assert all(f.ok for f in frames), [f.error for f in frames]
    else:
        assert frames[1].raised and "from an earlier engine" in frames[1].error, frames[1].error


def test_qualification_fails_closed_without_bubblewrap(bundles, tmp_path):
    """No bwrap on PATH: the CLI refuses with one error line and exit 1; --unsandboxed is the explicit way out."""
    env = {**os.environ, "PATH": str(tmp_path)}
    cmd = [sys.executable, "-c", "from hotfloat.cli.main import main; main()", "qualify", "run", str(bundles["exact"]),
           "--passes", "1", "--max-pairs", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "bubblewrap" in lines[0], r.stderr


def test_library_refuses_without_a_sandbox_even_with_a_warm_server_running(bundles, monkeypatch, tmp_path):
    from hotfloat.sandbox import process

    monkeypatch.setenv("PATH", str(tmp_path))
    process._probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="unsandboxed"):
            qualify_bundle(bundles["exact"], OPTS)
    finally:
        process._probe.cache_clear()
