"""ELF64 object writer.

Two levels:

* :class:`ElfBuilder` lays out any ELF64 little-endian file made of sections (header,
  section contents, section header table). It knows nothing of symbols or relocations, so
  other packagers (the AMD HSACO writer) reuse it with their own ``e_type``/``e_machine``/
  ``e_flags``/OSABI, together with :class:`StringTable` and :func:`build_symtab`.
* :func:`write_relocatable` builds an ``ET_REL`` object for the system linker: user sections,
  ``.rela<section>`` for each section with relocations, an empty ``.note.GNU-stack``,
  ``.symtab``, ``.strtab`` and ``.shstrtab``.

Layouts follow the System V gABI chapter 4 ("ELF Header", "Sections", "String Table",
"Symbol Table", "Relocation") and, for x86-64 relocation types, the System V AMD64 psABI
section 4.4 ("Relocation"). Output is deterministic: equal input gives equal bytes.
"""

from __future__ import annotations

import _struct as struct  # struct's own C functions, without struct.py (start-up)

from kcc.record import field, record

# --- gABI constants (chapter 4) -------------------------------------------------------------
ELFMAG = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
EV_CURRENT = 1
ELFOSABI_NONE = 0

ET_REL = 1
ET_EXEC = 2
ET_DYN = 3

EM_X86_64 = 62
EM_AMDGPU = 224

SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_RELA = 4
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_REL = 9
SHT_HASH = 5
SHT_DYNAMIC = 6
SHT_DYNSYM = 11

# Program header types and flags (gABI chapter 5, "Program Header").
PT_LOAD = 1
PT_DYNAMIC = 2
PT_NOTE = 4
PT_PHDR = 6
PF_X = 0x1
PF_W = 0x2
PF_R = 0x4

SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHF_MERGE = 0x10
SHF_STRINGS = 0x20
SHF_INFO_LINK = 0x40

SHN_UNDEF = 0
SHN_ABS = 0xFFF1

STB_LOCAL = 0
STB_GLOBAL = 1
STB_WEAK = 2

STT_NOTYPE = 0
STT_OBJECT = 1
STT_FUNC = 2
STT_SECTION = 3
STT_FILE = 4

STV_DEFAULT = 0
STV_HIDDEN = 2
STV_PROTECTED = 3

# Sizes of the fixed records (gABI: Elf64_Ehdr, Elf64_Shdr, Elf64_Sym, Elf64_Rela).
EHDR_SIZE = 64
PHDR_SIZE = 56
SHDR_SIZE = 64
SYM_SIZE = 24
RELA_SIZE = 24

_EHDR = struct.Struct("<4sBBBBB7xHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")

SYMBOL_KINDS = {"notype": STT_NOTYPE, "object": STT_OBJECT, "func": STT_FUNC}
SYMBOL_BINDINGS = {"local": STB_LOCAL, "global": STB_GLOBAL, "weak": STB_WEAK}
SYMBOL_VISIBILITIES = {"default": STV_DEFAULT, "hidden": STV_HIDDEN,
                       "protected": STV_PROTECTED}


class ElfWriteError(ValueError):
    """The input given to the ELF writer cannot form a valid object."""


# --- x86-64 relocation types (psABI 4.4.1, table "Relocation Types") ------------------------
@record(frozen=True)
class RelocKind:
    """One relocation type: how many bytes it patches and how the value is computed.

    ``pc_relative``: the value is ``S + A - P`` (else ``S + A``). ``check``: the range the
    value must fit for a 4-byte field, ``"s32"`` (signed), ``"u32"`` (zero-extended) or
    ``"none"`` (a full 64-bit field, or no field).
    """

    code: int
    name: str
    width: int
    pc_relative: bool
    check: str


