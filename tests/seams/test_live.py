"""The live serving tier's orchestration, against a stand-in server speaking SGLang's /health and /generate API."""

import sys
from pathlib import Path

import pytest

from hotfloat.errors import BundleError, InfrastructureError
from hotfloat.seams.live import LiveConfig, run_live
from hotfloat.verdict import Status

HERE = Path(__file__).parent
STANDIN = (sys.executable, str(HERE / "standin_server.py"), "{port}", "{tp}")


def config(tmp_path, **kw):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    base = dict(engine_python=sys.executable, model_path=str(model), exact_bundle=str(HERE / "fixtures/silu_exact"),
                broken_bundle=str(HERE / "fixtures/silu_broken"), server_cmd=STANDIN, boot_timeout_s=60, max_new_tokens=12)
    return LiveConfig(**{**base, **kw})


def test_exact_reproduces_and_broken_corrupts_on_every_rank(tmp_path):
    tp = 2
    result = run_live(config(tmp_path, tp=tp, gpus="0,1"))
    assert result.status is Status.PASS, result.reason
    base, exact, broken = result.arms
    assert base.completion == exact.completion != broken.completion
    assert base.reported == (None,) * tp and set(exact.reported) == {exact.identity} and len(exact.reported) == tp


def test_an_unwired_seam_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_BYPASS_SEAM", "1")
    result = run_live(config(tmp_path))
    assert result.status is Status.FAIL and "not active" in result.reason


def test_missing_prerequisites_fail_loudly(tmp_path):
    with pytest.raises(InfrastructureError, match="HOTFLOAT_SERVE_MODEL"):
        run_live(config(tmp_path, model_path=str(tmp_path / "absent")))
    with pytest.raises(InfrastructureError, match="must be 1 or 2"):
        run_live(config(tmp_path, tp=4, gpus="0,1,2,3"))
    with pytest.raises(InfrastructureError, match="must name 2"):
        run_live(config(tmp_path, tp=2, gpus="0"))
    with pytest.raises(BundleError):
        run_live(config(tmp_path, broken_bundle=str(tmp_path)))


def test_a_server_dying_at_boot_is_an_infrastructure_fault(tmp_path):
    cmd = (sys.executable, "-c", "import sys; sys.exit('no GPU here')")
    with pytest.raises(InfrastructureError, match="exited with 1 while booting: no GPU here"):
        run_live(config(tmp_path, server_cmd=cmd))


def test_from_env_reads_the_documented_variables():
    env = {"HOTFLOAT_SERVE_TP": "2", "HOTFLOAT_SERVE_MODEL": "/m", "HOTFLOAT_SERVE_BOOT_TIMEOUT_S": "99",
           "HOTFLOAT_SERVE_EXTRA_ARGS": "--disable-cuda-graph"}
    cfg = LiveConfig.from_env(env, exact_bundle="e", broken_bundle="b", engine_python="/py")
    assert (cfg.tp, cfg.gpus, cfg.model_path, cfg.boot_timeout_s, cfg.extra_args) == (2, "0,1", "/m", 99.0, ("--disable-cuda-graph",))
