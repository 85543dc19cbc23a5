"""attention.prefill on SGLang's FlashInfer backend: a plain ragged extend is routed to the armed op (a plain-torch
bundle, fixtures/prefill_torch) with the page table the seam builds from `req_to_token`, and the new K/V then land in
the pool; every other call runs SGLang's method unchanged.

SGLang is not installed in the test venv; `Backend`, `Layer`, `Pool` and `Batch` below stand in for the pieces of
`FlashInferAttnBackend`, `RadixAttention`, `MHATokenToKVPool` and `ForwardBatch` the seam reads, with the pinned
names (compat checks the targets and parameters at the pin). SGLang's own method is the slot's reference over the
same page table, as FlashInfer computes it.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from hotfloat.seams import arm
from hotfloat.slots import get_slot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.seams import flashinfer_backend as seam, prefill_attention  # noqa: E402

SLOT = get_slot("attention.prefill")
HQ, HKV, D, POOL, REQS = 8, 2, 64, 96, 4
REQ_TO_TOKEN = torch.zeros(8, 64, dtype=torch.int32)
"""The model runner's request-to-pool-slot table, which `batch` fills (one batch in flight at a time, as in SGLang)."""


class Layer(SimpleNamespace):
    def __init__(self, **changes):
        super().__init__(
            layer_id=0, tp_q_head_num=HQ, tp_k_head_num=HKV, tp_v_head_num=HKV, head_dim=D, qk_head_dim=D,
            v_head_dim=D, scaling=D**-0.5, logit_cap=0.0, sliding_window_size=-1, is_cross_attention=False,
            attn_type=SimpleNamespace(value="decoder"), k_scale=None, v_scale=None,
        )  # fmt: skip
        self.__dict__.update(changes)


class Pool:
    """The model runner's KV pool (one, as in SGLang); `batch` draws its contents."""

    def draw(self, gen):
        self.k = torch.randn(POOL, HKV, D, generator=gen).bfloat16()
        self.v = torch.randn(POOL, HKV, D, generator=gen).bfloat16()

    def get_key_buffer(self, layer_id):
        return self.k

    def get_value_buffer(self, layer_id):
        return self.v

    def set_kv_buffer(self, layer, loc, cache_k, cache_v, k_scale=None, v_scale=None):
        self.k[loc], self.v[loc] = cache_k.view(-1, HKV, D), cache_v.view(-1, HKV, D)


KV = Pool()


def batch(gen, prefixes=(5, 0, 17, 3), new=(4, 9, 1, 6)):
    """A ForwardBatch of REQS requests with cached `prefixes` in shuffled pool slots and `new` tokens each."""
    KV.draw(gen)
    slots = torch.randperm(POOL, generator=gen)
    req_to_token = REQ_TO_TOKEN
    req_to_token.zero_()
    pool_rows = torch.tensor([6, 1, 3, 5])  # request b lives in req_to_token row pool_rows[b]
    used, out_loc = 0, []
    for b in range(REQS):
        n = prefixes[b] + new[b]
        req_to_token[pool_rows[b], :n] = slots[used : used + n].int()
        out_loc.append(slots[used + prefixes[b] : used + n])
        used += n
    return SimpleNamespace(
        extend_seq_lens=torch.tensor(new, dtype=torch.int32),
        extend_prefix_lens=torch.tensor(prefixes, dtype=torch.int32),
        extend_prefix_lens_cpu=list(prefixes),
        req_pool_indices=pool_rows,
        out_cache_loc=torch.cat(out_loc),
    )


class Backend:
    """What the seam reads on FlashInferAttnBackend; `forward_extend` is SGLang's method as the ragged path runs it."""

    def __init__(self, **meta):
        self.token_to_kv_pool = KV
        self.use_sliding_window_kv_pool = False
        self.is_dllm_model = False
        self.forward_metadata = SimpleNamespace(**({"use_ragged": True, "multi_item_params": None} | meta))
        self.calls = []

    def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
        self.calls.append(save_kv_cache)
        qo, kv, idx = reference_table(forward_batch)
        pool = self.token_to_kv_pool
        t = {"q": q.view(-1, HQ, D), "k": k.view(-1, HKV, D), "v": v.view(-1, HKV, D), "k_buffer": pool.k}
        t |= {"v_buffer": pool.v, "qo_indptr": qo, "kv_indptr": kv, "kv_indices": idx, "sm_scale": layer.scaling}
        o = SLOT.reference(t)["out"].to(q.dtype)
        if save_kv_cache:
            pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        return o.view(-1, HQ * D)


