"""The in-engine audit: every call of an audited slot, in every engine, leaves a sealed copy of a keyed window of
what it saw and returned, and each round keeps a uniform sample of them for the validator to recompute.

Every engine of a qualification (B, C, B') gets the same secret key; calls are grouped in strata, one per slot,
sizes, dtype and scalars (hotfloat.audit.layout), each with a ring on the device. Every call of a stratum runs the
same two taps, routed or stock, eager or replayed from a CUDA graph: before the call, its execution number
e and the keyed window, and a sealed copy of the inputs' window into the ring's stage row; after it, the inputs'
window read again (the recheck: its MAC partials only, into the recheck row), the keyed decision (Algorithm R over
the round's executions: a uniform sample of `keep` of them), then the stage, the recheck's partials and a sealed copy
of the outputs' window into the chosen row, or into the trash row. The recheck holds the bundle to the slot's one
contract in the engine as verify does offline: a kernel writes its outputs only. One that computes its answer and then
rewrites what it was handed (the batch's page table, index pointers or KV cache, which the next layers' calls read)
leaves every later call right for the inputs it saw; the validator finds it in the kept call whose two input MACs
differ. Nothing is decided on the host and nothing
syncs, so an audited call is indistinguishable from any other; the stage and the rows hold ciphertext, so a kernel
that reads device memory it was not handed learns neither the window nor the decision, and one that rewrites an
entry after the fact breaks its MAC (hotfloat.audit.philox). Counters run over the whole run: `dump()` after each
round (the engine idle) returns the round's kept entries and per-stratum call counts, then starts the next round.

The audited slots are the candidate's declared ones (`AuditConfig.slots`), in every engine, so that B and B' hook and
tap the same calls as C. Slots without a layout (the MoE and collective slots) are never audited: the validator
refuses a candidate that routes one of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..audit.config import AuditConfig
from ..audit.layout import gather, layout_for, plain_dims, tap_words, to_words, window
from .audit_ring import Ring
from ..audit.philox import PARAMS, WINDOW, draw, kept_row, mac, routed_mac, seal_words
from ..slots import Role, SlotSpec
from .domain import DTYPE_NAMES

MAX_STRATA = 256
"""Strata per slot at most; calls of strata past it are counted unaudited (the same in every engine)."""


class TorchTaps:
    """The taps on the host, for CPU engines: the same words and rows the CUDA taps (hotfloat.seams.audit_triton)
    write on the device, each tap sealing only the words it writes (numpy's Philox: a CPU engine's calls are small)."""

    def __init__(self, key: int):
        self.key = key

    @staticmethod
    def parts_for(lay) -> tuple[int, int]:
        """(MAC partial sums per row, the trailing ones that are the recheck's): the pre tap's, the post tap's, the
        routed flag's term, the recheck's."""
        return 4, 1

    def pre(self, ring: Ring, tensors: dict, stage: int | None = None) -> None:
        """Seals the call's window of `tensors` into the stage row (or `stage`: the recheck's row)."""
        lay, e = ring.layout, int(ring.state[0]) + 1
        stage = ring.keep + 1 if stage is None else stage
        params = window(lay, draw(self.key, e, lay.ring, WINDOW), tensors)
        idx = tap_words(lay, output=False)
        plain = to_words(lay, params, gather(lay, params, tensors, output=False)).numpy().view(np.uint64)[idx]
        ks, weight = seal_words(self.key, e, lay.ring, idx)
        ring.data[stage, torch.from_numpy(idx.view(np.int64))] = torch.from_numpy((plain ^ ks).view(np.int64))
        ring.macs[stage, 0] = _signed(mac(plain, weight))

    def post(self, ring: Ring, inputs: dict, outputs: dict, routed: bool) -> None:
        lay, stage, recheck = ring.layout, ring.keep + 1, ring.keep + 2
        self.pre(ring, inputs, recheck)
        e, base = int(ring.state[0]) + 1, int(ring.state[1])
        ring.state[0] = e
        row = kept_row(self.key, e, base, lay.ring, ring.keep)
        ks, _ = seal_words(self.key, e, lay.ring, np.arange(PARAMS, dtype=np.uint64))
        params = (ring.data[stage, :PARAMS].numpy().view(np.uint64) ^ ks).view(np.int64).tolist()
        idx, written = tap_words(lay, output=True), torch.from_numpy(tap_words(lay, output=False).view(np.int64))
        plain = to_words(lay, params, gather(lay, params, outputs, output=True)).numpy().view(np.uint64)[idx]
        ks, weight = seal_words(self.key, e, lay.ring, idx)
        ring.data[row, written] = ring.data[stage, written]
        ring.data[row, torch.from_numpy(idx.view(np.int64))] = torch.from_numpy((plain ^ ks).view(np.int64))
        ring.macs[row, 0] = ring.macs[stage, 0]
        ring.macs[row, 1] = _signed(mac(plain, weight))
        ring.macs[row, 2] = _signed(routed_mac(self.key, e, lay.ring, routed))
        ring.macs[row, 3] = ring.macs[recheck, 0]
        ring.head[row, 0], ring.head[row, 1] = e, int(routed)


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


@dataclass
class Call:
    """A call between its two taps: the post tap reads its inputs again."""

    ring: Ring
    taps: object
    inputs: dict


class Auditor:
    """The router's audit: a ring per stratum, both taps on every call of an audited slot, a dump per round."""

    def __init__(self, config: AuditConfig):
        self.config = config
        self.rings: dict[tuple, Ring] = {}
        self.arenas: dict[torch.device, _Arena] = {}
        self.unaudited: dict[str, int] = {}
        """Calls per slot in strata past MAX_STRATA (counted on the host: eager calls and captures)."""
        self.error: str | None = None
        self._taps: dict[str, object] = {}

    @property
    def slots(self) -> tuple[str, ...]:
        return self.config.audited

    def warm(self, dtype: str) -> None:
        """On a GPU, compiles the taps' kernels for the engine's dtype before any candidate code is imported."""
        if torch.cuda.is_available():
            dev = torch.device("cuda", torch.cuda.current_device())
            self._taps_for(dev).warm(self.slots, dtype, dev)

    def stage(self, spec: SlotSpec, tensors: dict, values: dict, dims: dict) -> Call | None:
        """Before a call of `spec` (inputs as the router bound them): its ring's pre tap; None for a slot not
        audited."""
        if spec.name not in self.slots:
            return None
        first = tensors[spec.of_role(Role.INPUT)[0].name]
        dims = plain_dims(dims)
        if not dims.get(spec.count_dim) or (spec.name == "attention.prefill" and not dims.get("B")):
            return None  # a call with nothing to compute: nothing to audit
        scalars = {a.name: float(values[a.name]) for a in spec.of_role(Role.SCALAR)}
        key = (spec.name, tuple(sorted(dims.items())), first.dtype, tuple(sorted(scalars.items())), first.device)
        ring = self.rings.get(key)
        if ring is None:
            ring = self._ring(spec, dims, first, scalars, key)
            if ring is None:
                return None
        taps = self._taps_for(first.device)
        taps.pre(ring, tensors)
        return Call(ring, taps, tensors)

    def commit(self, call: Call, outputs: dict, routed: bool) -> None:
        """After the call: its ring's post tap. Whether a call is routed depends only on its stratum (an op's domain
        is dtypes, architectures and token counts), so the ring remembers it for its replays too."""
        call.taps.post(call.ring, call.inputs, outputs, routed)
        call.ring.routed = call.ring.routed or routed

    def dump(self) -> dict:
        """The round that ended: {"strata": [{slot, dims, dtype, scalars, calls, routed}], "entries": [(header,
        ciphertext bytes)], "unaudited": {slot: calls}, "error"}; then the next round starts. Syncs with the
        devices, so only while the engine is idle."""
        strata, entries = [], []
        with torch.inference_mode():  # rings made inside an inference-mode forward are inference tensors
            for ring in self.rings.values():
                self._dump_ring(ring, strata, entries)
        out = {"strata": strata, "entries": entries, "unaudited": dict(self.unaudited), "error": self.error}
        self.unaudited = {}
        return out

    def _dump_ring(self, ring: Ring, strata: list, entries: list) -> None:
        calls, kept = ring.entries(self.config.key)
        lay = ring.layout
        ident = {"slot": lay.slot, "dims": dict(lay.dims), "dtype": lay.dtype, "scalars": dict(lay.scalars)}
        strata.append({**ident, "calls": calls, "routed": ring.routed, "kept": len(kept)})
        for k in kept:
            head = {**ident, "execution": k["execution"], "routed": k["routed"], "mac": str(k["mac"])}
            head["recheck"] = str(k["recheck"])
            entries.append((head, k["words"].numpy().tobytes()))
        ring.next_round()

    def _taps_for(self, device: torch.device):
        taps = self._taps.get(device.type)
        if taps is None:
            if device.type == "cuda":
                from .audit_triton import TritonTaps

                taps = TritonTaps(self.config.key)
            else:
                taps = TorchTaps(self.config.key)
            self._taps[device.type] = taps
        return taps

    def _ring(self, spec: SlotSpec, dims: dict, first: torch.Tensor, scalars: dict, key: tuple) -> Ring | None:
        cfg = self.config
        if sum(k[0] == spec.name for k in self.rings) >= MAX_STRATA:
            self.unaudited[spec.name] = self.unaudited.get(spec.name, 0) + 1
            return None
        lay = layout_for(spec, dims, DTYPE_NAMES[first.dtype], scalars, cfg.rows, cfg.context)
        if lay is None:
            return None
        dev, capturing = first.device, first.is_cuda and torch.cuda.is_current_stream_capturing()
        parts = self._taps_for(dev).parts_for(lay)
        if not capturing and dev.type == "cuda" and dev not in self.arenas:
            self.arenas[dev] = _Arena(cfg.arena_mib, dev)
        carve = None
        if capturing:
            arena = self.arenas.get(dev)
            carve = arena.carve if arena is not None else None
            if carve is None:
                self.error = f"a {spec.name} stratum was first seen inside a CUDA-graph capture before any eager call"
                return None
        try:
            ring = Ring(lay, cfg.keep, dev, *parts, carve)
        except MemoryError as e:
            self.error = str(e)
            return None
        self.rings[key] = ring
        return ring


class _Arena:
    """Zeroed device memory reserved before any capture, carved into the rings of strata first seen inside one (a
    capture's own allocations would come from the graph's pool, whose blocks freed earlier in the capture its
    kernels rewrite on every replay)."""

    def __init__(self, mib: int, device: torch.device):
        self.space = torch.zeros((mib << 20) // 8, dtype=torch.int64, device=device)
        self.used = 0

    def carve(self, shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
        need = sum(math.prod(s) for s in shapes.values())
        if self.used + need > self.space.numel():
            raise MemoryError(f"the audit arena ({self.space.numel() * 8 >> 20} MiB) is exhausted")
        out = {}
        for k, s in shapes.items():
            out[k] = self.space[self.used : self.used + math.prod(s)].view(s)
            self.used += math.prod(s)
        return out
