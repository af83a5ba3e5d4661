"""The symbols of an ELF64 `.symtab` (the System V gABI's Elf64_Sym records), decoded in bulk:
pyelftools' per-symbol parsing is slow on a Go binary's tens of thousands of symbols. Each reader
(gobinary for Go metadata, linux/elfimage for the loader) applies its own filter to what this yields.
"""
from __future__ import annotations

import struct
from typing import Iterator

SYM64 = struct.Struct("<IBBHQQ")        # st_name, st_info, st_other, st_shndx, st_value, st_size
STT_NOTYPE, STT_OBJECT, STT_FUNC = 0, 1, 2
SHN_UNDEF = 0


def iter_symbols(symtab: bytes, strtab: bytes) -> Iterator[tuple[str, int, int, int, int]]:
    """(name, st_info, st_shndx, st_value, st_size) of every named symbol, in table order."""
    for name_off, info, _other, shndx, value, size in SYM64.iter_unpack(symtab[:len(symtab) - len(symtab) % SYM64.size]):
        if name_off:
            yield strtab[name_off:strtab.index(b"\0", name_off)].decode("utf-8", "replace"), info, shndx, value, size
