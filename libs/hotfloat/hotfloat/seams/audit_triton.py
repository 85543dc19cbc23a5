"""The audit's taps on the GPU: two Triton kernels per call, the same for every call of a stratum, routed or stock,
eager or captured in a CUDA graph (hotfloat.seams.audit). They write exactly the words of the host taps
(`TorchTaps`), drawn from the same Philox stream (hotfloat.audit.philox), and decide everything on the device.

`pre`: execution e = count + 1 (kept in the stage's head, plaintext), the keyed window (the call's offsets read on the
device), and the sealed parameters and input pieces into the stage row, with their MAC partial sums. `post`: the pre
kernel again into the recheck row (the window and inputs as the call left them), then e from the stage, the keyed
decision (Algorithm R: a kept row or the trash row), the stage copied into that row with the recheck's partials, the
sealed output pieces, the head (e, routed) and the count. The key is a kernel argument only; no secret lives in device
memory. Indices read from the device are clamped to their tensors, so words a kernel tampered with cannot make a tap
read or write out of bounds: they only break the entry's MAC or window, which the validator refuses.

The kernels are compiled without specialization on sizes, strides or alignments (`do_not_specialize`), so one
compiled variant per kind serves every call, and the compilation happens before candidate code is imported
(`warm`), never later from a cache a kernel could have written.
"""

from __future__ import annotations

from ..audit.layout import layout_for
from .audit_ring import Ring
from .audit_device import WORDS_PER_PROGRAM as WB
from .audit_kernels import attn_post, attn_pre, rowwise_post, rowwise_pre

PREFILL, DECODE = 1, 2


