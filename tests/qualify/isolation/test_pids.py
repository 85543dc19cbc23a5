"""Pids between a pod's namespace and the node's (hotfloat.qualify.isolation.pids), in a real pid namespace: a
process of the namespace (or of a sandbox below it) maps to its node pid and back, and nothing outside it does,
another namespace's pid 1 included. Needs root for the namespaces and the bind mount of the node's /proc."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

INSIDE = textwrap.dedent("""
    import json, os, subprocess, sys
    from hotfloat.qualify.isolation.pids import PidMap
    child = subprocess.Popen(["sleep", "30"])
    grandchild = subprocess.Popen(["unshare", "--pid", "--fork", "sleep", "30"])  # a sandbox's own namespace below
    m = PidMap(sys.argv[1])
    host = m.to_host(child.pid)
    nspid = next(l for l in open(f"{sys.argv[1]}/{host}/status") if l.startswith("NSpid:")).split()[1:]
    out = {"local": child.pid, "host": host, "back": m.to_local(host), "self": m.to_host(os.getpid()),
           "outside": [m.to_local(int(p)) for p in sys.argv[2:]], "sandbox": m.to_host(grandchild.pid),
           "nspid": [int(x) for x in nspid]}
    print(json.dumps(out), flush=True)
    child.kill(); grandchild.kill()
""")


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"),
    reason="needs root and unshare for a pid namespace and a bind mount",
)
def test_a_namespaces_processes_map_to_the_nodes_pids_and_back(tmp_path):
    other = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sleep", "30"])  # another pod's pid 1
    try:
        for _ in range(50):
            kids = [int(p) for p in open(f"/proc/{other.pid}/task/{other.pid}/children").read().split()]
            if kids:
                break
            subprocess.run(["sleep", "0.1"])
        (tmp_path / "node").mkdir()
        script = tmp_path / "inside.py"
        script.write_text(INSIDE)
        got = subprocess.run(
            [
                "unshare", "--mount", "sh", "-c",
                f'mount --bind /proc {tmp_path}/node && exec unshare --pid --fork --mount-proc "$0" "$@"',
                sys.executable, str(script), str(tmp_path / "node"), str(os.getpid()), *map(str, kids),
            ],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert got.returncode == 0, got.stderr[-2000:]
        out = json.loads(got.stdout)
        assert out["nspid"] == [out["host"], out["local"]]  # the node's pid, and this namespace's
        assert out["back"] == out["local"] and out["self"] is not None and out["sandbox"] is not None
        assert out["outside"] == [None] * (1 + len(kids))  # the test's own process and the other namespace's init
    finally:
        other.kill()
        other.wait()
