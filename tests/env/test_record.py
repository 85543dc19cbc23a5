"""EnvIdentity: every gap is explained, and only fields that matter block a comparison."""

import pytest
from pydantic import ValidationError

from hotfloat.env import EnvIdentity, GpuReading, collect


def _identity(**overrides) -> EnvIdentity:
    base = collect().model_dump()
    base.update(overrides)
    for name, value in overrides.items():
        if value is not None:
            base["absent"].pop(name, None)
    return EnvIdentity(**base)


def test_an_empty_field_without_a_reason_is_refused():
    data = collect().model_dump()
    data["absent"] = {}
    data["torch"] = None
    with pytest.raises(ValidationError, match="empty fields without a reason: .*torch"):
        EnvIdentity(**data)


def test_a_reason_for_a_filled_field_is_refused():
    data = collect().model_dump()
    data["absent"]["python"] = "made up"
    with pytest.raises(ValidationError, match="reasons given for fields that have values: python"):
        EnvIdentity(**data)


def test_unknown_fields_are_refused_and_the_record_is_frozen():
    data = collect().model_dump()
    with pytest.raises(ValidationError):
        EnvIdentity(**data, hostname="x")
    identity = EnvIdentity(**data)
    with pytest.raises(ValidationError):
        identity.torch = "other"


def test_identical_identities_have_no_mismatch():
    assert collect().mismatches(collect()) == []


def test_a_different_torch_or_gpu_is_named():
    mine = _identity(torch="2.11.0+cu130")
    theirs = _identity(torch="2.13.0+cpu", gpu_model="NVIDIA H200")
    found = mine.mismatches(theirs)
    assert any(m.startswith("torch: '2.11.0+cu130' != '2.13.0+cpu'") for m in found)
    assert any(m.startswith("gpu_model:") for m in found)
    assert len(found) == 2


def test_readings_and_visibility_do_not_block_a_comparison():
    hot = GpuReading(index=0, name="NVIDIA H200", sm_clock_mhz=1980.0, power_draw_w=650.0)
    cold = GpuReading(index=0, name="NVIDIA H200", sm_clock_mhz=345.0, power_draw_w=80.0)
    assert _identity(gpus=(hot,), gpu_visibility="0").mismatches(_identity(gpus=(cold,), gpu_visibility="all")) == []
