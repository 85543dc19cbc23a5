"""What `make up` starts, without starting it: the default three containers as before, and with GPUS=N one
qualification container per GPU pinned with --gpu i on its own socket, the validator dialling every one, and the
runc config of a GPU container (device nodes, their cgroup rules, the host driver's libraries). That CUDA works in
such a container is checked on a GPU host only."""

from __future__ import annotations

import pytest

from hotfloat.errors import InfrastructureError, InputError
from hotfloat.image import compose, runtime
from hotfloat.image.runtime import Container


def test_without_gpus_up_starts_what_it_always_did():
    plan = compose.services()
    assert [(s.name, s.image, s.socket, s.network, s.argv, s.extra, s.gpu) for s in plan] == [
        ("hotfloat-compiler", "compiler", "compiler.sock", False, (), (), False),
        ("hotfloat-admission", "worker", "admission.sock", False, (), (), False),
        ("hotfloat-validator", "validator", None, True, (), (), False),
    ]
    assert compose.services(quick=True)[1].extra == compose.QUICK_ADMISSION.flags()


def test_the_image_code_loads_neither_the_validator_nor_the_qualification():
    """`make up` and `make miner` start containers; the quick admission scope they pass lives with admission
    (hotfloat.admission.scope), so importing them loads a handful of modules, not the validator and the qualification
    behind it (92 modules when compose took the scope from the validator's configuration)."""
    import json
    import subprocess
    import sys

    probe = "import json, sys, hotfloat.image.compose; print(json.dumps([m for m in sys.modules if m.startswith('hotfloat')]))"
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    assert not [m for m in loaded if m.startswith(("hotfloat.qualify", "hotfloat.validator"))], sorted(loaded)
    assert len(loaded) <= 15, sorted(loaded)


def test_gpus_add_one_pinned_qualification_service_each_and_the_validator_dials_them_all():
    plan = compose.services(3, quick=True)
    quals = [s for s in plan if s.name.startswith("hotfloat-qualification-")]
    assert [s.socket for s in quals] == ["qualification-0.sock", "qualification-1.sock", "qualification-2.sock"]
    for i, s in enumerate(quals):
        assert s.gpu and s.image == "worker" and s.extra == ()  # QUICK is admission's alone
        assert s.argv[:3] == ("hotfloat", "serve", "qualification") and s.argv[-4:] == (
            "--device",
            "cuda",
            "--gpu",
            str(i),
        )
        assert f"/run/hotfloat/qualification-{i}.sock" in s.argv
    validator = plan[-1]
    assert validator.name == "hotfloat-validator" and [plan.index(q) for q in quals] == [2, 3, 4]
    assert validator.extra == tuple(
        a for i in range(3) for a in ("--qualification", f"/run/hotfloat/qualification-{i}.sock")
    )


def test_admission_may_have_a_gpu_of_its_own_but_not_a_qualifications():
    plan = compose.services(7, admission_gpu=7)
    assert plan[1].gpu and plan[1].extra == ("--device", "cuda", "--gpu", "7")
    with pytest.raises(InputError, match="share it with a timed qualification"):
        compose.services(7, admission_gpu=3)


def test_a_gpu_container_gets_the_nodes_their_cgroup_rules_and_the_drivers_libraries(monkeypatch, tmp_path):
    nodes = [
        ("/dev/nvidia0", 195, 0),
        ("/dev/nvidia1", 195, 1),
        ("/dev/nvidiactl", 195, 255),
        ("/dev/nvidia-uvm", 507, 0),
    ]
    libs = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"]
    monkeypatch.setattr(runtime, "nvidia_host", lambda: (nodes, libs))
    image = {"config": {"User": "10001:10001", "Entrypoint": ["hotfloat"]}}
    plain = runtime._config(Container(name="c", image=tmp_path), image)
    assert "devices" not in plain["linux"] and "devices" not in plain["linux"]["resources"]
    gpu = runtime._config(Container(name="g", image=tmp_path, gpu=True), image)
    assert [(d["path"], d["major"], d["minor"]) for d in gpu["linux"]["devices"]] == nodes
    assert [(r["major"], r["minor"], r["access"]) for r in gpu["linux"]["resources"]["devices"]] == [
        (ma, mi, "rw") for _, ma, mi in nodes
    ]
    bound = {m["destination"]: m for m in gpu["mounts"] if m["type"] == "bind"}
    assert all(bound[lib]["source"] == lib and "ro" in bound[lib]["options"] for lib in libs)
    assert gpu["process"]["capabilities"]["bounding"] == [] and gpu["process"]["noNewPrivileges"]


def test_a_host_without_the_driver_is_refused_in_one_line(tmp_path):
    with pytest.raises(InfrastructureError, match="no NVIDIA driver on this host"):
        runtime.nvidia_host(tmp_path)
