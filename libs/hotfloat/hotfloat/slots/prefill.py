"""attention.prefill: a batch of new tokens per request attends causally over itself and over the request's cached
prefix in the paged KV pool (SGLang's triton extend layout).

The layout is the one SGLang's triton attention backend hands `extend_attention_fwd` (page size 1). Request b owns
the new tokens `qo_indptr[b] : qo_indptr[b+1]` of q, k and v (E_b >= 1 of them, T in all) and the prefix of L_b >= 0
cached tokens at pool slots `kv_indices[kv_indptr[b] : kv_indptr[b+1]]` of `k_buffer`/`v_buffer` (the same paged pool
attention.decode reads). The index dtypes are the engine's: qo_indptr int64 (the backend's extend buffer), kv_indptr
int32, kv_indices int64; a call with other dtypes is not the slot's and runs stock. New token i of request b
(0-based) sees the whole prefix and new tokens 0..i: its position is L_b + i, so the causal mask is aligned to the
end of the sequence. Query head h reads KV head h // (Hq // Hkv). The
entry writes `out[t, h] = softmax(sm_scale * q[t, h] . [K_prefix; K_new]^T, masked) @ [V_prefix; V_new]`.

Verification draws what exposes the shortcuts. New-token counts are a random composition of T (ragged, every one at
least 1); prefix lengths are ragged in [0, L] with one request at L and one at 0, so ignoring the prefix, attending
bidirectionally over the new tokens or aligning the causal mask to the start of the sequence is O(1) wrong. Prefix
pages are a random permutation of the pool with foreign pages past the last request, as in attention.decode, and the
scale is drawn per case. Bench shapes are uniform (every request T/B new tokens after Lmin = L cached ones) so the
bytes and FLOPs are exact.

The reference is fp32 on the rounded inputs, one request at a time and in chunks of query rows, so a long prompt
never holds a whole T x T score matrix; it runs on whatever device the inputs are on (the CPU parent during verify,
the GPU during bench).
"""

from .attention import DEFAULT_SCALE, draw_scale, lengths
from .spec import ArgSpec, AuditSite, Role, Shape, SlotSpec

SCORE_ELEMENTS = 1 << 25
"""Score-matrix elements the reference holds at once (128 MiB of fp32)."""


