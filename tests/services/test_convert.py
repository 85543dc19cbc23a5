"""A qualification reply on the wire: the calibration its verdict was judged under travels as a typed field beside the
evidence, reads back as the same record, and a reply whose two disagree is the service's fault, in one line."""

from __future__ import annotations

import pytest

from hotfloat.errors import InfrastructureError
from hotfloat.qualify.calibration import Uncalibrated
from hotfloat.validator import Outcome
from hotfloat.verdict import Status
from hotfloat_services.qualification.convert import qualify_result
from hotfloat_services.validator.convert import qualified

from ..conftest import calibrated

H100 = calibrated(2, record="calibration-h100-triton.json")


@pytest.mark.parametrize("calibration", [H100, Uncalibrated(why="the CPU rule, never calibrated")])
def test_the_typed_calibration_reads_back_as_the_evidences_own(qualified_record, calibration):
    record = qualified_record("PASS", 0.0175, calibration=calibration)
    reply = qualify_result(Outcome(Status.PASS, ["PASS run"], record))
    assert reply.calibration.record == getattr(calibration, "record", "")
    back = qualified(reply, "unix:/q.sock")
    assert back.evidence.calibration == calibration and back.evidence.endpoint == "unix:/q.sock"


def test_a_reply_whose_typed_calibration_is_not_its_evidences_is_refused(qualified_record):
    reply = qualify_result(Outcome(Status.PASS, ["PASS run"], qualified_record("PASS", 0.0175, calibration=H100)))
    reply.calibration.meets_targets, reply.calibration.shortfall[:] = True, []  # a service claiming a full record
    with pytest.raises(InfrastructureError, match="^malformed reply: its calibration is not the one its evidence"):
        qualified(reply, "q")
    reply.calibration.false_pass_upper_95 = 0.001  # not the bound of 0 in 2: no record says that
    with pytest.raises(InfrastructureError) as e:
        qualified(reply, "q")
    assert str(e.value).startswith("malformed reply: calibration: ") and "\n" not in str(e.value)
    reply.ClearField("calibration")
    with pytest.raises(InfrastructureError, match="not the one its evidence names"):
        qualified(reply, "q")