X86_64_RELOCS: tuple[RelocKind, ...] = (
    RelocKind(0, "R_X86_64_NONE", 0, False, "none"),
    RelocKind(1, "R_X86_64_64", 8, False, "none"),
    RelocKind(2, "R_X86_64_PC32", 4, True, "s32"),
    # PLT32 is L + A - P; for a symbol defined in the same link unit L is S (psABI 4.4).
    RelocKind(4, "R_X86_64_PLT32", 4, True, "s32"),
    RelocKind(10, "R_X86_64_32", 4, False, "u32"),
    RelocKind(11, "R_X86_64_32S", 4, False, "s32"),
)
X86_64_RELOC_BY_CODE: dict[int, RelocKind] = {r.code: r for r in X86_64_RELOCS}
R_X86_64_NONE, R_X86_64_64, R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_32, R_X86_64_32S = (
    r.code for r in X86_64_RELOCS)


# --- public records -------------------------------------------------------------------------
@record(frozen=True)
class Symbol:
    """A symbol defined in one of the object's sections.

    ``kind`` is ``"func"``, ``"object"`` or ``"notype"``; ``binding`` is ``"global"``,
    ``"local"`` or ``"weak"``; ``visibility`` is ``"default"``, ``"hidden"`` or
    ``"protected"``.
    """

    name: str
    section: str
    offset: int
    size: int
    kind: str = "func"
    binding: str = "global"
    visibility: str = "default"


@record(frozen=True)
class Reloc:
    """A relocation: patch ``section`` at ``offset`` with type ``type`` against ``symbol``.

    ``symbol`` names a symbol of the object, a section of the object (then the section
    symbol is used, e.g. ``".rodata"`` for the constant pool), or else an undefined
    symbol the linker must supply.
    """

    section: str
    offset: int
    type: int
    symbol: str
    addend: int = 0


@record
class Section:
    """One section as the builder lays it out; ``index`` is set by :meth:`ElfBuilder.add`.

    For ``SHT_NOBITS`` sections ``data`` is empty and ``nobits_size`` gives the size.
    ``link`` and ``info`` are plain integers (section indices, symbol indices) that the
    caller may fill in after adding the section, once the indices are known.
    """

    name: str
    data: bytes = b""
    sh_type: int = SHT_PROGBITS
    flags: int = 0
    align: int = 1
    entsize: int = 0
    link: int = 0
    info: int = 0
    addr: int = 0
    nobits_size: int = 0
    index: int = field(default=-1, compare=False)

    @property
    def size(self) -> int:
        """Section size in bytes (sh_size)."""
        return self.nobits_size if self.sh_type == SHT_NOBITS else len(self.data)


@record(frozen=True)
class Segment:
    """One program header (gABI chapter 5) covering the named sections, in layout order.

    A ``PT_PHDR`` segment covers the program header table itself and lists no sections. The
    first ``PT_LOAD`` also covers the file header and program headers (offset 0), as
    linkers lay out a shared object; every later ``PT_LOAD`` starts on a new page of the
    address space at the same offset modulo the page size.
    """

    p_type: int
    p_flags: int
    align: int
    sections: tuple[str, ...] = ()


class StringTable:
    """An ELF string table (gABI "String Table"): index 0 is the empty string.

    Strings are stored once each, in first-added order, so the table is deterministic.
    """

    def __init__(self) -> None:
        self._data = bytearray(b"\0")
        self._offsets: dict[str, int] = {"": 0}

    def add(self, text: str) -> int:
        """Add ``text`` (if new) and return its offset in the table."""
        if text in self._offsets:
            return self._offsets[text]
        raw = text.encode("utf-8")
        if b"\0" in raw:
            raise ElfWriteError(f"name {text!r} contains a NUL byte")
        offset = len(self._data)
        self._data += raw + b"\0"
        self._offsets[text] = offset
        return offset

    def data(self) -> bytes:
        """The table's bytes."""
        return bytes(self._data)


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _align_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align


