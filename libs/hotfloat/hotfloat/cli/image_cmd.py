"""`hotfloat image`: build the reproducible images, read their identity, check digests, run them."""

from __future__ import annotations

from pathlib import Path

import click

from ..image import build, compose, digests, inspect, layers
from ..image.spec import load_spec
from .output import emit_json, json_option, table

_PATH = click.Path(path_type=Path)


@click.group("image")
def image() -> None:
    """Build, inspect, check and run the compiler, worker and validator images."""


@image.command("base")
@click.option("--spec", type=_PATH, default=Path("images/base/base.toml"), show_default=True, help="Base spec.")
@click.option("--lock", type=_PATH, default=Path("images/base/debian.lock"), show_default=True, help="Debian lock.")
@click.option("--out", type=_PATH, required=True, help="Layer tar to write.")
@click.option("--update-lock", is_flag=True, help="Record what apt resolved instead of checking it.")
@click.option("--cache", type=_PATH, help="Folder that keeps downloaded .deb files between builds.")
def base_cmd(spec: Path, lock: Path, out: Path, update_lock: bool, cache: Path | None) -> None:
    """Bootstrap the Debian minbase layer and check every package against the lock."""
    packages = layers.build_base(spec, lock, out, update_lock=update_lock, cache=cache)
    click.echo(f"{out}: {len(packages)} Debian packages", err=True)


@image.command("stack")
@click.option("--base", "base_spec", type=_PATH, default=Path("images/base/base.toml"), show_default=True)
@click.option("--lock", type=_PATH, default=Path("images/base/stack.lock"), show_default=True)
@click.option("--out", type=_PATH, required=True, help="Layer tar to write.")
def stack_cmd(base_spec: Path, lock: Path, out: Path) -> None:
    """Install the shared Python stack lock as one layer (every cpu image reuses it)."""
    installed = layers.python_layer(lock, out, layers.epoch_for(layers.load_base(base_spec)))
    click.echo(f"{out}: {len(installed)} Python distributions", err=True)


@image.command("build")
@click.argument("name")
@click.option("--flavor", default="cpu", show_default=True, help="cpu (CI) or cuda (GPU hosts; worker only).")
@click.option("--repo", type=_PATH, default=Path("."), show_default=True, help="Repository root.")
@click.option("--base-tar", type=_PATH, required=True, help="The Debian base layer (`hotfloat image base`).")
@click.option("--stack-tar", type=_PATH, help="The shared stack layer (`hotfloat image stack`).")
@click.option("--out", type=_PATH, required=True, help="Folder for the OCI layout.")
def build_cmd(name: str, flavor: str, repo: Path, base_tar: Path, stack_tar: Path | None, out: Path) -> None:
    """Build image NAME (images/NAME/image.toml) as an OCI layout and print its manifest digest."""
    images = repo / "images"
    spec = load_spec(images / name / "image.toml")
    digest = build.build_image(
        spec,
        flavor,
        repo=repo,
        image_dir=images / name,
        base=(images / "base/base.toml", images / "base/debian.lock", base_tar),
        stack=(images / "base/stack.lock", stack_tar) if stack_tar else None,
        out=out,
    )
    click.echo(digest)


@image.command("inspect")
@click.argument("image_ref", metavar="IMAGE")
@click.option("--files", "show_files", is_flag=True, help="Also list every file (path, size, sha256).")
@json_option
def inspect_cmd(image_ref: str, show_files: bool, as_json: bool) -> None:
    """Print IMAGE's identity: digest, packages and versions, source revision, file list.

    IMAGE is an OCI layout folder or the name of an image under out/images.
    """
    report = inspect.inspect_image(image_ref)
    if as_json:
        emit_json(report.model_dump(mode="json", exclude=set() if show_files else {"files"}))
        return
    ident = report.identity
    table(
        f"image {ident.name}:{ident.flavor}",
        ["field", "value"],
        [
            ("digest", report.digest),
            ("size", f"{report.size / 2**20:.0f} MiB in {len(report.layers)} layers"),
            ("revision", ident.revision),
            ("inputs", ident.inputs_digest),
            ("user", report.user),
            ("entrypoint", " ".join(report.entrypoint)),
            ("files", str(len(report.files))),
            ("source date", str(ident.source_date_epoch)),
        ],
    )
    table("python", ["distribution", "version"], sorted(ident.python.items()))
    table("debian", ["package", "version"], sorted(ident.debian.items()))
    if show_files:
        table(
            "files",
            ["path", "size", "sha256 / link", "layer"],
            [(f.path, f.size, f.sha256 or f"-> {f.link}", f.layer) for f in report.files],
        )


