"""The ranks' environment: Triton interpreted on CPU (a Triton collective runs there, tests/collective/test_runner), and
NVLink multicast off for NCCL ranks on a GPU host, whose own setting the sandbox's fresh environment would drop."""

import pytest

from hotfloat.collective import launcher


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_rank_environment(device, tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # a host that left it on must not pass that to candidates
    monkeypatch.setattr(launcher, "spawn", lambda argv, policy, **kw: seen.update(kw["env"]))
    launcher.launch(tmp_path, str(tmp_path), device, 10.0, False, [])
    if device == "cuda":
        assert seen.items() >= launcher.NO_MULTICAST.items() and "TRITON_INTERPRET" not in seen
    else:
        assert seen["TRITON_INTERPRET"] == "1" and "NCCL_NVLS_ENABLE" not in seen
