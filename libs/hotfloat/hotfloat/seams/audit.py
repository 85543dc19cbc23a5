"""The sampled in-engine audit: copies of a secret sample of slot calls, kept on the device for the validator.

Every engine of a qualification (B, C, B') gets the same secret key and rate, and the audit covers every call of an
audited slot that reaches the router, routed or stock, so its work is the same in all of them and B's audit checks
the stock kernels too. A call site is the n-th call of a slot since the engine started (captures included), the
same n in every engine; the key picks the audited sites on the host and, per site, a window of at most `rows`
consecutive rows of a row-wise slot, or of one request's new tokens for attention.prefill when the qualification
names it (hotfloat.seams.audit_prefill; eager calls only). attention.decode and the MoE slots are not audited yet:
under graphs the extent of a request's KV pages is data-dependent and a fixed-size copy of them per call is
megabytes.

An audited site copies its inputs' window into staging before the call. After the call returns it bumps the
site's device counter and commits staging and the outputs' window into a small device ring at the row a secret
table (drawn from the key) gives for that execution: a ring row with probability `rate`, else a trash row. The
counter and the table live on the device, so each CUDA-graph replay decides afresh with no host sync; the kernel is
never handed either, the lookup runs after it returned, and the same kernels run whether or not the execution is
kept (index_copy_ at a device index: capture-safe). An eager call is a site of its own and always commits; the latest
`capacity` eager sites are kept, and a captured site's RING rows each hold the latest execution committed there.
`dump()` (after the timed window) copies them to the host as JSON headers and raw bytes, never pickle;
hotfloat.qualify.audit recomputes them with the slot's fp32 reference.
"""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import asdict, dataclass

import torch

from ..slots import Role, SlotSpec
from .audit_prefill import SLOT as PREFILL, PrefillSite
from .audit_dump import pack_entry

AUDITED = ("activation.silu_and_mul", "norm.rmsnorm", "norm.fused_add_rmsnorm")
"""Row-wise slots, always audited: a window of rows is a whole call of its own."""
PER_REQUEST = (PREFILL,)
"""Slots audited a request at a time (hotfloat.seams.audit_prefill), when the qualification names them
(`AuditConfig.slots`: the candidate's), so that every engine hooks their seams."""
AUDITABLE = AUDITED + PER_REQUEST
RING = 4
"""Commits a captured site keeps (its latest)."""
CELLS = 1 << 14
"""Zeroed int64 counters reserved per device at its first eager call: a site made inside a capture takes its
counters from here, because a zero-fill captured with it would run again on every replay."""
TABLE = 1 << 14
"""Length of the secret sampling table: for each execution of a captured site (its counter mod TABLE, from the
site's own offset) the ring row to commit to, or the trash row; a row with probability `rate`."""
MAX_ENTRY_BYTES = 2 << 20
"""One entry's bytes at most (wide calls get fewer rows), so that every entry fits a wire message."""
ENV = "HOTFLOAT_AUDIT"
"""The audit settings as JSON, for engines armed from the environment (the SGLang plugin)."""
_M64 = (1 << 64) - 1


@dataclass(frozen=True)
class AuditConfig:
    """The validator's audit settings, the same for every engine of a qualification; the key is secret."""

    key: int
    rate: float = 1 / 16
    """Fraction of call sites audited, and the chance that one execution of a captured site commits."""
    rows: int = 8
    """Rows kept per audited call at most."""
    capacity: int = 32
    """Eager audited calls kept (the latest)."""
    arena_mib: int = 128
    """Device memory reserved per GPU for the buffers of captured sites; sites past it are not audited."""
    slots: tuple[str, ...] = ()
    """Per-request slots audited besides the row-wise ones (PER_REQUEST; others are ignored)."""

    @classmethod
    def from_spec(cls, spec: dict) -> AuditConfig | None:
        """From an engine spec's `audit_key`, `audit_rate`, `audit_rows`, `audit_capacity`, `audit_arena_mib`; None
        without a key."""
        if spec.get("audit_key") is None:
            return None
        d = cls(0)
        return cls(
            int(spec["audit_key"]),
            float(spec.get("audit_rate", d.rate)),
            int(spec.get("audit_rows", d.rows)),
            int(spec.get("audit_capacity", d.capacity)),
            int(spec.get("audit_arena_mib", d.arena_mib)),
            tuple(spec.get("audit_slots", ())),
        )

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, text: str | None) -> AuditConfig | None:
        if not text:
            return None
        fields = json.loads(text)
        return cls(**{**fields, "slots": tuple(fields.get("slots", ()))})


