""".rodata constants read in place after register allocation (x86).

Selection materializes a vector constant with a whole-vector load from .rodata, and LICM
(kcc/isel/licm.py, the target's ``alone``) hoists that load out of its loop so the loop reads
a register.  Where the loop needs more vector registers than there are (x86-64-v3 has 16),
the allocator rematerializes such a constant before each use instead of spilling it
(kcc/regalloc/spill.py, ``Kind.REMAT``): a separate VMOVUPS into a short-lived register that
the next instruction reads once.  tanh_log E_8547_3 at x86-64-v3 had 40 of them in a loop of
~200 instructions.  An AVX instruction reads its r/m source from memory at no extra micro-op
in the fused domain (a micro-fused load), so this pass folds each such reload into its one
reader as a RIP-relative memory operand, the form selection gives a constant read where it is
used (kcc/isel/x86/vec.py ``fsrc``), and removes the constant loads whose register is written
again before it is read (the hoisted definitions every use of which was rematerialized).

A reload folds when

- it is a ``REMAT`` of an unmasked whole-vector load from .rodata (no broadcast: the folded
  operand reads the same bytes the register held);
- the next instruction that touches its register is an ordinary instruction of the selector
  with no ``arg`` of its own, reading the register exactly once, at an operand that the
  form lets read memory (``slots.fold_fill``: the r/m operand, no second memory operand) —
  or, for an operation whose two sources commute exactly, at the other source, when the r/m
  source is a register (swapped, a compare's predicate mirrored: SDM Vol. 2 "CMPPS", Table
  3-1; a float add or multiply only when no lane of the constant is a NaN: with one NaN
  source the result is that source quieted in either order, SDM Vol. 1 §4.8.3.5);
- its register is dead after that reader: along the straight-line code that follows, it is
  written before it is read (labels and loop heads are passed through — whoever reaches
  them runs the same code —, a loop end leads both to its head and past the loop, a return
  ends the search, and a forward branch gives up).

Runs before the allocation checker (kcc/regalloc/checker.py), which accepts a reader of a
constant's memory operand in place of the register holding it, and original constant loads
that are gone, through the x86 register info's ``constant_bytes`` and ``commute``: the
register no longer written there must not be read as that value anywhere after.
"""

from __future__ import annotations

import _struct as struct  # struct's own C functions, without struct.py (start-up)

from kcc.encode.x86.row import KINDS
from kcc.encode.x86.table import FORMS
from kcc.ir.mir import Imm, Inst, Kind, Mem, MFunction, PReg, RegOp, Role
from kcc.record import replace
from kcc.targets.x86.slots import constant_bytes, fold_fill, slot_bytes

# sources that commute bit-exactly whatever the values (integer and bitwise lane ops)
_EXACT = frozenset({"vandps", "vandpd", "vorps", "vorpd", "vxorps", "vxorpd", "vpand",
                    "vpor", "vpxor", "vpandd", "vpandq", "vpord", "vporq", "vpxord",
                    "vpxorq", "vpaddb", "vpaddw", "vpaddd", "vpaddq", "vpmullw", "vpmulld",
                    "vpmaxsd", "vpminsd", "vpmaxud", "vpminud", "vpcmpeqd", "vpcmpeqb"})
# float sources that commute unless both are NaNs (the first one's is returned)
_FLOAT = {"vaddps": 4, "vaddpd": 8, "vmulps": 4, "vmulpd": 8}
# compare predicates with their operands swapped: a OP b == b OP' a (SDM Vol. 2 "CMPPS")
_MIRROR = {0: 0, 3: 3, 4: 4, 7: 7, 8: 8, 0x0C: 0x0C, 1: 0x0E, 0x0E: 1, 2: 0x0D, 0x0D: 2,
           5: 0x0A, 0x0A: 5, 6: 9, 9: 6}
_STOPS = frozenset({Kind.JUMP, Kind.BRANCH, Kind.LOOP_END})
# members bound once (module globals: read once per instruction the searches pass)
_OP, _REMAT, _FILL, _RET, _LOOP_END = Kind.OP, Kind.REMAT, Kind.FILL, Kind.RET, Kind.LOOP_END


