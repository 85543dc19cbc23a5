"""The text of a bundle file as the import system reads it, or why the scan will not read it: a check of other text
than Python compiles proves nothing (a `# coding: utf-7` cookie turns `+AAo-` in a comment into a line of code)."""

from __future__ import annotations

import codecs
import importlib.util
import io
import tokenize

UTF8 = frozenset({"utf-8", "utf-8-sig"})
"""The codecs a file may be in (a byte-order mark is allowed): the cookie may only say what the scan decodes with."""


def decode(data: bytes) -> tuple[str | None, str | None]:
    """(the source text, None) when the interpreter and the scan read the same characters, else (None, why)."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as e:
        return None, f"unreadable coding cookie ({e})"
    if _codec(encoding) not in UTF8:
        return None, f"coding cookie {encoding!r}: only utf-8 is read the same way by the scan and the interpreter"
    try:
        text = data.decode("utf-8-sig")
        imported = importlib.util.decode_source(data)
    except (UnicodeDecodeError, SyntaxError):
        return None, "not UTF-8"
    if imported != text:
        return None, "carriage returns: the interpreter reads other lines than the file shows; use \\n line ends"
    return text, None


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name
