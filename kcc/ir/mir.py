"""Target-neutral machine IR: the containers instruction selection produces and the register
allocator consumes.

A machine function is a linear list of instructions over virtual registers (``VReg``) and
physical registers (``PReg``).  Every register operand carries a role (``DEF``, ``USE`` or
``DEF | USE`` for read-modify-write) and optional constraints: ``fixed`` (the operand must be
in that physical register at this instruction) and ``tied`` (this DEF must get the same
register as USE operand number ``tied``: two-address forms).

Control flow is structured and marked by the instruction ``kind``:

* ``LABEL`` / ``JUMP`` / ``BRANCH``: a forward branch target, an unconditional and a
  conditional forward branch (operand: a ``Label``);
* ``LOOP_BEGIN`` / ``LOOP_END``: a loop header (operand: the loop's ``Label``) and the
  conditional back edge to the header with the same label, which falls through on exit;
* ``RET``: leaves the function;
* ``MOVE`` / ``SPILL`` / ``FILL`` / ``REMAT``: register copies, frame-slot stores and loads, and
  a repeat of an input instruction that computes a constant (rematerialization: ``slot`` is
  that instruction's index in the allocator's input); these kinds are reserved for code the
  register allocator inserts (instruction selection emits its own copies as ``OP``).

The allocator never looks at ``op`` strings; encoders never look at anything but ``op``,
``operands`` and ``arg``.
"""

from __future__ import annotations

from kcc.record import field, record
from kcc.symbols import FlagSymbols, Symbols  # enum's Enum and Flag, without enum

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Iterator


class MirError(ValueError):
    """A malformed machine function (bad operand, unmatched loop marker, unknown label...)."""


@record(eq=False)
class VReg:
    """A virtual register of register class ``cls``; identity is the object, ``id`` names it."""

    id: int
    cls: str

    def __repr__(self) -> str:
        return f"%v{self.id}:{self.cls}"


@record(frozen=True)
class PReg:
    """A physical register ``name`` in register class ``cls``."""

    name: str
    cls: str

    def __repr__(self) -> str:
        return self.name


Reg = VReg | PReg


class Role(FlagSymbols):
    """How an instruction accesses a register operand (``DEF | USE``: read-modify-write)."""

    DEF = 1
    USE = 2

    __hash__ = object.__hash__      # identity, as Enum's ==; a C call (see kcc.ir.ops.Ops)


_WRITES = frozenset({Role.DEF, Role.DEF | Role.USE})
_READS = frozenset({Role.USE, Role.DEF | Role.USE})
_ROLES = _WRITES | _READS                 # every role an operand has (each one is true)


@record(frozen=True, init=False)
class RegOp:
    """A register operand with its role and constraints."""

    reg: Reg
    role: Role = Role.USE
    fixed: PReg | None = None
    tied: int | None = None

    def __init__(self, reg: Reg, role: Role = Role.USE, fixed: PReg | None = None,
                 tied: int | None = None) -> None:
        # the fields written into the instance dict: a frozen dataclass's own __init__ sets
        # each through object.__setattr__ (2.4x slower; the selector and the allocator make
        # thousands of operands per kernel)
        d = self.__dict__
        d["reg"], d["role"], d["fixed"], d["tied"] = reg, role, fixed, tied

    @property
    def is_def(self) -> bool:
        """True when the instruction writes the register."""
        return self.role in _WRITES         # a set lookup: Flag's & is slow in CPython

    @property
    def is_use(self) -> bool:
        """True when the instruction reads the register."""
        return self.role in _READS


@record(frozen=True)
class Imm:
    """An immediate operand."""

    value: int | float


@record(frozen=True)
class Label:
    """A branch target or loop name."""

    name: str


@record(frozen=True, init=False)
class Mem:
    """A memory operand ``[base + index * scale + disp]``; base and index are register USEs."""

    base: Reg | None = None
    index: Reg | None = None
    scale: int = 1
    disp: int = 0

    def __init__(self, base: Reg | None = None, index: Reg | None = None, scale: int = 1,
                 disp: int = 0) -> None:
        d = self.__dict__                   # (as RegOp's: not object.__setattr__ per field)
        d["base"], d["index"], d["scale"], d["disp"] = base, index, scale, disp


Operand = RegOp | Imm | Label | Mem


