"""What the attention seams rely on in SGLang's triton backend, shared by both: they hook its `__init__` (AFTER) and
take its index buffers and page tables as it allocates them. No seam of its own: `seam` makes each of theirs."""

from ..seam import Seam, callable_check

BACKEND = "sglang.srt.layers.attention.triton_backend.TritonAttnBackend"
TARGET = f"{BACKEND}.__init__"
CHECKS = (
    callable_check("TritonAttnBackend.__init__", TARGET, ["self", "model_runner"]),
    {
        "name": "TritonAttnBackend index buffers (attention.decode, attention.prefill take them as allocated)",
        "kind": "dtypes",
        "target": TARGET,
        "dtypes": {"self.qo_indptr": "torch.int64", "self.kv_indptr": "torch.int32"},
    },
    {
        "name": "TritonAttnBackend page table (eager)",
        "kind": "dtypes",
        "target": f"{BACKEND}.init_forward_metadata",
        "dtypes": {"kv_indices": "torch.int64"},
    },
    {
        "name": "TritonAttnBackend page table (CUDA graphs)",
        "kind": "dtypes",
        "target": f"{BACKEND}.init_cuda_graph_state",
        "dtypes": {"self.cuda_graph_kv_indices": "torch.int64"},
    },
)


def seam(slot: str, hook, kernel: str, params: list[str]) -> Seam:
    """An attention seam: an AFTER hook on the backend's `__init__` that wraps the attribute it sets to `kernel`
    ("module.function" under sglang.srt.layers.attention.triton_ops, called with `params` in this order)."""
    name, target = kernel.rsplit(".", 1)[1], f"sglang.srt.layers.attention.triton_ops.{kernel}"
    return Seam(
        (slot,), (TARGET,), hook, after=True, checks=(*CHECKS, callable_check(name, target, params)), backend="triton"
    )
