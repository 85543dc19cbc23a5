"""Admission: on CPU everything up to the Driver-API load runs and the verdict says the load was skipped for want of
a GPU; tampered records and cubins are refused. Set HOTFLOAT_LIVE_GPU=1 on a CUDA machine to require a real PASS
(a missing GPU is then a failure, never a skip)."""

import os

import pytest

from hotfloat.admission.admit import admit, gpu_missing
from hotfloat.errors import InputError
from hotfloat.verdict import Status

LIVE = os.environ.get("HOTFLOAT_LIVE_GPU") == "1"


@pytest.mark.parametrize("example", ["silu_triton_aot", "silu_cute_aot"])
def test_examples_admit(aot_builds, example):
    bundle, record = aot_builds[example]
    report = admit(bundle, record, seed=1)
    if LIVE:
        assert gpu_missing() is None, f"HOTFLOAT_LIVE_GPU=1 but {gpu_missing()}"
        assert report.status is Status.PASS, report.reasons
        assert all(k.ok and len(k.loaded) == 1 for k in report.kernels)
    else:
        assert gpu_missing()
        assert report.status is Status.NO_DECISION
        assert report.reasons[0].startswith("skipped: no GPU")
        assert f"passed for {len(record.kernels)} cubins" in report.reasons[0]


def test_record_for_another_bundle_is_refused(aot_builds):
    triton_bundle, _ = aot_builds["silu_triton_aot"]
    _, cute_record = aot_builds["silu_cute_aot"]
    with pytest.raises(InputError, match="another bundle"):
        admit(triton_bundle, cute_record)


def test_swapped_cubin_bytes_are_refused(aot_builds):
    bundle, record = aot_builds["silu_triton_aot"]
    a, b = record.kernels[0].cubin, record.kernels[1].cubin
    swapped = record.model_copy(update={"cubins": {**record.cubins, a: record.cubins[b]}})
    with pytest.raises(InputError, match="digest"):
        admit(bundle, swapped)


def test_cubin_with_an_undeclared_layout_fails(aot_builds):
    """A record whose digest matches a cubin that does not hold the declared kernel is a FAIL (the candidate's)."""
    bundle, record = aot_builds["silu_triton_aot"]
    _, cute = aot_builds["silu_cute_aot"]
    k = record.kernels[0]
    foreign = cute.cubins[cute.kernels[0].cubin]
    import hashlib

    forged = record.model_copy(
        update={
            "kernels": [k.model_copy(update={"cubin_sha256": hashlib.sha256(foreign).hexdigest()})],
            "cubins": {k.cubin: foreign},
        }
    )
    report = admit(bundle, forged)
    assert report.status is Status.FAIL
    assert "not exactly the declared" in report.reasons[0]


def test_failed_build_admits_nothing(aot_builds):
    bundle, record = aot_builds["silu_triton_aot"]
    failed = record.model_copy(update={"status": Status.FAIL, "reasons": ["boom"], "kernels": [], "cubins": {}})
    report = admit(bundle, failed)
    assert report.status is Status.FAIL and "boom" in report.reasons
