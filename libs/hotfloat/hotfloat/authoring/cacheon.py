"""`hotfloat bundle import`: convert a bundle written for Cacheon into a hotfloat bundle, reporting every change.

The two formats share the layout (manifest.toml, kernels/, metadata/), the slot names and the write-into-output ABI;
they differ in spelling and in what a bundle may ask for. Converted: the ABI name, dtype names (float32 -> fp32),
architecture names (sm90 -> sm_90), metadata keys; a Triton op built for GPUs only gets cpu when Triton's interpreter
can run it (`interpret`); dtypes the hotfloat slot lacks are dropped. Cacheon calls hotfloat serves through an
adapter written into the bundle (attention.sdpa as attention.prefill, the unpaged attention.decode) become the
adapter's op (`cacheon_adapters`). Dropped, each with a reason: `setup` hooks (hotfloat runs no bundle code in the
engine outside a slot call), the `[competition]` table, capability predicates and notes. Nothing is dropped
silently, and the result is validated as a hotfloat bundle before the command succeeds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .. import ABI_VERSION
from ..bundle.bounded import load_toml
from ..bundle.manifest import ARCHITECTURES, MAX_MANIFEST_CHARS
from ..errors import InputError
from ..record import Record
from ..slots import DTYPES, SLOTS
from .cacheon_adapters import adapt
from .cacheon_sources import check_call, drop_function, on_cpu, row_stride_warning

DTYPE_NAMES = {
    "float32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    **{d: d for d in DTYPES},
}
SLOT_NAMES = {name: name for name in SLOTS}
"""Cacheon slot -> the hotfloat slot its ops import as. The slots both have are spelled alike, so the registry is the
table; a Cacheon slot spelled otherwise is one entry more (`SLOT_NAMES | {"cacheon.name": "hotfloat.name"}`)."""
KEPT_METADATA = ("graph_safe", "min_num_tokens", "max_num_tokens")
WHY_DROPPED = {
    "op": "the manifest's slot already names the op",
    "notes": "free text; kept in README.md",
    "capabilities": "capability predicates are not part of hotfloat: every verification shape must pass",
    "max_last_dim": "capability predicates are not part of hotfloat: every verification shape must pass",
}


class Change(Record):
    """One edit the import made: where, what it was, what it is now (empty `now` = removed)."""

    file: str
    field: str
    was: str
    now: str


class ImportResult(Record):
    """The written bundle and the list of every change made to get there."""

    source: str
    out_dir: str
    identity: str
    changes: list[Change]
    warnings: list[str] = []
    """What will likely FAIL verification though the bundle imported (an output written at an input's row stride)."""
    world_size: int = 1
    """Ranks `hotfloat verify --world-size` needs for the bundle's collective ops; 1 without one."""


def import_cacheon(source: str | Path, out_dir: str | Path | None = None) -> ImportResult:
    """Reads a Cacheon bundle (folder or tar/tar.gz), writes the hotfloat bundle to `out_dir`, validates it."""
    from ..bundle import load_bundle

    src = Path(source)
    files = _read(src)
    out = Path(out_dir) if out_dir else Path(f"{src.name.removesuffix('.gz').removesuffix('.tar')}-hotfloat")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: exists and is not an empty directory")
    changes: list[Change] = []
    doc = _manifest(files)
    if doc.get("abi_version") == ABI_VERSION:  # nothing to convert: copied byte for byte, validated, same identity
        from ..bundle import bundle_from_files

        bundle_from_files(files)
        notes = {"readme": "", "warnings": []}
    else:
        manifest, notes = _convert(doc, files, changes)
        files = {p: d for p, d in files.items() if p not in notes["dropped"]} | notes["metadata"]
        files["manifest.toml"] = manifest.encode()
    if notes["readme"]:
        readme = files.get("README.md", b"").decode(errors="replace")
        files["README.md"] = (readme + "\n## Notes carried over from Cacheon metadata\n\n" + notes["readme"]).encode()
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    bundle = load_bundle(out)
    return ImportResult(
        source=str(src),
        out_dir=str(out),
        identity=bundle.identity,
        changes=changes,
        warnings=notes["warnings"],
        world_size=max(SLOTS[op.entry.slot].world_size for op in bundle.ops),
    )


def _read(src: Path) -> dict[str, bytes]:
    if src.is_dir():
        from ..bundle.layout import read_bundle_dir

        return read_bundle_dir(src)
    if src.is_file():
        from ..bundle.archive import read_archive

        return read_archive(src.read_bytes())
    raise InputError(f"{src}: no such bundle directory or archive")


def _manifest(files: dict[str, bytes]) -> dict:
    """The manifest, parsed once under the bounds every untrusted manifest gets (hotfloat.bundle.bounded)."""
    if "manifest.toml" not in files:
        raise InputError("manifest.toml is missing at the bundle root")
    try:
        return load_toml(files["manifest.toml"].decode(), max_chars=MAX_MANIFEST_CHARS)
    except ValueError as e:  # UnicodeDecodeError too
        raise InputError(f"manifest.toml: {e}") from None


def _convert(doc: dict, files: dict[str, bytes], changes: list[Change]) -> tuple[str, dict[str, Any]]:
    """The hotfloat manifest text for the parsed Cacheon manifest `doc`, the rewritten and the dropped metadata
    files, README notes; `changes` records every edit."""
    note = lambda field, was, now="", file="manifest.toml": changes.append(  # noqa: E731
        Change(file=file, field=field, was=str(was), now=str(now))
    )
    if doc.get("abi_version") != ABI_VERSION:
        note("abi_version", doc.get("abi_version", "(absent)"), ABI_VERSION)
    for key in sorted(set(doc) - {"bundle_id", "abi_version", "ops"}):
        note(key, _show(doc[key]), "(removed: hotfloat has no such table; the slot set is the bundle's ops)")
    ops, metadata, dropped, readme, warnings, refused = [], {}, set(), "", [], []
    for i, op in enumerate(doc.get("ops") or []):
        where = f"ops[{i}]"
        source = op.get("source")  # the Cacheon kernel's file, also when an adapter becomes the op's source
        if "base_kernel" in op or "override_point" in op:
            # Only a piece of a kernel Cacheon's validator owns: dropping the fields would make the piece the call.
            base, point = (_show(op.get(k, "(unnamed)")) for k in ("base_kernel", "override_point"))
            what = f"an override of {base} at {point}"
            slot, why = op.get("slot"), "(op removed: hotfloat owns no base kernels; an op implements its slot's call)"
            note(where, f"{slot}: {what}", why)
            refused.append(f"{slot!r} ({what})")
            continue
        op = adapt(files, op, where, note)
        slot = op.get("slot")
        if (name := SLOT_NAMES.get(slot) if isinstance(slot, str) else None) is None:
            note(f"{where}", f"slot {slot!r}", f"(op removed: no hotfloat slot {slot!r}; slots: {', '.join(SLOTS)})")
            refused.append(repr(slot))
            continue
        if name != slot:
            note(f"{where}.slot", slot, name)
            op = {**op, "slot": name}
        check_call(files, op, where)
        if warning := row_stride_warning(files, op):
            warnings.append(warning)
        entry = {k: op[k] for k in ("slot", "source", "entry", "variant") if k in op}
        if "setup" in op:
            note(
                f"{where}.setup",
                op["setup"],
                "(removed: hotfloat runs no bundle code in the engine outside a "
                "slot call; engine patches are not accepted)",
            )
            drop_function(files, source, op["setup"], note)
        for key in sorted(
            set(op) - {"slot", "source", "entry", "variant", "dtypes", "architectures", "metadata", "setup"}
        ):
            note(f"{where}.{key}", _show(op[key]), "(removed: unknown to hotfloat)")
        entry["dtypes"] = _dtypes(op.get("dtypes"), f"{where}.dtypes", note, SLOTS[name])
        archs = op.get("architectures")
        meta_doc = {}
        if op.get("metadata"):
            meta_doc, meta_text, text = _metadata(files, op["metadata"], note, SLOTS[name])
            readme += text
            if "architectures" in meta_doc and archs is None:
                archs = meta_doc["architectures"]
                note(
                    "architectures",
                    _show(archs),
                    f"(moved to the manifest's {where}.architectures)",
                    file=op["metadata"],
                )
            if meta_text is None:
                note(f"{where}.metadata", op["metadata"], "(removed: nothing hotfloat reads was left in it)")
                dropped.add(op["metadata"])
            else:
                entry["metadata"] = op["metadata"]
                metadata[op["metadata"]] = meta_text.encode()
        entry["architectures"] = _architectures(archs, f"{where}.architectures", note)
        on_cpu(files, entry, f"{where}.architectures", note)
        ops.append(entry)
    if not ops:
        raise InputError(
            f"no op of this bundle implements a hotfloat slot's call (refused: {', '.join(refused) or 'no ops'}; "
            f"hotfloat's slots: {', '.join(SLOTS)}); nothing to import"
        )
    bundle_id = re.sub(r"[^0-9A-Za-z._-]", "-", str(doc.get("bundle_id", "imported")))[:64]
    if bundle_id != doc.get("bundle_id"):
        note("bundle_id", doc.get("bundle_id", "(absent)"), bundle_id)
    return _toml(bundle_id, ops), {"metadata": metadata, "dropped": dropped, "readme": readme, "warnings": warnings}


def _dtypes(value, where, note, slot) -> list[str]:
    """The hotfloat spellings of the dtypes the slot has; absent means all of the slot's."""
    names = list(value) if isinstance(value, list) else list(slot.dtypes)
    if value is None:
        note(where, "(absent)", " ".join(names))
    out = []
    for d in names:
        if DTYPE_NAMES.get(d) is None:
            note(where, d, "(removed: not a hotfloat dtype)")
        elif DTYPE_NAMES[d] not in slot.dtypes:
            note(where, d, f"(removed: {slot.name} has no {DTYPE_NAMES[d]})")
            continue
        elif DTYPE_NAMES[d] != d:
            note(where, d, DTYPE_NAMES[d])
        if DTYPE_NAMES.get(d) and DTYPE_NAMES[d] not in out:
            out.append(DTYPE_NAMES[d])
    if not out:
        raise InputError(f"{where}: none of {names} is a dtype of {slot.name} ({', '.join(slot.dtypes)})")
    return out


def _architectures(value, where, note) -> list[str]:
    if value is None:
        note(where, "(absent)", "cpu sm_90 (hotfloat's default)")
        return ["cpu", "sm_90"]
    out = []
    for a in value:
        m = re.fullmatch(r"sm_?(\d+)(a?)", str(a))
        name = "cpu" if a == "cpu" else f"sm_{m.group(1)}{m.group(2)}" if m else str(a)
        if name not in ARCHITECTURES:
            note(where, a, f"(removed: not a hotfloat architecture; known: {' '.join(ARCHITECTURES)})")
            continue
        if name != a:
            note(where, a, name)
        if name not in out:
            out.append(name)
    if not out:
        raise InputError(f"{where}: none of {value} is a hotfloat architecture ({', '.join(ARCHITECTURES)})")
    return out


def _metadata(files, rel, note, slot) -> tuple[dict, str | None, str]:
    """(the Cacheon metadata, the hotfloat metadata text or None when nothing is left, notes for the README)."""
    try:
        doc = json.loads(files[rel])
    except KeyError:
        raise InputError(f"{rel}: named by the manifest but missing") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{rel}: not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{rel}: must hold a JSON object")
    kept = {k: doc[k] for k in KEPT_METADATA if k in doc}
    if "dtypes" in doc:
        kept["dtypes"] = _dtypes(doc["dtypes"], "dtypes", lambda f, w, n="": note(f, w, n, file=rel), slot)
    for key in sorted(set(doc) - set(KEPT_METADATA) - {"dtypes", "architectures"}):
        note(
            key,
            _show(doc[key]),
            f"(removed: {WHY_DROPPED.get(key, 'unknown to hotfloat, which refuses unknown keys')})",
            file=rel,
        )
    readme = f"- `{rel}`: {doc['notes']}\n" if isinstance(doc.get("notes"), str) else ""
    return doc, (json.dumps(kept, indent=2, sort_keys=True) + "\n") if kept else None, readme


def _toml(bundle_id: str, ops: list[dict]) -> str:
    """The manifest as TOML: strings, lists of strings only, so json.dumps gives valid TOML basic strings."""
    lines = [f"bundle_id = {json.dumps(bundle_id)}", f"abi_version = {json.dumps(ABI_VERSION)}"]
    for op in ops:
        lines += ["", "[[ops]]"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in op.items()]
    return "\n".join(lines) + "\n"


def _show(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
