"""`hotfloat build` and `hotfloat admit`: the compiler's and the admission service's stages (the same library calls),
on a bundle given here: deviceless cubin builds of its AOT kernels, and its admission."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import InputError
from ..devices import resolve_device
from .options import bundle_argument, device_option, open_bundle, read_input, seed_option
from .output import emit_json, exit_with, json_option, table

INDEX = "index.json"
INDEX_BYTES = 4 << 20
"""A build record names a few kernels; anything larger is not one."""


@click.command("build")
@bundle_argument
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for the cubins and index.json (the build record).",
)
@click.option("--arch", default="sm_90a", show_default=True, help="Target CUDA architecture.")
@json_option
def build(bundle: str, out_dir: Path, arch: str, as_json: bool) -> None:
    """Scan BUNDLE, then compile its triton/cute kernels to cubins without a GPU, in a sandbox; exit 0 PASS, 1 FAIL."""
    from ..validator.local import build_stage

    record = build_stage(open_bundle(bundle), arch=arch).evidence
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in record.cubins.items():
        (out_dir / name).write_bytes(data)
    (out_dir / INDEX).write_text(record.model_dump_json(indent=2))
    if as_json:
        emit_json(record.model_dump(mode="json"))
    else:
        table(
            f"build {record.status.value}: {'; '.join(record.reasons)}",
            ["op", "dtype", "kernel", "cubin sha256"],
            [(k.op, k.dtype, k.symbol, k.cubin_sha256[:16]) for k in record.kernels],
        )
    exit_with(record.status)


@click.command("admit")
@bundle_argument
@click.option(
    "--build",
    "build_dir",
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A directory written by `hotfloat build`.",
)
@seed_option("the inputs of every op and cubin")
@device_option("Where the ops are verified and the cubins loaded.")
@json_option
def admit_cmd(bundle: str, build_dir: Path, seed: int | None, device: str, as_json: bool) -> None:
    """Verify BUNDLE's ops, then gate, load (Driver API) and verify its built cubins, as the admission service does;
    without a GPU the verdict says the load was skipped. Exit 0 PASS, 1 FAIL, 5 NO_DECISION."""
    from ..compiler import load_build
    from ..native.elf import MAX_CUBIN_BYTES
    from ..validator import StageConfig
    from ..validator.local import admit_stage, built_outcome

    try:
        evidence = read_input(build_dir / INDEX, INDEX_BYTES, "build record").decode()
        names = json.loads(evidence).get("kernels", [])
        artifacts = {k["cubin"]: read_input(build_dir / Path(k["cubin"]).name, MAX_CUBIN_BYTES, "cubin") for k in names}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise InputError(f"{build_dir}: not a readable build directory: {e}") from None
    built = built_outcome(load_build(evidence, artifacts))
    options = StageConfig(device=resolve_device(device)).verify_options(seed)
    outcome = admit_stage(open_bundle(bundle), built, options)
    if as_json:
        emit_json(
            {"status": outcome.status.value, "reasons": outcome.reasons, **outcome.evidence.model_dump(mode="json")}
        )
    else:
        table(f"admission {outcome.status.value} on {options.device}", ["reason"], [(r,) for r in outcome.reasons])
    exit_with(outcome.status)
