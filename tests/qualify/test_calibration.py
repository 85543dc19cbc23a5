"""The calibration a verdict was judged under: named only when the rule and the engine configuration are the record's
own, summarised from the record's own figures, held to the record by its digest, and a PASS under a record that
misses its targets is provisional in one line."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hotfloat.errors import InputError
from hotfloat.qualify import load_evidence
from hotfloat.qualify.calibrate.analyse import analyse
from hotfloat.qualify.calibrate.files import Preregistration, clopper_pearson_upper
from hotfloat.qualify.calibration import (
    Calibrated,
    Uncalibrated,
    caveat,
    check,
    describe,
    read_calibration,
    summary,
)
from hotfloat.qualify.options import CPU_RULE, packaged
from hotfloat.qualify.records import RuleConfig

from .calibrate.calibration_boots import raw

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "qualify-runs"
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
CPU_INFO = {"engine": "transformers", "torch": "2.11.0", "decode": "eager"}
CPU = RuleConfig(**CPU_RULE)
SESSION29 = read_calibration(Path(__file__).parent / "calibration-h100-session29.json")
"""The H100 record as it stood when the first win ran (session 29, a copy of `docs/calibration-h100.json` then):
issue 50 grows the packaged one on another engine configuration, and these tests are about that day's."""


def cpu_record(tmp_path, *, units_of_300=False) -> Path:
    """A record of the CPU engine under the CPU rule (two synthetic boots: it misses its targets); `units_of_300`
    rewrites its counts to 0 false PASS in 300 units and no shortfall, a record that meets them."""
    prereg = Preregistration(fixed="2026-12-06", rule=CPU, selected_on=[], why="a test")
    boots = [raw(n=12, stock=3, seed=s).model_copy(update={"engine_info": CPU_INFO}) for s in (1, 2)]
    record = analyse(boots, prereg, sims=0)
    if units_of_300:
        record = record.model_copy(
            update=dict(
                independent_draws=300,
                false_passes_independent=0,
                false_pass_upper_95=clopper_pearson_upper(0, 300),
                meets_targets=True,
                shortfall=[],
            )
        )
    path = tmp_path / ("cpu-full.json" if units_of_300 else "cpu-record.json")
    path.write_text(record.model_dump_json())
    return path


def test_the_packaged_records_summarise_to_their_own_figures():
    """Each packaged record's summary is its own counts and bound, under the digest of its bytes."""
    for gpu, attention, name in (
        (H100, "triton", "h100-triton"),
        (H100, "flashinfer", "h100"),
        (H200, "triton", "h200"),
    ):
        file = packaged(gpu, attention)
        got, r = summary(file), file.record
        assert (got.device, got.units, got.false_passes, got.bound, got.meets_targets, got.shortfall) == (
            gpu,
            r.independent_draws,
            r.false_passes_independent,
            r.false_pass_upper_95,
            r.meets_targets,
            r.shortfall,
        )
        docs = ROOT / "docs" / f"calibration-{name}.json"
        assert got.sha256 == hashlib.sha256(docs.read_bytes()).hexdigest() and got.record == docs.name


def test_the_first_qualified_win_was_judged_under_the_h100_record_and_is_a_provisional_pass():
    """The committed prefill PASS (H100, seed 7) ran on the engine the H100 record of its day measured, under its
    rule: it names that record, whose 2 units bound false PASS by 77.6% and which has no positive control."""
    ev = load_evidence(RUNS / "evidence-h100-llama8b-attention_prefill_triton.json.xz")
    got = describe(SESSION29, ev.rule, ev.engine_info, ev.engine.device)
    assert isinstance(got, Calibrated) and got.record == SESSION29.name and got.units == 2
    assert "false PASS <= 77.6% (95%)" in got.line() and "MISSES ITS TARGETS" in got.line()
    line = caveat(ev.decision.status, got)
    assert line.startswith(f"provisional PASS, not a full one: {SESSION29.name} misses its targets (false PASS: ")
    assert "0 real positive controls at 2%" in line and "\n" not in line


def test_a_verdict_on_another_engine_configuration_or_rule_names_no_record():
    """The MoE run (another model), a rule with other looks and another attention backend measure what the record
    never did."""
    moe = load_evidence(RUNS / "evidence-h100-mixtral8b-moe_triton.json.xz")
    got = describe(SESSION29, moe.rule, moe.engine_info, "cuda")
    assert isinstance(got, Uncalibrated)
    assert got.why.startswith(f"the engine configuration differs from {SESSION29.name}'s: model_config_sha256")
    prefill = load_evidence(RUNS / "evidence-h100-llama8b-attention_prefill_triton.json.xz")
    other = prefill.rule.model_copy(update={"look_rounds": 10})
    assert describe(SESSION29, other, prefill.engine_info, "cuda").why.startswith(
        f"the timing rule differs from {SESSION29.name}'s: look_rounds 10 (record 5)"
    )
    production = {**prefill.engine_info, "attention_backend": "fa3"}  # issue 50's production baseline
    assert "attention_backend fa3 (record triton)" in describe(SESSION29, prefill.rule, production, "cuda").why
    assert caveat("PASS", describe(SESSION29, prefill.rule, production, "cuda")).startswith("provisional PASS: ")


