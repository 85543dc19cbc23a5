"""The build's outcome as a record: one artifact per (op, dtype) with its cubin digest, declared parameter layout,
launch shape and the digests of everything that went into it. The cubin bytes travel beside the JSON, never in it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator

from ..errors import InputError
from ..record import Record, first_error
from ..verdict import Status

SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class KernelArtifact(Record):
    """One cubin built for one op and dtype."""

    op: str
    """The op key, slot:variant."""
    kind: Literal["triton", "cute"]
    entry: str
    """The compiled function (@triton.jit or @cute.jit launcher)."""
    symbol: str
    """The cubin's single entry kernel; admission asserts the driver loads exactly this one."""
    dtype: str
    arch: str
    """Target architecture, e.g. sm_90a."""
    cubin: str
    """Artifact name of the cubin bytes."""
    cubin_sha256: SHA256
    param_names: list[str]
    """Declared parameters in order (what the validator binds to each)."""
    param_types: list[str]
    """Declared types with "*T" resolved to the dtype."""
    layout: list[tuple[int, int]]
    """(offset, size) of every parameter the driver must report, including Triton's scratch pointers."""
    grid: list[str]
    block: int
    shared_bytes: Annotated[int, Field(ge=0, le=227 << 10)] = 0
    """Dynamic shared memory the launch must provide."""
    inputs: dict[str, SHA256]
    """Digests of the build inputs: the source file, the manifest, the kernel declaration and the bundle."""


class BuildRecord(Record):
    """What building a bundle produced: PASS with artifacts, FAIL with the reasons, N_A when nothing needs building."""

    bundle_identity: SHA256
    arch: str
    toolchain: dict[str, str]
    """Compiler package versions, e.g. {"triton": "3.7.1"}."""
    status: Status
    reasons: list[str] = Field(default_factory=list)
    kernels: list[KernelArtifact] = Field(default_factory=list)
    cubins: dict[str, bytes] = Field(default_factory=dict, exclude=True, repr=False)
    """Artifact name -> cubin bytes; excluded from the JSON so the record stays small and printable."""

    @model_validator(mode="after")
    def _consistent(self):
        if self.status is Status.PASS and not self.kernels:
            raise ValueError("a PASS build must carry kernels")
        if self.status is Status.FAIL and not self.reasons:
            raise ValueError("a FAIL build must say why")
        return self

    def artifact_digests(self) -> dict[str, str]:
        return {k.cubin: k.cubin_sha256 for k in self.kernels}

    def with_cubins(self, artifacts: Mapping[str, bytes]) -> BuildRecord:
        """This record with its cubins' bytes, every digest re-checked; artifacts that are not its own are refused."""
        expected = self.artifact_digests()
        if set(artifacts) != set(expected):
            raise InputError(f"build artifacts {sorted(artifacts)} do not match the record's {sorted(expected)}")
        for name, data in artifacts.items():
            if hashlib.sha256(data).hexdigest() != expected[name]:
                raise InputError(f"build artifact {name}: digest does not match the record")
        return self.model_copy(update={"cubins": dict(artifacts)})


def load_build(evidence: str | bytes | Mapping, artifacts: Mapping[str, bytes]) -> BuildRecord:
    """Rebuilds a record received from elsewhere (its JSON, or the object already parsed from it), re-checking every
    artifact digest; a mismatch is refused."""
    try:
        record = (
            BuildRecord.model_validate(evidence)
            if isinstance(evidence, Mapping)
            else BuildRecord.model_validate_json(evidence)
        )
    except ValidationError as e:
        raise InputError(f"build record: {first_error(e, 'record')}") from None
    return record.with_cubins(artifacts)
