"""Loading a bundle from a directory or from in-memory files, enforcing the bundle contract before anything reads it."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import BundleError
from ..slots import Role, get_slot
from .identity import bundle_identity
from .manifest import Manifest, OpEntry, OpMetadata, parse_manifest, parse_metadata

MAX_FILES = 256
MAX_FILE_BYTES = 1 << 20
MAX_TOTAL_BYTES = 8 << 20
MAX_DEPTH = 8
ALLOWED_SUFFIXES = (".py", ".toml", ".json", ".md", ".txt")
COMPILED_SUFFIXES = (
    ".so",
    ".o",
    ".a",
    ".pyc",
    ".pyo",
    ".cubin",
    ".fatbin",
    ".bin",
    ".ptx",
    ".dll",
    ".dylib",
    ".whl",
    ".egg",
    ".pyd",
)
IGNORED_DIRS = (".git", ".hg", ".svn", "__pycache__")
"""Never part of a bundle (not hashed, shipped or scanned): version control and bytecode, as git and pip leave them."""
IGNORED_FILES = (".gitignore", ".gitattributes", ".gitmodules", ".hgignore")
OUTPUT_DIR = "dist"
"""Where `chain package` writes (as uv and cargo write beside the sources): ignored at the bundle root."""
_PATH_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")


@dataclass(frozen=True)
class Op:
    """A manifest op with its resolved metadata."""

    entry: OpEntry
    metadata: OpMetadata

    @property
    def key(self) -> str:
        return f"{self.entry.slot}:{self.entry.variant}"

    @property
    def dtypes(self) -> list[str]:
        return self.metadata.dtypes if self.metadata.dtypes is not None else self.entry.dtypes


@dataclass(frozen=True)
class Bundle:
    """A validated bundle: its manifest, ops, every file's bytes, and its identity."""

    manifest: Manifest
    ops: tuple[Op, ...]
    files: dict[str, bytes] = field(repr=False)
    identity: str
    ignored: tuple[str, ...] = field(default=(), compare=False)
    """Paths left out when read from a directory (VCS, bytecode, package output; directories end in /): for the
    caller to name, since the author may not expect it."""

    def python_files(self) -> dict[str, bytes]:
        return {p: d for p, d in self.files.items() if p.endswith(".py")}


def check_path(rel: str) -> None:
    """Refuses paths that are hidden, escaping, oddly named, compiled or of a type bundles never carry."""
    if len(rel) > 255:
        raise BundleError(f"{rel[:64]!r}...: refused path (longer than 255 characters)")
    if rel.endswith(COMPILED_SUFFIXES) or "__pycache__" in rel.split("/"):
        raise BundleError(f"{rel!r}: compiled files are refused (ship sources only)")
    if not _PATH_RE.match(rel) or rel.count("/") >= MAX_DEPTH:
        raise BundleError(f"{rel!r}: refused path (hidden, escaping, too deep or unusual characters)")
    if not rel.endswith(ALLOWED_SUFFIXES):
        raise BundleError(f"{rel}: file type not allowed in a bundle (allowed: {' '.join(ALLOWED_SUFFIXES)})")


def is_ignored(rel: str) -> bool:
    """The one rule for what is left out of a bundle, read from a folder or an archive: a path inside a VCS or
    bytecode directory or the root's OUTPUT_DIR, or a VCS control file (a directory is asked as `rel/`)."""
    *dirs, name = rel.split("/")
    return name in IGNORED_FILES or any(d in IGNORED_DIRS for d in dirs) or dirs[:1] == [OUTPUT_DIR]


