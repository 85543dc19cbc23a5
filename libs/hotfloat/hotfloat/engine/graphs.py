"""Static-cache decoding and CUDA-graph replay for the reference engine, as SGLang serves decode.

Every decode step of a batch has the same shapes: a KV cache of fixed capacity, one token per request, a mask over
the whole capacity. On CUDA one step is captured into a `torch.cuda.CUDAGraph` per (batch size, capacity) and
replayed; only the next token ids, positions and write column are copied into static buffers between replays, so a
step costs one graph launch instead of hundreds of Python-issued kernel launches, and the host's jitter leaves the
latencies. Prefill stays eager. The attention and the KV cache are this module's own (transformers' cache API differs
between its 4.5x and 5.x releases and computes positions from data); projections, rotary embedding, norms and MLPs
are the model's own modules, so the seam calls are exactly the eager engine's. Off CUDA the same steps run eagerly.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..seams import SeamCount

CAPACITY_STEP = 256
"""KV-cache capacities are rounded up to this, so batches of similar length share one cache and one graph."""
WARMUP_STEPS = 2
"""Eager decode steps on the capture stream before capturing (lazy library handles, Triton compilation)."""


class GraphCaptureError(Exception):
    """The decode step could not be captured into a CUDA graph: in a candidate engine, the candidate's fault."""


def capacity_for(width: int, steps: int) -> int:
    """Cache columns a batch needs (prompt width plus one per decode step after the first), rounded up."""
    need = width + max(steps - 1, 0)
    return -(-need // CAPACITY_STEP) * CAPACITY_STEP


class StaticDecoder:
    """One batch size and cache capacity: a static KV cache, static decode inputs and, with `graphed`, one decode
    step captured on first use and replayed for every later step of every batch of this shape.

    Seam counts: a replay runs the captured kernels without reaching the router, so after each replay the calls
    the capture routed (and sent stock) are added to the router's counts again; the capture's own counts stand for
    the replay right after it. Routed counts therefore equal the calls that really executed, eager or replayed."""

    def __init__(self, model: nn.Module, router, batch: int, capacity: int, graphed: bool):
        cfg, dev = model.config, model.device
        self.model, self.router, self.graphed = model, router, graphed
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        shape = (batch, self.kv_heads, capacity, self.head_dim)
        dtype = model.lm_head.weight.dtype
        self.keys = [torch.zeros(shape, dtype=dtype, device=dev) for _ in range(cfg.num_hidden_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=dev) for _ in range(cfg.num_hidden_layers)]
        self.ids = torch.zeros((batch, 1), dtype=torch.long, device=dev)
        self.pos = torch.zeros((batch, 1), dtype=torch.long, device=dev)
        self.col = torch.zeros((1,), dtype=torch.long, device=dev)
        """The cache column the next decode step writes (the same for every request: prompts are left-padded)."""
        self.cols = torch.arange(capacity, device=dev)
        self.visible = torch.zeros((batch, capacity), dtype=torch.bool, device=dev)
        """Columns a request may attend to once written: its own prompt tokens and everything generated."""
        self.graph: torch.cuda.CUDAGraph | None = None
        self.per_replay: dict[str, SeamCount] = {}
        self.out: torch.Tensor | None = None

    def prefill(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Eager forward of the left-padded prompts (mask 1 on real tokens); returns the last position's logits."""
        n, width = ids.shape
        real = mask.bool()
        self.visible[:, :width].copy_(real)
        self.visible[:, width:].fill_(True)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        cols = self.cols[:width]
        causal = cols[None, :] <= cols[:, None]
        # A pad query sees only itself, so no row of the mask is empty (an empty row makes SDPA return NaN).
        keep = causal & (real[:, None, :] | torch.eye(width, dtype=torch.bool, device=ids.device))
        logits = self._forward(ids, pos, cols, keep[:, None], cached=False)
        self.pos.copy_(pos[:, -1:])
        self.col.fill_(width - 1)
        return logits

    def step(self, chosen: torch.Tensor) -> torch.Tensor:
        """One decode step on the tokens just chosen; returns logits (a static buffer, valid until the next step)."""
        self.ids.copy_(chosen[:, None])
        self.pos.add_(1)
        self.col.add_(1)
        if not self.graphed:
            return self._decode()
        if self.graph is None:
            self._capture()
        else:
            self.router.add_counts(self.per_replay)
        self.graph.replay()
        return self.out

    def _decode(self) -> torch.Tensor:
        keep = (self.visible & (self.cols <= self.col))[:, None, None, :]
        return self._forward(self.ids, self.pos, self.col, keep, cached=True)

    def _capture(self) -> None:
        """Warm-up and capture on one side stream (the PyTorch recipe); any failure means the step cannot be served
        through a graph."""
        current = torch.cuda.current_stream(self.ids.device)
        stream = torch.cuda.Stream(self.ids.device)
        stream.wait_stream(current)
        with torch.cuda.stream(stream):
            for _ in range(WARMUP_STEPS):
                self._decode()
        current.wait_stream(stream)
        before = self.router.counts()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=stream):
                out = self._decode()
        except Exception as e:  # whatever the captured code raised: the reason goes back as data
            raise GraphCaptureError(f"kernel is not CUDA-graph capturable: {type(e).__name__}: {e}"[:2000]) from None
        after = self.router.counts()
        self.per_replay = {
            k: SeamCount(after[k].routed - before[k].routed, after[k].stock - before[k].stock) for k in after
        }
        self.graph, self.out = graph, out

    def _forward(self, ids, pos, write, keep, cached: bool) -> torch.Tensor:
        """The decoder stack: writes this forward's keys and values into the cache at columns `write` and attends
        with the boolean mask `keep` (batch, 1, queries, keys) to the whole cache (`cached`, decode) or to its own
        keys (prefill); returns the last position's logits."""
        base = self.model.model
        n, t = ids.shape
        h = base.embed_tokens(ids)
        cos, sin = (x[:, None] for x in base.rotary_emb(h, pos))
        for layer, k_cache, v_cache in zip(base.layers, self.keys, self.values, strict=False):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q = attn.q_proj(x).view(n, t, -1, self.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(n, t, -1, self.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(n, t, -1, self.head_dim).transpose(1, 2)
            q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
            k_cache.index_copy_(2, write, k)
            v_cache.index_copy_(2, write, v)
            o = self._attend(q, k_cache if cached else k, v_cache if cached else v, keep, fold=cached)
            h = h + attn.o_proj(o.transpose(1, 2).reshape(n, t, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return self.model.lm_head(base.norm(h)[:, -1])

    def _attend(self, q, k, v, keep, fold: bool) -> torch.Tensor:
        """Grouped-query attention. Decode folds the query heads that share a KV head into that head's queries (no
        copy of the cache); prefill repeats the prompt's keys and values, as transformers does."""
        n, heads, t, d = q.shape
        groups = heads // self.kv_heads
        if fold:
            out = F.scaled_dot_product_attention(q.reshape(n, self.kv_heads, groups, d), k, v, attn_mask=keep)
            return out.reshape(n, heads, 1, d)
        k, v = (x[:, :, None].expand(n, self.kv_heads, groups, t, d).reshape(n, heads, t, d) for x in (k, v))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)
