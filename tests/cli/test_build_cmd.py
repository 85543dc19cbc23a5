"""`hotfloat build` writes cubins and the record; `hotfloat admit` reads them back, refusing tampered artifacts."""

import json
import subprocess
import sys

from ..conftest import EXAMPLES


def run(*args):
    return subprocess.run([sys.executable, "-m", "hotfloat.cli", *args], capture_output=True, text=True, timeout=600)


def test_build_then_admit_on_cpu(tmp_path):
    bundle = str(EXAMPLES / "silu_triton_aot")
    built = run("build", bundle, "--out", str(tmp_path), "--json")
    assert built.returncode == 0, built.stderr
    record = json.loads(built.stdout)
    assert record["status"] == "PASS" and len(record["kernels"]) == 3
    assert all((tmp_path / k["cubin"]).is_file() for k in record["kernels"])
    admitted = run("admit", bundle, "--build", str(tmp_path), "--device", "cpu", "--json")
    assert admitted.returncode == 5, admitted.stderr  # NO_DECISION: without a GPU the load cannot be judged
    verdict = json.loads(
        admitted.stdout
    )  # the admission service's verdict: no op runs on cpu, the cubins' load skipped
    assert verdict["verify"]["status"] == "N/A" and verdict["reasons"][0] == "no op of the bundle applies on cpu"
    assert verdict["reasons"][1].startswith("cubins: skipped: no GPU") and verdict["native"]["status"] == "NO_DECISION"
    cubin = tmp_path / record["kernels"][0]["cubin"]
    cubin.write_bytes(cubin.read_bytes() + b"\0")
    tampered = run("admit", bundle, "--build", str(tmp_path))
    assert tampered.returncode == 2
    assert tampered.stderr.startswith("error: build artifact") and "digest" in tampered.stderr
    assert "Traceback" not in tampered.stderr


def test_admit_refuses_build_files_that_never_end_or_are_not_a_record(tmp_path):
    bundle = str(EXAMPLES / "silu_torch")
    (tmp_path / "index.json").symlink_to("/dev/zero")
    p = run("admit", bundle, "--build", str(tmp_path))
    assert (p.returncode, p.stderr) == (2, f"error: {tmp_path}/index.json: build record: not a regular file\n")
    (tmp_path / "index.json").unlink()
    (tmp_path / "index.json").write_text('{"kernels": [{"cubin": "k.cubin"}]}')
    (tmp_path / "k.cubin").symlink_to("/dev/zero")
    p = run("admit", bundle, "--build", str(tmp_path))
    assert (p.returncode, p.stderr) == (2, f"error: {tmp_path}/k.cubin: cubin: not a regular file\n")
    (tmp_path / "k.cubin").unlink()
    (tmp_path / "index.json").write_text('{"kernels": []}')
    p = run("admit", bundle, "--build", str(tmp_path))
    assert (p.returncode, p.stderr) == (2, "error: build record: bundle_identity: Field required\n")
