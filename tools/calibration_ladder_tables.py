"""The generated tables about real kernels on the H200 (tools/calibration_tables.py writes them into the docs): the
three examples booted beside the stock engines, the two twin-gate qualifications, and issue 32's ladder under the
rule as recorded and as today."""

from __future__ import annotations

import json
import lzma
import math
import tempfile
from pathlib import Path

import numpy as np
from calibration_sources import CANDIDATES, LADDER, ROOT, RUNS, md_table, raw_file


def examples() -> str:
    """The three examples booted beside B1-B3: gate, measured effect, the verdict `calibrate evidence` forms under the
    recorded rule, and where their completions left B1's path."""
    from hotfloat.qualify.calibration import read_calibration
    from hotfloat.qualify.calibrate.analyse import gain
    from hotfloat.qualify.calibrate.noise import series
    from hotfloat.qualify.calibrate.evidence import KeptRound, evidence_from

    raw, rule = raw_file(CANDIDATES), read_calibration(ROOT / "docs" / "calibration-h200.json").rule
    text = lzma.decompress((RUNS / f"{CANDIDATES}.outputs.jsonl.xz").read_bytes())
    kept = {(k.round, k.engine): k for k in map(KeptRound.model_validate_json, text.splitlines())}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "out.jsonl").write_bytes(text)
        for c, bundle in zip(
            raw.candidates, ("silu_triton", "fused_add_rmsnorm_triton", "attention_decode_triton"), strict=False
        ):
            d = evidence_from(raw, Path(tmp) / "out.jsonl", c, rule).decision
            dep, worst, first, n = [], [], [], 0
            for (r, e), k in sorted(kept.items()):
                if e != c:
                    continue
                b = kept[(r, "B1")]
                for tb, tc, lb, lc in zip(b.tokens, k.tokens, b.logprobs, k.logprobs, strict=False):
                    n += 1
                    at = next((i for i, (p, q) in enumerate(zip(tb, tc, strict=False)) if p != q), None)
                    dep += [] if at is None else [at]
                    worst.append(
                        max(abs(p - q) for p, q in zip(lb[: at or len(lb)], lc[: at or len(lc)], strict=False))
                        if at != 0
                        else 0.0
                    )
                    first.append(abs(lb[0] - lc[0]))
            gate = "PASS (bitwise identical)" if not dep and max(worst) == 0 else f"{d.gate}"
            rows.append(
                [
                    f"{bundle} ({c})",
                    gate,
                    f"{gain(series(raw, [raw.stock[0], c, raw.stock[1]])):+.2%}",
                    f"**{d.status}**: {d.reason.split(';')[0]}",
                    f"{len(dep)} of {n}",
                    f"{np.median(dep):.0f}" if dep else "-",
                    f"{np.median(worst):.2f} (max {max(worst):.2f})",
                    f"{np.median(first):.2f}",
                ]
            )
    return md_table(
        [
            f"example (all {len(raw.rounds)} rounds)",
            "gate",
            "measured effect",
            "verdict (`calibrate evidence`)",
            "completions off B1's path",
            "median first departing token (0-based)",
            "logprob difference before it: median of per-completion max",
            "first token's logprob difference (median)",
        ],
        rows,
    )


def twin() -> str:
    """The two twin-gate qualifications: in how many rounds C beat sqrt(B B')."""
    rows = []
    for bundle in ("attention_decode_triton", "fused_add_rmsnorm_triton"):
        ev = json.loads(lzma.decompress((RUNS / f"evidence-h200-llama8b-twin-{bundle}.json.xz").read_bytes()))
        fr = {f["index"]: f["pass_s"] for f in ev["frames"]}
        faster = sum(c < math.sqrt(b * b2) for b, c, b2 in zip(fr[0], fr[1], fr[2], strict=False))
        rows.append(
            [bundle, len(fr[1]), faster, f"{ev['decision']['status']}: {ev['decision']['reason'].split(';')[0]}"]
        )
    return md_table(["example", "rounds", "C faster than sqrt(B B')", "recorded verdict"], rows)


def ladder() -> str:
    """Per ladder run: the candidate's divergence against its per-slot twin's, the audit's worst slot against
    stock's, and the verdict recorded and under today's rule (the default slacks applied to the same records)."""
    from hotfloat.qualify import QualifyOptions, load_evidence, recompute
    from hotfloat.qualify.audit_v3 import slot_medians  # the ladder ran under evidence v3
    from hotfloat.qualify.gate import LEVELS, divergence

    today = QualifyOptions.for_device("cuda", gpu="NVIDIA H200").rule
    rows = []
    for run, (name, what) in LADDER.items():
        ev = load_evidence(RUNS / f"evidence-h200-llama8b-{name}.json.xz")
        ref, tol = ev.frames[0], ev.rule.logprob_tol
        t, c = divergence(ref, ev.twin, tol), divergence(ref, ev.frames[1], tol)
        worst = max([c.level(q) / t.level(q) for q in LEVELS] + [c.rate / t.rate])
        cand = next((a for a in ev.audit or () if a.role == "C"), None)
        audit = [] if cand else ["not run then"]
        for slot, st in sorted(cand.slots.items() if cand else ()):
            mine, stock = slot_medians(ev.audit, cand, slot)
            audit.append(
                f"{slot.split('.')[-1]} {mine / stock:.2f}x"
                + (f" ({st.calls_failed} of {st.calls_audited} wrong)" if st.calls_failed else "")
            )
        now = recompute(
            ev.model_copy(
                update={
                    "rule": ev.rule.model_copy(
                        update={"gate_slack": today.gate_slack, "audit_slack": today.audit_slack}
                    )
                }
            )
        )
        twin = ", ".join(s.split(".")[-1] for s, n in sorted(ev.twin.routed.items()) if n)
        rows.append(
            [
                f"`{run}`",
                what,
                twin,
                f"{t.rate:.1%}",
                f"{c.rate:.1%}",
                f"{worst:.2f}",
                "; ".join(audit),
                _correctness(ev.decision),
                f"**{_correctness(now)}**",
            ]
        )
    return md_table(
        [
            "run",
            "kernel",
            "twin nudged",
            "T left the path",
            "C left the path",
            "C/T (worst of 50/90/99%, rate)",
            "audit: C's median error / stock's",
            "correctness, as recorded",
            f"correctness today (gate {today.gate_slack:g}x, audit {today.audit_slack:g}x)",
        ],
        rows,
    )


def _correctness(d) -> str:
    """A decision's correctness side: PASS (speed decided the rest), or FAIL and by which check."""
    if d.gate != "FAIL":
        return d.gate
    return "FAIL by the audit" if d.reason.startswith("audit") else "FAIL by the gate"