class Kind(Symbols):
    """What an instruction means for control flow and for the allocator."""

    OP = "op"
    LABEL = "label"
    JUMP = "jump"
    BRANCH = "branch"
    LOOP_BEGIN = "loop_begin"
    LOOP_END = "loop_end"
    RET = "ret"
    MOVE = "move"
    SPILL = "spill"
    FILL = "fill"
    REMAT = "remat"

    __hash__ = object.__hash__      # identity, as Enum's ==; a C call (see kcc.ir.ops.Ops)


#: kinds that only the register allocator creates
INSERTED_KINDS = frozenset({Kind.MOVE, Kind.SPILL, Kind.FILL, Kind.REMAT})
#: kinds that transfer control somewhere other than (or besides) the next instruction
BRANCH_KINDS = frozenset({Kind.JUMP, Kind.BRANCH, Kind.LOOP_END, Kind.RET})
#: kinds that name a Label operand
_LABELLED_KINDS = frozenset({Kind.LABEL, Kind.LOOP_BEGIN, Kind.LOOP_END, Kind.JUMP,
                             Kind.BRANCH})
#: kinds with nothing for ``structure`` to check
_PLAIN_KINDS = frozenset({Kind.MOVE, Kind.SPILL, Kind.FILL, Kind.REMAT})


@record(eq=False)
class Inst:
    """One machine instruction.

    ``op`` is the target's opcode string, ``operands`` are in the order the encoder wants,
    ``clobbers`` are physical registers the instruction destroys (beyond its DEF operands),
    ``arg`` is a target-private payload (condition code, width...) the allocator carries
    through untouched, and ``slot`` is the frame offset of a ``SPILL``/``FILL`` or of the slot
    an allocated ``OP`` reads in place of a reload (for a ``REMAT``, the index of the input
    instruction it repeats).
    """

    op: str
    operands: list[Operand] = field(default_factory=list)
    clobbers: tuple[PReg, ...] = ()
    kind: Kind = Kind.OP
    arg: Any = None
    slot: int | None = None

    def reg_ops(self) -> Iterator[tuple[int, RegOp]]:
        """The register operands with their operand index."""
        for k, o in enumerate(self.operands):
            if isinstance(o, RegOp):
                yield k, o

    def uses(self) -> list[Reg]:
        """Every register read: USE operands and memory base/index registers."""
        out: list[Reg] = []
        for o in self.operands:                 # (role tests, not the properties: a call each)
            if isinstance(o, RegOp):
                if o.role in _READS:
                    out.append(o.reg)
            elif isinstance(o, Mem):
                if o.base is not None:
                    out.append(o.base)
                if o.index is not None:
                    out.append(o.index)
        return out

    def defs(self) -> list[Reg]:
        """Every register written through a DEF operand (clobbers not included)."""
        return [o.reg for o in self.operands if isinstance(o, RegOp) and o.role in _WRITES]

    def label(self) -> str | None:
        """The name of the first ``Label`` operand, if any."""
        for o in self.operands:
            if isinstance(o, Label):
                return o.name
        return None


@record(eq=False)
class MFunction:
    """A machine function.

    ``params`` pairs each incoming argument's register with the ABI register it arrives in
    (a fixed-register DEF at entry).  After allocation ``frame_size`` is the spill area in
    bytes (16-byte aligned; slots are offsets into it) and ``callee_saved_used`` lists the
    callee-saved registers the code writes, which the target's prologue must save.
    """

    name: str
    insts: list[Inst] = field(default_factory=list)
    params: list[tuple[Reg, PReg]] = field(default_factory=list)
    frame_size: int = 0
    callee_saved_used: tuple[PReg, ...] = ()
    next_vreg: int = 0

    def new_vreg(self, cls: str) -> VReg:
        """A fresh virtual register of class ``cls`` (ids count up from ``next_vreg``)."""
        v = VReg(self.next_vreg, cls)
        self.next_vreg += 1
        return v

    def loops(self) -> list[tuple[int, int]]:
        """(LOOP_BEGIN index, LOOP_END index) of every loop, outer loops first."""
        return [(b, e) for b, e, _ in structure(self.insts)[0]]


