"""Static-cache decode (the CUDA-graph path, run eagerly on CPU) against transformers' DynamicCache decode, and the
decode mode as a validator choice: defaults by device, refused where it cannot run, part of identity and evidence."""

import pytest
import torch
from pydantic import ValidationError

from hotfloat.qualify import QualifyOptions, qualify_bundle, recompute
from hotfloat.engine.transformers_engine import build_engine, serve_batch
from hotfloat.engine.graphs import capacity_for
from hotfloat.qualify.records import EngineSpec
from hotfloat.seams import arm

BATCHES = [
    ((3, 11, 26, 40), (9, 4, 17, 12)),
    ((30, 2, 19, 7), (9, 4, 17, 12)),  # same cache bucket, narrower: the first batch's later columns are stale here
    ((5, 33), (6, 3)),  # another batch size: another static decoder
]
"""(prompt lengths, max new tokens) per batch: mixed lengths, so prompts are left-padded."""


def serve(engine, lens, max_new, seed):
    gen = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(1, 512, (n,), generator=gen).tolist() for n in lens]
    done = {}
    serve_batch(engine, prompts, list(max_new), lambda i, t, lp, m: done.__setitem__(i, (t, lp, m)))
    return [done[i] for i in range(len(lens))]


@pytest.mark.parametrize("preset", ["tiny", "tiny-llama"])
def test_static_decode_matches_dynamic_cache_decode(preset):
    eager = build_engine(preset, "fp32", "cpu", 0, arm(None), decode="eager")
    static = build_engine(preset, "fp32", "cpu", 0, arm(None), decode="static")
    for seed, (lens, max_new) in enumerate(BATCHES):
        for (t1, lp1, m1), (t2, lp2, m2) in zip(
            serve(eager, lens, max_new, seed), serve(static, lens, max_new, seed), strict=False
        ):
            assert t1 == t2
            assert max(abs(a - b) for a, b in zip(lp1, lp2, strict=False)) <= 1e-4
            assert max(abs(a - b) for a, b in zip(m1, m2, strict=False)) <= 1e-4
    assert sorted(static.decoders) == [(2, capacity_for(33, 6)), (4, capacity_for(40, 17))]
    assert capacity_for(30, 17) == capacity_for(40, 17)
    assert eager.router.counts() == static.router.counts()


def test_decode_mode_is_part_of_the_engine_identity_and_graphs_need_cuda():
    assert (
        build_engine("tiny", "fp32", "cpu", 0, arm(None), decode="static").identity
        != build_engine("tiny", "fp32", "cpu", 0, arm(None), decode="eager").identity
    )
    with pytest.raises(ValueError, match="CUDA"):
        build_engine("tiny", "fp32", "cpu", 0, arm(None), decode="graph")


def test_decode_defaults_by_device_and_graph_is_refused_on_cpu(bundles, capsys):
    assert EngineSpec(preset="qwen2-0.5b", dtype="bf16", device="cuda").decode == "graph"
    assert EngineSpec(preset="tiny", dtype="fp32", device="cpu").decode == "eager"
    assert QualifyOptions(device="cuda", decode="static").engine().decode == "static"
    with pytest.raises(ValidationError, match="needs device 'cuda'"):
        EngineSpec(preset="tiny", dtype="fp32", device="cpu", decode="graph")
    with pytest.raises(ValidationError, match="needs device 'cuda'"):
        QualifyOptions(decode="graph")
    from hotfloat.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["qualify", "run", str(bundles["exact"]), "--device", "cpu", "--decode", "graph"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error: ") and "cuda" in err and "Traceback" not in err


def test_static_decode_qualification_runs_in_engine_processes(bundles):
    opts = QualifyOptions.for_device(
        "cpu", seed=3, warmup_passes=0, decode="static", rule={"look_rounds": 3, "max_looks": 1}
    )
    r = qualify_bundle(bundles["exact"], opts)
    ev = r.evidence
    assert ev.engine.decode == "static" and ev.decision.gate == "PASS", r.reason
    assert all(f.ok for f in ev.frames) and sum(ev.frames[1].routed.values()) > 0
    assert recompute(ev) == ev.decision
