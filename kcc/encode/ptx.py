"""PTX emission: typed virtual register banks, instruction forms as data, and module text.

PTX is a virtual ISA: the "encoding" is text that `ptxas` (the oracle) assembles. Registers
stay virtual (ptxas allocates them), so every bank is declared as `.reg .TYPE %prefix<N>;`
(PTX ISA 8.x, section 5.3, "Parameterized Variable Names"). An instruction is an `Inst`:
a full mnemonic (`add.rn.f32`), operands, and an optional guard predicate (`@%p1`, `@!%p1`,
section 9.7.1). Every mnemonic is checked against `FORMS`, one row per instruction stem, before
it is written, so a selector bug is a clear error here rather than a ptxas line number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


class PtxError(Exception):
    """An instruction or module that kcc cannot write as valid PTX."""


@dataclass(frozen=True)
class Bank:
    """A register bank: its name (used by the selector), the `%` prefix and the `.reg` type."""

    name: str
    prefix: str
    decl: str


BANKS: tuple[Bank, ...] = (
    Bank("pred", "p", ".pred"),
    Bank("b16", "rs", ".b16"),
    Bank("b32", "r", ".b32"),
    Bank("b64", "rd", ".b64"),
    Bank("f32", "f", ".f32"),
    Bank("f64", "fd", ".f64"),
)
BANK: dict[str, Bank] = {b.name: b for b in BANKS}


@dataclass(frozen=True)
class Reg:
    """Virtual register n of a bank."""

    bank: str
    n: int

    def __str__(self) -> str:
        return f"%{BANK[self.bank].prefix}{self.n}"


@dataclass(frozen=True)
class Imm:
    """An immediate operand, already in PTX literal syntax (`5`, `0f3F800000`, `0d…`)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Sym:
    """A named operand: a special register (`%ctaid.x`) or a variable/param name."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Addr:
    """A memory operand `[base+offset]` (section 6.4.1: register plus immediate offset)."""

    base: Union[Reg, Sym]
    offset: int = 0

    def __str__(self) -> str:
        if self.offset == 0:
            return f"[{self.base}]"
        return f"[{self.base}+{self.offset}]"      # a negative offset is written `+-12`


@dataclass(frozen=True)
class Vec:
    """A vector operand `{%f1, %f2, …}` of ld/st .v2/.v4 (section 5.4.2)."""

    regs: tuple[Reg, ...]

    def __str__(self) -> str:
        return "{" + ", ".join(map(str, self.regs)) + "}"


@dataclass(frozen=True)
class Label:
    """A branch target."""

    name: str

    def __str__(self) -> str:
        return self.name


Operand = Union[Reg, Imm, Sym, Addr, Vec, Label]


@dataclass(frozen=True)
class Form:
    """One PTX instruction stem: operand count, minimum sm when a modifier needs a newer one."""

    stem: str
    nops: int
    section: str             # PTX ISA section that defines it
    min_sm_if: tuple[tuple[str, int], ...] = ()   # (modifier, minimum sm) pairs
    min_sm: int = 0                                # the least sm of every form of the stem


FORMS_ROWS: tuple[Form, ...] = (
    Form("add", 3, "9.7.1.1/9.7.3.1"),
    Form("sub", 3, "9.7.1.2/9.7.3.2"),
    Form("mul", 3, "9.7.1.3/9.7.3.3"),
    Form("mad", 4, "9.7.1.4"),
    Form("mul24", 3, "9.7.1.5"),
    Form("div", 3, "9.7.1.8/9.7.3.8"),
    Form("rem", 3, "9.7.1.9"),
    Form("neg", 2, "9.7.1.11/9.7.3.10"),
    Form("max", 3, "9.7.1.13"),
    Form("min", 3, "9.7.1.12"),
    Form("fma", 4, "9.7.3.6"),
    Form("rcp", 2, "9.7.3.13"),
    Form("sqrt", 2, "9.7.3.14"),
    Form("ex2", 2, "9.7.3 (ex2)"),
    Form("rsqrt", 2, "9.7.3 (rsqrt)"),
    Form("abs", 2, "9.7.3 (abs)"),
    Form("copysign", 3, "9.7.3 (copysign)"),
    Form("testp", 2, "9.7.3 (testp)"),
    Form("and", 3, "9.7.8.1"),
    Form("or", 3, "9.7.8.2"),
    Form("xor", 3, "9.7.8.3"),
    Form("not", 2, "9.7.8.4"),
    Form("shl", 3, "9.7.8.8"),
    Form("shr", 3, "9.7.8.9"),
    Form("setp", 3, "9.7.6.2"),
    Form("selp", 4, "9.7.6.3"),
    Form("mov", 2, "9.7.9.1"),
    Form("cvt", 2, "9.7.9.21", (("bf16", 80),)),
    Form("cvta", 2, "9.7.9.20"),
    Form("ld", 2, "9.7.9.8"),
    Form("st", 2, "9.7.9.10"),
    Form("bra", 1, "9.7.12.1"),
    Form("bar", 1, "9.7.13.1"),
    # D, A, B, C; kcc writes only the sm_80 shapes m16n8k8/m16n8k16 (kcc.isel.ptx.wmma)
    Form("mma", 4, "9.7.14.5.14", min_sm=80),
    Form("ret", 0, "9.7.12.6"),
)
FORMS: dict[str, Form] = {f.stem: f for f in FORMS_ROWS}


@dataclass(frozen=True)
class Inst:
    """One PTX instruction (or a label when `op` is ':'), with an optional guard predicate."""

    op: str
    operands: tuple[Operand, ...] = ()
    guard: Reg | None = None
    guard_neg: bool = False

    def text(self) -> str:
        """The instruction as a line of PTX (without indentation)."""
        if self.op == ":":
            return f"{self.operands[0]}:"
        g = ""
        if self.guard is not None:
            g = f"@{'!' if self.guard_neg else ''}{self.guard} "
        ops = ", ".join(map(str, self.operands))
        return f"{g}{self.op}{' ' + ops if ops else ''};"


def check_inst(inst: Inst, sm: int) -> None:
    """Check an instruction against its form row; PtxError if it does not fit."""
    if inst.op == ":":
        return
    stem = inst.op.split(".")[0]
    form = FORMS.get(stem)
    if form is None:
        raise PtxError(f"{inst.op}: kcc has no PTX form for '{stem}'")
    if len(inst.operands) != form.nops:
        raise PtxError(f"{inst.op} takes {form.nops} operands, got {len(inst.operands)}")
    mods = inst.op.split(".")[1:]
    if sm < form.min_sm:
        raise PtxError(f"{inst.op} needs sm_{form.min_sm} or newer (PTX ISA section "
                       f"{form.section}); this module targets sm_{sm}")
    for mod, need in form.min_sm_if:
        if mod in mods and sm < need:
            raise PtxError(f"{inst.op} needs sm_{need} or newer (PTX ISA section "
                           f"{form.section}); this module targets sm_{sm}")
    if inst.guard is not None and inst.guard.bank != "pred":
        raise PtxError(f"{inst.op}: a guard is a predicate register, not {inst.guard}")


@dataclass
class Kernel:
    """One `.entry`: parameters, register counts per bank, shared/local arrays, the body."""

    name: str
    params: list[tuple[str, str]]                 # (name, .param type without the dot)
    body: list[Inst]
    regs: dict[str, int] = field(default_factory=dict)   # bank → number of registers used
    shared: list[tuple[str, int, int]] = field(default_factory=list)   # (name, bytes, align)
    local: list[tuple[str, int, int]] = field(default_factory=list)
    maxntid: tuple[int, int, int] | None = None


# The lowest PTX ISA version ptxas (CUDA 13.0) accepts for each `.target`, found by assembling
# an empty kernel with every version; sm_75 is still accepted by CUDA 13 ptxas.
ARCH_PTX: dict[str, str] = {
    "sm_75": "6.3", "sm_80": "7.0", "sm_86": "7.1", "sm_89": "7.8", "sm_90": "7.8",
    "sm_100": "8.6", "sm_120": "8.7",
}


def sm_number(arch: str) -> int:
    """75 for "sm_75"; PtxError for an arch kcc does not know."""
    if arch not in ARCH_PTX:
        raise PtxError(f"unknown CUDA arch {arch!r} (choose from {', '.join(ARCH_PTX)})")
    return int(arch[3:])


def kernel_text(k: Kernel, sm: int) -> str:
    """The `.visible .entry` of one kernel."""
    lines = []
    params = ",\n".join(f"\t.param .{t} {n}" for n, t in k.params)
    lines.append(f".visible .entry {k.name}(" + (f"\n{params}\n" if params else "") + ")")
    if k.maxntid is not None:
        lines.append(".maxntid {}, {}, {}".format(*k.maxntid))
    lines.append("{")
    for b in BANKS:
        n = k.regs.get(b.name, 0)
        if n:
            lines.append(f"\t.reg {b.decl} %{b.prefix}<{n}>;")
    for name, size, align in k.shared:
        lines.append(f"\t.shared .align {align} .b8 {name}[{size}];")
    for name, size, align in k.local:
        lines.append(f"\t.local .align {align} .b8 {name}[{size}];")
    for inst in k.body:
        check_inst(inst, sm)
        if inst.op == ":":
            lines.append(inst.text())
        else:
            lines.append("\t" + inst.text())
    lines.append("}")
    return "\n".join(lines) + "\n"


def module_text(kernels: list[Kernel], arch: str) -> str:
    """A whole PTX module: header (.version/.target/.address_size 64) and every entry."""
    sm = sm_number(arch)
    head = (f"//\n// Generated by kcc\n//\n\n.version {ARCH_PTX[arch]}\n.target {arch}\n"
            ".address_size 64\n")
    return head + "".join("\n" + kernel_text(k, sm) for k in kernels)