def structure(insts: list[Inst]) -> tuple[list[tuple[int, int, int]], dict[str, int]]:
    """Check the control-flow markers of ``insts``.

    Returns the loops as (begin, end, depth) sorted by begin, and the index of every label
    (loop headers included).  Raises ``MirError`` on unmatched loop markers, duplicate or
    unknown labels, backward ``JUMP``/``BRANCH`` or branches into or out of a loop.
    """
    labels: dict[str, int] = {}
    loops: list[tuple[int, int, int]] = []
    stack: list[tuple[str, int]] = []
    inside: tuple[int, ...] = ()          # the open loops' headers, outermost first
    enclosing: dict[int, tuple[int, ...]] = {}   # of the labels and forward branches
    # (bound once: a local is read faster than a class attribute)
    OP, LABEL, JUMP, BRANCH = Kind.OP, Kind.LABEL, Kind.JUMP, Kind.BRANCH
    LOOP_BEGIN, LOOP_END = Kind.LOOP_BEGIN, Kind.LOOP_END
    for i, inst in enumerate(insts):
        kind = inst.kind
        if kind is OP or kind in _PLAIN_KINDS:
            continue                      # nothing to check (a plain instruction)
        if kind in _LABELLED_KINDS and inst.label() is None:
            raise MirError(f"inst {i} ({inst.op}): a {kind.value} needs a Label")
        if kind is LABEL or kind is JUMP or kind is BRANCH:
            enclosing[i] = inside
        if kind is LABEL or kind is LOOP_BEGIN:
            name = inst.label()
            assert name is not None
            if name in labels:
                raise MirError(f"inst {i} ({inst.op}): label {name!r} defined twice")
            labels[name] = i
        if kind is LOOP_BEGIN:
            stack.append((inst.label() or "", i))
            inside = inside + (i,)
        elif kind is LOOP_END:
            if not stack or stack[-1][0] != inst.label():
                raise MirError(f"inst {i} ({inst.op}): LOOP_END {inst.label()!r} does not "
                               f"close the innermost open loop")
            _, b = stack.pop()
            inside = inside[:-1]
            loops.append((b, i, len(stack)))
        if kind in BRANCH_KINDS and inst.defs():
            raise MirError(f"inst {i} ({inst.op}): a branch may not define registers")
    if stack:
        raise MirError(f"loop {stack[-1][0]!r} at inst {stack[-1][1]} has no LOOP_END")
    for i, inside in enclosing.items():
        inst = insts[i]
        if inst.kind in (JUMP, BRANCH):
            name = inst.label()
            t = labels.get(name or "")
            if t is None or insts[t].kind is not LABEL:
                raise MirError(f"inst {i} ({inst.op}): branch to unknown label {name!r}")
            if t <= i:
                raise MirError(f"inst {i} ({inst.op}): only LOOP_END may branch backwards")
            if enclosing[t] != inside:
                raise MirError(f"inst {i} ({inst.op}): branch into or out of a loop")
    loops.sort()
    return loops, labels


def successors(insts: list[Inst], labels: dict[str, int]) -> list[list[int]]:
    """Control-flow successors of each instruction (``len(insts)`` means function exit)."""
    succ: list[list[int]] = []
    OP, RET, JUMP, BACK = Kind.OP, Kind.RET, Kind.JUMP, (Kind.BRANCH, Kind.LOOP_END)
    for i, inst in enumerate(insts):
        kind = inst.kind
        if kind is OP:
            succ.append([i + 1])
        elif kind is RET:
            succ.append([])
        elif kind is JUMP:
            succ.append([labels[inst.label() or ""]])
        elif kind in BACK:
            succ.append([i + 1, labels[inst.label() or ""]])
        else:
            succ.append([i + 1])
    return succ