def fold_constants(fn: MFunction, pool: dict[str, bytes]) -> int:
    """Fold fn's rematerialized .rodata reloads into their readers and drop dead constant
    loads, in place (see the module docstring); ``pool`` maps a .rodata label to its bytes.
    Returns how many instructions went."""
    insts = fn.insts
    out: list[Inst] = []
    gone = 0
    skip: set[int] = set()
    heads: dict[object, int] | None = None     # each loop's head, found at the first load
    # each instruction's registers, read off its operands once (the searches of several
    # loads pass the same instructions: softmax's 239 were asked ~800 times)
    table: list[_Regs | None] = [None] * len(insts)
    for i, inst in enumerate(insts):
        if i in skip:
            continue
        if inst.arg is not None and _constant_load(inst):   # (no arg: no .rodata label)
            r = inst.operands[0].reg
            assert isinstance(r, PReg)
            if heads is None:
                heads = _loop_heads(insts)
            if _dead_after(insts, i, r, heads=heads, table=table):
                gone += 1
                continue
            j = _reader(insts, i, r, table)
            folded = _fold(insts[j], r, inst, pool) if j is not None else None
            if folded is not None and _dead_after(insts, j, r, folded, heads, table):
                out.extend(insts[i + 1:j])
                out.append(folded)
                skip.update(range(i + 1, j + 1))
                gone += 1
                continue
        out.append(inst)
    fn.insts = out
    return gone


def _constant_load(inst: Inst) -> bool:
    """An unmasked whole-vector load from .rodata into one (allocated) register."""
    return (inst.kind is _OP or inst.kind is _REMAT) and constant_bytes(inst) > 0 and \
        isinstance(inst.operands[0].reg, PReg)


def _touches(inst: Inst, r: PReg) -> tuple[bool, bool]:
    """(reads r, writes r) for an allocated instruction (a memory operand's base or index,
    a clobber, a form's implicit registers included)."""
    reads = writes = False
    for o in inst.operands:
        if isinstance(o, RegOp) and o.reg == r:
            reads = reads or o.role is not Role.DEF
            writes = writes or o.role is not Role.USE
        elif isinstance(o, Mem) and r in (o.base, o.index):
            reads = True
    if r in inst.clobbers:
        writes = True
    row = FORMS.get(inst.op)
    if row is not None and (r.name in row.implicit_uses or r.name in row.implicit_defs):
        reads = True                       # conservatively: never treated as a kill
    return reads, writes


# an instruction's registers: the (name, class) of those it reads, of those it writes, and
# the names of its form's implicit registers (`_touches` by name: never a kill)
_Regs = tuple[set[tuple[str, str]], set[tuple[str, str]], tuple[str, ...]]


def _regs(inst: Inst) -> _Regs:
    """What `_touches` reads off inst, for every register at once. PRegs are equal when
    their names and classes are (kcc.record's __eq__, a Python call), so a (name, class)
    key answers `o.reg == r` for a PReg r; any other register (none after allocation)
    equals no PReg."""
    reads: set[tuple[str, str]] = set()
    writes: set[tuple[str, str]] = set()
    for o in inst.operands:
        if isinstance(o, RegOp):
            x = o.reg
            if isinstance(x, PReg):
                if o.role is not Role.DEF:
                    reads.add((x.name, x.cls))
                if o.role is not Role.USE:
                    writes.add((x.name, x.cls))
        elif isinstance(o, Mem):
            for x in (o.base, o.index):
                if isinstance(x, PReg):
                    reads.add((x.name, x.cls))
    for x in inst.clobbers:
        if isinstance(x, PReg):
            writes.add((x.name, x.cls))
    row = FORMS.get(inst.op)
    implicit = row.implicit_uses + row.implicit_defs if row is not None else ()
    return reads, writes, implicit


def _touches_at(insts: list[Inst], k: int, r: PReg,
                table: list[_Regs | None] | None) -> tuple[bool, bool]:
    """_touches(insts[k], r), from table (filled on first use) when one is given."""
    if table is None:
        return _touches(insts[k], r)
    t = table[k]
    if t is None:
        t = table[k] = _regs(insts[k])
    key = (r.name, r.cls)
    return key in t[0] or r.name in t[2], key in t[1]


def _reader(insts: list[Inst], i: int, r: PReg,
            table: list[_Regs | None] | None = None) -> int | None:
    """The index of the instruction after i that next touches r, past only other reloads
    (fills and rematerializations that leave r alone)."""
    for j in range(i + 1, len(insts)):
        x = insts[j]
        rd, wr = _touches_at(insts, j, r, table)
        if rd or wr:
            return j if rd and x.kind is _OP else None
        if x.kind is not _FILL and x.kind is not _REMAT:
            return None
    return None


def _dead_after(insts: list[Inst], i: int, r: PReg, at: Inst | None = None,
                heads: dict[object, int] | None = None,
                table: list[_Regs | None] | None = None) -> bool:
    """Whether r's value after instruction i (``at`` in its place) is never read: along
    every path from there it is written before it is read, or the function returns."""
    if at is not None:
        regs = _regs(at)                  # (_touches by (name, class) keys: no PReg ==)
        rd, wr = (r.name, r.cls) in regs[0] or r.name in regs[2], (r.name, r.cls) in regs[1]
        if wr and not rd:
            return True
    if heads is None:
        heads = _loop_heads(insts)
    return _dead_from(insts, i + 1, r, heads, set(), table)


