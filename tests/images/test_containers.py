"""The built images, run for real with runc: the sandbox holds, the miner check works, the services talk.

These tests build the cpu images through `make images` (Bazel reuses its cache when present), so they need root,
Debian and PyPI, like CI. The three containers share a Unix-socket folder, as `make up` runs them.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.image import compose, runtime
from hotfloat.image.runtime import Container, Mount

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import json, os, socket
out = {"uid": os.getuid(), "interfaces": sorted(os.listdir("/sys/class/net"))}
for line in open("/proc/self/status"):
    if line.startswith("CapEff:"):
        out["cap_eff"] = line.split()[1]
try:
    open("/usr/probe", "w")
    out["root_writable"] = True
except OSError:
    out["root_writable"] = False
try:
    socket.create_connection(("pypi.org", 443), timeout=10).close()
    out["reached"] = True
except OSError as e:
    out["reached"] = False
    out["error"] = type(e).__name__ + ": " + str(e)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def images() -> Path:
    done = subprocess.run(["make", "images"], cwd=REPO, capture_output=True, text=True, timeout=3000, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return REPO / "out" / "images"


def _probe(images: Path, network: bool) -> dict:
    done = runtime.run(
        Container(
            name=f"hotfloat-probe-{int(network)}",
            image=images / "compiler",
            args=("python3", "-c", PROBE),
            network=network,
        ),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_compiler_container_cannot_reach_the_network(images):
    inside = _probe(images, network=False)
    assert inside["interfaces"] == ["lo"]
    assert inside["reached"] is False
    assert inside["uid"] == 10001 and inside["cap_eff"] == "0000000000000000"
    assert inside["root_writable"] is False
    control = _probe(images, network=True)  # the same probe with the host's network does get out
    assert control["reached"] is True, control


def test_miner_workflow_matches_the_validator(images, make_bundle):
    good = compose.miner(REPO / "examples/silu_triton", images / "compiler")
    # a plain Triton op has nothing to compile ahead of time: build is N/A, which moves it on in the validator too
    assert {s["stage"]: s["status"] for s in good["stages"]} == {"scan": "PASS", "verify": "PASS", "build": "N/A"}, good
    compose.raise_on_failure(good)
    assert good["identity"] == load_bundle(REPO / "examples/silu_triton").identity
    sneaky = make_bundle("import os\n\ndef run(x, out):\n    os.system('true')\n", name="sneaky")
    bad = compose.miner(sneaky, images / "compiler")
    assert {s["stage"]: s["status"] for s in bad["stages"]} == {"scan": "FAIL", "verify": "N/A", "build": "N/A"}, bad
    with pytest.raises(compose.MinerCheckFailed, match="scan FAIL"):
        compose.raise_on_failure(bad)


def _validator(images: Path, state: Path, *args: str, bundle: Path | None = None) -> subprocess.CompletedProcess:
    mounts = (Mount(state / "validator", "/work", readonly=False),) + ((Mount(bundle, "/bundle"),) if bundle else ())
    return runtime.run(
        Container(
            name="hotfloat-validator-cli",
            image=images / "validator",
            mounts=mounts,
            args=("hotfloat", "validator", *args, "--ledger", "/work/ledger.db", "--json"),
        )
    )


def test_a_bundle_goes_through_compile_and_admission_across_containers(images, tmp_path):
    state = tmp_path / "state"
    try:
        started = compose.up(images, state, quick=True)
        assert [s["name"] for s in started] == ["hotfloat-compiler", "hotfloat-admission", "hotfloat-validator"]
        submitted = _validator(images, state, "submit", "/bundle", bundle=REPO / "examples/silu_triton")
        assert submitted.returncode == 0, submitted.stderr[-2000:]
        deadline, final = time.monotonic() + 600, None
        while time.monotonic() < deadline:
            status = _validator(images, state, "status")
            subs = json.loads(status.stdout)["submissions"] if status.returncode == 0 else []
            if subs and subs[0]["state"] in ("admitted", "failed", "no_decision", "qualified"):
                final = subs[0]
                break
            time.sleep(5)
        logs = {p.name: p.read_text(errors="replace")[-1500:] for p in state.glob("*.log")}
        assert final is not None and final["state"] == "admitted", (final, logs)
    finally:
        compose.down(state)
