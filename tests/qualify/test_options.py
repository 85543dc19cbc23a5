"""Real qualifications on the tiny CPU engine: three resident engines (B, C, B'), the gate, the rule and the evidence.

On a shared 2-core CPU the timing noise is far above a GPU's, so an exact bundle ends FAIL on speed (not shown faster),
never PASS; what must hold exactly is the gate: exact bundles match, broken ones FAIL.
"""

import pytest
from pathlib import Path


from hotfloat.qualify import QualifyOptions, qualify_bundle, recompute
from hotfloat.qualify.protocol import round_order

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OPTS = QualifyOptions.for_device("cpu", seed=11, warmup_passes=0, rule={"look_rounds": 3, "max_looks": 1})


SPAWNS = """
import subprocess, sys, time, torch

def run(x, out):
    if not getattr(run, "started", False):
        run.started = True
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=False)
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""


def test_exact_bundle_passes_the_gate_is_not_crowned_on_cpu_and_leaves_nothing_behind(make_bundle):
    """The kernel is exact but starts a long sleeper: each engine's sandbox is killed at the end, so a leftover
    process cannot slow the next qualification."""
    import subprocess

    r = qualify_bundle(make_bundle(SPAWNS, name="spawner"), OPTS)
    ev = r.evidence
    assert ev.decision.gate == "PASS" and r.status == "FAIL", r.reason
    assert [f.role for f in ev.frames] == ["B", "C", "B"] and all(f.ok for f in ev.frames)
    assert all(len(f.pass_s) == ev.decision.rounds == 3 for f in ev.frames)
    assert sum(ev.frames[1].routed.values()) > 0
    assert all(sum(f.routed.values()) == 0 for f in (ev.frames[0], ev.frames[2]))
    twin = ev.twin  # B with the candidate's silu outputs one ulp off: served the first look's prompts, untimed
    assert twin and twin.role == "T" and twin.ok and len(twin.pass_s) == 3 and sum(twin.routed.values()) > 0
    assert sorted(map(sorted, ev.order)) == [[0, 1, 2]] * 3 and ev.order == [round_order(11, r) for r in range(3)]
    assert all(f.boot_s > 0 for f in ev.frames) and ev.engine_info["engine"] == "transformers"
    assert recompute(ev) == ev.decision
    assert ev.workload.seed == 11 and ev.env and ev.engine_identity != "unknown"
    assert [a.role for a in ev.audit] == ["B", "C", "B"] and ev.isolation.mode == "sigstop"
    for a in ev.audit:  # the same secret sample of calls in every engine, each recomputed against the reference
        s = a.slots["activation.silu_and_mul"]
        assert s.calls_audited > 0 and s.calls_failed == 0 and s.worst.ratio < 1
    assert {c.site for c in ev.audit[0].calls} == {c.site for c in ev.audit[1].calls}
    left = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True).stdout.split()
    assert left == [], f"candidate processes survived: {left}"


def test_bundle_that_raises_in_the_engine_fails(bundles):
    r = qualify_bundle(bundles["raises"], OPTS)
    assert r.status == "FAIL" and "ZeroDivisionError" in r.reason


def test_bundle_outside_its_domain_is_not_applicable(bundles):
    r = qualify_bundle(bundles["gpu_only"], OPTS)
    assert r.status == "N/A" and "domain" in r.reason


def test_an_exact_example_is_correct_and_a_broken_one_fails_correctness():
    """The shipped examples through the whole protocol: the Triton silu (interpreted on CPU) matches the baseline,
    the broken silu does not (the unit tests above cover the rest of the example set's behaviour)."""
    r = qualify_bundle(EXAMPLES / "silu_triton", OPTS)
    assert r.evidence.decision.gate == "PASS" and r.status == "FAIL", r.reason
    r = qualify_bundle(EXAMPLES / "silu_broken", OPTS.model_copy(update={"twin": False}))
    assert r.status == "FAIL" and r.score == 0 and r.evidence.decision.gate == "FAIL", r.reason
    assert r.reason.startswith("audit: ") and "activation.silu_and_mul" in r.reason and r.evidence.twin is None
    c = next(a for a in r.evidence.audit if a.role == "C")  # the audit names the slot before the gate is asked
    assert c.slots["activation.silu_and_mul"].calls_failed == c.slots["activation.silu_and_mul"].calls_audited > 0


def test_the_options_class_defaults_are_the_cpu_devices():
    """One source of defaults: a caller that builds QualifyOptions() gets what the CLI and services get on CPU
    (the calibrated slacks included), never a weaker generic rule."""
    from hotfloat.qualify import QualifyOptions

    assert QualifyOptions() == QualifyOptions.for_device("cpu")
    assert QualifyOptions().rule.audit_slack > 0 and QualifyOptions().rule.gate_slack < 2


def test_the_cuda_rule_is_the_record_of_the_gpu_it_runs_on_and_a_gpu_without_one_refuses_to_qualify(bundles):
    """Records are per device model: the H200's rule comes from its record; a GPU without a record gets options
    (calibration collection needs no rule) that qualify_bundle refuses in one line naming the commands that make a
    record; a configured rule (a pre-registration's, through --rule-from) lets it qualify."""
    from hotfloat.errors import InputError
    from hotfloat.qualify.calibration import read_calibration
    from hotfloat.qualify.options import NO_RECORD, default_rule, recorded_gpus, rule_given

    h200 = QualifyOptions.for_device("cuda", gpu="NVIDIA H200")
    assert "NVIDIA H200" in recorded_gpus() and h200.uncalibrated is None
    assert h200.rule.look_rounds == default_rule("cuda", "NVIDIA H200").look_rounds
    a100 = QualifyOptions.for_device("cuda", gpu="NVIDIA A100-SXM4-80GB")
    assert a100.uncalibrated == "NVIDIA A100-SXM4-80GB"
    with pytest.raises(InputError) as e:
        qualify_bundle(bundles["exact"], a100)
    assert str(e.value) == NO_RECORD.format(gpu="NVIDIA A100-SXM4-80GB")
    assert "hotfloat qualify calibrate collect" in str(e.value) and "\n" not in str(e.value)
    prereg = read_calibration(Path(__file__).parents[2] / "docs" / "calibration-h100.preregistered.json").rule
    h100 = QualifyOptions.for_device("cuda", gpu="NVIDIA H100 80GB HBM3", **rule_given(prereg))
    assert h100.uncalibrated is None and h100.rule.look_rounds == prereg.look_rounds == 5
    with pytest.raises(InputError, match="no calibration record for NVIDIA A100"):
        default_rule("cuda", "NVIDIA A100-SXM4-80GB")


def test_sglang_on_cuda_runs_productions_attention_where_a_record_was_made_on_it_and_its_records_backend_elsewhere():
    """A record belongs to one engine configuration. The H100 has one on FlashInfer (production's backend a device
    call can carry): its engines run it by default and the verdict names that record; the H200's only record was
    made on triton, so its engines stay there, calibrated, until one on FlashInfer lands. Naming the other backend
    keeps the GPU's rule and gets the record of that backend, or one whose engine block names none."""
    from hotfloat.qualify.calibration import Uncalibrated, describe
    from hotfloat.qualify.options import default_attention, recorded_gpus

    h100, h200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    assert set(recorded_gpus()[h100]) == {"triton", "flashinfer"} and set(recorded_gpus()[h200]) == {"triton"}
    got = {
        (gpu, given): (o.attention, o.calibration.name)
        for gpu in (h100, h200)
        for given in (None, "triton", "flashinfer")
        for o in [QualifyOptions.for_device("cuda", gpu=gpu, attention=given)]
    }
    assert got == {
        (h100, None): ("flashinfer", "calibration-h100.json"),
        (h100, "triton"): ("triton", "calibration-h100-triton.json"),
        (h100, "flashinfer"): ("flashinfer", "calibration-h100.json"),
        (h200, None): ("triton", "calibration-h200.json"),
        (h200, "triton"): ("triton", "calibration-h200.json"),
        (h200, "flashinfer"): ("flashinfer", "calibration-h200.json"),
    }
    h200_fi = QualifyOptions.for_device("cuda", gpu=h200, attention="flashinfer")
    info = {**h200_fi.calibration.record.engine, "attention_backend": "flashinfer"}
    said = describe(h200_fi.calibration, h200_fi.rule, info, "cuda")
    assert isinstance(said, Uncalibrated) and "attention_backend flashinfer (record triton)" in said.why
    assert h200_fi.rule == QualifyOptions.for_device("cuda", gpu=h200).rule
    assert default_attention("NVIDIA A100-SXM4-80GB") == "flashinfer"
    assert QualifyOptions.for_device("cpu").attention == "triton"  # the transformers stand-in has no backends


def test_a_records_file_name_says_whether_it_is_its_gpus_default_configuration():
    """`calibration-<gpu>.json` is the record a GPU model qualifies under by default (docs/ links each by that name);
    a record of another attention backend carries it, as `calibration-<gpu>-<backend>.json`."""
    from hotfloat.qualify.options import CUDA_RECORDS, default_attention, recorded_gpus

    for gpu, made in recorded_gpus().items():
        for attention, path in made.items():
            stem = path.name.removeprefix("calibration-").removesuffix(".json")
            named = stem.split("-")[1] if "-" in stem else None
            assert named == (None if attention == default_attention(gpu) else attention), path.name
    assert {p.name for p in CUDA_RECORDS} == {
        "calibration-h100.json",
        "calibration-h100-triton.json",
        "calibration-h200.json",
    }


def test_the_attention_backend_is_an_sglang_engine_setting():
    """`--attention flashinfer` is SGLang's; the transformers stand-in has no backend to name, and is refused."""
    from pydantic import ValidationError

    from hotfloat.qualify import QualifyOptions
    from hotfloat.qualify.records import EngineSpec

    with pytest.raises(ValidationError, match="attention backend other than triton is for the sglang engine"):
        QualifyOptions.for_device("cpu", attention="flashinfer")
    spec = EngineSpec(kind="sglang", preset="llama-8b", dtype="bf16", device="cuda", attention="flashinfer")
    assert (
        spec.attention == "flashinfer"
        and EngineSpec(kind="sglang", preset="p", dtype="bf16", device="cuda").attention == "triton"
    )


def test_a_bundle_qualifies_on_a_backend_that_seams_its_slots():
    """attention.decode is hooked on the triton backend alone: on the H100, whose default is FlashInfer, a decode
    bundle moves to triton and the triton record; a FlashInfer the validator chose is refused in one line before any
    engine boots; a prefill or row-wise bundle keeps the default."""
    from hotfloat.errors import InputError
    from hotfloat.qualify.calibration import read_calibration
    from hotfloat.qualify.options import for_slots, rule_from

    h100 = QualifyOptions.for_device("cuda", gpu="NVIDIA H100 80GB HBM3")
    moved = for_slots(h100, {"attention.decode"})
    assert (moved.attention, moved.calibration.name) == ("triton", "calibration-h100-triton.json")
    for slots in ({"attention.prefill"}, {"norm.rmsnorm", "activation.silu_and_mul"}):
        assert for_slots(h100, slots) is h100
    assert for_slots(h100, {"attention.decode", "norm.rmsnorm"}).attention == "triton"
    with pytest.raises(InputError) as e:  # the prefill kernel would be timed against triton's, not production's
        for_slots(h100, {"attention.decode", "attention.prefill"})
    assert str(e.value) == (
        "attention.decode has no seam on SGLang's flashinfer attention backend (seams on: triton): "
        "attention.prefill would leave that backend with it: submit them in separate bundles"
    )
    chosen = QualifyOptions.for_device("cuda", gpu="NVIDIA H100 80GB HBM3", attention="flashinfer")
    with pytest.raises(InputError) as e:
        for_slots(chosen, {"attention.decode", "attention.prefill"})
    assert str(e.value) == (
        "attention.decode has no seam on SGLang's flashinfer attention backend (seams on: triton): "
        "qualify it with --attention triton"
    )
    examples = Path(__file__).parents[2] / "examples"
    with pytest.raises(InputError, match="^attention.decode has no seam on SGLang's flashinfer"):
        qualify_bundle(examples / "attention_decode_triton", chosen)  # before any sandbox or engine
    prereg = read_calibration(Path(__file__).parents[2] / "docs" / "calibration-h100.preregistered.json")
    given = QualifyOptions.for_device("cuda", gpu="NVIDIA H100 80GB HBM3", **rule_from(prereg))
    assert for_slots(given, {"attention.decode"}).calibration is given.calibration  # --rule-from's stays
    h200 = QualifyOptions.for_device("cuda", gpu="NVIDIA H200")
    assert for_slots(h200, {"attention.decode"}) is h200
    cpu = QualifyOptions.for_device("cpu")
    assert for_slots(cpu, {"attention.decode"}) is cpu


def test_two_records_of_one_gpu_model_must_share_its_preregistered_rule(tmp_path, monkeypatch):
    """The rule is pre-registered per GPU model; a record on a second backend under another rule would let the
    backend pick the rule."""
    import json

    from hotfloat.errors import InputError
    from hotfloat.qualify import options

    docs = Path(__file__).parents[2] / "docs"
    doc = json.loads((docs / "calibration-h100-triton.json").read_text())
    doc["rule"]["look_rounds"] = doc["preregistration"]["rule"]["look_rounds"] = 4
    (tmp_path / "calibration-h100-other.json").write_text(json.dumps(doc))
    monkeypatch.setattr(
        options, "CUDA_RECORDS", (docs / "calibration-h100.json", tmp_path / "calibration-h100-other.json")
    )
    options.recorded_gpus.cache_clear()
    try:
        with pytest.raises(
            InputError, match="^calibration-h100-other.json: a timing rule other than the other NVIDIA H100"
        ):
            options.recorded_gpus()
    finally:
        options.recorded_gpus.cache_clear()
