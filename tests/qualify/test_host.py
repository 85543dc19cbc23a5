"""Each resident engine runs in its own sandbox: a hostile kernel armed in every engine (as the candidate in C and
as the incumbent in B and B'), probing for the validator's files, home, secrets and network, for the other engines
and the validator process (visible, signalable), and for markers another engine left in /tmp or /dev/shm, computes
the right answer and sees nothing; the same probe run unsandboxed sees what it looks for, so the assertions can fail.

The probe runs on the kernel's first call and raises "LEAK: ..." naming whatever it found; the engine reports the
exception, so a leak shows in the decision's reason (FAIL from C, NO_DECISION from B or B').
"""

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.errors import SandboxUnavailable
from hotfloat.qualify import QualifyOptions, qualify_bundle

OPTS = QualifyOptions.for_device("cpu", seed=5, warmup_passes=0, rule={"look_rounds": 3, "max_looks": 1})

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
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{{name}}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "hotfloat.engine.worker" in cmd and os.getppid() != int(name):
            try:
                os.kill(int(name), 0)
                seen.append(f"sees and can signal engine {{name}}")
            except OSError:
                seen.append(f"sees engine {{name}}")
        if "pytest" in cmd:
            seen.append(f"sees the validator {{name}}")
    for d in {{"/tmp", "/dev/shm", os.environ.get("TMPDIR", "/tmp")}}:
        try:
            others = [n for n in os.listdir(d) if n.startswith(MARKER) and n != f"{{MARKER}}-{{me}}"]
        except OSError:
            others = []
        seen += [f"marker {{d}}/{{n}} from another engine" for n in others]
        try:
            with open(os.path.join(d, f"{{MARKER}}-{{me}}"), "w") as f:
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
        source = PROBE.format(
            canaries={str(canary): canary.read_text(), str(home_canary): home_canary.read_text()},
            secret=secret,
            port=listener.getsockname()[1],
            marker=marker,
        )
        yield make_bundle(source, name="probe"), listener
    for d in ("/tmp", "/dev/shm"):
        for p in Path(d).glob(f"{marker}-*"):
            p.unlink(missing_ok=True)


def _connected(listener) -> bool:
    try:
        listener.accept()[0].close()
        return True
    except BlockingIOError:
        return False


def test_a_hostile_kernel_in_every_sandboxed_engine_sees_nothing_and_the_qualification_proceeds(probe):
    bundle, listener = probe
    r = qualify_bundle(bundle, OPTS, baseline=bundle)
    assert r.evidence.sandboxed
    assert "LEAK" not in r.reason and all(f.ok for f in r.evidence.frames), r.reason
    assert r.evidence.decision.gate == "PASS", r.reason
    assert sum(r.evidence.frames[1].routed.values()) > 0, "the probing kernel was never called"
    assert not _connected(listener)


def test_the_same_kernel_unsandboxed_sees_canaries_network_and_the_other_processes(probe):
    bundle, listener = probe
    r = qualify_bundle(bundle, OPTS.model_copy(update={"sandboxed": False}), baseline=bundle)
    assert not r.evidence.sandboxed
    assert "LEAK" in r.reason and "canary.txt" in r.reason and ".netrc" in r.reason, r.reason
    assert "tcp connect" in r.reason and "sees" in r.reason and "validator" in r.reason, r.reason
    assert _connected(listener)


def test_qualification_fails_closed_without_bubblewrap(bundles, tmp_path):
    """No bwrap on PATH: the CLI refuses with one error line and exit 3 (infrastructure); --unsandboxed is the
    explicit way out."""
    env = {**os.environ, "PATH": str(tmp_path)}
    cmd = [
        sys.executable,
        "-c",
        "from hotfloat.cli.main import main; main()",
        "qualify",
        "run",
        str(bundles["exact"]),
        "--device",
        "cpu",
        "--look-rounds",
        "3",
        "--max-looks",
        "1",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 3, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "bubblewrap" in lines[0], r.stderr


def test_library_refuses_without_a_sandbox(bundles, monkeypatch, tmp_path):
    from hotfloat.sandbox import process

    monkeypatch.setenv("PATH", str(tmp_path))
    process._probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="unsandboxed"):
            qualify_bundle(bundles["exact"], OPTS)
    finally:
        process._probe.cache_clear()