def mix(*values: int) -> int:
    """A 64-bit hash of integers (splitmix64 rounds): which sites and rows the key picks."""
    h = 0
    for v in values:
        h = (h ^ (v & _M64)) + 0x9E3779B97F4A7C15 & _M64
        h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9 & _M64
        h = (h ^ (h >> 27)) * 0x94D049BB133111EB & _M64
        h ^= h >> 31
    return h


class Site:
    """One audited call site: staging for its inputs' window, a ring of commits and its counters on the device.

    `cells` holds the execution counter, then per ring row the execution committed there (0: none) and a trash row;
    `table` says for each execution (counter mod its length) the ring row to commit to, or the trash row."""

    def __init__(
        self,
        spec: SlotSpec,
        n: int,
        tensors: dict,
        scalars: dict,
        window: tuple[int, int, int],
        slots: int,
        table: torch.Tensor,
        cells: torch.Tensor,
        buffers: dict[str, torch.Tensor],
    ):
        self.slot, self.n, self.scalars, self.window = spec.name, n, scalars, window
        self.slots, self.table, self.cells = slots, table, cells
        self.rowwise = {a.name for a in spec.args if a.shape and a.shape[0] == spec.count_dim}
        self.stage = {a.name: buffers[f"stage.{a.name}"] for a in spec.of_role(Role.INPUT)}
        self.ring = {a.name: buffers[a.name] for a in spec.args if a.role in (Role.INPUT, Role.OUTPUT)}

    @staticmethod
    def shapes(spec: SlotSpec, dims: dict, rows: int, slots: int) -> dict[str, tuple[int, ...]]:
        """Shapes of a site's staging (`stage.<input>`) and ring buffers: each row-wise argument cut to `rows`."""
        cut = {
            a.name: (rows, *spec.shape_of(a, dims)[1:]) if a.shape[0] == spec.count_dim else spec.shape_of(a, dims)
            for a in spec.args
            if a.role in (Role.INPUT, Role.OUTPUT)
        }
        return {
            **{f"stage.{a.name}": cut[a.name] for a in spec.of_role(Role.INPUT)},
            **{k: (slots + 1, *s) for k, s in cut.items()},
        }

    def cut(self, name: str, t: torch.Tensor) -> torch.Tensor:
        """The audited window of a row-wise argument (leading dims folded into rows), the whole of any other."""
        if name not in self.rowwise:
            return t
        start, rows, _ = self.window
        return t.reshape(-1, t.shape[-1])[start : start + rows]

    def copy_inputs(self, tensors: dict) -> None:
        for name, buf in self.stage.items():
            buf.copy_(self.cut(name, tensors[name]))

    def commit(self, outputs: dict[str, torch.Tensor]) -> None:
        """After the call: counts the execution and keeps inputs and outputs at the ring row the secret table gives
        for it (the trash row when this execution is not sampled); the same kernels run either way."""
        e = self.cells[:1].add_(1)
        idx = self.table.index_select(0, e % len(self.table))
        for name, buf in self.stage.items():
            self.ring[name].index_copy_(0, idx, buf[None])
        for name, t in outputs.items():
            self.ring[name].index_copy_(0, idx, self.cut(name, t)[None])
        self.cells[1:].index_copy_(0, idx, e)

    def entries(self) -> list[tuple[dict, bytes]]:
        """Committed entries as (header, bytes), the tensors' offsets relative to the entry's bytes."""
        kept, out = self.cells[1:].cpu(), []
        for r in range(self.slots):
            if int(kept[r]) < 1:
                continue
            head = {"slot": self.slot, "site": self.n, "execution": int(kept[r]), "rows": list(self.window)}
            out.append(pack_entry(head | {"scalars": self.scalars}, ((n, ring[r]) for n, ring in self.ring.items())))
        return sorted(out, key=lambda e: e[0]["execution"])


