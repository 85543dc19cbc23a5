"""The one base of the library's boundary records, so every record refuses unknown keys, cannot change after it is
made, and documents each field by the docstring under it."""

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """What crosses a process, the wire or the ledger; NaN and infinities are written as JSON constants so a
    candidate's NaN survives a round trip instead of becoming null."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, ser_json_inf_nan="constants")
