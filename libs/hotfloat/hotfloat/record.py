"""The one base of the library's boundary records, so every record refuses unknown keys, cannot change after it is
made, and documents each field by the docstring under it."""

from pydantic import BaseModel, ConfigDict, ValidationError


class Record(BaseModel):
    """What crosses a process, the wire or the ledger; NaN and infinities are written as JSON constants so a
    candidate's NaN survives a round trip instead of becoming null."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, ser_json_inf_nan="constants")


def first_error(e: ValidationError, whole: str = "") -> str:
    """A record's first validation problem on one line, `where: what`; `whole` names the record when the problem is
    the record itself (an empty location), so every refusal of untrusted input reads the same."""
    err = e.errors()[0]
    where = ".".join(map(str, err["loc"])) or whole
    what = err["msg"].removeprefix("Value error, ").splitlines()[0]
    if err["type"] == "extra_forbidden":
        what = "unknown key (refused: unknown keys never grant anything)"
    return f"{where}: {what}" if where else what
