"""The environment identity: one typed record of everything a verify, bench or qualification result depends on."""

from __future__ import annotations

from pydantic import Field, model_validator

from ..record import Record


class GpuReading(Record):
    """One visible GPU's clocks and power at collection time; they vary run to run, so they never block a comparison."""

    index: int
    """Physical index as nvidia-smi numbers it."""
    name: str
    """Marketing name, e.g. 'NVIDIA H200'."""
    uuid: str | None = None
    sm_clock_mhz: float | None = None
    """Current SM clock."""
    max_sm_clock_mhz: float | None = None
    """Maximum SM clock the board allows; a lower current clock under load means throttling."""
    mem_clock_mhz: float | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    persistence_mode: str | None = None
    """'Enabled' keeps the driver loaded between runs, which removes a cold-start outlier."""


# Fields whose difference makes two results incomparable; readings, host details and visibility do not.
MATTERS: tuple[str, ...] = (
    "gpu_model",
    "gpu_count",
    "gpu_capability",
    "driver",
    "cuda_runtime",
    "torch",
    "torch_cuda",
    "triton",
    "sglang",
    "cutlass_dsl",
    "flashinfer",
    "image_digest",
    "source",
    "python",
)


UNRECORDED = "not recorded: collected before identities carried the source digest (`revision` is only a hint)"


class EnvIdentity(Record):
    """What ran a result; every None field has its reason in `absent`, so an empty field is never silent."""

    gpu_model: str | None = None
    """Name of the first visible GPU."""
    gpu_count: int | None = None
    """How many GPUs the process may use (after CUDA_VISIBLE_DEVICES)."""
    gpu_visibility: str | None = None
    """CUDA_VISIBLE_DEVICES as set, or 'all' when unset."""
    gpu_capability: str | None = None
    """Compute capability of the first visible GPU, e.g. '9.0'."""
    driver: str | None = None
    """NVIDIA driver version."""
    driver_cuda: str | None = None
    """Newest CUDA version the driver supports (cuDriverGetVersion)."""
    cuda_runtime: str | None = None
    """CUDA runtime the Torch build ships with; the runtime that kernels actually launch through."""
    cuda_toolkit: str | None = None
    """Version of the CUDA toolkit under CUDA_HOME (or /usr/local/cuda), if any."""
    nvcc: str | None = None
    """Release reported by `nvcc --version`."""
    torch: str | None = None
    torch_cuda: str | None = None
    """torch.version.cuda: None for a CPU build of Torch."""
    triton: str | None = None
    sglang: str | None = None
    cutlass_dsl: str | None = None
    """Version of nvidia-cutlass-dsl."""
    flashinfer: str | None = None
    python: str
    """Interpreter version, e.g. '3.11.7'."""
    platform: str
    """Kernel and machine, e.g. 'Linux-6.1.0-x86_64'."""
    image: str | None = None
    """Name and flavour of the hotfloat image this runs in, read from the file the image carries."""
    image_inputs: str | None = None
    """SHA-256 over the image's spec, locks and sources, recorded in the image at build time."""
    image_digest: str | None = None
    """OCI manifest digest of the running image, given by the launcher (an image cannot contain its own digest)."""
    source: str | None = None
    """`src-sha256:<hex>` over the project's own files as this process imports them (hotfloat.env.source): the code
    that ran. Inside an image it equals the image's `revision`."""
    revision: str | None = None
    """The checkout's git revision, '+dirty' with uncommitted changes: a hint of where `source` came from, never what
    ran (a dirty tree's edits are not in it)."""
    cuda_graphs: bool | None = None
    """Whether CUDA-graph capture is in use for GPU runs (HOTFLOAT_CUDA_GRAPHS=0 turns it off)."""
    gpus: tuple[GpuReading, ...] = ()
    """Clock and power readings of each visible GPU."""
    absent: dict[str, str] = Field(default_factory=dict)
    """Why each empty field is empty, by field name."""

    @model_validator(mode="before")
    @classmethod
    def _before_source(cls, data):
        """Identities written before `source` existed (committed evidence and raw files) say so in `absent`."""
        if isinstance(data, dict) and "source" not in data and isinstance(data.get("absent", {}), dict):
            data = {**data, "absent": {**data.get("absent", {}), "source": UNRECORDED}}
        return data

    @model_validator(mode="after")
    def _every_gap_explained(self) -> EnvIdentity:
        empty = {name for name in type(self).model_fields if getattr(self, name) is None}
        if missing := sorted(empty - set(self.absent)):
            raise ValueError(f"empty fields without a reason: {', '.join(missing)}")
        if stale := sorted(set(self.absent) - empty):
            raise ValueError(f"reasons given for fields that have values: {', '.join(stale)}")
        return self

    def mismatches(self, other: EnvIdentity) -> list[str]:
        """Names the fields that matter and differ, as 'field: mine != theirs'; compare results only when empty."""
        return [
            f"{name}: {getattr(self, name)!r} != {getattr(other, name)!r}"
            for name in MATTERS
            if getattr(self, name) != getattr(other, name)
        ]
