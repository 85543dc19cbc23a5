"""The bundle manifest and op metadata as strict records: unknown keys are refused, never ignored."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import ABI_VERSION
from ..errors import BundleError
from ..record import Record, first_error
from ..slots import DTYPES
from .bounded import load_json, load_toml

IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"
MAX_MANIFEST_CHARS = 64 << 10
MAX_METADATA_CHARS = 16 << 10
ARCHITECTURES = ("cpu", "sm_80", "sm_89", "sm_90", "sm_90a", "sm_100")


class Strict(Record):
    """Base of the manifest's records: the library's record base, and no coercion (a "1" is not a 1)."""

    model_config = ConfigDict(strict=True)


def contained_path(value: str) -> str:
    """A relative POSIX path that stays inside the bundle."""
    if len(value) > 255:
        raise ValueError("path longer than 255 characters")
    p = PurePosixPath(value)
    if not value or value.startswith("/") or "\\" in value or ".." in p.parts or p.parts[0] in (".", ""):
        raise ValueError(f"path {value!r} must be relative and inside the bundle")
    return value


class OpMetadata(Strict):
    """Capabilities a variant declares; the validator routes calls outside them to the stock kernel."""

    graph_safe: bool = False
    """The op may be captured in a CUDA graph (no host syncs, no allocation per call)."""
    dtypes: list[str] | None = None
    """Narrows the op's dtypes further."""
    min_num_tokens: Annotated[int, Field(ge=1)] = 1
    """Smallest token count the variant handles."""
    max_num_tokens: Annotated[int, Field(ge=1)] | None = None
    """Largest token count the variant handles; None means unbounded."""

    @model_validator(mode="after")
    def _range(self):
        if self.max_num_tokens is not None and self.max_num_tokens < self.min_num_tokens:
            raise ValueError("max_num_tokens must be >= min_num_tokens")
        return self


PARAM_TYPES = ("*T", "*bf16", "*fp16", "*fp32", "i32", "i64", "fp32")
"""Kernel parameter types: a pointer ("*T" follows the op's dtype) or a scalar."""
GRID_ITEM = r"^([1-9][0-9]{0,5}|[A-Za-z_][A-Za-z0-9_]*|cdiv\(\s*[A-Za-z_][A-Za-z0-9_]*\s*,\s*[1-9][0-9]{0,5}\s*\))$"


class KernelParam(Strict):
    """One kernel parameter: what the validator binds to it, and its type."""

    name: Annotated[str, Field(pattern=IDENT)]
    """A slot tensor argument (its data pointer), a slot dim, or `<arg>_stride<k>` (element stride of dim k)."""
    type: Annotated[str, Field(pattern=r"^(\*T|\*bf16|\*fp16|\*fp32|i32|i64|fp32)$")]
    """One of PARAM_TYPES."""


class KernelDecl(Strict):
    """An ahead-of-time kernel of a triton/cute op: what the validator compiles, expects in the cubin, and launches."""

    params: Annotated[list[KernelParam], Field(min_length=1, max_length=32)]
    """The kernel's parameters in order; the admission asserts the cubin declares exactly this layout."""
    grid: Annotated[list[Annotated[str, Field(pattern=GRID_ITEM)]], Field(min_length=1, max_length=3)]
    """Launch grid (x, y, z): each an integer, a slot dim or constexpr, or cdiv(name, integer)."""
    block: Annotated[int, Field(ge=32, le=1024, multiple_of=32)] = 128
    """Threads per block (a triton kernel is built with block/32 warps)."""
    constexprs: dict[Annotated[str, Field(pattern=IDENT)], Annotated[int, Field(ge=-(1 << 31), lt=1 << 31)]] = Field(
        default_factory=dict, max_length=16
    )
    """Compile-time constants (triton constexprs; for cute, python ints passed to the @cute.jit launcher), 32-bit."""
    symbol: Annotated[str, Field(pattern=IDENT)] | None = None
    """The @cute.kernel function the launcher launches (the cubin symbol derives from it); triton: the entry itself."""

    @model_validator(mode="after")
    def _distinct(self):
        names = [p.name for p in self.params] + list(self.constexprs)
        if len(set(names)) != len(names):
            raise ValueError("kernel parameter and constexpr names must be distinct")
        return self


