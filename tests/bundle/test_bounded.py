"""Bounded TOML and JSON: refused before the parser runs when too long, too deep or too dotted; brackets, dots and
quotes inside strings and comments never count, so valid documents parse exactly as the stdlib parsers read them."""

import json
import os
import tomllib

import math

import pytest

from hotfloat.bundle.bounded import MAX_DEPTH, MAX_KEY_PARTS, load_json, load_record, load_toml, read_file
from hotfloat.errors import InputError
from hotfloat.record import Record

TOML_OK = [
    'a = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["',
    "a = '{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{'",
    'a = """x\n[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n"""',
    "a = '''[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['''",
    'a = "\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\\"',
    'a = """ends with quotes"""""',
    "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ a.b.c.d.e.f.g.h.i.j\nb = 1",
    'a."b.c.d.e.f.g.h.i.j".c = 1',
    "a = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5]",
    "t = 1979-05-27T07:32:00.999999-07:00",
    "x = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH,
]


@pytest.mark.parametrize("text", TOML_OK)
def test_valid_toml_parses_as_tomllib_reads_it(text):
    assert load_toml(text, max_chars=1 << 16) == tomllib.loads(text)


@pytest.mark.parametrize(
    "text,why",
    [
        ("x = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than"),
        ("x = " + "{a=" * 40 + "1" + "}" * 40, "nested deeper than"),
        ("[" + ".".join(["a"] * (MAX_KEY_PARTS + 1)) + "]", "dotted key"),
        ("a" + ".a" * 30_000 + " = 1", "dotted key"),
        ('a = "x" # "\nb = ' + "[" * 100 + "]" * 100, "nested deeper than"),
        ("x = " + "9" * 5000, "not valid TOML"),
        ("x = [", "not valid TOML"),
        ("x" * 100, "over the 64-character limit"),
    ],
)
def test_hostile_toml_refused_with_its_reason(text, why):
    with pytest.raises(ValueError, match=why):
        load_toml(text, max_chars=64 if why.startswith("over") else 1 << 20)


def test_valid_json_parses_and_strings_do_not_count():
    text = json.dumps({"a": "[[[[{{{{" * 20 + '\\"', "b": [[1, 2.5, None, True]]})
    assert load_json(text, max_chars=1 << 16) == json.loads(text)
    assert load_json("[NaN]", max_chars=16, allow_nan=True)[0] != 0


@pytest.mark.parametrize(
    "text,why",
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ("[NaN]", "NaN is not a number"),
        ("[-Infinity]", "Infinity is not a number"),
        ("9" * 5000, "a number longer than 100 characters"),
        ("[1e" + "9" * 200 + "]", "a number longer than 100 characters"),
        ('{"a": ', "not valid JSON"),
    ],
)
def test_hostile_json_refused_with_its_reason(text, why):
    with pytest.raises(ValueError, match=why):
        load_json(text, max_chars=1 << 20)


def test_read_file_refuses_what_is_not_a_bounded_regular_file(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 10)
    assert read_file(tmp_path / "f", 10) == b"x" * 10
    with pytest.raises(ValueError, match="over the 9-byte limit"):
        read_file(tmp_path / "f", 9)
    os.mkfifo(tmp_path / "fifo")  # opening it must not wait for a writer
    for path in (tmp_path / "fifo", "/dev/zero"):
        with pytest.raises(ValueError, match="not a regular file"):
            read_file(path, 1 << 30)
    with pytest.raises(OSError):
        read_file(tmp_path, 10)


class _Sample(Record):
    x: float
    tags: list[str] = []
    nested: list = []


def test_load_record_reads_a_record_back_with_nan_and_long_strings(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(_Sample(x=math.nan, tags=["9" * 500, "[" * 100]).model_dump_json())
    back = load_record(f, _Sample, max_bytes=1 << 16, what="a sample")
    assert math.isnan(back.x) and back.tags[1] == "[" * 100


@pytest.mark.parametrize(
    "text,why",
    [
        ('{"x": 1, "nested": ' + "[" * 40 + "]" * 40 + "}", "nested deeper than 32 levels"),
        ('{"x": 1' + "0" * 200 + "}", "a number longer than 100 characters"),
        ('{"x": 1, "y": 2}', "y: unknown key"),
        ("not json", "Invalid JSON"),
        ('{"x": 1, "tags": ["' + "a" * 100 + '"]}', "over the 64-byte limit"),
    ],
)
def test_load_record_refuses_with_one_input_error_naming_the_file(tmp_path, text, why):
    f = tmp_path / "r.json"
    f.write_text(text)
    with pytest.raises(InputError, match=rf"^{f}: not a sample: .*{why}"):
        load_record(f, _Sample, max_bytes=64 if "limit" in why else 1 << 16, what="a sample")
    with pytest.raises(InputError, match=r"not a sample: not a regular file$"):
        load_record("/dev/zero", _Sample, max_bytes=64, what="a sample")


def test_load_record_reads_xz_and_refuses_bombs_truncations_and_damage(tmp_path):
    """Committed evidence is xz: it loads as its JSON does; an xz stream that inflates past the bound (a 2 KiB file
    of 1 MiB of spaces), one cut short, or one with a flipped byte is one InputError, never a MemoryError."""
    import lzma

    plain = _Sample(x=1.5, tags=["a"]).model_dump_json().encode()
    packed = tmp_path / "r.json.xz"
    packed.write_bytes(lzma.compress(plain))
    assert load_record(packed, _Sample, max_bytes=1 << 16, what="a sample") == _Sample(x=1.5, tags=["a"])
    bomb = lzma.compress(plain[:-1] + b" " * (1 << 20) + b"}")
    damaged = bytearray(lzma.compress(plain))
    damaged[len(damaged) // 2] ^= 0xFF
    for data, why in (
        (bomb, "decompresses past the 65536-byte limit"),
        (lzma.compress(plain)[:-20], "a truncated xz stream"),
        (bytes(damaged), "a damaged xz stream"),
    ):
        packed.write_bytes(data)
        with pytest.raises(InputError, match=rf"^{packed}: not a sample: {why}"):
            load_record(packed, _Sample, max_bytes=1 << 16, what="a sample")
    assert len(bomb) < 1 << 16