class TritonTaps:
    """Launches the taps of a ring's kind; every call of a stratum launches the same kernels on the same grid."""

    def __init__(self, key: int):
        if not 1 << 32 <= key < 1 << 63:
            raise ValueError("the audit key must lie in [2^32, 2^63): the kernels take it as a 64-bit argument")
        self.key = key

    def launch(self, kernel, grid: tuple[int, int], args: list, constexprs: dict) -> None:
        """Every tap goes through here (a test compiles instead of launching, on a machine without a GPU)."""
        kernel[grid](*args, **constexprs)

    def warm(self, slots: tuple[str, ...], dtype: str, device) -> None:
        """Compiles every kernel the taps of `slots` launch for `dtype`, now: before the bundle is imported, so the
        taps never load a compiled kernel later from a cache directory candidate code could have written."""
        import torch

        from ..slots import Role, get_slot

        for slot in slots:
            spec = get_slot(slot)
            if spec.audit is None or dtype not in spec.dtypes:
                continue
            dims = spec.audit.warm
            lay = layout_for(spec, dims, dtype, {a.name: 1.0 for a in spec.of_role(Role.SCALAR)}, 2, 4)
            ring = Ring(lay, 2, device, *self.parts_for(lay))
            t = {
                a.name: torch.zeros(spec.shape_of(a, dims), dtype=spec.dtype_of(a, dtype), device=device)
                for a in spec.args
                if a.role in (Role.INPUT, Role.OUTPUT)
            }
            self.pre(ring, t)
            self.post(ring, t, t, False)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    @staticmethod
    def blocks(lay) -> int:
        """Programs per piece (and for the stage copy): the same on every launch of a ring."""
        return max(-(-lay.words // WB), *(-(-p.words // WB) for p in lay.pieces))

    def parts_for(self, lay) -> tuple[int, int]:
        """(MAC partial sums per row, the trailing ones that are the recheck's): a program's each, pre's and post's,
        the routed flag's term, then the recheck's (pre's again)."""
        nb, ins = self.blocks(lay), sum(not p.output for p in lay.pieces)
        return (2 + len(lay.pieces) + ins) * nb + 1, (1 + ins) * nb

    def _common(self, ring: Ring) -> tuple:
        lay = ring.layout
        return (
            self.key,
            lay.ring + (1 << 40),
            ring.state,
            ring.head,
            ring.data,
            ring.macs,
            lay.words,
            ring.macs.shape[1],
        )

    @staticmethod
    def _bits(lay) -> dict:
        bits = 8 * ring_esize(lay)
        return {"BITS": bits, "EPW": 64 // bits}

    def pre(self, ring: Ring, t: dict, stage: int | None = None) -> None:
        """Seals the call's window of `t` into the stage row (or `stage`: the recheck's row)."""
        lay, nb = ring.layout, self.blocks(ring.layout)
        stage = ring.keep + 1 if stage is None else stage
        ins = [p for p in lay.pieces if not p.output]
        if lay.kind == "rowwise":
            args, along = [], []
            for p in ins + [ins[0]] * (3 - len(ins)):
                view, n = (_rows(t[p.source]), lay.rows) if p.along else (t[p.source].reshape(1, -1), 1)
                args += [view, view.stride(0) if p.along else view.stride(1), view.stride(1), n, view.shape[1]]
                args += [p.word, p.words]
                along.append(p.along)
            flags = {f"A{i}": a for i, a in enumerate(along)}
            self.launch(
                rowwise_pre,
                (1 + len(ins), nb),
                [*self._common(ring), lay.dim["T"], lay.rows, *args, stage],
                {"N_IN": len(ins), **flags, **self._bits(lay)},
            )
            return
        dim, decode = lay.dim, lay.kind == "decode"
        q, kb, vb = t["q"], *_same_strides(t["k_buffer"], t["v_buffer"])
        kn, vn = (q, q) if decode else _same_strides(t["k"], t["v"])
        qo = t["kv_indptr"] if decode else t["qo_indptr"]
        piece = {p.name: p for p in lay.pieces}
        kp, vp = (piece["q"], piece["q"]) if decode else (piece["k"], piece["v"])
        args = [
            *self._common(ring),
            stage,
            q.shape[0] if decode else qo.shape[0] - 1,
            dim["Hkv"],
            dim["Hq"] // dim["Hkv"],
            dim["D"],
            lay.rows,
            lay.context,
            dim["Hq"],
            q.shape[0],
            kb.shape[0],
            t["kv_indices"].shape[0],
            q,
            *q.stride(),
            kn,
            *kn.stride(),
            vn,
            kb,
            vb,
            *kb.stride(),
            qo,
            t["kv_indptr"],
            t["kv_indices"],
            piece["q"].word,
            piece["q"].words,
            kp.word,
            kp.words,
            vp.word,
            vp.words,
            piece["kv"].word,
            piece["kv"].words,
        ]
        self.launch(attn_pre, (len(ins) + 1, nb), args, {"KIND": DECODE if decode else PREFILL, **self._bits(lay)})

    def post(self, ring: Ring, inputs: dict, outputs: dict, routed: bool) -> None:
        self.pre(ring, inputs, ring.keep + 2)
        lay, nb = ring.layout, self.blocks(ring.layout)
        outs = [p for p in lay.pieces if p.output]
        pre_parts = (1 + len(lay.pieces) - len(outs)) * nb
        lo, hi = outs[0].word, outs[-1].word + outs[-1].words
        if lay.kind == "rowwise":
            args = []
            for p in outs + [outs[0]] * (2 - len(outs)):
                view = _rows(outputs[p.source])
                args += [view, view.stride(0), view.stride(1), view.shape[1], p.word, p.words]
            head = [*self._common(ring), lay.dim["T"], lay.rows, int(routed), pre_parts, lo, hi]
            self.launch(
                rowwise_post, (1 + len(outs), nb), [*head, *args, ring.keep], {"N_OUT": len(outs), **self._bits(lay)}
            )
            return
        dim, out = lay.dim, outputs["out"]
        args = [*self._common(ring), ring.keep, dim["Hq"] // dim["Hkv"], dim["D"], dim["Hq"], out.shape[0]]
        args += [int(routed), pre_parts, out, *out.stride(), lo, hi - lo]
        self.launch(attn_post, (2, nb), args, {"KIND": DECODE if lay.kind == "decode" else PREFILL, **self._bits(lay)})


def ring_esize(lay) -> int:
    from ..slots import DTYPES

    return DTYPES[lay.dtype].itemsize


def _rows(t):
    return t.reshape(-1, t.shape[-1])


def _same_strides(a, b):
    """Two tensors the kernels address with one set of strides (a pool's K and V, a call's new K and V)."""
    return (a, b) if a.stride() == b.stride() else (a.contiguous(), b.contiguous())