@image.command("check")
@click.option("--lock", type=_PATH, default=Path("images/digests.lock"), show_default=True)
@click.option("--update", is_flag=True, help="Record the built digests instead of comparing them.")
@click.argument("layouts", nargs=-1, required=True, type=_PATH)
@json_option
def check_cmd(lock: Path, update: bool, layouts: tuple[Path, ...], as_json: bool) -> None:
    """Compare built LAYOUTS' digests with images/digests.lock; exit 1 naming every image that differs."""
    rows = digests.update(lock, layouts) if update else digests.check(lock, layouts)
    if as_json:
        emit_json([r.model_dump() for r in rows])
    else:
        table(
            "image digests",
            ["image", "locked", "built", "status"],
            [(r.image, r.locked, r.built, r.status.value) for r in rows],
        )
    digests.raise_on_mismatch(rows)


@image.command("up")
@click.option("--images", "images_dir", type=_PATH, default=inspect.OUT, show_default=True, help="Built layouts.")
@click.option("--state", type=_PATH, default=compose.STATE, show_default=True, help="Sockets, ledger and logs.")
@click.option("--quick", is_flag=True, help="Admission verifies one fp32 shape per op (CPU demos and tests).")
@click.option(
    "--gpus",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="One qualification container per GPU (0..N-1, the worker image's cuda flavour), all given to the validator.",
)
@click.option(
    "--admission-gpu",
    type=click.IntRange(0),
    help="Admission verifies on this GPU (--device cuda), one that no qualification service uses; default: on CPU.",
)
@json_option
def up_cmd(images_dir: Path, state: Path, quick: bool, gpus: int, admission_gpu: int | None, as_json: bool) -> None:
    """Start compiler, admission (worker image), with --gpus one qualification service per GPU, and validator
    containers sharing a Unix-socket folder."""
    started = compose.up(images_dir, state, quick=quick, gpus=gpus, admission_gpu=admission_gpu)
    if as_json:
        emit_json(started)
    else:
        table(
            "hotfloat containers",
            ["container", "image", "network", "socket"],
            [(s["name"], s["image"], s["network"], s["socket"]) for s in started],
        )


@image.command("down")
@click.option("--state", type=_PATH, default=compose.STATE, show_default=True, help="Sockets, ledger and logs.")
def down_cmd(state: Path) -> None:
    """Stop the containers `hotfloat image up` started."""
    for name in compose.down(state):
        click.echo(f"stopped {name}", err=True)


@image.command("miner")
@click.argument("bundle", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--image", "image_ref", default="compiler", show_default=True, help="Compiler image layout or name.")
@json_option
def miner_cmd(bundle: Path, image_ref: str, as_json: bool) -> None:
    """Scan, verify on CPU and build BUNDLE inside the compiler image (read-only, no network), as validators do."""
    report = compose.miner(bundle, inspect.resolve(image_ref))
    if as_json:
        emit_json(report)
    else:
        table(
            f"miner check of {bundle}",
            ["stage", "status", "detail"],
            [(s["stage"], s["status"], s["detail"]) for s in report["stages"]],
        )
        click.echo(f"bundle identity to commit: {report['identity']}")
        click.echo(f"compiler image: {report['image']}")
    compose.raise_on_failure(report)
