"""The stock path of collective.ar_residual_rmsnorm is SGLang's unfused one: every stock norm.fused_add_rmsnorm kernel
after an in-place all-reduce of x; on two real gloo ranks it computes the slot's reference and leaves the set's x to
the harness's per-call copies."""

import json
import subprocess
import sys

import pytest

from hotfloat.bench.stock import stock_kernels
from hotfloat.bench.stock_collective import FUSES
from hotfloat.slots import Role, get_slot

SLOT = "collective.ar_residual_rmsnorm"


def test_each_fused_stock_kernel_runs_after_the_all_reduce_and_overwrites_x():
    fused, _ = stock_kernels(FUSES[SLOT], ())
    found, skipped = stock_kernels(SLOT, ())
    assert [s.name for s in found] == [f"all_reduce+{s.name}" for s in fused] and skipped == {}
    assert all(s.overwrites[0] == "x" and s.prepare is None for s in found)
    names = lambda slot, role: [a.name for a in get_slot(slot).of_role(role)]  # noqa: E731
    assert names(SLOT, Role.OUTPUT) == names(FUSES[SLOT], Role.OUTPUT)
    assert names(SLOT, Role.INPUT) == names(FUSES[SLOT], Role.INPUT)


RANK = """
import json, sys
import torch
import torch.distributed as dist
from hotfloat.bench.stock import stock_kernels
from hotfloat.slots import get_slot
from hotfloat.slots.collective import stack_ranks

rank, init = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
slot = get_slot("collective.ar_residual_rmsnorm")
sets = []
for r in range(2):
    t = slot.make_inputs({"T": 6, "H": 256}, torch.float32, torch.Generator().manual_seed(r))
    sets.append(t | {"eps": 1e-5, "group": dist.group.WORLD})
for s in sets[1:]:
    s |= {n: sets[0][n] for n in slot.replicated}
want = slot.reference(stack_ranks(slot, sets))
mine, close = sets[rank], {}
for s in stock_kernels(slot.name, ())[0]:
    out, residual_out = s.fn(mine | {"x": mine["x"].clone()})
    close[s.name] = torch.allclose(out, want["out"], rtol=1e-5, atol=1e-5) and torch.allclose(
        residual_out, want["residual_out"], rtol=1e-5
    )
dist.destroy_process_group()
print(json.dumps(close))
"""


def test_on_two_ranks_the_stock_path_is_the_slots_reference(tmp_path):
    init = f"file://{tmp_path}/store"
    procs = [
        subprocess.Popen([sys.executable, "-c", RANK, str(r), init], stdout=subprocess.PIPE, text=True)
        for r in range(2)
    ]
    outs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    names = ["all_reduce+torch-eager", "all_reduce+torch add+rms_norm"]
    assert outs == [dict.fromkeys(names, True)] * 2


@pytest.mark.parametrize("slot", sorted(FUSES))
def test_every_fused_collective_names_a_registered_slot(slot):
    assert get_slot(slot).of_role(Role.GROUP) and not get_slot(FUSES[slot]).of_role(Role.GROUP)