def verify_mir(fn: MFunction) -> None:
    """Raise ``MirError`` unless ``fn`` is well formed (markers, labels, operand constraints)."""
    structure(fn.insts)
    for v, p in fn.params:
        if v.cls != p.cls:
            raise MirError(f"param {v!r} arrives in {p!r} of another class")
    regs = (VReg, PReg)
    USE = Role.USE
    for i, inst in enumerate(fn.insts):
        seen_defs: list[Reg] = []
        for k, o in enumerate(inst.operands):
            if not isinstance(o, RegOp):
                if isinstance(o, Mem):
                    for r in (o.base, o.index):
                        if r is not None and not isinstance(r, regs):
                            raise MirError(f"inst {i} ({inst.op}): bad memory register {r!r}")
                continue
            if not isinstance(o.reg, regs):
                raise MirError(f"{_where(i, inst, k)}: {o.reg!r} is not a register")
            role = o.role
            if role not in _ROLES and not role:      # (Flag's bool is a Python call)
                raise MirError(f"{_where(i, inst, k)}: operand has no role")
            if o.fixed is not None and o.fixed.cls != o.reg.cls:
                raise MirError(f"{_where(i, inst, k)}: fixed {o.fixed!r} is not of class "
                               f"{o.reg.cls}")
            if o.tied is not None:
                if not o.is_def or o.is_use:
                    raise MirError(f"{_where(i, inst, k)}: only a pure DEF can be tied")
                t = inst.operands[o.tied] if 0 <= o.tied < len(inst.operands) else None
                if not isinstance(t, RegOp) or t.role is not USE:
                    raise MirError(f"{_where(i, inst, k)}: tied={o.tied} is not a USE register "
                                   f"operand")
                if t.reg.cls != o.reg.cls:
                    raise MirError(f"{_where(i, inst, k)}: tied operands of different classes")
            if role in _WRITES:
                reg = o.reg
                for r in seen_defs:
                    if r is reg:
                        raise MirError(f"{_where(i, inst, k)}: {reg!r} defined twice by one "
                                       f"instruction")
                seen_defs.append(reg)


def _where(i: int, inst: Inst, k: int) -> str:
    """Where an operand error is (made only when there is one)."""
    return f"inst {i} ({inst.op}) operand {k}"


def _fmt_reg(r: Reg | None) -> str:
    return "" if r is None else repr(r)


def format_operand(o: Operand) -> str:
    """One operand as text: ``%v3:gpr``, ``def %v3:gpr@rax``, ``42``, ``[%v1 + %v2*8 + 16]``."""
    if isinstance(o, RegOp):
        role = {Role.DEF: "def ", Role.USE: "", Role.DEF | Role.USE: "mod "}[o.role]
        text = role + repr(o.reg)
        if o.fixed is not None and o.fixed != o.reg:
            text += f"@{o.fixed.name}"
        if o.tied is not None:
            text += f"=op{o.tied}"
        return text
    if isinstance(o, Imm):
        return repr(o.value)
    if isinstance(o, Label):
        return o.name
    parts = []
    if o.base is not None:
        parts.append(_fmt_reg(o.base))
    if o.index is not None:
        parts.append(f"{_fmt_reg(o.index)}*{o.scale}")
    if o.disp or not parts:
        parts.append(str(o.disp))
    return "[" + " + ".join(parts) + "]"


def format_inst(inst: Inst) -> str:
    """One instruction as a line of text (without indentation)."""
    if inst.kind in (Kind.LABEL, Kind.LOOP_BEGIN):
        head = "loop " if inst.kind is Kind.LOOP_BEGIN else ""
        return f"{head}{inst.label()}:"
    text = inst.op
    if inst.operands:
        text += " " + ", ".join(format_operand(o) for o in inst.operands)
    if inst.arg is not None:
        text += f"  {{{inst.arg}}}"
    if inst.slot is not None:
        text += f"  slot={inst.slot}"
    if inst.clobbers:
        text += "  clobbers(" + ", ".join(p.name for p in inst.clobbers) + ")"
    if inst.kind in INSERTED_KINDS:
        text += f"  ; {inst.kind.value}"
    return text


def format_mir(fn: MFunction) -> str:
    """A listing of ``fn`` (for ``--dump-after isel`` / ``--dump-after allocate``)."""
    head = f"mfunction {fn.name}("
    head += ", ".join(f"{v!r}@{p.name}" if v != p else p.name for v, p in fn.params) + ")"
    if fn.frame_size:
        head += f"  frame={fn.frame_size}"
    if fn.callee_saved_used:
        head += "  saves(" + ", ".join(p.name for p in fn.callee_saved_used) + ")"
    lines = [head]
    depth = 0
    width = len(str(max(len(fn.insts) - 1, 0)))
    for i, inst in enumerate(fn.insts):
        if inst.kind is Kind.LOOP_END:
            depth -= 1
        indent = "  " * (depth + (0 if inst.kind in (Kind.LABEL, Kind.LOOP_BEGIN) else 1))
        lines.append(f"{i:>{width}}: {indent}{format_inst(inst)}")
        if inst.kind is Kind.LOOP_BEGIN:
            depth += 1
    return "\n".join(lines) + "\n"
