"""Calibration collection: the handicap's size and a short real collection on the tiny CPU engines."""

import pytest

from hotfloat.qualify.calibrate.collect import handicap_us
from hotfloat.qualify.records import RuleConfig
from hotfloat.qualify.workload import make_workload

pytestmark = pytest.mark.timed  # a 90 s collection budget for 3-4 rounds


def test_the_handicap_is_sized_per_activation_call_so_c_saves_the_effect():
    """llama-8b on the `sglang` mix: 32 layers x (128 + 4) forward steps = 4224 calls; a 1.3 s pass slowed by
    2%/98% (so that C saves 2% of it) is 26.5 ms, 6.3 us a call."""
    w = make_workload("sglang", 32000, seed=1)
    assert handicap_us(0.02, 1.3, 32, w) == pytest.approx(1.3e6 * 0.02 / 0.98 / 4224)
    assert handicap_us(0.02, 1.3, 32, w) == pytest.approx(6.28, abs=0.01)


def test_collect_refuses_a_handicap_out_of_range(capsys, tmp_path):
    from hotfloat.cli.main import main

    for bad in (["0.7", "2"], ["0.02", "0"]):
        with pytest.raises(SystemExit) as e:
            main(
                [
                    "qualify",
                    "calibrate",
                    "collect",
                    "--device",
                    "cpu",
                    "--handicap",
                    *bad,
                    "--out",
                    str(tmp_path / "r.json"),
                ]
            )
        assert e.value.code == 2 and "--handicap" in capsys.readouterr().err


def test_a_short_real_collection_on_cpu_and_evidence_formed_from_it(tmp_path, bundles):
    """Three stock engines, one handicapped, a broken candidate and one that raises: rounds are written as they go,
    stock engines agree exactly, the handicap's delay is recorded per engine, the raising candidate leaves the
    collection (recorded) without ending it, and the kept completions make a qualification whose gate fails the
    broken candidate and which recomputes."""
    from hotfloat.qualify import QualifyOptions, recompute
    from hotfloat.qualify.calibrate.files import load_raw
    from hotfloat.qualify.calibrate.evidence import evidence_from
    from hotfloat.qualify.calibrate.collect import collect

    out, said = tmp_path / "raw.json", []
    got = collect(
        QualifyOptions.for_device("cpu", seed=2, warmup_passes=0),
        out,
        stock=3,
        handicap={0.05: 1},
        candidates={"C1": bundles["broken"], "C2": bundles["raises"]},
        keep_rounds=3,
        budget_s=90,
        max_rounds=4,
        export_cache=tmp_path / "cache",
        progress=said.append,
    )
    back = load_raw(out)
    assert (
        back == got and 3 <= len(got.rounds) <= 4 and got.stock == ["B1", "B2", "B3"] and list(got.candidates) == ["C1"]
    )
    assert got.handicap == {"H1": 0.05} and got.handicap_us["H1"] > 0 and got.isolation is not None
    assert any(m.startswith("warm caches") for m in said)  # a CPU engine may have nothing to export; it says so
    assert "C2" in got.failed and "ZeroDivisionError" in got.failed["C2"] and "C2" not in got.kept
    assert all(
        sorted(r.order) == ["B1", "B2", "B3", "C1", "H1"] and all(v > 0 for v in r.pass_s.values()) for r in got.rounds
    )
    assert all(
        r.agree["B2"] == r.agree["B3"] == r.agree["H1"] == 1.0 for r in got.rounds
    )  # stock engines agree exactly
    # every pass carries the host's readings; a CPU engine's pass is its tree's own CPU work, so it used CPU time
    assert all(
        r.host.keys() == r.pass_s.keys() and all(h["cpu_s"] > 0 and h["steal_s"] >= 0 for h in r.host.values())
        for r in got.rounds
    )
    assert sum(got.routed["C1"].values()) > 0 and not sum(got.routed["B1"].values())
    ev = evidence_from(
        got, tmp_path / "raw.json.outputs.jsonl", "C1", RuleConfig(look_rounds=3, max_looks=2, logprob_tol=1e-3)
    )
    assert ev.rule.max_looks == 1 and [f.role for f in ev.frames] == ["B", "C", "B"] and len(ev.frames[1].pass_s) == 3
    assert ev.decision.status == "FAIL" and "does not match" in ev.decision.reason and recompute(ev) == ev.decision
    with pytest.raises(ValueError, match="kept"):
        evidence_from(got, tmp_path / "raw.json.outputs.jsonl", "B3", RuleConfig(look_rounds=3))


def test_a_candidate_is_collected_only_on_a_backend_that_seams_its_slots(tmp_path):
    """The twin of qualify_bundle's check (options.for_slots): a decode candidate beside engines on a FlashInfer the
    validator chose would never be called; the collection is refused before any engine boots."""
    from pathlib import Path

    from hotfloat.errors import InputError
    from hotfloat.qualify import QualifyOptions
    from hotfloat.qualify.calibrate.collect import collect

    opts = QualifyOptions.for_device("cuda", gpu="NVIDIA H100 80GB HBM3", attention="flashinfer")
    decode = Path(__file__).parents[3] / "examples" / "attention_decode_triton"
    with pytest.raises(InputError, match="^attention.decode has no seam on SGLang's flashinfer attention backend"):
        collect(opts, tmp_path / "raw.json", stock=3, candidates={"C1": decode}, budget_s=60)
    assert not (tmp_path / "raw.json").exists()
