"""TOML and JSON from untrusted bytes, bounded before the parser runs: size first, then a linear pre-scan of nesting
depth and dotted-key length, so no text can drive a parser into deep recursion or quadratic work. Untrusted files
are read the same way: a regular file, no further than its bound.

Python's parsers recurse once per nesting level (100,000 brackets end in RecursionError) and tomllib spends
quadratic time on long dotted keys (`a.a.a...`, 19 s for 30,000 parts); the pre-scan refuses both in one pass
over the text, skipping strings and comments exactly as the grammars define them. JSON numbers longer than
MAX_NUMBER_CHARS, NaN and Infinity (unless asked for), and duplicate JSON keys are refused too. Each refusal is a
ValueError with one short reason; `load_record` turns it into one InputError naming the file.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import stat
import tomllib
from typing import TypeVar

from pydantic import ValidationError

from ..errors import InputError
from ..record import Record, first_error

MAX_DEPTH = 32
"""Nesting levels of arrays and tables; bundle records need five."""
MAX_KEY_PARTS = 8
"""Parts of one dotted TOML key."""
MAX_NUMBER_CHARS = 100
"""Characters of one JSON number: a float's repr needs 24, a 64-bit integer 20; a longer one is only there to make
the parser convert a huge integer or exponent."""

_TOML_STOP = re.compile(r"[\"'#\[\]{}.=,\n]")
_JSON_STOP = re.compile(r"[\"\[\]{}]")
_JSON_LONG = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[-+0-9.eE]{%d,}' % (MAX_NUMBER_CHARS + 1), re.S)
"""A whole string (skipped) or a run of number characters too long to be a number we accept."""
R = TypeVar("R", bound=Record)


def read_file(path: str | os.PathLike, max_bytes: int) -> bytes:
    """A regular file's bytes, or ValueError: a device, FIFO or socket named as input (`/dev/zero`) would never end,
    and a larger file is refused without reading more than the bound. OSError passes through."""
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:  # opening a FIFO must not wait for a writer
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError("not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"over the {max_bytes}-byte limit")
    return data


XZ_MAGIC = b"\xfd7zXZ\x00"


def unpack_xz(data: bytes, max_bytes: int) -> bytes:
    """`data` itself, or its xz content when it is an xz stream (committed evidence is kept compressed): inflated
    no further than `max_bytes`, so a small bomb cannot fill memory; ValueError when larger or damaged."""
    if not data.startswith(XZ_MAGIC):
        return data
    inflate = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    try:
        out = inflate.decompress(data, max_length=max_bytes + 1)
    except lzma.LZMAError as e:
        raise ValueError(f"a damaged xz stream ({e})") from None
    if len(out) > max_bytes:
        raise ValueError(f"decompresses past the {max_bytes}-byte limit")
    if not inflate.eof:
        raise ValueError("a truncated xz stream")
    return out


def load_toml(text: str, *, max_chars: int) -> dict:
    """The TOML document, or ValueError saying which bound or rule it broke."""
    if len(text) > max_chars:
        raise ValueError(f"{len(text)} characters, over the {max_chars}-character limit")
    _toml_shape(text)
    try:
        return tomllib.loads(text)
    except ValueError as e:  # TOMLDecodeError, and integers past the interpreter's digit limit
        raise ValueError(f"not valid TOML: {e}") from None


def load_json(text: str, *, max_chars: int, allow_nan: bool = False) -> object:
    """The JSON value, or ValueError; duplicate keys are refused (they have no single meaning), and so are NaN and
    Infinity unless `allow_nan` (measurements written by `json.dumps` may carry them)."""
    if len(text) > max_chars:
        raise ValueError(f"{len(text)} characters, over the {max_chars}-character limit")
    _json_bounds(text)
    try:
        return json.loads(text, parse_constant=float if allow_nan else _no_constant, object_pairs_hook=_unique)
    except ValueError as e:  # JSONDecodeError, integers past the digit limit, the hooks' refusals
        raise ValueError(f"not valid JSON: {e}") from None


def load_record(path: str | os.PathLike, kind: type[R], *, max_bytes: int, what: str) -> R:
    """An untrusted JSON file (plain or xz) as `kind`, read and inflated within `max_bytes` and bounded in depth and
    number length before the parser runs; any refusal is an InputError `path: not <what>: <first problem>`. NaN and
    Infinity are accepted: records write them (hotfloat.record.Record)."""
    try:
        data = read_file(path, max_bytes)
    except OSError as e:
        raise InputError(f"{path}: not {what}: {e.strerror or e}") from None
    except ValueError as e:
        raise InputError(f"{path}: not {what}: {e}") from None
    return parse_record(data, kind, max_bytes=max_bytes, what=what, name=str(path))


def parse_record(data: bytes, kind: type[R], *, max_bytes: int, what: str, name: str) -> R:
    """`load_record` on bytes already read, so a caller that digests a file parses exactly the bytes it digested;
    `name` says where they came from in the refusal."""
    try:
        text = unpack_xz(data, max_bytes).decode()
        _json_bounds(text)
        return kind.model_validate_json(text)
    except ValidationError as e:
        raise InputError(f"{name}: not {what}: {first_error(e, kind.__name__)}") from None
    except ValueError as e:  # the bounds' refusals, and text that is not UTF-8
        raise InputError(f"{name}: not {what}: {e}") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def _unique(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup[:64]!r}")
    return out


def _deeper(depth: int) -> int:
    if depth + 1 > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return depth + 1


def _toml_shape(text: str) -> None:
    """Refuses nesting beyond MAX_DEPTH and dotted keys beyond MAX_KEY_PARTS; strings and comments are skipped."""
    depth = dots = pos = 0
    while m := _TOML_STOP.search(text, pos):
        c, pos = m.group(), m.end()
        if c in "\"'":
            pos = _toml_string_end(text, m.start())
        elif c == "#":
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
        elif c == ".":
            dots += 1
            if dots >= MAX_KEY_PARTS:
                raise ValueError(f"a dotted key has more than {MAX_KEY_PARTS} parts")
        else:
            dots = 0
            if c in "[{":
                depth = _deeper(depth)
            elif c in "]}":
                depth = max(0, depth - 1)


def _toml_string_end(text: str, start: int) -> int:
    """Index after the string opening at `start` (basic or literal, single- or multi-line); len(text) if unclosed."""
    q = text[start]
    multi = text.startswith(q * 3, start)
    close = q * 3 if multi else q
    pos = start + len(close)
    while True:
        end = text.find(close, pos)
        if end < 0:
            return len(text)
        if not multi and "\n" in text[pos:end]:
            return text.index("\n", pos)  # a single-line string cannot span lines: the parser refuses it here
        if q == '"' and _escaped(text, end):
            pos = end + 1
            continue
        end += len(close)
        if multi:  # up to two more quotes belong to the content: """a""""" is a"" (TOML 1.0)
            extra = 0
            while extra < 2 and text.startswith(q, end):
                end, extra = end + 1, extra + 1
        return end


def _json_bounds(text: str) -> None:
    _json_shape(text)
    if any(m.group()[0] != '"' for m in _JSON_LONG.finditer(text)):
        raise ValueError(f"a number longer than {MAX_NUMBER_CHARS} characters")


def _json_shape(text: str) -> None:
    """Refuses nesting beyond MAX_DEPTH; strings are skipped."""
    depth = pos = 0
    while m := _JSON_STOP.search(text, pos):
        c, pos = m.group(), m.end()
        if c == '"':
            pos = _json_string_end(text, m.start())
        elif c in "[{":
            depth = _deeper(depth)
        else:
            depth = max(0, depth - 1)


def _json_string_end(text: str, start: int) -> int:
    pos = start + 1
    while True:
        end = text.find('"', pos)
        if end < 0:
            return len(text)
        if not _escaped(text, end):
            return end + 1
        pos = end + 1


def _escaped(text: str, at: int) -> bool:
    """Whether the character at `at` follows an odd run of backslashes."""
    run = 0
    while at - run - 1 >= 0 and text[at - run - 1] == "\\":
        run += 1
    return run % 2 == 1