def _loop_heads(insts: list[Inst]) -> dict[object, int]:
    """Each loop's label: the index of its LOOP_BEGIN (fold_constants finds them once, not
    once per constant load: the scan of the whole function was ~1% of a compile)."""
    return {x.label(): k for k, x in enumerate(insts) if x.kind is Kind.LOOP_BEGIN}


def _dead_from(insts: list[Inst], start: int, r: PReg, heads: dict[object, int],
               seen: set[int], table: list[_Regs | None] | None = None) -> bool:
    """r is written before it is read on every path from ``start`` (a path that comes back
    to where an earlier search began has not read it). A loop end leads to its head and past
    the loop; a forward branch ends the search (as though it read r)."""
    key = (r.name, r.cls)                   # (_touches_at's test, inlined: the walk's step)
    for k in range(start, len(insts)):
        if k in seen:
            return True
        seen.add(k)
        x = insts[k]
        kind = x.kind
        if kind is _RET:
            return True
        if kind is _LOOP_END:
            head = heads.get(x.label())
            return head is not None and _dead_from(insts, head, r, heads, seen, table) and \
                _dead_from(insts, k + 1, r, heads, seen, table)
        if kind in _STOPS:
            return False
        if table is None:
            rd, wr = _touches(x, r)
        else:
            t = table[k]
            if t is None:
                t = table[k] = _regs(x)
            rd, wr = key in t[0] or r.name in t[2], key in t[1]
        if rd:
            return False
        if wr:
            return True
    return True


def _fold(x: Inst, r: PReg, load: Inst, pool: dict[str, bytes]) -> Inst | None:
    """x reading the constant ``load`` loads into r from .rodata in place of r, or None."""
    if x.arg is not None:
        return None
    ks = [k for k, o in enumerate(x.operands) if isinstance(o, RegOp) and o.reg == r
          and o.role is not Role.DEF]         # a result in r too is no read of it
    if len(ks) != 1 or x.operands[ks[0]].role is not Role.USE \
            or x.operands[ks[0]].fixed is not None:
        return None
    k = ks[0]
    mem, size = load.operands[1], slot_bytes(load)
    got = fold_fill(x, k, mem, size)
    if got is None:
        x = commuted(x, k, load, pool)
        if x is None:
            return None
        got = fold_fill(x, k + 1, mem, size)
        if got is None:
            return None
    if type(got) is Inst:               # (replace walks the fields per call)
        return Inst(got.op, got.operands, got.clobbers, got.kind, dict(load.arg), got.slot)
    return replace(got, arg=dict(load.arg))


def commuted(x: Inst, k: int, load: Inst, pool: dict[str, bytes]) -> Inst | None:
    """x with its vvvv source (operand k, the constant) and its r/m source swapped, when
    that computes the same bits (see the module docstring)."""
    row = FORMS.get(x.op)
    if row is None or k != 1 or len(x.operands) < 3:
        return None
    slots = [o.slot for o in row.operands]
    if slots[:3] != ["reg", "vvvv", "rm"] or any(s not in ("imm",) for s in slots[3:]):
        return None
    if KINDS[row.operands[1].kind].cls != "vec" or \
            KINDS[row.operands[1].kind].reg_size != KINDS[row.operands[2].kind].reg_size:
        return None
    ops = list(x.operands)
    b = ops[2]
    if not isinstance(b, RegOp) or b.role is not Role.USE or b.fixed is not None:
        return None
    m = row.mnemonic
    if m in ("vcmpps", "vcmppd"):
        imm = ops[3]
        if not isinstance(imm, Imm) or int(imm.value) not in _MIRROR:
            return None
        ops[3] = Imm(_MIRROR[int(imm.value)])
    elif m in _FLOAT:
        data = pool.get(load.arg["rip"])
        if data is None or _has_nan(data, _FLOAT[m]):
            return None
    elif m not in _EXACT or len(ops) != 3:
        return None
    ops[1], ops[2] = b, ops[1]
    return replace(x, operands=ops)


def _has_nan(data: bytes, width: int) -> bool:
    """Whether any float lane of ``width`` bytes in data is a NaN."""
    fmt = "<f" if width == 4 else "<d"
    return any(v != v for (v,) in struct.iter_unpack(fmt, data[:len(data) // width * width]))
