"""attention.decode: one query token per request attends over its paged KV cache (SGLang's triton decode layout).

The layout is the one SGLang's triton attention backend hands `decode_attention_fwd` (page size 1): a KV pool of
P token slots, `k_buffer[P, Hkv, D]` and `v_buffer[P, Hkv, D]`; request b owns the pool slots
`kv_indices[kv_indptr[b] : kv_indptr[b+1]]`, in order (the page table has N entries, at least the lengths' sum),
so its sequence length is `kv_indptr[b+1] - kv_indptr[b]` (at least 1 at decode). Query head h reads KV head
`h // (Hq // Hkv)` (GQA). The entry writes `out[b, h] = softmax(sm_scale * q[b, h] . K_b^T) @ V_b` for every
request and head.

Verification is built to expose the classic shortcuts. Lengths are ragged (one request of the maximum length and,
from two requests on, one of length 1, the rest uniform in between), so ignoring them or reading one token past them
changes short requests by O(1). `kv_indices` is a random permutation of the whole pool: pages are scattered, and
the entries past the last request hold real but foreign pages, so assuming contiguous pages or reading past the end
is wrong. Every call draws fresh KV into the same buffers, so a cached copy of the pool is stale. The scale is drawn
per case (a captured graph keeps it over its replays) at 0.5x-3x D^-0.5, so a kernel that assumes 1/sqrt(D) fails.

Tolerances are the shared per-dtype table: the reference is fp32 on the rounded inputs; a kernel that accumulates
in fp32 and rounds only the probabilities (as SGLang's kernel does before P @ V) and the output is within 0.5% of
it, well inside 2e-2 (bf16) and 1e-2 (fp16). fp32 is not a decode dtype of the engine and is not offered.
"""

from .spec import ArgSpec, AuditSite, Role, Shape, SlotSpec

DEFAULT_SCALE = 0.125
"""The scale a caller passes for head dim 64; verification draws its own per case."""


def _reference(t):
    import torch

    q, k, v = t["q"].float(), t["k_buffer"].float(), t["v_buffer"].float()
    indptr, indices = t["kv_indptr"].long(), t["kv_indices"].long()
    group = q.shape[1] // k.shape[1]
    out = torch.empty_like(q)
    for b in range(q.shape[0]):
        pages = indices[int(indptr[b]) : int(indptr[b + 1])]
        kb = k[pages].repeat_interleave(group, dim=1)  # [L, Hq, D]
        vb = v[pages].repeat_interleave(group, dim=1)
        p = torch.softmax(torch.einsum("hd,lhd->hl", q[b], kb) * float(t["sm_scale"]), dim=-1)
        out[b] = torch.einsum("hl,lhd->hd", p, vb)
    return {"out": out}


