"""The scan reads a file as the interpreter does: a coding cookie other than utf-8, or bytes the two read apart,
refuse the file, so no codec can hide a line from the check (issue 49, class K)."""

import codecs
import encodings.aliases

import pytest

from hotfloat.scan import scan_source
from hotfloat.scan.source import decode

CODECS = sorted(
    set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values()) | {"unicode_escape", "raw_unicode_escape"}
)
HIDDEN = "\nimport os\nos.system('id')\n"


def _payload(codec: str) -> bytes:
    """A cookie naming the codec, then a comment whose bytes hold the hidden lines as that codec writes them."""
    try:
        hidden = HIDDEN.encode(codec)
    except (LookupError, UnicodeError, TypeError):
        hidden = HIDDEN.encode()
    if isinstance(hidden, str):
        hidden = hidden.encode()
    return f"# -*- coding: {codec} -*-\n# notes ".encode() + hidden + b"\nx = 1\n"


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_is_refused_or_read_as_utf8(codec):
    findings = scan_source("kernels/k.py", _payload(codec)).findings
    assert findings, codec
    try:
        utf8 = codecs.lookup(codec).name in ("utf-8", "utf-8-sig")
    except LookupError:
        utf8 = False
    if not utf8:
        assert "coding cookie" in findings[0].reason, (codec, findings)


@pytest.mark.parametrize(
    "data",
    [
        b"# coding: utf-7\n# +AAo-import os\n",
        b"# coding: unicode_escape\n# \\u000aimport os\n",
        b"# vim: set fileencoding=latin-1 :\nx = 1\n",
        b"x = 1\r\nimport os\r\n",
        b"x = 1\r# hidden\rimport os\n",
        b"# coding: nonsense\nx = 1\n",
        b"\xff\xfex = 1\n",
    ],
)
def test_bytes_the_interpreter_reads_differently_are_refused(data):
    assert decode(data)[0] is None
    assert scan_source("kernels/k.py", data).findings


@pytest.mark.parametrize(
    "data", [b"x = 1\n", b"# coding: utf-8\nx = 1\n", b"\xef\xbb\xbfx = 1\n", b"# -*- coding: utf8 -*-\n"]
)
def test_utf8_with_or_without_cookie_or_bom_is_read(data):
    assert decode(data)[0] is not None
    assert scan_source("kernels/k.py", data).findings == ()