class _Device:
    """What the audit needs on one device before any capture: zeroed counters and buffer space for captured sites,
    and the secret sampling table (twice over, so a site's view at its own offset is a plain slice). A capture may
    not allocate them itself: a zero-fill captured with a counter runs again on every replay, and memory from the
    graph's pool reuses blocks freed earlier in the capture, whose kernels rewrite them on every replay."""

    def __init__(self, config: AuditConfig, device: torch.device):
        g = torch.Generator().manual_seed(mix(config.key, 3) >> 1)
        rows = torch.randint(0, RING, (TABLE,), generator=g)
        table = torch.where(torch.rand(TABLE, generator=g) < config.rate, rows, RING)
        self.table = torch.cat([table, table]).to(device)
        self.always = torch.zeros(1, dtype=torch.int64, device=device)
        self.cells, self.used = torch.zeros(CELLS, dtype=torch.int64, device=device), 0
        self.space = torch.empty(
            config.arena_mib << 20 if device.type == "cuda" else 0, dtype=torch.uint8, device=device
        )
        self.filled = 0

    def carve(self, shapes: dict[str, tuple[int, ...]], dtype: torch.dtype) -> dict[str, torch.Tensor] | None:
        """Buffers of these shapes from the reserved space (64-byte aligned), or None when it is full."""
        sizes = {k: -(-math.prod(s) * dtype.itemsize // 64) * 64 for k, s in shapes.items()}
        if self.filled + sum(sizes.values()) > self.space.numel() or self.used + RING + 2 > CELLS:
            return None
        out = {}
        for k, s in shapes.items():
            out[k] = self.space[self.filled : self.filled + math.prod(s) * dtype.itemsize].view(dtype).view(s)
            self.filled += sizes[k]
        return out


class Auditor:
    """The router's audit: picks call sites from the key, keeps their sites, dumps what they committed."""

    def __init__(self, config: AuditConfig):
        self.config = config
        self.calls = dict.fromkeys(AUDITED + tuple(s for s in config.slots if s in PER_REQUEST), 0)
        self.captured: list[Site] = []
        self.eager: deque[Site] = deque(maxlen=config.capacity)
        self.devices: dict[torch.device, _Device] = {}
        self.skipped = 0
        """Sites left unaudited: made inside a capture before any eager call on the device, or past its space."""

    def stage(self, spec: SlotSpec, tensors: dict, values: dict, dims: dict) -> Site | None:
        """Before a call (inputs as the router bound them): its Site, inputs copied, when the key audits it."""
        if spec.name not in self.calls:
            return None
        n, cfg, first = self.calls[spec.name], self.config, tensors[spec.of_role(Role.INPUT)[0].name]
        self.calls[spec.name] += 1
        capturing = first.is_cuda and torch.cuda.is_current_stream_capturing()
        if not capturing and first.device not in self.devices:
            self.devices[first.device] = _Device(cfg, first.device)
        slot = AUDITABLE.index(spec.name)
        total = first.reshape(-1, first.shape[-1]).shape[0]
        if not total or mix(cfg.key, slot, n) >= cfg.rate * 2.0**64:
            return None
        if spec.name in PER_REQUEST:
            draws = tuple(mix(cfg.key, slot, n, i) for i in (1, 2, 3))
            site = None if capturing else PrefillSite.stage(n, draws, cfg.rows, MAX_ENTRY_BYTES, tensors, values)
            if site is None:
                self.skipped += 1
            else:
                self.eager.append(site)
            return site
        size = lambda a: spec.shape_of(a, dims)  # noqa: E731
        per_row = sum(size(a)[-1] for a in spec.args if a.role is not Role.SCALAR and a.shape[0] == spec.count_dim)
        fixed = sum(size(a)[0] for a in spec.args if a.role is Role.INPUT and a.shape[0] != spec.count_dim)
        rows = max(1, min(cfg.rows, total, (MAX_ENTRY_BYTES // first.element_size() - fixed) // per_row))
        window = (mix(cfg.key, slot, n, 1) % (total - rows + 1), rows, total)
        scalars = {a.name: float(values[a.name]) for a in spec.of_role(Role.SCALAR)}
        dev, shapes = self.devices.get(first.device), Site.shapes(spec, dims, rows, RING if capturing else 1)
        if not capturing:
            buffers = {k: torch.empty(v, dtype=first.dtype, device=first.device) for k, v in shapes.items()}
            site = Site(
                spec,
                n,
                tensors,
                scalars,
                window,
                1,
                dev.always,
                torch.zeros(3, dtype=torch.int64, device=first.device),
                buffers,
            )
            self.eager.append(site)
        elif dev is None or (buffers := dev.carve(shapes, first.dtype)) is None:
            self.skipped += 1
            return None
        else:
            offset = mix(cfg.key, slot, n, 2) % TABLE
            cells, dev.used = dev.cells[dev.used : dev.used + RING + 2], dev.used + RING + 2
            site = Site(spec, n, tensors, scalars, window, RING, dev.table[offset : offset + TABLE], cells, buffers)
            self.captured.append(site)
        site.copy_inputs(tensors)
        return site

    def dump(self) -> list[tuple[dict, bytes]]:
        """Every committed entry, captured sites first; syncs with the device, so only after the timed window."""
        return [e for site in (*self.captured, *self.eager) for e in site.entries()]