class ElfBuilder:
    """Lays out an ELF64 little-endian file from sections, with optional program headers.

    Section index 0 is the null section; ``add`` assigns the following indices in call
    order. ``shstrtab`` is created by :meth:`to_bytes` as the last section. With
    ``segments``, the program header table follows the file header and :meth:`layout`
    gives every allocated section its address (call it once all sizes are final to learn
    the addresses, fill in contents of the same sizes, then call :meth:`to_bytes`).
    """

    def __init__(self, machine: int = EM_X86_64, e_type: int = ET_REL,
                 osabi: int = ELFOSABI_NONE, abiversion: int = 0, e_flags: int = 0,
                 segments: tuple[Segment, ...] = (), page_size: int = 0x1000) -> None:
        self.machine = machine
        self.e_type = e_type
        self.osabi = osabi
        self.abiversion = abiversion
        self.e_flags = e_flags
        self.segments = segments
        self.page_size = page_size
        self.sections: list[Section] = []

    def add(self, section: Section) -> Section:
        """Append ``section``, set its index and return it."""
        if not _is_pow2(section.align):
            raise ElfWriteError(f"section {section.name!r}: alignment {section.align} is not "
                                "a power of two")
        if section.sh_type == SHT_NOBITS and section.data:
            raise ElfWriteError(f"section {section.name!r}: SHT_NOBITS carries no data")
        section.index = len(self.sections) + 1
        self.sections.append(section)
        return section

    def index_of(self, name: str) -> int:
        """The index of the first section called ``name``."""
        for sec in self.sections:
            if sec.name == name:
                return sec.index
        raise ElfWriteError(f"no section named {name!r}")

    def layout(self, sections: list[Section] | None = None) -> list[int]:
        """File offsets of ``sections`` (default: those added); sets allocated sections'
        ``addr`` when the builder has segments."""
        sections = self.sections if sections is None else sections
        first_load = next((s.sections[0] for s in self.segments
                           if s.p_type == PT_LOAD and s.sections), None)
        new_page = {s.sections[0] for s in self.segments if s.p_type == PT_LOAD
                    and s.sections and s.sections[0] != first_load}
        pos = EHDR_SIZE + PHDR_SIZE * len(self.segments)
        delta = 0  # address minus file offset, constant within one PT_LOAD
        va_end = pos
        offsets = []
        for sec in sections:
            off = _align_up(pos, sec.align)
            offsets.append(off)
            if self.segments and sec.flags & SHF_ALLOC:
                if sec.name in new_page:
                    delta = (_align_up(va_end, self.page_size) + off % self.page_size) - off
                sec.addr = off + delta
                va_end = sec.addr + sec.size
            if sec.sh_type != SHT_NOBITS:
                pos = off + sec.size
        return offsets

    def _program_headers(self, offsets: list[int]) -> bytes:
        where = {sec.name: (sec, off) for sec, off in zip(self.sections, offsets)}
        out = bytearray()
        first_load = True
        for seg in self.segments:
            if seg.p_type == PT_PHDR:
                size = PHDR_SIZE * len(self.segments)
                out += _PHDR.pack(seg.p_type, seg.p_flags, EHDR_SIZE, EHDR_SIZE, EHDR_SIZE,
                                  size, size, seg.align)
                continue
            if not seg.sections:
                raise ElfWriteError(f"segment of type {seg.p_type} covers no section")
            secs = [where[name] for name in seg.sections]
            start_sec, start = secs[0]
            addr = start_sec.addr
            if seg.p_type == PT_LOAD and first_load:
                addr, start, first_load = addr - start, 0, False
            end_file = max(off + (0 if s.sh_type == SHT_NOBITS else s.size) for s, off in secs)
            end_mem = max(s.addr + s.size for s, _ in secs)
            out += _PHDR.pack(seg.p_type, seg.p_flags, start, addr, addr, end_file - start,
                              end_mem - addr, seg.align)
        return bytes(out)

    def to_bytes(self) -> bytes:
        """Append ``.shstrtab`` and return the whole file."""
        shstrtab = StringTable()
        names = [shstrtab.add(sec.name) for sec in self.sections]
        shstr = Section(".shstrtab", b"", SHT_STRTAB, align=1)
        shstr_name = shstrtab.add(".shstrtab")
        shstr.data = shstrtab.data()
        all_sections = [*self.sections, shstr]
        names.append(shstr_name)
        shstrndx = len(all_sections)

        offsets = self.layout(all_sections)
        phdrs = self._program_headers(offsets)
        out = bytearray(EHDR_SIZE) + phdrs
        for sec, off in zip(all_sections, offsets):
            if sec.sh_type == SHT_NOBITS:
                continue
            out += b"\0" * (off - len(out))
            out += sec.data
        out += b"\0" * (_align_up(len(out), 8) - len(out))
        shoff = len(out)
        out += bytes(SHDR_SIZE)  # the null section header
        for sec, name, off in zip(all_sections, names, offsets):
            out += _SHDR.pack(name, sec.sh_type, sec.flags, sec.addr, off, sec.size,
                              sec.link, sec.info, sec.align, sec.entsize)
        out[:EHDR_SIZE] = _EHDR.pack(
            ELFMAG, ELFCLASS64, ELFDATA2LSB, EV_CURRENT, self.osabi, self.abiversion,
            self.e_type, self.machine, EV_CURRENT, 0, EHDR_SIZE if phdrs else 0, shoff,
            self.e_flags, EHDR_SIZE, PHDR_SIZE if phdrs else 0, len(self.segments),
            SHDR_SIZE, len(all_sections) + 1, shstrndx)
        return bytes(out)


