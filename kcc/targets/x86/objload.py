"""In-process loader for ELF64 x86-64 relocatable objects (``ET_REL``).

The object is read with pyelftools. Its allocatable sections (``SHF_ALLOC``) are laid out in
one anonymous mapping, grouped by the permission they need: executable (R+X), read-only (R)
and writable (R+W). Each group starts on its own page, so ``mprotect`` can give every page
exactly one permission and no page is ever writable and executable at once. Inside a group
each section keeps its ``sh_addralign``. The ``.rela*`` sections that target loaded sections
are applied (System V AMD64 psABI 4.4; the types are the rows of
:data:`kcc.targets.elf.X86_64_RELOCS`), then the groups are protected.

Objects with ``R_X86_64_32``/``R_X86_64_32S`` relocations (code from ``cc -fno-pic``) need
absolute addresses below 2 GiB; for them the mapping is made with ``MAP_32BIT``.

Linux x86-64 only: it calls libc ``mmap``/``mprotect``/``munmap`` through ctypes.
"""

from __future__ import annotations

import ctypes
import io
import os
import platform
import struct
from dataclasses import dataclass
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from kcc.targets.elf import (
    EHDR_SIZE, ELFCLASS64, ELFDATA2LSB, ELFMAG, EM_X86_64, ET_REL, SHF_ALLOC, SHF_EXECINSTR,
    SHF_WRITE, SHT_NOBITS, SHT_REL, SHT_RELA, X86_64_RELOC_BY_CODE, R_X86_64_32, R_X86_64_32S,
    RelocKind)

PROT_NONE = 0x0
PROT_READ = 0x1
PROT_WRITE = 0x2
PROT_EXEC = 0x4
MAP_PRIVATE = 0x02
MAP_ANONYMOUS = 0x20
MAP_32BIT = 0x40  # Linux x86-64: place the mapping in the first 2 GiB (mmap(2))
_MAP_FAILED = ctypes.c_void_p(-1).value

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_STUB_JMP = b"\xff\x25\x00\x00\x00\x00"   # jmp qword ptr [rip + 0]; the address follows
_STUB_SIZE = 16
_MAX_IMAGE = 1 << 31  # R_X86_64_PC32 reaches +-2 GiB, so no loadable image is larger

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype = ctypes.c_void_p
_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                  ctypes.c_long]
_munmap = _libc.munmap
_munmap.restype = ctypes.c_int
_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_mprotect = _libc.mprotect
_mprotect.restype = ctypes.c_int
_mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class ObjectLoadError(ValueError):
    """The bytes are not an object this loader can map, or it refers to something missing."""


@dataclass(frozen=True)
class _Group:
    """Sections sharing one page permission."""

    name: str
    prot: int


_GROUPS = (_Group("r-x", PROT_READ | PROT_EXEC), _Group("r--", PROT_READ),
           _Group("rw-", PROT_READ | PROT_WRITE))


@dataclass(frozen=True)
class LoadedSection:
    """Where a section of the object lives in this process."""

    name: str
    address: int
    size: int
    perms: str


def _align_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def _check_header(data: bytes) -> None:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ObjectLoadError(f"expected the object's bytes, got {type(data).__name__}")
    if len(data) < EHDR_SIZE or bytes(data[:4]) != ELFMAG:
        raise ObjectLoadError("not an ELF file (missing the \\x7fELF magic or too short)")
    if data[4] != ELFCLASS64 or data[5] != ELFDATA2LSB:
        raise ObjectLoadError(f"not an ELF64 little-endian object (EI_CLASS={data[4]}, "
                              f"EI_DATA={data[5]})")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != EM_X86_64:
        raise ObjectLoadError(f"object is for machine {e_machine}, not x86-64 "
                              f"(EM_X86_64={EM_X86_64})")
    if e_type != ET_REL:
        raise ObjectLoadError(f"object has e_type {e_type}; only relocatable objects "
                              f"(ET_REL={ET_REL}) can be loaded")


def _group_of(name: str, flags: int) -> _Group:
    if flags & SHF_EXECINSTR:
        if flags & SHF_WRITE:
            raise ObjectLoadError(f"section {name!r} is both writable and executable")
        return _GROUPS[0]
    # .data.rel.ro* is written only by relocation, which happens before mprotect (the same
    # idea as a linker's RELRO segment), so it can be read-only afterwards.
    if flags & SHF_WRITE and not name.startswith(".data.rel.ro"):
        return _GROUPS[2]
    return _GROUPS[1]


