"""tools/device/helpers/slot_share_trace.py: GPU time goes to the step and slot whose host range holds the launch (also when
the kernel ran after the range ended), time launched outside every step is unattributed, calls are counted per step,
and a real torch.profiler trace has the shape the attribution reads."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "slot_share_trace", ROOT / "tools" / "device" / "helpers" / "slot_share_trace.py"
)
trace = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trace)

HOST = {"pid": 1, "tid": 1}


def _range(name, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur, **HOST}


def _launch(correlation, ts, cat="cuda_runtime"):
    return {
        "ph": "X",
        "cat": cat,
        "name": "cudaLaunchKernel",
        "ts": ts,
        "dur": 1,
        "args": {"correlation": correlation},
        **HOST,
    }


def _kernel(correlation, ts, dur, cat="kernel"):
    return {
        "ph": "X",
        "cat": cat,
        "name": "k",
        "ts": ts,
        "dur": dur,
        "pid": 0,
        "tid": 7,
        "args": {"correlation": correlation},
    }


def test_gpu_time_follows_the_launch_into_its_step_and_slot():
    events = [
        _range("hotfloat.step:decode", 0, 100),
        _range("hotfloat:norm.rmsnorm", 10, 10),
        _launch(1, 12),
        _kernel(1, 150, 5),  # ran long after its slot's range closed: still the norm's
        _launch(2, 30, "cuda_driver"),
        _kernel(2, 160, 40),  # a GEMM between seams: the step's, no slot's
        _range("hotfloat.step:decode", 200, 100),
        _range("hotfloat:norm.rmsnorm", 210, 10),
        _launch(3, 211),
        _kernel(3, 230, 7),
        _launch(4, 250),
        _kernel(4, 260, 3, "gpu_memcpy"),
        _launch(5, 400),
        _kernel(5, 410, 6),  # launched outside every step
        _launch(6, 50),  # a launch whose GPU event the trace lost: nothing to count
    ]
    [(kind, got)] = trace.attribute(events).items()
    assert kind == "decode" and got["steps"] == 2
    assert got["step_us"] == (5 + 40 + 7 + 3) / 2 and got["slots"] == {"norm.rmsnorm": 6.0}
    assert got["calls"] == {"norm.rmsnorm": 1.0} and got["unattributed_us"] == 3.0


def test_step_kinds_are_kept_apart():
    events = [_range("hotfloat.step:prefill", 0, 10), _launch(1, 5), _kernel(1, 5, 100)]
    events += [_range("hotfloat.step:decode", 20, 10), _range("hotfloat:moe.fused_experts", 21, 5), _launch(2, 22)]
    events += [_kernel(2, 22, 8)]
    got = trace.attribute(events)
    assert got["prefill"]["step_us"] == 100 and got["prefill"]["slots"] == {}
    assert got["decode"]["slots"] == {"moe.fused_experts": 8.0} and got["decode"]["calls"] == {"moe.fused_experts": 1.0}


def test_a_torch_profiler_trace_has_the_ranges_the_attribution_reads(tmp_path):
    import json

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with record_function("hotfloat.step:decode"), record_function("hotfloat:norm.rmsnorm"):
                torch.randn(8).sum()
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    got = trace.attribute(json.loads((tmp_path / "t.json").read_text())["traceEvents"])
    assert got["decode"]["steps"] == 2 and got["decode"]["calls"] == {"norm.rmsnorm": 1.0}
