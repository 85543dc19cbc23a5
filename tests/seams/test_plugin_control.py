"""The SGLang plugin's control channel, without SGLang: a stand-in scheduler process arms a router from the
environment as the plugin does, serves a few slot calls and runs the plugin's report thread; the qualification
worker's side (SglangEngine's control methods) enables the twin's slots and collects the audit through the report
directory, and the validator's checker recomputes what came back."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hotfloat.qualify.audit import audit_record
from hotfloat.qualify.engines.sglang_engine import SglangEngine
from hotfloat.qualify.engines.worker import audit_parts
from hotfloat.seams import ENV_TWIN_OF, AuditConfig
from hotfloat.seams.audit import ENV as ENV_AUDIT

HERE = Path(__file__).parent
SCHEDULER = textwrap.dedent("""
    import torch
    from hotfloat.seams import arm_from_env
    from hotfloat_sglang import plugin

    plugin._router = router = arm_from_env()
    for _ in range(4):
        x = torch.randn(3, 64, dtype=torch.bfloat16)
        router.silu_and_mul(x, stock=lambda x: torch.nn.functional.silu(x[:, :32]) * x[:, 32:])
        w = torch.ones(32, dtype=torch.bfloat16)
        router.rmsnorm(x[:, :32], w, 1e-6, stock=lambda x, w, eps: (x.float() * torch.rsqrt(
            x.float().pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype))
    plugin._report()
    print("serving", flush=True)
    plugin._report_changes()
""")


def test_the_worker_enables_the_twin_and_collects_the_audit_through_the_plugin_thread(tmp_path):
    env = {
        **os.environ,
        "HOTFLOAT_SEAMS_REPORT_DIR": str(tmp_path),
        ENV_TWIN_OF: str(HERE / "fixtures/engine_exact"),
        ENV_AUDIT: AuditConfig(4, rate=1.0, rows=2).to_env(),
        "PYTHONPATH": os.pathsep.join(
            [str(HERE.parents[1] / "libs/hotfloat_sglang"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    proc = subprocess.Popen([sys.executable, "-c", SCHEDULER], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "serving"
        worker = object.__new__(SglangEngine)  # its control methods only, without booting SGLang
        worker.reports, worker._seq = str(tmp_path), 0
        assert worker.set_twin(["norm.rmsnorm", "attention.decode"]) == ["norm.rmsnorm"]
        rec = audit_record(0, "B", audit_parts(worker.audit()))
        assert rec.error is None and {s: a.calls_audited for s, a in rec.slots.items()} == {
            "activation.silu_and_mul": 4,
            "norm.rmsnorm": 4,
        }
        assert worker.set_twin([]) == [] and worker._seq == 3
    finally:
        proc.kill()
        proc.wait()