def _reference(t):
    import torch

    q, k, v = t["q"].float(), t["k"].float(), t["v"].float()
    qo, kv = t["qo_indptr"].tolist(), t["kv_indptr"].tolist()
    hkv, d = k.shape[1], k.shape[2]
    group = q.shape[1] // hkv
    out = torch.empty_like(q)
    for b in range(len(qo) - 1):
        start, end = qo[b], qo[b + 1]
        pages = t["kv_indices"][kv[b] : kv[b + 1]].long()
        keys = torch.cat([t["k_buffer"][pages].float(), k[start:end]])  # [L + E, Hkv, D]
        vals = torch.cat([t["v_buffer"][pages].float(), v[start:end]])
        prefix, n = len(pages), keys.shape[0]
        rows = max(1, SCORE_ELEMENTS // (q.shape[1] * n))
        for r in range(start, end, rows):
            qr = q[r : min(end, r + rows)].reshape(-1, hkv, group, d)  # [m, Hkv, G, D]
            s = torch.einsum("mkgd,nkd->kgmn", qr, keys) * float(t["sm_scale"])
            pos = prefix + r - start + torch.arange(qr.shape[0], device=q.device)  # each query's place in the sequence
            s.masked_fill_(torch.arange(n, device=q.device)[None, :] > pos[:, None], float("-inf"))
            o = torch.einsum("kgmn,nkd->mkgd", torch.softmax(s, dim=-1), vals)
            out[r : r + qr.shape[0]] = o.reshape(qr.shape[0], -1, d)
    return {"out": out}


def new_tokens(t: int, b: int, uniform: bool, gen):
    """E_b >= 1 per request, summing to T: even shares when `uniform`, else a random composition of T."""
    import torch

    if uniform:
        return torch.full((b,), t // b, dtype=torch.long) + (torch.arange(b) < t % b)
    cuts = torch.randperm(t - 1, generator=gen)[: b - 1].sort().values + 1
    bounds = torch.cat([torch.zeros(1, dtype=torch.long), cuts, torch.full((1,), t, dtype=torch.long)])
    return bounds.diff()


def _inputs(dims, dtype, gen):
    import torch

    t, pool, hq, hkv, d = dims["T"], dims["P"], dims["Hq"], dims["Hkv"], dims["D"]
    b = max(1, min(dims["B"], t))  # the verifier jitters T, possibly below the shape's batch
    ext = new_tokens(t, b, "Lmin" in dims, gen)
    pre = lengths({"B": b, "S": dims["L"], "P": pool, "Lmin": dims.get("Lmin", 0)}, gen)
    zero = torch.zeros(1, dtype=torch.long)
    return {
        "q": torch.randn((t, hq, d), generator=gen).to(dtype),
        "k": torch.randn((t, hkv, d), generator=gen).to(dtype),
        "v": torch.randn((t, hkv, d), generator=gen).to(dtype),
        "k_buffer": torch.randn((pool, hkv, d), generator=gen).to(dtype),
        "v_buffer": torch.randn((pool, hkv, d), generator=gen).to(dtype),
        "qo_indptr": torch.cat([zero, ext.cumsum(0)]),  # int64, as TritonAttnBackend allocates it
        "kv_indptr": torch.cat([zero, pre.cumsum(0)]).to(torch.int32),
        "kv_indices": torch.randperm(pool, generator=gen)[: dims["N"]],
    }


def _prefix_tokens(dims) -> int:
    """Cached tokens read per call: exact when Lmin = L (bench shapes), the mean of the ragged draw otherwise."""
    return dims["B"] * (dims.get("Lmin", 0) + dims["L"]) // 2


def _bytes(dims, esize: int) -> int:
    """q, k, v read and out written once, every cached token's K, V and page index, both indptrs: the floor."""
    t, hq, hkv, d = dims["T"], dims["Hq"], dims["Hkv"], dims["D"]
    cached = _prefix_tokens(dims) * (2 * hkv * d * esize + 8)
    return 2 * t * (hq + hkv) * d * esize + cached + 8 * (dims["B"] + 1)


def _flops(dims) -> int:
    """QK^T and PV over what each new token sees (the prefix and the causal half of its request's new tokens), with
    every request taking T/B new tokens (exact for bench shapes)."""
    t, b = dims["T"], dims["B"]
    return 2 * dims["Hq"] * dims["D"] * t * (2 * _prefix_tokens(dims) // b + t // b + 1)


def _shape(b, t, cached, hq, hkv, d, cpu=False, uniform=False):
    """B requests sharing T new tokens after up to `cached` prefix tokens (all of them when uniform) in a pool of P
    slots; the page table holds N = P entries."""
    pool = max(1, b * cached) if uniform else b * cached // 2 + cached + 4
    dims = {"B": b, "T": t, "L": cached, "P": pool, "N": pool, "Hq": hq, "Hkv": hkv, "D": d}
    if uniform:
        dims["Lmin"] = cached
    return Shape(dims, cpu=cpu)


LLAMA = (32, 8, 128)
"""The qualification model's heads (llama-8b): 32 query heads, 8 KV heads, head dim 128."""
QWEN = (14, 2, 64)
"""Qwen2.5-0.5B's: a GQA group of 7."""

ATTENTION_PREFILL = SlotSpec(
    name="attention.prefill",
    summary="Paged causal prefill (extend): new tokens qo_indptr[b]:qo_indptr[b+1] of q, k, v attend over the "
    "prefix pages kv_indices[kv_indptr[b]:kv_indptr[b+1]] and causally over their own request, KV head h // (Hq/Hkv)",
    args=(
        ArgSpec("q", Role.INPUT, shape=("T", "Hq", "D")),
        ArgSpec("k", Role.INPUT, shape=("T", "Hkv", "D")),
        ArgSpec("v", Role.INPUT, shape=("T", "Hkv", "D")),
        ArgSpec("k_buffer", Role.INPUT, shape=("P", "Hkv", "D")),
        ArgSpec("v_buffer", Role.INPUT, shape=("P", "Hkv", "D")),
        ArgSpec("qo_indptr", Role.INPUT, dtype="i64", shape=("B+1",)),
        ArgSpec("kv_indptr", Role.INPUT, dtype="i32", shape=("B+1",)),
        ArgSpec("kv_indices", Role.INPUT, dtype="i64", shape=("N",)),
        ArgSpec("out", Role.OUTPUT, shape=("T", "Hq", "D")),
        ArgSpec("sm_scale", Role.SCALAR, dtype="fp32", default=DEFAULT_SCALE),
    ),
    dtypes=("bf16", "fp16"),
    count_dim="T",
    shapes=(
        _shape(1, 1, 0, 4, 4, 64, cpu=True),
        _shape(3, 40, 24, 8, 2, 64, cpu=True),
        _shape(2, 24, 16, *LLAMA, cpu=True),
        _shape(4, 48, 40, 8, 1, 128, cpu=True),
        _shape(1, 512, 0, *LLAMA),
        _shape(4, 512, 512, *LLAMA),
        _shape(1, 64, 8192, *LLAMA),
        _shape(64, 1024, 128, 8, 1, 128),
        _shape(16, 2048, 256, *QWEN),
    ),
    bench_shapes=(
        _shape(2, 32, 16, 4, 1, 64, cpu=True, uniform=True),
        *(_shape(b, t, c, *QWEN, uniform=True) for b, t, c in ((1, 4096, 0), (16, 8192, 0), (8, 1024, 2048))),
        *(
            _shape(b, t, c, *LLAMA, uniform=True)
            for b, t, c in ((1, 1024, 0), (1, 4096, 0), (4, 4096, 0), (8, 8192, 0), (1, 2048, 8192), (32, 4096, 1024))
        ),
    ),
    reference=_reference,
    make_inputs=_inputs,
    make_scalars=draw_scale,
    bytes_moved=_bytes,
    flops=_flops,
    audit=AuditSite("prefill", {"T": 4, "Hq": 2, "Hkv": 1, "D": 8, "P": 8, "B": 1, "N": 4}),
)

SPECS = (ATTENTION_PREFILL,)
"""The slots this module defines: the registry finds them here."""
