"""The ELF gate: real cubins pass with their kernels and layouts; a corpus of malformed files, each derived from a
real cubin by one targeted corruption, is refused with the reason, never a crash."""

import struct

import pytest

from hotfloat.errors import InputError
from hotfloat.native import elf


@pytest.fixture(scope="module")
def cubin(aot_builds):
    bundle, record = aot_builds["silu_triton_aot"]
    return record.cubins[record.kernels[0].cubin]


def _shdr(data: bytes, index: int) -> int:
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    return shoff + index * 64


def _patch(data: bytes, offset: int, fmt: str, value) -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def _section_index(data: bytes, name: str) -> int:
    cub = elf.gate(data)
    return next(i for i, s in enumerate(cub.sections) if s.name == name)


def test_real_cubins_pass_with_declared_kernels(aot_builds):
    for _bundle, record in aot_builds.values():
        for k in record.kernels:
            cub = elf.gate(record.cubins[k.cubin])
            assert list(cub.kernels) == [k.symbol]
            assert [list(p) for p in cub.kernels[k.symbol]] == [list(p) for p in k.layout]


def test_triton_layout_includes_two_scratch_pointers(cubin):
    (layout,) = elf.gate(cubin).kernels.values()
    assert layout == ((0, 8), (8, 8), (16, 4), (20, 4), (24, 4), (32, 8), (40, 8))


def _corpus(c: bytes) -> dict[str, tuple[bytes, str]]:
    info = _section_index(c, ".nv.info.silu_and_mul_kernel")
    info_off = struct.unpack_from("<Q", c, _shdr(c, info) + 24)[0]
    symtab = next(i for i, s in enumerate(elf.gate(c).sections) if s.type == 2)
    return {
        "empty": (b"", "truncated"),
        "text": (b"not a cubin at all, just some text padding it out to a header" * 2, "bad magic"),
        "truncated header": (c[:40], "truncated"),
        "truncated body": (c[: len(c) // 2], "outside the file"),
        "32-bit": (_patch(c, 4, "<B", 1), "64-bit"),
        "big-endian": (_patch(c, 5, "<B", 2), "little-endian"),
        "relocatable object": (_patch(c, 16, "<H", 1), "ET_EXEC"),
        "shared object": (_patch(c, 16, "<H", 3), "ET_EXEC"),
        "x86-64 machine": (_patch(c, 18, "<H", 62), "EM_CUDA"),
        "no sections": (_patch(c, 0x3C, "<H", 0), "section table"),
        "too many sections": (_patch(c, 0x3C, "<H", 5000), "section table"),
        "section table past end": (_patch(c, 0x28, "<Q", len(c) - 10), "outside the file"),
        "bad shentsize": (_patch(c, 0x3A, "<H", 40), "header size"),
        "name table index out of range": (_patch(c, 0x3E, "<H", 200), "section table"),
        "section past end": (_patch(c, _shdr(c, 1) + 32, "<Q", 1 << 40), "outside the file"),
        "name past its table": (_patch(c, _shdr(c, 2), "<I", 1 << 30), "section name"),
        "no symbol table": (_patch(c, _shdr(c, symtab) + 4, "<I", 1), "symbol table"),
        "no entry kernel": (_strip_entry(c, symtab), "no kernel entry"),
        "garbled kernel attributes": (_patch(c, info_off, "<B", 9), "attribute format"),
        "oversized": (c + b"\0" * (elf.MAX_CUBIN_BYTES - len(c) + 1), "exceeds"),
    }


def _strip_entry(c: bytes, symtab: int) -> bytes:
    off, size = struct.unpack_from("<QQ", c, _shdr(c, symtab) + 24)
    b = bytearray(c)
    for i in range(size // 24):
        b[off + i * 24 + 5] &= ~0x10 & 0xFF
    return bytes(b)


def test_malformed_corpus_is_refused_with_reason(cubin):
    corpus = _corpus(cubin)
    assert len(corpus) >= 20
    for name, (data, reason) in corpus.items():
        with pytest.raises(InputError) as e:
            elf.gate(data)
        assert reason in str(e.value), f"{name}: {e.value}"


def test_random_byte_flips_never_crash(cubin):
    """Any corruption either passes or is refused as input; nothing else escapes the gate."""
    import random

    rng = random.Random(6)
    for _ in range(300):
        b = bytearray(cubin)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(0, 1024)] = rng.randrange(256)
        try:
            elf.gate(bytes(b))
        except InputError:
            pass