def test_a_setting_the_record_never_pinned_differs_and_the_kv_pool_it_implies_does_not():
    """A record made before the engine reported its KV pool (as the H200's was) still names a verdict that does."""
    engine = {k: v for k, v in SESSION29.record.engine.items() if k != "kv_pool_tokens"}
    older = SESSION29.model_copy(update={"record": SESSION29.record.model_copy(update={"engine": engine})})
    info = {**engine, "kv_pool_tokens": "18961"}
    assert isinstance(describe(older, older.rule, info, "cuda"), Calibrated)
    unpinned = describe(older, older.rule, {**info, "chunked_prefill": "8192"}, "cuda")
    assert "chunked_prefill 8192 (record: unset)" in unpinned.why
    assert describe(older, older.rule, {}, "cuda").why == (
        f"the engine reported no configuration to hold against {SESSION29.name}'s"
    )


def test_no_file_a_pre_registration_and_the_cpu_rule_name_none():
    assert describe(None, CPU, CPU_INFO, "cpu") == Uncalibrated(why="the CPU rule, never calibrated")
    assert describe(None, CPU, {}, "cuda").why == "a rule given by hand, never calibrated"
    prereg = read_calibration(ROOT / "docs" / "calibration-h100.preregistered.json")
    assert prereg.record is None and "is a pre-registration" in describe(prereg, prereg.rule, {}, "cuda").why
    assert caveat("FAIL", describe(None, CPU, CPU_INFO, "cpu")) is None


def test_a_record_that_meets_its_targets_backs_a_full_pass(tmp_path):
    full = read_calibration(cpu_record(tmp_path, units_of_300=True))
    got = describe(full, CPU, CPU_INFO, "cpu")
    assert got.meets_targets and got.units == 300 and caveat("PASS", got) is None and "meets its targets" in got.line()
    short = describe(read_calibration(cpu_record(tmp_path)), CPU, CPU_INFO, "cpu")
    assert short.units == 2 and caveat("FAIL", short).startswith("judged under cpu-record.json, which misses its")


def test_a_claim_is_held_to_the_record_with_its_digest(tmp_path):
    file = read_calibration(cpu_record(tmp_path))
    claim = describe(file, CPU, CPU_INFO, "cpu")
    assert check(claim, CPU, CPU_INFO, "cpu", [file]) is True
    assert check(claim, CPU, CPU_INFO, "cpu", [packaged(H100)]) is False  # not at hand: not checked, and says so
    inflated = claim.model_copy(update={"meets_targets": True, "shortfall": []})
    with pytest.raises(InputError, match="is not what cpu-record.json says for its rule and engine"):
        check(inflated, CPU, CPU_INFO, "cpu", [file])
    with pytest.raises(InputError, match="none \\(the engine configuration differs from cpu-record.json's"):
        check(claim, CPU, {**CPU_INFO, "decode": "static"}, "cpu", [file])
    with pytest.raises(ValueError, match="Clopper-Pearson"):
        Calibrated(**{**claim.model_dump(), "false_pass_upper_95": 0.01})


@pytest.mark.parametrize("content", ["{}", "not json", '{"format": "hotfloat-calibration-v2"}'])
def test_a_file_that_is_neither_a_record_nor_a_pre_registration_is_one_error_line(tmp_path, content):
    path = tmp_path / "cal.json"
    path.write_text(content)
    with pytest.raises(InputError) as e:
        read_calibration(path)
    assert str(e.value).startswith(f"{path}: not a calibration record: ") and "\n" not in str(e.value)


def test_a_tampered_record_is_one_error_line(tmp_path):
    """The committed H100 record with its bound edited down: not a record any more, and said so in one line."""
    text = (ROOT / "docs" / "calibration-h100-triton.json").read_text()
    path = tmp_path / "calibration-h100.json"
    path.write_text(text.replace('"false_pass_upper_95": 0.776393202250021', '"false_pass_upper_95": 0.001'))
    with pytest.raises(InputError) as e:
        read_calibration(path)
    assert "not the Clopper-Pearson bound" in str(e.value) and "\n" not in str(e.value)