def reference_table(fb):
    """The page table written out request by request: what `seam.page_table` must equal."""
    prefixes, new = fb.extend_prefix_lens.tolist(), fb.extend_seq_lens.tolist()
    rows = [REQ_TO_TOKEN[int(r), :p] for r, p in zip(fb.req_pool_indices, prefixes, strict=True)]
    qo = torch.tensor([0, *torch.tensor(new).cumsum(0).tolist()], dtype=torch.int64)
    kv = torch.tensor([0, *torch.tensor(prefixes).cumsum(0).tolist()], dtype=torch.int32)
    return qo, kv, torch.cat(rows).long()


@pytest.fixture(scope="module")
def armed():
    return arm(Path(__file__).parent / "fixtures" / "prefill_torch")


def _hooked(router, **meta) -> Backend:
    backend = Backend(**meta)
    runner = SimpleNamespace(req_to_token_pool=SimpleNamespace(req_to_token=REQ_TO_TOKEN))
    assert seam.backend_init_hook(router)(None, backend, runner) is None
    return backend


def _inputs(gen, fb, dtype=torch.bfloat16):
    t = int(fb.extend_seq_lens.sum())
    return (torch.randn(t, HQ * D, generator=gen).to(dtype), torch.randn(t, HKV * D, generator=gen).to(dtype),
            torch.randn(t, HKV * D, generator=gen).to(dtype))  # fmt: skip


def _close(o, ref):
    tol = SLOT.tolerances["bf16"]
    return bool(((o.float() - ref.float()).abs() <= tol.atol + tol.rtol * ref.float().abs()).all())


def test_the_page_table_is_each_requests_cached_prefix_in_the_triton_layout():
    fb = batch(torch.Generator().manual_seed(1))
    got, want = seam.page_table(fb, REQ_TO_TOKEN), reference_table(fb)
    assert [g.dtype for g in got] == [torch.int64, torch.int32, torch.int64]
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))


def test_a_plain_extend_runs_the_armed_kernel_then_writes_the_new_kv(armed):
    gen = torch.Generator().manual_seed(2)
    fb = batch(gen)
    q, k, v = _inputs(gen, fb)
    want = Backend().forward_extend(q, k, v, Layer(), batch(torch.Generator().manual_seed(2)), False)
    before = KV.k.clone()
    armed.reset_counts()
    backend = _hooked(armed)
    o = backend.forward_extend(q, k, v, Layer(), fb)
    assert backend.calls == [] and o.shape == (q.shape[0], HQ * D) and _close(o, want)
    assert armed.counts()[seam.SLOT].routed == 1 and armed.counts()[seam.SLOT].stock == 0
    written = KV.k[fb.out_cache_loc]
    assert torch.equal(written, k.view(-1, HKV, D)) and not torch.equal(before[fb.out_cache_loc], written)


def test_the_page_table_is_built_once_per_forward(armed, monkeypatch):
    built = []
    monkeypatch.setattr(seam, "page_table", lambda fb, table: built.append(fb) or reference_table(fb))
    gen = torch.Generator().manual_seed(3)
    backend, fbs = _hooked(armed), [batch(gen), batch(gen)]
    for fb in fbs:
        for layer_id in range(3):
            backend.forward_extend(*_inputs(gen, fb), Layer(layer_id=layer_id), fb)
    assert built == fbs