def encode_symbol(name: int, bind: int, stype: int, shndx: int, value: int, size: int,
                  visibility: int = STV_DEFAULT) -> bytes:
    """One Elf64_Sym (gABI "Symbol Table": st_info = bind << 4 | type)."""
    return _SYM.pack(name, (bind << 4) | stype, visibility, shndx, value, size)


def encode_rela(offset: int, sym_index: int, rtype: int, addend: int) -> bytes:
    """One Elf64_Rela (gABI "Relocation": r_info = sym << 32 | type)."""
    return _RELA.pack(offset, (sym_index << 32) | rtype, addend)


def build_symtab(entries: list[tuple[str, int, int, int, int, int, int]],
                 strtab: StringTable) -> tuple[bytes, int]:
    """Encode symbol entries ``(name, bind, type, shndx, value, size, visibility)``.

    The null symbol is prepended; the caller gives locals before globals (gABI: "all
    symbols with STB_LOCAL binding precede the weak and global symbols"), which is checked.
    Returns the table's bytes and the index of the first non-local symbol (``sh_info``).
    """
    out = bytearray(SYM_SIZE)
    first_global = len(entries) + 1
    for i, (name, bind, stype, shndx, value, size, vis) in enumerate(entries, start=1):
        if bind == STB_LOCAL and first_global <= len(entries):
            raise ElfWriteError(f"local symbol {name!r} follows a global one")
        if bind != STB_LOCAL and first_global > len(entries):
            first_global = i
        name_off = 0 if stype == STT_SECTION else strtab.add(name)
        out += encode_symbol(name_off, bind, stype, shndx, value, size, vis)
    return bytes(out), first_global


# --- ET_REL writer --------------------------------------------------------------------------
_RESERVED_SECTIONS = (".symtab", ".strtab", ".shstrtab", ".note.GNU-stack")


