"""Slot shares: a committed record loads, every registered slot gets a row (measured, measured at zero, or not
measured), the rest of the step is its own row, and `hotfloat slots --share` prints the record, or says that no
measurement is committed and exits 4 rather than show a number nobody measured."""

import json

from click.testing import CliRunner

from hotfloat.cli.slots_cmd import slots
from hotfloat.slots import SLOTS
from hotfloat.slots import share as share_module
from hotfloat.slots.share import ModelShare, ShareRecord, StepShare, load_records, rows


def _step(step_us: float, slots: dict[str, float]) -> StepShare:
    return StepShare(steps=8, tokens=32, step_us=step_us, slots=slots, calls={s: 32.0 for s in slots if slots[s]})


RECORD = ShareRecord(
    gpu="NVIDIA H200",
    measured_at="2026-12-06 10:00 UTC",
    command="bash tools/device/run.sh engine_install:90 slot_share:500",
    method="a test record",
    versions={"sglang": "0.5.13.post1"},
    models=[
        ModelShare(
            preset="mixtral-8b",
            dtype="bf16",
            decode=_step(4000.0, {"moe.fused_experts": 2000.0, "attention.decode": 400.0, "norm.rmsnorm": 0.0}),
            prefill=_step(90000.0, {"moe.fused_experts": 30000.0}),
        )
    ],
)


def test_every_slot_has_a_row_and_the_rest_of_the_step_is_other():
    table = {slot: (us, frac, calls) for slot, us, frac, calls in rows(RECORD.models[0].decode)}
    assert list(table) == [*SLOTS, "(other)"]
    assert table["moe.fused_experts"] == (2000.0, 0.5, 32.0) and table["norm.rmsnorm"] == (0.0, 0.0, 0.0)
    assert table["collective.all_reduce"] == (None, None, 0.0)  # the record never measured it
    assert table["(other)"][0] == 1600.0
    assert abs(sum(frac for _, frac, _ in table.values() if frac is not None) - 1) < 1e-9


def test_records_load_from_their_directory_by_name(tmp_path):
    assert load_records(tmp_path) == []
    (tmp_path / "share-h200.json").write_text(RECORD.model_dump_json())
    (tmp_path / "notes.json").write_text("{}")
    assert load_records(tmp_path) == [RECORD]


def test_the_cli_says_no_measurement_is_committed_and_exits_4(tmp_path, monkeypatch):
    monkeypatch.setattr(share_module, "RECORDS", tmp_path)
    text = CliRunner().invoke(slots, ["--share"])
    assert text.exit_code == 4 and "no slot-share measurement is committed" in text.output
    assert "%" not in text.output
    data = CliRunner().invoke(slots, ["--share", "--json"])
    assert data.exit_code == 4 and json.loads(data.output)["measured"] is False


def test_the_cli_prints_a_committed_record(tmp_path, monkeypatch):
    monkeypatch.setattr(share_module, "RECORDS", tmp_path)
    (tmp_path / "share-h200.json").write_text(RECORD.model_dump_json())
    result = CliRunner(env={"COLUMNS": "160"}).invoke(slots, ["--share"])
    assert result.exit_code == 0, result.output
    assert RECORD.command in result.output and "mixtral-8b (bf16) decode: 32 tokens, 4.00 ms" in result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("moe.fused_experts "))
    assert "2000.0" in line and "50.0%" in line
    assert "not measured" in next(x for x in result.output.splitlines() if "collective.all_reduce" in x)
    data = CliRunner().invoke(slots, ["--share", "--json"])
    assert json.loads(data.output)[0]["models"][0]["decode"]["slots"]["moe.fused_experts"] == 2000.0


def test_the_packaged_records_are_whole_steps_of_both_qualification_models():
    """What the device committed: one record per model, each step's slots and (other) adding up to the step, every
    slot a single GPU can reach measured, and the kernels a slot launched counted against calls it made."""
    records = load_records()
    assert {m.preset for r in records for m in r.models} == {"llama-8b", "mixtral-8b"}
    for step in (getattr(m, kind) for r in records for m in r.models for kind in ("decode", "prefill")):
        table = {slot: (us, calls) for slot, us, _, calls in rows(step)}
        assert abs(sum(us for us, _ in table.values() if us is not None) - step.step_us) < 1e-3 * step.step_us
        assert table.pop("(other)")[0] > 0 and all(calls > 0 for us, calls in table.values() if us), table
