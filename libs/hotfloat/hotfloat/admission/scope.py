"""How much of the verification protocol admission runs, said once for every way a worker is started. Kept apart from
the admission itself and the validator's configuration: the image code names the quick scope when it starts a
container, and must not load the validator (or the qualification behind it) to do so."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..record import Record


class AdmissionScope(Record):
    """The verification admission runs, as the flags of `hotfloat serve admission` (spawned, in a container) and as
    `StageConfig` fields (in this process)."""

    verify_max_shapes: Annotated[int, Field(ge=1)] | None = None
    """Only the first N shapes per dtype; None: every shape."""
    verify_dtypes: tuple[str, ...] | None = None
    """Only these dtypes; None: every dtype an op declares."""

    def flags(self) -> tuple[str, ...]:
        """As `hotfloat serve admission` options."""
        shapes = () if self.verify_max_shapes is None else ("--verify-max-shapes", str(self.verify_max_shapes))
        return (*shapes, *(arg for dtype in self.verify_dtypes or () for arg in ("--verify-dtype", dtype)))

    def stage_kwargs(self) -> dict:
        """As `hotfloat.validator.StageConfig` fields."""
        return self.model_dump()


QUICK_ADMISSION = AdmissionScope(verify_max_shapes=1, verify_dtypes=("fp32",))
"""Smoke runs (`validator run --quick`, `image up --quick`, the service tests): one shape per op, in fp32."""
