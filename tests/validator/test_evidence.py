"""Stage evidence reads back as the record it was written from; a derived field that disagrees is refused."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hotfloat.validator import Admitted, StageEvidence
from hotfloat.verify import VerifyReport, VerifyRow

ROW = VerifyRow(slot="activation.silu_and_mul", variant="v", dtype="bf16", shape="(8, 64)", status="FAIL", reason="off")
REPORT = VerifyReport(bundle_id="a", identity="0" * 64, seed=1, device="cpu", arch="cpu", sandboxed=True, rows=[ROW])


def test_admission_evidence_round_trips_typed():
    row = StageEvidence[Admitted](status="FAIL", reasons=["off"], record=Admitted(verify=REPORT, device="cpu"))
    back = StageEvidence[Admitted].model_validate_json(row.model_dump_json())
    assert back == row and back.record.verify.status == "FAIL"


def test_a_report_whose_status_disagrees_with_its_rows_is_refused():
    data = json.loads(REPORT.model_dump_json())
    data["status"] = "PASS"
    with pytest.raises(ValidationError, match="does not match the rows"):
        VerifyReport.model_validate(data)