@pytest.mark.parametrize(
    "layer,meta,save",
    [
        ({"sliding_window_size": 128}, {}, True),
        ({"logit_cap": 30.0}, {}, True),
        ({"is_cross_attention": True}, {}, True),
        ({"attn_type": SimpleNamespace(value="encoder_only")}, {}, True),
        ({"k_scale": torch.tensor(0.5)}, {}, True),
        ({}, {"use_ragged": False}, True),  # the paged path: speculative verify, draft extend, deterministic mode
        ({}, {"multi_item_params": SimpleNamespace(is_enabled=lambda: True)}, True),
        ({}, {}, False),
    ],
)
def test_calls_the_slot_does_not_compute_go_to_sglang_unchanged(armed, layer, meta, save):
    gen = torch.Generator().manual_seed(4)
    fb = batch(gen)
    armed.reset_counts()
    backend = _hooked(armed, **meta)
    backend.forward_extend(*_inputs(gen, fb), Layer(**layer), fb, save)
    assert backend.calls == [save]
    assert armed.counts()[seam.SLOT].stock == 1 and armed.counts()[seam.SLOT].routed == 0


def test_outside_the_armed_domain_sglang_computes_and_the_seam_writes_the_kv_once(armed):
    gen = torch.Generator().manual_seed(5)
    fb = batch(gen)
    q, k, v = _inputs(gen, fb, torch.float32)  # the fixture declares bf16 and fp16 only
    KV.k, KV.v = KV.k.float(), KV.v.float()
    armed.reset_counts()
    backend = _hooked(armed)
    o = backend.forward_extend(q, k, v, Layer(), fb)
    assert backend.calls == [False] and armed.counts()[seam.SLOT].stock == 1
    assert o.shape == (q.shape[0], HQ * D) and torch.equal(KV.k[fb.out_cache_loc], k.view(-1, HKV, D))


def test_the_seam_is_the_compat_row_and_only_a_flashinfer_engine_hooks_it():
    [s] = seam.SEAMS
    [row] = [r for r in s.checks if r["target"].endswith("forward_extend")]
    assert row["params"] == seam.EXTEND_PARAMS
    assert list(inspect.signature(seam.extend_seam(None, None, None, None)).parameters) == seam.EXTEND_PARAMS[1:]
    [triton] = prefill_attention.SEAMS
    hooked = {seam.SLOT}
    assert s.wanted(hooked, backend="flashinfer") and not s.wanted(hooked, backend="triton")
    assert triton.wanted(hooked, backend="triton") and not triton.wanted(hooked, backend="flashinfer")
    assert s.wanted(hooked) and triton.wanted(hooked)  # unnamed: both (the live tier hooks every seam)


def test_the_plugin_hooks_the_prefill_seam_of_the_engines_backend_only(armed, monkeypatch):
    from hotfloat.seams import ENV_ATTENTION
    from hotfloat_sglang.plugin import seam_hooks

    def targets():
        return {t for t, _ in seam_hooks(armed)[0]}

    for backend, hooked, unhooked in (("flashinfer", seam.TARGET, prefill_attention.TARGET),
                                      ("triton", prefill_attention.TARGET, seam.TARGET)):  # fmt: skip
        monkeypatch.setenv(ENV_ATTENTION, backend)
        assert hooked in targets() and unhooked not in targets()


def test_the_registry_refuses_one_slot_hooked_twice_on_one_target(monkeypatch):
    from hotfloat_sglang import seams

    [s] = seam.SEAMS
    monkeypatch.setattr(seams, "declared", lambda *_: [s, s])
    seams.registry.cache_clear()
    try:
        with pytest.raises(ValueError, match=f"attention.prefill on {seam.TARGET}"):
            seams.registry()
    finally:
        seams.registry.cache_clear()


def test_the_backend_seam_table_is_the_plugins_registry():
    """The validator's table of which backend hooks which attention slot (hotfloat.qualify.records, read before any
    engine boots, where the plugin is not importable) is the registry's own."""
    from hotfloat.qualify.records import BACKEND_SEAMS
    from hotfloat_sglang.seams import registry

    got: dict[str, set[str]] = {}
    for seam in registry():
        for slot in seam.slots if seam.backend else ():
            got.setdefault(slot, set()).add(seam.backend)
    assert got == {slot: set(on) for slot, on in BACKEND_SEAMS.items()}