class LoadedObject:
    """An ELF64 ``ET_REL`` x86-64 object mapped into this process, relocated and protected.

    Use :meth:`function` to get a ctypes callable; the callable keeps this object (and so
    its mapping) alive. :meth:`close` unmaps the memory; afterwards nothing obtained from the
    object may be used. Also usable as a context manager. ``sections`` lists where each
    loaded section lives and with which page permission (``"r-x"``, ``"r--"``, ``"rw-"``).

    ``externals`` maps undefined symbols the object may call (a program's runtime calls libc's
    pthread functions, kcc/targets/x86_program.py) to addresses in this process. Each gets a
    16-byte stub in the executable group, ``jmp qword ptr [rip + 0]`` and the address (SDM
    "JMP": FF /4), which the object's PC-relative relocations reach wherever libc lies, as a
    linker's PLT entry does. An undefined symbol not in ``externals`` is refused.
    """

    def __init__(self, data: bytes, externals: dict[str, int] | None = None) -> None:
        self._externals = dict(externals or {})
        self._stubs: dict[str, int] = {}
        self._base = 0
        self._map_addr = 0
        self._map_size = 0
        self._file_size = 0
        self.sections: tuple[LoadedSection, ...] = ()
        self._exec_ranges: list[tuple[int, int]] = []
        if platform.machine().lower() not in ("x86_64", "amd64"):
            raise ObjectLoadError(f"this host is {platform.machine()}, not x86-64")
        _check_header(data)
        self._file_size = len(data)
        try:
            elf = ELFFile(io.BytesIO(bytes(data)))
            self._load(elf)
        except (ObjectLoadError, OSError):
            self.close()
            raise
        except (ELFError, ArithmeticError, LookupError, ValueError, TypeError,
                struct.error) as exc:
            # pyelftools reports damaged files through several exception types.
            self.close()
            raise ObjectLoadError(f"malformed ELF object: {type(exc).__name__}: {exc}"
                                  ) from exc
        except BaseException:
            self.close()
            raise

    # --- loading --------------------------------------------------------------------------
    def _load(self, elf: ELFFile) -> None:
        sections = list(elf.iter_sections())
        relas = [s for s in sections if s["sh_type"] in ("SHT_RELA", "SHT_REL", SHT_RELA,
                                                         SHT_REL)]
        loaded = {i for i, s in enumerate(sections) if s["sh_flags"] & SHF_ALLOC}
        relas = [s for s in relas if s["sh_info"] in loaded]
        for rel in relas:
            if rel["sh_type"] in ("SHT_REL", SHT_REL):
                raise ObjectLoadError(f"section {rel.name!r}: SHT_REL relocations (implicit "
                                      "addends) are not supported on x86-64; expected RELA")

        # Layout: group by permission, each group page-aligned, sections at their alignment.
        offsets: dict[int, int] = {}
        group_of: dict[int, _Group] = {}
        ranges: list[tuple[_Group, int, int]] = []
        end, max_align = 0, PAGE_SIZE
        stubs = self._needed_stubs(sections)
        stub_off = 0
        for group in _GROUPS:
            members = [i for i in sorted(loaded)
                       if _group_of(sections[i].name, sections[i]["sh_flags"]) is group]
            if not members and not (stubs and group is _GROUPS[0]):
                continue
            start = end = _align_up(end, PAGE_SIZE)
            if group is _GROUPS[0] and stubs:       # the stubs first, executable
                stub_off, end = end, end + _STUB_SIZE * len(stubs)
            for i in members:
                align = max(sections[i]["sh_addralign"], 1)
                if align & (align - 1):
                    raise ObjectLoadError(f"section {sections[i].name!r}: alignment {align} "
                                          "is not a power of two")
                max_align = max(max_align, align)
                end = offsets[i] = _align_up(end, align)
                group_of[i] = group
                end += sections[i]["sh_size"]
            ranges.append((group, start, _align_up(end, PAGE_SIZE)))
        size = max(_align_up(end, PAGE_SIZE), PAGE_SIZE)
        if size + max_align > _MAX_IMAGE:
            raise ObjectLoadError(f"the loaded sections need {size} bytes (alignment "
                                  f"{max_align}); refusing more than {_MAX_IMAGE}")

        # Refuse unknown relocation types before anything else: the clearest message.
        types = set()
        for rel in relas:
            for r in rel.iter_relocations():
                if r["r_info_type"] not in X86_64_RELOC_BY_CODE:
                    raise ObjectLoadError(
                        f"unsupported relocation type {r['r_info_type']} at "
                        f"{sections[rel['sh_info']].name}+{r['r_offset']:#x}; supported: "
                        + ", ".join(k.name for k in X86_64_RELOC_BY_CODE.values()))
                types.add(r["r_info_type"])
        # Absolute 32-bit fields need the image below 2 GiB (psABI 4.4, R_X86_64_32/32S).
        low = bool(types & {R_X86_64_32, R_X86_64_32S})
        self._map(size + max_align - PAGE_SIZE, low)
        self._base = _align_up(self._map_addr, max_align)

        for i, off in offsets.items():
            sec = sections[i]
            if sec["sh_type"] not in ("SHT_NOBITS", SHT_NOBITS) and sec["sh_size"]:
                if sec["sh_offset"] + sec["sh_size"] > self._file_size:
                    raise ObjectLoadError(f"section {sec.name!r} extends past the end of "
                                          "the file")
                contents = sec.data()
                if len(contents) != sec["sh_size"]:  # e.g. SHF_COMPRESSED
                    raise ObjectLoadError(f"section {sec.name!r}: {len(contents)} bytes of "
                                          f"contents for sh_size {sec['sh_size']}")
                ctypes.memmove(self._base + off, contents, len(contents))
        for k, name in enumerate(stubs):
            addr = self._base + stub_off + _STUB_SIZE * k
            ctypes.memmove(addr, _STUB_JMP + struct.pack("<Q", self._externals[name]),
                           _STUB_SIZE)
            self._stubs[name] = addr
        self.sections = tuple(LoadedSection(sections[i].name, self._base + off,
                                            sections[i]["sh_size"], group_of[i].name)
                              for i, off in offsets.items())
        self._exec_ranges = [(s.address, s.address + s.size) for s in self.sections
                             if s.perms == "r-x"]

        values = self._symbols(elf, sections, offsets)
        for rel in relas:
            target = sections[rel["sh_info"]]
            where = self._base + offsets[rel["sh_info"]]
            for r in rel.iter_relocations():
                self._apply(r, target.name, target["sh_size"], where, values)

        for group, start, stop in ranges:
            if _mprotect(self._base + start, stop - start, group.prot) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"mprotect({group.name}) failed: {os.strerror(err)}")

    def _needed_stubs(self, sections: list[Any]) -> list[str]:
        """The undefined symbols with an address in externals, in symbol table order."""
        names: list[str] = []
        for s in sections:
            if isinstance(s, SymbolTableSection) and s["sh_type"] == "SHT_SYMTAB":
                for sym in s.iter_symbols():
                    if sym["st_shndx"] == "SHN_UNDEF" and sym.name in self._externals \
                            and sym.name not in names:
                        names.append(sym.name)
        return names

    def _map(self, size: int, low: bool) -> None:
        flags = MAP_PRIVATE | MAP_ANONYMOUS | (MAP_32BIT if low else 0)
        addr = _mmap(None, size, PROT_READ | PROT_WRITE, flags, -1, 0)
        if addr in (None, _MAP_FAILED):
            err = ctypes.get_errno()
            raise ObjectLoadError(f"mmap of {size} bytes failed{' below 2 GiB' if low else ''}:"
                                  f" {os.strerror(err)}")
        self._map_addr, self._map_size = addr, size

    def _symbols(self, elf: ELFFile, sections: list[Any], offsets: dict[int, int]
                 ) -> list[int | None]:
        """Resolve every symbol table entry to an address (None: not loaded)."""
        self._globals: dict[str, int] = {}
        self._locals: dict[str, list[int]] = {}
        values: list[int | None] = []
        tables = [s for s in sections if isinstance(s, SymbolTableSection)
                  and s["sh_type"] == "SHT_SYMTAB"]
        if len(tables) > 1:
            raise ObjectLoadError(f"the object has {len(tables)} SHT_SYMTAB sections; "
                                  "ELF allows one")
        if not tables:
            return values
        symtab = tables[0]
        for index, sym in enumerate(symtab.iter_symbols()):
            shndx, stype = sym["st_shndx"], sym["st_info"]["type"]
            value: int | None = None
            if index == 0 or stype == "STT_FILE":
                pass
            elif shndx == "SHN_UNDEF" and sym.name in self._stubs:
                value = self._stubs[sym.name]
            elif shndx == "SHN_UNDEF":
                raise ObjectLoadError(f"undefined symbol {sym.name!r}: the object refers to "
                                      "a symbol it does not define (no external linking)")
            elif shndx == "SHN_COMMON":
                raise ObjectLoadError(f"common symbol {sym.name!r} is not supported; "
                                      "compile with -fno-common")
            elif shndx == "SHN_ABS":
                value = sym["st_value"]
            elif isinstance(shndx, int) and shndx in offsets:
                value = self._base + offsets[shndx] + sym["st_value"]
            elif not isinstance(shndx, int):
                raise ObjectLoadError(f"symbol {sym.name!r}: section index {shndx} is not "
                                      "supported")
            values.append(value)
            if value is None or not sym.name or stype == "STT_SECTION":
                continue
            if sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK"):
                self._globals[sym.name] = value
            else:
                self._locals.setdefault(sym.name, []).append(value)
        return values

    def _apply(self, r: Any, sec_name: str, sec_size: int, sec_addr: int,
               values: list[int | None]) -> None:
        """Apply one Elf64_Rela (psABI 4.4: S symbol value, A addend, P place)."""
        offset, rtype, index = r["r_offset"], r["r_info_type"], r["r_info_sym"]
        where = f"{sec_name}+{offset:#x}"
        kind: RelocKind = X86_64_RELOC_BY_CODE[rtype]  # types were checked in _load
        if kind.width == 0:
            return
        if offset + kind.width > sec_size:
            raise ObjectLoadError(f"{kind.name} at {where} lies outside the section")
        if index >= len(values) or values[index] is None:
            raise ObjectLoadError(f"{kind.name} at {where} refers to symbol #{index}, which "
                                  "is not in a loaded section")
        place = sec_addr + offset
        value = values[index] + r["r_addend"] - (place if kind.pc_relative else 0)
        if kind.check == "s32" and not -2**31 <= value < 2**31:
            raise ObjectLoadError(f"{kind.name} at {where}: value {value:#x} does not fit in "
                                  "a signed 32-bit field")
        if kind.check == "u32" and not 0 <= value < 2**32:
            raise ObjectLoadError(f"{kind.name} at {where}: value {value:#x} does not fit in "
                                  "an unsigned 32-bit field")
        raw = (value & (2**(8 * kind.width) - 1)).to_bytes(kind.width, "little")
        ctypes.memmove(place, raw, kind.width)

    # --- use ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if not self._map_addr:
            raise ObjectLoadError("the object has been closed")

    def address(self, symbol: str) -> int:
        """The address of a defined symbol (global or weak first, else a unique local)."""
        self._check_open()
        if symbol in self._globals:
            return self._globals[symbol]
        found = self._locals.get(symbol, [])
        if len(found) == 1:
            return found[0]
        if found:
            raise LookupError(f"local symbol {symbol!r} is defined {len(found)} times")
        raise LookupError(f"symbol {symbol!r} is not defined in the object; defined: "
                          + ", ".join(sorted(self._globals)))

    def function(self, symbol: str, restype: Any, argtypes: list[Any] | tuple[Any, ...]
                 ) -> Any:
        """A ctypes callable for ``symbol`` with the given C prototype (System V ABI)."""
        addr = self.address(symbol)
        if not any(lo <= addr < hi for lo, hi in self._exec_ranges):
            raise LookupError(f"symbol {symbol!r} is not in an executable section")
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(addr)
        fn._kcc_loaded_object = self  # keep the mapping alive as long as the callable
        return fn

    def close(self) -> None:
        """Unmap the object. Safe to call more than once."""
        if self._map_addr:
            _munmap(self._map_addr, self._map_size)
            self._map_addr = self._base = 0

    def __enter__(self) -> LoadedObject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_map_addr", 0):
            self.close()
