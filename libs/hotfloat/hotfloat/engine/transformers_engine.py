"""The reference serving engine: a transformers Qwen2/Llama causal LM whose MLP activation and RMSNorm go through
the slot seams, served by static batching with greedy decoding.

Decode modes (chosen by the validator, part of the engine identity): "eager" runs the model's own forward with a
transformers DynamicCache every step; "static" decodes over a fixed-capacity KV cache with fixed shapes
(hotfloat.engine.graphs); "graph" additionally replays each decode step as a captured CUDA graph (CUDA only).

The model is built from a config with seeded random weights (no downloads), so every engine process of a
qualification holds bit-identical weights. Gate and up projections are merged into one matrix, as serving engines
do, so the activation seam sees one (T, 2d) tensor exactly like `activation.silu_and_mul`'s ABI.
"""

from __future__ import annotations

import gc
import hashlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from ..slots import DTYPES
from .graphs import StaticDecoder, capacity_for
from .presets import PRESETS

DECODE_MODES = ("eager", "static", "graph")


def stock_silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """The engine's own activation, used whenever the seam does not route to a bundle."""
    d = x.shape[-1] // 2
    return nn.functional.silu(x[..., :d]) * x[..., d:]


def stock_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """The engine's own RMSNorm: fp32 reduction and scaling, one rounding to the input dtype at the end."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


class SeamMLP(nn.Module):
    """Gated MLP with merged gate/up projection; the activation is a seam call. `extra_passes` repeats the stock
    activation into a discarded tensor: the calibration's sleep-free slowdown of known cost."""

    def __init__(self, mlp: nn.Module, router, extra_passes: int = 0):
        super().__init__()
        self.gate_up = nn.Linear(mlp.gate_proj.in_features, 2 * mlp.gate_proj.out_features, bias=False)
        self.gate_up.weight = nn.Parameter(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]).detach())
        self.down_proj = mlp.down_proj
        self.router = router
        self.extra_passes = extra_passes

    def forward(self, x):
        h = self.gate_up(x)
        for _ in range(self.extra_passes):
            stock_silu_and_mul(h)
        return self.down_proj(self.router.silu_and_mul(h, stock=stock_silu_and_mul))


class SeamRMSNorm(nn.Module):
    """RMSNorm whose every call is a `norm.rmsnorm` seam call."""

    def __init__(self, norm: nn.Module, router):
        super().__init__()
        self.weight = norm.weight
        self.eps = float(getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6)))
        self.router = router

    def forward(self, x):
        return self.router.rmsnorm(x, self.weight, self.eps, stock=stock_rmsnorm)


@dataclass
class Engine:
    """A built model on its device, ready to serve batches."""

    model: nn.Module
    device: torch.device
    identity: str
    """SHA-256 of the config, dtype and library versions: equal identities mean the same engine."""
    cache_arg: str
    """The forward() keyword for the KV cache: 'cache' in newer transformers, 'past_key_values' before."""
    router: object
    decode: str
    """One of DECODE_MODES."""
    decoders: dict[tuple[int, int], StaticDecoder] = field(default_factory=dict)
    """Static decoders by (batch size, cache capacity), kept for the engine's lifetime with their graphs."""


