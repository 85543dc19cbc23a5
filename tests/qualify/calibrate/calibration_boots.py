"""Synthetic boots with known noise, and the pre-registration the calibration tests score them under (imported by
the tests beside it: their conftest puts this folder on the path)."""

import numpy as np

from hotfloat.qualify.calibrate.files import CalibrationRaw, Preregistration, RawRound
from hotfloat.qualify.records import EngineSpec, RuleConfig
from hotfloat.qualify.workload import make_workload

RULE = RuleConfig(look_rounds=10, max_looks=4, process_floor=0.001, logprob_tol=0.1)
PREREG = Preregistration(fixed="2026-12-04", rule=RULE, selected_on=["seen.raw.json"], why="a test")


def raw(n=60, sigma=0.003, tau=0.0005, seed=0, stock=3, scale=None, handicap=None) -> CalibrationRaw:
    """Rounds of `stock` stock engines (and handicapped ones, name -> effect) with a common factor per round, a
    persistent offset per process (s.d. tau) and per-pass noise (s.d. sigma); `scale` multiplies named engines."""
    rng = np.random.default_rng(seed)
    handicap = handicap or {}
    names = [f"B{i + 1}" for i in range(stock)] + list(handicap)
    factor = {k: np.exp(rng.normal(0, tau)) / (1 - handicap.get(k, 0.0)) * (scale or {}).get(k, 1.0) for k in names}
    rounds = []
    for r in range(n):
        common = np.exp(rng.normal(0, 0.03))
        rounds.append(
            RawRound(
                t=1.6 * r,
                order=[names[k] for k in rng.permutation(len(names))],
                agree={k: 1.0 for k in names},
                pass_s={k: 0.5 * common * factor[k] * float(np.exp(rng.normal(0, sigma))) for k in names},
            )
        )
    return CalibrationRaw(
        started="2026-12-03T00:00:00+00:00",
        device="synthetic",
        engine=EngineSpec(kind="sglang", preset="qwen2-0.5b", dtype="bf16", device="cuda"),
        engine_info={"engine": "sglang"},
        workload=make_workload("sglang", 151936, seed=1),
        stock=names[:stock],
        handicap=handicap,
        handicap_us={k: 6.0 for k in handicap},
        boot_s={k: 60.0 for k in names},
        rounds=rounds,
        sandboxed=True,
    )
