"""The cubin ELF gate: nothing reaches the CUDA driver unless it is a well-formed 64-bit CUDA executable of sane size.

It also reads, without a GPU, what the driver will later report: the entry kernels and each one's parameter layout
(from the `.nv.info.<kernel>` attribute sections), so a wrong cubin is refused on CPU already."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import InputError

EM_CUDA = 190
ET_EXEC = 2
MAX_CUBIN_BYTES = 32 << 20
MAX_SECTIONS = 4096
MAX_SYMBOLS = 1 << 16
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_SHT_SYMTAB, _SHT_STRTAB, _SHT_NOBITS = 2, 3, 8
_STT_FUNC, _STB_GLOBAL, _STO_CUDA_ENTRY = 2, 1, 0x10
_EIFMT_SIZES = {1: 0, 2: 1, 3: 2}
"""nv.info attribute formats with a fixed payload (none, byte, half); format 4 carries a 16-bit length."""
_EIATTR_KPARAM_INFO = 0x17


class CubinRefused(InputError):
    """The bytes are not a cubin the validator will hand to the driver; the message says why."""


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    offset: int
    size: int


@dataclass(frozen=True)
class Cubin:
    """What the gate learned from a cubin: its entry kernels and each one's (offset, size) parameter layout."""

    size: int
    sections: tuple[Section, ...]
    kernels: dict[str, tuple[tuple[int, int], ...]]


def gate(data: bytes, *, max_bytes: int = MAX_CUBIN_BYTES) -> Cubin:
    """Checks `data` is a sane CUDA ELF executable and returns its kernels; anything else raises CubinRefused."""
    if not isinstance(data, (bytes, bytearray)):
        raise CubinRefused("cubin: not bytes")
    if len(data) > max_bytes:
        raise CubinRefused(f"cubin: {len(data)} bytes exceeds the {max_bytes}-byte limit")
    if len(data) < _EHDR.size:
        raise CubinRefused(f"cubin: truncated ({len(data)} bytes, shorter than an ELF header)")
    ident, e_type, machine, _abi, _entry, phoff, shoff, _flags, ehsize, phentsize, phnum, shentsize, shnum, shstrndx = (
        _EHDR.unpack_from(data, 0)
    )
    if ident[:4] != b"\x7fELF":
        raise CubinRefused("cubin: not an ELF file (bad magic)")
    if ident[4] != 2:
        raise CubinRefused("cubin: not a 64-bit ELF (ELFCLASS64 required)")
    if ident[5] != 1:
        raise CubinRefused("cubin: not little-endian")
    if ident[6] != 1:
        raise CubinRefused("cubin: unknown ELF identification version")
    if e_type != ET_EXEC:
        raise CubinRefused(f"cubin: ELF type {e_type} is not ET_EXEC (an executable cubin, not an object or library)")
    if machine != EM_CUDA:
        raise CubinRefused(f"cubin: machine {machine} is not EM_CUDA ({EM_CUDA})")
    if ehsize != _EHDR.size or shentsize != _SHDR.size:
        raise CubinRefused("cubin: unexpected ELF header or section header size")
    if not 0 < shnum <= MAX_SECTIONS or shstrndx >= shnum:
        raise CubinRefused(f"cubin: section table of {shnum} entries (string table index {shstrndx}) is not sane")
    _within(data, shoff, shnum * _SHDR.size, "section table")
    if phnum:
        _within(data, phoff, phnum * phentsize, "program header table")
    raw = [_SHDR.unpack_from(data, shoff + i * _SHDR.size) for i in range(shnum)]
    for i, (_n, stype, _f, _a, off, size, *_rest) in enumerate(raw):
        if stype != _SHT_NOBITS:
            _within(data, off, size, f"section {i}")
    names = raw[shstrndx]
    if names[1] != _SHT_STRTAB:
        raise CubinRefused("cubin: the section-name table is not a string table")
    sections = tuple(Section(_string(data, names, r[0], "section name"), r[1], r[4], r[5]) for r in raw)
    entries = _entry_symbols(data, raw, sections)
    kernels = {k: _param_layout(data, sections, k) for k in entries}
    return Cubin(size=len(data), sections=sections, kernels=kernels)