class OpEntry(Strict):
    """One kernel offered for one slot."""

    slot: Annotated[str, Field(max_length=128)]
    """Registered slot name, e.g. activation.silu_and_mul."""
    source: str
    """Python file inside the bundle, e.g. kernels/silu.py."""
    entry: Annotated[str, Field(pattern=IDENT)]
    """Top-level function in `source` implementing the slot's ABI."""
    variant: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")] = "default"
    """Distinguishes several ops for one slot; their domains must not overlap."""
    dtypes: list[str] = Field(default_factory=lambda: list(DTYPES))
    """Dtypes this op handles."""
    architectures: list[str] = Field(default_factory=lambda: ["cpu", "sm_90"])
    """Where this op may run: cpu or a CUDA architecture."""
    metadata: str | None = None
    """Optional metadata/*.json with OpMetadata."""
    kind: Annotated[str, Field(pattern=r"^(python|triton|cute)$")] = "python"
    """How the validator loads it: plain python (torch or JIT Triton), or ahead-of-time built triton/cute kernels."""
    kernel: KernelDecl | None = None
    """Required for kind triton/cute: the ahead-of-time kernel `entry` names (the @triton.jit or @cute.jit function)."""

    @field_validator("source", "metadata")
    @classmethod
    def _v_paths(cls, v):
        return None if v is None else contained_path(v)

    @field_validator("dtypes")
    @classmethod
    def _v_dtypes(cls, v):
        bad = [d for d in v if d not in DTYPES]
        if bad or not v or len(set(v)) != len(v):
            raise ValueError(f"dtypes must be distinct names from {sorted(DTYPES)}, got {v}")
        return v

    @field_validator("architectures")
    @classmethod
    def _v_arch(cls, v):
        bad = [a for a in v if a not in ARCHITECTURES]
        if bad or not v or len(set(v)) != len(v):
            raise ValueError(f"architectures must be distinct names from {list(ARCHITECTURES)}, got {v}")
        return v

    @model_validator(mode="after")
    def _v_kernel(self):
        if (self.kind == "python") != (self.kernel is None):
            raise ValueError("kind triton/cute needs a [ops.kernel] table; kind python must not have one")
        return self


BUNDLE_ID = re.compile(r"^[0-9A-Za-z._-]{1,64}$")
"""What a bundle_id may be: it names files and table rows, never an identity (that is the content hash)."""


class Manifest(Strict):
    """manifest.toml: what the bundle offers, for which slots, under which ABI."""

    bundle_id: Annotated[str, Field(pattern=BUNDLE_ID.pattern)]
    """Human name of the bundle; its identity is the content hash, not this."""
    abi_version: str
    """Must be hotfloat-op-abi-v1."""
    ops: Annotated[list[OpEntry], Field(min_length=1, max_length=64)]
    """The kernels offered."""

    @field_validator("abi_version")
    @classmethod
    def _v_abi(cls, v):
        if v != ABI_VERSION:
            raise ValueError(f"abi_version must be {ABI_VERSION!r}, got {v!r}")
        return v


def parse_manifest(text: str) -> Manifest:
    """Parses manifest.toml text from an untrusted bundle, bounded before the TOML parser runs."""
    try:
        data = load_toml(text, max_chars=MAX_MANIFEST_CHARS)
    except ValueError as e:
        raise BundleError(f"manifest.toml: {e}") from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as e:
        raise BundleError(f"manifest.toml: {first_error(e, 'manifest')}") from None


def parse_metadata(name: str, text: str) -> OpMetadata:
    """Parses an op's metadata JSON from an untrusted bundle, bounded before the JSON parser runs."""
    try:
        data = load_json(text, max_chars=MAX_METADATA_CHARS)
    except ValueError as e:
        raise BundleError(f"{name}: {e}") from None
    if not isinstance(data, dict):
        raise BundleError(f"{name} must hold a JSON object")
    try:
        return OpMetadata.model_validate(data)
    except ValidationError as e:
        raise BundleError(f"{name}: {first_error(e, 'metadata')}") from None