def _check_sections(sections: dict[str, tuple[bytes, int, int]]) -> None:
    for name, spec in sections.items():
        if not isinstance(name, str) or not name:
            raise ElfWriteError(f"section name must be a non-empty string, got {name!r}")
        if name in _RESERVED_SECTIONS or name.startswith(".rela"):
            raise ElfWriteError(f"section {name!r} is created by the writer; do not pass it")
        if not (isinstance(spec, tuple) and len(spec) == 3):
            raise ElfWriteError(f"section {name!r}: expected (bytes, align, flags), "
                                f"got {spec!r}")
        data, align, flags = spec
        if not isinstance(data, (bytes, bytearray)):
            raise ElfWriteError(f"section {name!r}: contents must be bytes")
        if not isinstance(align, int) or not _is_pow2(align):
            raise ElfWriteError(f"section {name!r}: alignment {align!r} is not a power of 2")
        if not isinstance(flags, int) or flags < 0:
            raise ElfWriteError(f"section {name!r}: flags {flags!r} must be SHF_* bits")
        if name.startswith(".bss") and any(data):
            raise ElfWriteError(f"section {name!r}: .bss contents must be zero bytes")


def _check_symbols(symbols: list[Symbol], sections: dict[str, tuple[bytes, int, int]]
                   ) -> dict[str, Symbol]:
    by_name: dict[str, Symbol] = {}
    for sym in symbols:
        where = f"symbol {sym.name!r}"
        if not sym.name:
            raise ElfWriteError("symbol name must not be empty")
        if sym.name in by_name:
            raise ElfWriteError(f"{where} is defined twice")
        if sym.name in sections:
            raise ElfWriteError(f"{where} has the name of a section")
        if sym.section not in sections:
            raise ElfWriteError(f"{where}: unknown section {sym.section!r}")
        if sym.kind not in SYMBOL_KINDS:
            raise ElfWriteError(f"{where}: kind {sym.kind!r} not in {sorted(SYMBOL_KINDS)}")
        if sym.binding not in SYMBOL_BINDINGS:
            raise ElfWriteError(f"{where}: binding {sym.binding!r} not in "
                                f"{sorted(SYMBOL_BINDINGS)}")
        if sym.visibility not in SYMBOL_VISIBILITIES:
            raise ElfWriteError(f"{where}: visibility {sym.visibility!r} not in "
                                f"{sorted(SYMBOL_VISIBILITIES)}")
        size = len(sections[sym.section][0])
        if sym.offset < 0 or sym.size < 0 or sym.offset + sym.size > size:
            raise ElfWriteError(f"{where}: [{sym.offset}, {sym.offset + sym.size}) lies "
                                f"outside section {sym.section!r} of {size} bytes")
        by_name[sym.name] = sym
    return by_name


def _check_relocs(relocs: list[Reloc], sections: dict[str, tuple[bytes, int, int]],
                  machine: int) -> None:
    spans: dict[str, list[tuple[int, int]]] = {}
    for r in relocs:
        where = f"relocation at {r.section}+{r.offset:#x}"
        if r.section not in sections:
            raise ElfWriteError(f"{where}: unknown section {r.section!r}")
        if not r.symbol:
            raise ElfWriteError(f"{where}: empty symbol name")
        width = 1
        if machine == EM_X86_64:
            kind = X86_64_RELOC_BY_CODE.get(r.type)
            if kind is None:
                raise ElfWriteError(f"{where}: unsupported x86-64 relocation type {r.type}")
            width = kind.width
        size = len(sections[r.section][0])
        if r.offset < 0 or r.offset + width > size:
            raise ElfWriteError(f"{where}: field of {width} bytes lies outside section "
                                f"{r.section!r} of {size} bytes")
        spans.setdefault(r.section, []).append((r.offset, r.offset + max(width, 1)))
    for name, items in spans.items():
        items.sort()
        for (a0, a1), (b0, _) in zip(items, items[1:]):
            if b0 < a1:
                raise ElfWriteError(f"relocations at {name}+{a0:#x} and {name}+{b0:#x} "
                                    "overlap")