def _within(data: bytes, offset: int, size: int, what: str) -> None:
    if offset < 0 or size < 0 or offset + size > len(data):
        raise CubinRefused(f"cubin: {what} lies outside the file (offset {offset}, size {size}, file {len(data)})")


def _string(data: bytes, table: tuple, index: int, what: str) -> str:
    start, end = table[4] + index, table[4] + table[5]
    stop = data.find(b"\0", start, end)
    if index >= table[5] or stop < 0:
        raise CubinRefused(f"cubin: {what} is not a terminated string inside its table")
    try:
        return data[start:stop].decode("ascii")
    except UnicodeDecodeError:
        raise CubinRefused(f"cubin: {what} is not ASCII") from None


def _entry_symbols(data: bytes, raw: list, sections: tuple[Section, ...]) -> list[str]:
    """Global functions flagged as CUDA entry points: exactly what cuLibraryEnumerateKernels will list."""
    tables = [r for r in raw if r[1] == _SHT_SYMTAB]
    if len(tables) != 1:
        raise CubinRefused(f"cubin: expected one symbol table, found {len(tables)}")
    symtab = tables[0]
    if symtab[6] >= len(raw) or raw[symtab[6]][1] != _SHT_STRTAB or symtab[5] % _SYM.size:
        raise CubinRefused("cubin: the symbol table is malformed")
    if symtab[5] // _SYM.size > MAX_SYMBOLS:
        raise CubinRefused("cubin: too many symbols")
    entries = []
    for i in range(symtab[5] // _SYM.size):
        name, info, other, shndx, _value, _size = _SYM.unpack_from(data, symtab[4] + i * _SYM.size)
        if info & 0xF == _STT_FUNC and info >> 4 == _STB_GLOBAL and other & _STO_CUDA_ENTRY:
            if shndx >= len(sections):
                raise CubinRefused("cubin: an entry symbol points at no section")
            entries.append(_string(data, raw[symtab[6]], name, "symbol name"))
    if not entries:
        raise CubinRefused("cubin: defines no kernel entry point")
    if len(set(entries)) != len(entries):
        raise CubinRefused("cubin: a kernel entry point is defined twice")
    return entries


def _param_layout(data: bytes, sections: tuple[Section, ...], kernel: str) -> tuple[tuple[int, int], ...]:
    """(offset, size) of each parameter in ordinal order, decoded from the kernel's KPARAM_INFO attributes."""
    info = [s for s in sections if s.name == f".nv.info.{kernel}"]
    if len(info) != 1:
        raise CubinRefused(f"cubin: kernel {kernel} has no single .nv.info section")
    blob, i, params = data[info[0].offset : info[0].offset + info[0].size], 0, {}
    while i < len(blob):
        if i + 2 > len(blob):
            raise CubinRefused(f"cubin: truncated attribute in .nv.info.{kernel}")
        fmt, attr = blob[i], blob[i + 1]
        i += 2
        if fmt in _EIFMT_SIZES:
            i += _EIFMT_SIZES[fmt]
            continue
        if fmt != 4 or i + 2 > len(blob):
            raise CubinRefused(f"cubin: unknown attribute format {fmt} in .nv.info.{kernel}")
        (n,) = struct.unpack_from("<H", blob, i)
        payload, i = blob[i + 2 : i + 2 + n], i + 2 + n
        if len(payload) != n:
            raise CubinRefused(f"cubin: truncated attribute in .nv.info.{kernel}")
        if attr == _EIATTR_KPARAM_INFO:
            if n != 12:
                raise CubinRefused(f"cubin: malformed parameter record in .nv.info.{kernel}")
            _index, ordinal, offset, flags = struct.unpack("<IHHI", payload)
            if ordinal in params:
                raise CubinRefused(f"cubin: kernel {kernel} declares parameter {ordinal} twice")
            params[ordinal] = (offset, (flags >> 18) & 0x3FFF)
    if sorted(params) != list(range(len(params))):
        raise CubinRefused(f"cubin: kernel {kernel} has gaps in its parameter ordinals")
    return tuple(params[k] for k in range(len(params)))