def build_engine(
    preset: str, dtype: str, device: str, weight_seed: int, router, extra_passes: int = 0, decode: str = "eager"
) -> Engine:
    """Builds the preset model with seeded weights and routes its activation and norms through `router`."""
    import transformers

    if decode not in DECODE_MODES or (decode == "graph" and device != "cuda"):
        raise ValueError(f"decode mode {decode!r} is not one of {DECODE_MODES} or needs CUDA (graph)")

    spec = dict(PRESETS[preset])
    arch = spec.pop("arch")
    config_cls = transformers.Qwen2Config if arch == "qwen2" else transformers.LlamaConfig
    model_cls = transformers.Qwen2ForCausalLM if arch == "qwen2" else transformers.LlamaForCausalLM
    config = config_cls(**spec, max_position_embeddings=4096, rms_norm_eps=1e-6, attn_implementation="sdpa")
    torch.manual_seed(weight_seed)
    dev = torch.device(device)
    with dev:
        model = model_cls(config)
    gen = torch.Generator(device="cpu").manual_seed(weight_seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
    model = model.to(DTYPES[dtype]).eval()
    _patch(model, router, extra_passes)
    ident = hashlib.sha256(
        json.dumps(
            {
                "config": config.to_dict(),
                "dtype": dtype,
                "seed": weight_seed,
                "decode": decode,
                "torch": torch.__version__,
                "transformers": transformers.__version__,
            },
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return Engine(model=model, device=dev, identity=ident, cache_arg=cache_arg, router=router, decode=decode)


def _patch(model: nn.Module, router, extra_passes: int) -> None:
    """Swaps every gated MLP and RMSNorm module for its seam version (found by structure, so Llama works too)."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if all(hasattr(child, a) for a in ("gate_proj", "up_proj", "down_proj")):
                setattr(parent, name, SeamMLP(child, router, extra_passes))
            elif type(child).__name__.endswith("RMSNorm"):
                setattr(parent, name, SeamRMSNorm(child, router))


@torch.inference_mode()
def serve_batch(
    engine: Engine,
    prompts: list[list[int]],
    max_new: list[int],
    on_done: Callable[[int, list[int], list[float], list[float]], None],
) -> int:
    """Greedy-decodes a left-padded batch; calls on_done(i, tokens, logprobs, margins) the moment request i has all
    its tokens. Returns the tokens generated for the requests. One host sync per step, as a serving loop has."""
    dev = engine.device
    n, width = len(prompts), max(len(p) for p in prompts)
    ids = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    ids, mask = ids.to(dev), mask.to(dev)
    steps = max(max_new)
    decoder = _decoder(engine, n, capacity_for(width, steps))
    logits = decoder.prefill(ids, mask)
    tokens: list[list[int]] = [[] for _ in range(n)]
    lps: list[list[float]] = [[] for _ in range(n)]
    margins: list[list[float]] = [[] for _ in range(n)]
    for step in range(steps):
        top = torch.log_softmax(logits.float(), dim=-1).topk(2, dim=-1)
        chosen = top.indices[:, 0]
        rows = torch.stack(
            [chosen.double(), top.values[:, 0].double(), (top.values[:, 0] - top.values[:, 1]).double()], 1
        )
        for i, (tok, lp, margin) in enumerate(rows.tolist()):
            if step < max_new[i]:
                tokens[i].append(int(tok))
                lps[i].append(lp)
                margins[i].append(margin)
                if step + 1 == max_new[i]:
                    on_done(i, tokens[i], lps[i], margins[i])
        if step + 1 == steps:
            break
        logits = decoder.step(chosen)
    return sum(max_new)


def _decoder(engine: Engine, batch: int, capacity: int):
    if engine.decode == "eager":
        return DynamicDecoder(engine)
    key = (batch, capacity)
    if key not in engine.decoders:
        engine.decoders[key] = StaticDecoder(engine.model, engine.router, batch, capacity, engine.decode == "graph")
    return engine.decoders[key]


class DynamicDecoder:
    """The eager decode: the model's own forward every step over a transformers DynamicCache that grows per step."""

    def __init__(self, engine: Engine):
        from transformers import DynamicCache

        self.model, self.cache = engine.model, {engine.cache_arg: DynamicCache()}

    def prefill(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        self.mask, self.pos = mask, (mask.cumsum(-1) - 1).clamp(min=0)
        return self._forward(ids)

    def step(self, chosen: torch.Tensor) -> torch.Tensor:
        self.mask = torch.cat([self.mask, torch.ones_like(self.mask[:, :1])], dim=1)
        self.pos = self.pos[:, -1:] + 1
        return self._forward(chosen[:, None])

    def _forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(
            input_ids=ids, attention_mask=self.mask, position_ids=self.pos, use_cache=True, **self.cache
        ).logits[:, -1, :]


class TransformersEngine:
    """The worker's view of the stand-in engine: arm the bundle in this process, build, serve, count, and answer
    the validator's twin and audit requests (hotfloat.engine.worker)."""

    def __init__(self, spec: dict):
        import os

        from ..audit.config import AuditConfig
        from ..seams import arm

        if spec["device"] == "cpu":
            os.environ["TRITON_INTERPRET"] = "1"
            torch.set_num_threads(spec.get("threads", 1))
        self.router = arm(
            spec.get("bundle"),
            identity=spec.get("identity"),
            twin_of=spec.get("twin_of"),
            twin_identity=spec.get("twin_identity"),
            audit=AuditConfig.from_wire(spec.get("audit")),
            handicap_us=float(spec.get("handicap_us", 0.0)),
        )
        self.engine = build_engine(
            spec["preset"],
            spec["dtype"],
            spec["device"],
            spec["weight_seed"],
            self.router,
            spec.get("extra_passes", 0),
            spec["decode"],
        )
        self.identity = self.engine.identity
        self.info = {"engine": "transformers", "torch": torch.__version__, "decode": spec["decode"]}

    def serve(self, prompts, max_new, on_done) -> None:
        serve_batch(self.engine, prompts, max_new, on_done)
        if self.engine.device.type == "cuda":
            torch.cuda.synchronize(self.engine.device)

    def freeze_gc(self) -> None:
        """After warm-up: the model and everything built with it leave the collector's view."""
        gc.collect()
        gc.freeze()

    def reset_counts(self) -> None:
        self.router.reset_counts()

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        c = self.router.counts()
        return {k: v.routed for k, v in c.items()}, {k: v.stock for k, v in c.items()}

    def set_twin(self, slots: list[str]) -> list[str]:
        """Enables the twin's nudge for `slots`; returns those enabled (the router's twin_of declares them)."""
        return sorted(self.router.set_twin_slots(set(slots)))

    def audit(self) -> dict:
        """The round's audit (hotfloat.seams.audit.Auditor.dump), between passes."""
        if self.router.audit is None:
            return {"strata": [], "entries": [], "unaudited": {}, "error": None}
        return self.router.audit.dump()