def lengths(dims, gen):
    """Ragged lengths in [Lmin, S]: one request of S, one of Lmin (when B > 1), the rest drawn in between and shrunk
    when the batch (jittered above the shape's own) would overflow the pool of P slots."""
    import torch

    b, s, pool = dims["B"], dims["S"], dims["P"]
    lo = min(dims.get("Lmin", 1), s)
    lens = torch.randint(lo, s + 1, (b,), generator=gen)
    ends = torch.randperm(b, generator=gen)[:2]
    lens[ends[0]] = s
    if b > 1:
        lens[ends[1]] = lo
    if int(lens.sum()) > pool:
        middle = torch.ones(b, dtype=torch.bool)
        middle[ends] = False
        lens[middle] = (lens[middle] * (pool - s - lo) // int(lens[middle].sum())).clamp(min=1)
    return lens


def _inputs(dims, dtype, gen):
    import torch

    b, pool, hq, hkv, d = dims["B"], dims["P"], dims["Hq"], dims["Hkv"], dims["D"]
    lens = lengths(dims, gen)
    return {
        "q": torch.randn((b, hq, d), generator=gen).to(dtype),
        "k_buffer": torch.randn((pool, hkv, d), generator=gen).to(dtype),
        "v_buffer": torch.randn((pool, hkv, d), generator=gen).to(dtype),
        "kv_indptr": torch.cat([torch.zeros(1, dtype=torch.long), lens.cumsum(0)]).to(torch.int32),
        "kv_indices": torch.randperm(pool, generator=gen)[: dims["N"]],
    }


def draw_scale(dims, gen):
    """The scale, 0.5x-3x D^-0.5: a kernel that assumes 1/sqrt(D) instead of using it fails (prefill draws it too)."""
    import torch

    return {"sm_scale": (0.5 + 2.5 * float(torch.rand((), generator=gen))) * dims["D"] ** -0.5}


def _kv_tokens(dims) -> int:
    """Expected KV tokens read per call: exact when Lmin = S (bench shapes), the mean of the ragged draw otherwise."""
    return dims["B"] * (min(dims.get("Lmin", 1), dims["S"]) + dims["S"]) // 2


def _bytes(dims, esize: int) -> int:
    """K and V of every attended token plus its page index, q read, out written: the per-step bandwidth floor."""
    kv = _kv_tokens(dims) * (2 * dims["Hkv"] * dims["D"] * esize + 8)
    return kv + 2 * dims["B"] * dims["Hq"] * dims["D"] * esize + 4 * (dims["B"] + 1)


def _shape(b, s, hq, hkv, d, cpu=False, uniform=False):
    """B requests of up to S tokens (all S when uniform) in a pool of P slots; the page table holds N = P entries."""
    pool = b * s if uniform else b * s // 2 + s + 4  # the mean draw plus one full request; larger draws shrink
    dims = {"B": b, "S": s, "P": pool, "N": pool, "Hq": hq, "Hkv": hkv, "D": d}
    if uniform:
        dims["Lmin"] = s
    return Shape(dims, cpu=cpu)


ATTENTION_DECODE = SlotSpec(
    name="attention.decode",
    summary="Paged decode attention: out[b,h] = softmax(sm_scale * q[b,h] . K_b) @ V_b over pages "
    "kv_indices[kv_indptr[b]:kv_indptr[b+1]], KV head h // (Hq/Hkv)",
    args=(
        ArgSpec("q", Role.INPUT, shape=("B", "Hq", "D")),
        ArgSpec("k_buffer", Role.INPUT, shape=("P", "Hkv", "D")),
        ArgSpec("v_buffer", Role.INPUT, shape=("P", "Hkv", "D")),
        ArgSpec("kv_indptr", Role.INPUT, dtype="i32", shape=("B+1",)),
        ArgSpec("kv_indices", Role.INPUT, dtype="i64", shape=("N",)),
        ArgSpec("out", Role.OUTPUT, shape=("B", "Hq", "D")),
        ArgSpec("sm_scale", Role.SCALAR, dtype="fp32", default=DEFAULT_SCALE),
    ),
    dtypes=("bf16", "fp16"),
    count_dim="B",
    shapes=(
        _shape(1, 1, 4, 4, 64, cpu=True),
        _shape(3, 100, 8, 2, 64, cpu=True),
        _shape(5, 160, 8, 1, 128, cpu=True),
        _shape(6, 40, 4, 4, 128, cpu=True),
        _shape(1, 1, 8, 8, 64),
        _shape(1, 32768, 8, 1, 128),
        _shape(2, 32768, 8, 2, 64),
        _shape(8, 8192, 4, 4, 64),
        _shape(32, 4096, 8, 1, 128),
        _shape(64, 1024, 14, 2, 64),
        _shape(128, 1024, 2, 2, 64),
        _shape(256, 512, 8, 2, 64),
    ),
    bench_shapes=(
        _shape(4, 64, 4, 1, 64, cpu=True, uniform=True),
        *(
            _shape(b, s, 14, 2, 64, uniform=True)
            for b, s in ((1, 1024), (8, 1024), (32, 1024), (64, 2048), (256, 1024))
        ),
        *(
            _shape(b, s, 32, 8, 128, uniform=True)
            for b, s in ((1, 1024), (1, 32768), (8, 4096), (32, 2048), (64, 1024), (128, 1024), (256, 512))
        ),
    ),
    reference=_reference,
    make_inputs=_inputs,
    make_scalars=draw_scale,
    bytes_moved=_bytes,
    flops=lambda dims: 4 * _kv_tokens(dims) * dims["Hq"] * dims["D"],
    audit=AuditSite("decode", {"B": 1, "Hq": 2, "Hkv": 1, "D": 8, "P": 8, "N": 4}),
)

SPECS = (ATTENTION_DECODE,)
"""The slots this module defines: the registry finds them here."""
