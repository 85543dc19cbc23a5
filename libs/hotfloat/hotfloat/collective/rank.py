"""One rank of a collective verification run, inside the sandbox; also the launcher that starts all ranks.

`rank.py DIR launch` starts every rank of `DIR/plan.json` as its own process and waits for them; `rank.py DIR R`
is rank R: it joins the validator's process group (gloo on CPU, NCCL on CUDA), imports the candidate, and for
each planned case reads its own input from `in/`, calls `entry(x, out, group)`, and writes `out` to `out/`.
After every case it rewrites `rank<R>.json`, so a hang shows how far each rank got. It judges nothing: the
parent computes the reference from the inputs it wrote and compares. Imports only torch, never hotfloat."""

from __future__ import annotations

import datetime
import importlib.util
import json
import subprocess
import sys
import traceback
from pathlib import Path

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def launch(work: Path) -> int:
    plan = json.loads((work / "plan.json").read_text())
    procs = [subprocess.Popen([sys.executable, "-I", __file__, str(work), str(r)]) for r in range(plan["world"])]
    return max(p.wait() for p in procs)


def _report(work: Path, rank: int, state: dict) -> None:
    tmp = work / f".rank{rank}.json"
    tmp.write_text(json.dumps(state))
    tmp.replace(work / f"rank{rank}.json")


def run_rank(work: Path, rank: int) -> int:
    plan = json.loads((work / "plan.json").read_text())
    state = {"rank": rank, "world": plan["world"], "op": None, "identity": plan["identity"], "backend": plan["backend"],
             "group_size": 0, "cases_done": 0, "error": None}
    _report(work, rank, state)
    import torch
    import torch.distributed as dist
    device = torch.device("cpu")
    if plan["device"] == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group(plan["backend"], init_method=plan["init"], rank=rank, world_size=plan["world"],
                            timeout=datetime.timedelta(seconds=plan["pg_timeout_s"]))
    group = dist.new_group(list(range(plan["world"])))
    state["group_size"] = dist.get_world_size(group)
    try:
        spec = importlib.util.spec_from_file_location("hotfloat_candidate", work / plan["source"])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        entry = getattr(module, plan["entry"])
        state["op"] = plan["op"]
        _report(work, rank, state)
        for i, case in enumerate(plan["cases"]):
            dtype = getattr(torch, DTYPES[case["dtype"]])
            shape = (case["T"], case["H"])
            raw = (work / "in" / f"r{rank}_c{i}.bin").read_bytes()
            x = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).to(device)
            before = x.clone()
            out = torch.full(shape, float("nan"), dtype=dtype, device=device)
            entry(x, out, group)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if not torch.equal(x, before):
                raise RuntimeError(f"case {i}: the input x was modified")
            (work / "out" / f"r{rank}_c{i}.bin").write_bytes(out.cpu().contiguous().view(torch.uint8).numpy().tobytes())
            state["cases_done"] = i + 1
            _report(work, rank, state)
    except BaseException as e:  # the candidate's fault, reported as data; the parent aborts the whole run
        state["error"] = f"{type(e).__name__}: {e}"[:500]
        _report(work, rank, state)
        traceback.print_exc()
        return 3
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    root = Path(sys.argv[1])
    sys.exit(launch(root) if sys.argv[2] == "launch" else run_rank(root, int(sys.argv[2])))
