"""Builds (JIT) and runs one FlashInfer module on the device before a bench reaches it, so the bench's first call
finds it built: FlashInfer's JIT takes a file lock per module, so a bench that arrives while it is still building
waits rather than building it twice. `x` (4x1024 bf16) and `w` (512 ones) are there for the statements to use.

    python3 tools/device/helpers/flashinfer_build.py NAME "PYTHON-STATEMENTS"     (the bench_stock and prefill recipes)
"""

import sys
import time

import torch

name, code = sys.argv[1], sys.argv[2]
start = time.time()
x = torch.randn(4, 1024, device="cuda", dtype=torch.bfloat16)
w = torch.ones(512, device="cuda", dtype=torch.bfloat16)
exec(code)
torch.cuda.synchronize()
print(f"flashinfer {name}: built and ran in {time.time() - start:.1f}s")