def write_relocatable(sections: dict[str, tuple[bytes, int, int]], symbols: list[Symbol],
                      relocs: list[Reloc], machine: int = EM_X86_64,
                      file_name: str | None = None) -> bytes:
    """Build an ELF64 ``ET_REL`` object.

    ``sections`` maps a name to ``(contents, alignment, SHF_* flags)``, emitted in the given
    order (e.g. ``{".text": (code, 16, SHF_ALLOC | SHF_EXECINSTR), ".rodata": (pool, 32,
    SHF_ALLOC)}``); a name starting with ``.bss`` becomes ``SHT_NOBITS``, one starting with
    ``.note`` ``SHT_NOTE`` (contents: ELF notes). ``symbols`` are
    defined symbols. ``relocs`` name a symbol, a section (its section symbol is used) or an
    undefined symbol. Relocations against local symbols are rewritten against their section
    symbol with the symbol's offset added to the addend, as assemblers do.

    Symbol table order: null, optional ``STT_FILE``, one section symbol per user section,
    local symbols, then global/weak symbols, then undefined ones in first-use order.
    """
    _check_sections(sections)
    by_name = _check_symbols(symbols, sections)
    _check_relocs(relocs, sections, machine)

    builder = ElfBuilder(machine=machine, e_type=ET_REL)
    user: dict[str, Section] = {}
    for name, (data, align, flags) in sections.items():
        if name.startswith(".bss"):
            sec = Section(name, b"", SHT_NOBITS, flags, align, nobits_size=len(data))
        elif name.startswith(".note"):
            sec = Section(name, bytes(data), SHT_NOTE, flags, align)
        else:
            sec = Section(name, bytes(data), SHT_PROGBITS, flags, align)
        user[name] = builder.add(sec)

    # Symbol entries, locals first.
    entries: list[tuple[str, int, int, int, int, int, int]] = []
    if file_name is not None:
        entries.append((file_name, STB_LOCAL, STT_FILE, SHN_ABS, 0, 0, STV_DEFAULT))
    sym_index: dict[str, int] = {}
    for name, sec in user.items():
        entries.append((name, STB_LOCAL, STT_SECTION, sec.index, 0, 0, STV_DEFAULT))
        sym_index[name] = len(entries)
    ordered = ([s for s in symbols if s.binding == "local"]
               + [s for s in symbols if s.binding != "local"])
    for s in ordered:
        entries.append((s.name, SYMBOL_BINDINGS[s.binding], SYMBOL_KINDS[s.kind],
                        user[s.section].index, s.offset, s.size,
                        SYMBOL_VISIBILITIES[s.visibility]))
        sym_index[s.name] = len(entries)
    for r in relocs:
        if r.symbol not in sym_index:
            entries.append((r.symbol, STB_GLOBAL, STT_NOTYPE, SHN_UNDEF, 0, 0, STV_DEFAULT))
            sym_index[r.symbol] = len(entries)

    # Relocation sections, one per target section, entries sorted by offset.
    rela_sections: list[tuple[Section, Section]] = []
    for name, target in user.items():
        mine = sorted((r for r in relocs if r.section == name), key=lambda r: r.offset)
        if not mine:
            continue
        data = bytearray()
        for r in mine:
            sym, addend = by_name.get(r.symbol), r.addend
            if sym is not None and sym.binding == "local":
                index, addend = sym_index[sym.section], addend + sym.offset
            else:
                index = sym_index[r.symbol]
            data += encode_rela(r.offset, index, r.type, addend)
        rela = Section(".rela" + name, bytes(data), SHT_RELA, SHF_INFO_LINK, 8, RELA_SIZE,
                       info=target.index)
        rela_sections.append((builder.add(rela), target))

    # Empty marker: the stack need not be executable (read by GNU ld and lld).
    builder.add(Section(".note.GNU-stack", b"", SHT_PROGBITS, 0, 1))
    strtab = StringTable()
    symdata, first_global = build_symtab(entries, strtab)
    symtab = builder.add(Section(".symtab", symdata, SHT_SYMTAB, 0, 8, SYM_SIZE,
                                 info=first_global))
    strsec = builder.add(Section(".strtab", strtab.data(), SHT_STRTAB, 0, 1))
    symtab.link = strsec.index
    for rela, _ in rela_sections:
        rela.link = symtab.index
    return builder.to_bytes()