def read_bundle_dir(root: Path, ignored: list[str] | None = None) -> dict[str, bytes]:
    """Reads every file under root without following links; refuses links, special files and excess size. VCS,
    bytecode and package-output directories are skipped, and their paths appended to `ignored` when given."""
    if root.is_symlink():
        raise BundleError(f"{root}: the bundle path is a symlink (refused)")
    if not root.is_dir():
        raise BundleError(f"{root}: not a bundle directory")
    files: dict[str, bytes] = {}
    skipped = ignored if ignored is not None else []
    total = 0
    stack = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        with os.scandir(directory) as it:
            for e in sorted(it, key=lambda e: e.name):
                rel = f"{prefix}{e.name}"
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    raise BundleError(f"{rel}: symlinks are refused in bundles")
                if stat.S_ISDIR(st.st_mode):
                    if is_ignored(rel + "/"):
                        skipped.append(rel + "/")
                        continue
                    if e.name.startswith("."):
                        raise BundleError(f"{rel}/: hidden directories are refused")
                    stack.append((Path(e.path), rel + "/"))
                    continue
                if is_ignored(rel):
                    skipped.append(rel)
                    continue
                if not stat.S_ISREG(st.st_mode):
                    raise BundleError(f"{rel}: not a regular file (refused)")
                check_path(rel)
                if st.st_size > MAX_FILE_BYTES:
                    raise BundleError(f"{rel}: {st.st_size} bytes exceeds the {MAX_FILE_BYTES}-byte file limit")
                total += st.st_size
                if len(files) >= MAX_FILES or total > MAX_TOTAL_BYTES:
                    raise BundleError(f"bundle exceeds {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
                with open(e.path, "rb") as f:  # bounded: the file may have grown since stat()
                    files[rel] = f.read(MAX_FILE_BYTES + 1)
                if len(files[rel]) > MAX_FILE_BYTES:
                    raise BundleError(f"{rel}: more than {MAX_FILE_BYTES} bytes (refused)")
    return files


def load_bundle(path: str | os.PathLike) -> Bundle:
    """Loads and validates a bundle directory; what was left out is on the bundle's `ignored`."""
    ignored: list[str] = []
    bundle = bundle_from_files(read_bundle_dir(Path(path), ignored))
    return replace(bundle, ignored=tuple(sorted(ignored)))


def bundle_from_files(files: dict[str, bytes]) -> Bundle:
    """Validates a bundle given as relative path -> bytes (from a directory or an archive)."""
    if len(files) > MAX_FILES or sum(map(len, files.values())) > MAX_TOTAL_BYTES:
        raise BundleError(f"bundle exceeds {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
    for rel, data in files.items():
        check_path(rel)
        if len(data) > MAX_FILE_BYTES:
            raise BundleError(f"{rel}: {len(data)} bytes exceeds the {MAX_FILE_BYTES}-byte file limit")
    _refuse_file_dir_clashes(files)
    if "manifest.toml" not in files:
        raise BundleError("manifest.toml is missing at the bundle root")
    manifest = parse_manifest(_text("manifest.toml", files["manifest.toml"]))
    ops = tuple(_resolve_op(e, files) for e in manifest.ops)
    _refuse_overlaps(ops)
    return Bundle(manifest=manifest, ops=ops, files=dict(sorted(files.items())), identity=bundle_identity(files))


def _refuse_file_dir_clashes(files: dict[str, bytes]) -> None:
    """An archive can hold `k.py` and `k.py/x.py`; no directory can, and writing both out would fail mid-verify."""
    for rel in files:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if (parent := "/".join(parts[:i])) in files:
                raise BundleError(f"{parent} is both a file and a directory (refused)")


def _text(rel: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError(f"{rel}: not UTF-8 text") from None


def _resolve_op(entry: OpEntry, files: dict[str, bytes]) -> Op:
    slot = get_slot(entry.slot)
    where = f"op {entry.slot}:{entry.variant}"
    if not (entry.source.startswith("kernels/") and entry.source.endswith(".py")):
        raise BundleError(f"{where}: source {entry.source!r} must be a kernels/*.py file")
    if entry.source not in files:
        raise BundleError(f"{where}: source {entry.source!r} is not in the bundle")
    if not set(entry.dtypes) <= set(slot.dtypes):
        raise BundleError(f"{where}: dtypes {entry.dtypes} not all supported by the slot ({list(slot.dtypes)})")
    metadata = OpMetadata()
    if entry.metadata is not None:
        if not (entry.metadata.startswith("metadata/") and entry.metadata.endswith(".json")):
            raise BundleError(f"{where}: metadata {entry.metadata!r} must be a metadata/*.json file")
        if entry.metadata not in files:
            raise BundleError(f"{where}: metadata {entry.metadata!r} is not in the bundle")
        metadata = parse_metadata(entry.metadata, _text(entry.metadata, files[entry.metadata]))
        _check_token_range(metadata, slot, where)
        if metadata.dtypes is not None and not set(metadata.dtypes) <= set(entry.dtypes):
            raise BundleError(f"{where}: metadata dtypes {metadata.dtypes} widen the op's dtypes {entry.dtypes}")
    if entry.kernel is not None:
        _check_kernel(entry, slot, where)
    return Op(entry=entry, metadata=metadata)


def _check_token_range(metadata: OpMetadata, slot, where: str) -> None:
    """Metadata narrows where a variant runs; it cannot make the validator build inputs beyond the slot's largest
    token count (the verifier clamps its counts to min_num_tokens)."""
    top = max(s.dims[slot.count_dim] for s in (*slot.shapes, *slot.bench_shapes))
    if metadata.min_num_tokens > top:
        raise BundleError(
            f"{where}: metadata min_num_tokens {metadata.min_num_tokens} is beyond the slot's largest token count {top}"
        )


def kernel_names(slot) -> tuple[set[str], set[str]]:
    """What a kernel parameter may bind to: the slot's tensor arguments (pointers) and its dims and strides (ints)."""
    tensors = {a.name: a for a in slot.args if a.role in (Role.INPUT, Role.OUTPUT)}
    dims = {f for a in tensors.values() for e in a.shape for f in (p.strip() for p in e.split("*")) if not f.isdigit()}
    strides = {f"{n}_stride{k}" for n, a in tensors.items() for k in range(len(a.shape))}
    return set(tensors), dims | strides


def _check_kernel(entry: OpEntry, slot, where: str) -> None:
    """An AOT kernel binds only to names the slot defines, runs only on CUDA, and launches over known sizes."""
    if "cpu" in entry.architectures:
        raise BundleError(f"{where}: a {entry.kind} kernel is built for CUDA; remove 'cpu' from architectures")
    tensors, ints = kernel_names(slot)
    for p in entry.kernel.params:
        is_ptr = p.type.startswith("*")
        if (is_ptr and p.name not in tensors) or (not is_ptr and p.name not in ints):
            kind, known = ("pointer", tensors) if is_ptr else ("scalar", ints)
            raise BundleError(f"{where}: kernel {kind} parameter {p.name!r} binds to nothing; known: {sorted(known)}")
    sizes = ints | set(entry.kernel.constexprs)
    for item in entry.kernel.grid:
        name = item.removeprefix("cdiv(").split(",")[0].strip()
        if not name.isdigit() and name not in sizes:
            raise BundleError(f"{where}: kernel grid item {item!r} names no slot dim or constexpr")


def _refuse_overlaps(ops: tuple[Op, ...]) -> None:
    """Two variants of one slot may not claim the same (dtype, architecture, token count): routing must be unambiguous."""
    for i, a in enumerate(ops):
        for b in ops[i + 1 :]:
            if a.entry.slot != b.entry.slot:
                continue
            if a.entry.variant == b.entry.variant:
                raise BundleError(f"op {a.key}: variant name used twice for one slot")
            lo = max(a.metadata.min_num_tokens, b.metadata.min_num_tokens)
            hi = min(x for x in (a.metadata.max_num_tokens, b.metadata.max_num_tokens, 1 << 62) if x is not None)
            shared = set(a.dtypes) & set(b.dtypes) and set(a.entry.architectures) & set(b.entry.architectures)
            if shared and lo <= hi:
                raise BundleError(f"ops {a.key} and {b.key} overlap (same dtype, architecture and token range)")
