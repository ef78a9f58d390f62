"""A toy target and its interpreter for the register-allocator tests.

Registers: four GPRs r0..r3 (r3 callee-saved), three vector registers v0..v2 and two "wide"
registers w01/w23 that alias the GPR pairs (to exercise ``reg_units``).  Instructions:

=========  ==============================================  =================================
op         operands                                        meaning (values mod 2**64)
=========  ==============================================  =================================
li         def d, imm                                      d = imm
mov        def d, s   (also vmov, wmov)                    d = s
add        def d tied=1, a, b   (two-address)              d = a + b
sub        def d, a, b                                     d = a - b
mul        mod d, a   (read-modify-write)                  d = d * a
addi       mod d, imm                                      d = d + imm
div        mod q fixed r0, def r fixed r1, y               q, r = q // y, q % y (y=0: ~0, q)
shl        mod d, c fixed r2                               d = d << (c & 15)
call       (clobbers r0 r1 r2 v0 v1)                       destroys the clobbered registers
pair       def a, def b, x                                 a, b = x + 1, x + 2
ldm        def d, [a + b*8 + 16]                           d = hash of the address
vsplat     def vd, g                                       vd = 3g + 1 (narrow: v0/v1 only)
vadd       def vd tied=1, va, vb                           vd = va + vb (narrow: v0/v1 only)
vsum       def g, va                                       g = va ^ 0x5555
wpack      def w, a                                        w = a * 7
wsum       def g, w                                        g = w + 1
lo4        def d, a   (4-byte values: SizedToyTarget)       d = (3a + 1) mod 2**32
vlo        def vd, va (16-byte vectors: SizedToyTarget)     vd = va ^ 0xF0F0
out        a                                               append a to the output
bnz        (LOOP_END) c, label                             back to the loop if c != 0
bz         (BRANCH) c, label                               forward to label if c == 0
st / ld    [sp + off], s  /  def d, [sp + off]             frame store / load (arg: class,
                                                           bytes; a store keeps the low bytes)
=========  ==============================================  =================================
"""

from __future__ import annotations

from kcc.ir.mir import Imm, Inst, Kind, Mem, MFunction, PReg, Reg, RegOp, Role
from kcc.regalloc.target import TargetRegInfo

MASK = (1 << 64) - 1
R = [PReg(f"r{i}", "gpr") for i in range(4)]
V = [PReg(f"v{i}", "vec") for i in range(3)]
W = [PReg("w01", "wide"), PReg("w23", "wide")]
SP = PReg("sp", "ptr")
SENTINEL = 0x5EED_CA11_EE5A_FE00
CLOBBERED = (R[0], R[1], R[2], V[0], V[1])
NARROW = frozenset(V[:2])
MOVE_OP = {"gpr": "mov", "vec": "vmov", "wide": "wmov"}


class ToyTarget(TargetRegInfo):
    """The toy register description handed to the allocator."""

    def __init__(self, wide: bool = False, remat: bool = False, narrow: bool = False) -> None:
        self.remat = remat
        self.narrow = narrow
        self.classes: dict[str, list[PReg]] = {"gpr": list(R), "vec": list(V)}
        if wide:
            self.classes["wide"] = list(W)
        self.callee_saved = {R[3]}

    def reg_units(self, p: PReg) -> tuple[str, ...]:
        """Wide registers are made of two GPRs."""
        if p.cls == "wide":
            return (f"r{p.name[1]}", f"r{p.name[2]}")
        return (p.name,)

    def spill_slot_size(self, cls: str) -> int:
        """8 bytes for a GPR, 32 for a vector, 16 for a wide register."""
        return {"gpr": 8, "vec": 32, "wide": 16}[cls]

    def is_copy(self, inst: Inst) -> bool:
        """mov/vmov/wmov between two registers: copies the allocator may coalesce."""
        return inst.op in MOVE_OP.values() and len(inst.operands) == 2 and all(
            isinstance(o, RegOp) for o in inst.operands)

    def operand_regs(self, inst: Inst, k: int) -> frozenset[PReg] | None:
        """With ``narrow``, the vector operands of vadd and vsplat can only be v0 and v1 (as a
        VEX form cannot name xmm16-31)."""
        o = inst.operands[k]
        if self.narrow and inst.op in ("vadd", "vsplat") and isinstance(o, RegOp) and \
                o.reg.cls == "vec":
            return NARROW
        return None

    def rematerializable(self, inst: Inst) -> bool:
        """li (when enabled): a constant the allocator may load again instead of spilling."""
        return self.remat and inst.op == "li"

    def make_move(self, cls: str, dst: PReg, src: PReg) -> Inst:
        """A register copy."""
        return Inst(MOVE_OP[cls], [RegOp(dst, Role.DEF), RegOp(src, Role.USE)])

    def make_spill(self, cls: str, src: PReg, slot_offset: int, size: int) -> Inst:
        """A store of ``size`` bytes to the frame."""
        return Inst("st", [Mem(SP, disp=slot_offset), RegOp(src, Role.USE)], arg=(cls, size))

    def make_fill(self, cls: str, dst: PReg, slot_offset: int, size: int) -> Inst:
        """A load of ``size`` bytes from the frame."""
        return Inst("ld", [RegOp(dst, Role.DEF), Mem(SP, disp=slot_offset)], arg=(cls, size))

    def slot_bytes(self, inst: Inst) -> int:
        """The width an st/ld moves (read off the instruction), or that a folded operand
        reads."""
        if inst.op in ("st", "ld"):
            return int(inst.arg[1])
        return next(FOLD_READS[inst.op, k] for k, o in enumerate(inst.operands)
                    if isinstance(o, Mem))


# (op, operand) that may read a frame slot instead of a register, and the bytes it reads
FOLD_READS = {("sub", 2): 8, ("out", 0): 8, ("lo4", 1): 4, ("vsum", 1): 32}


class FoldingToyTarget(ToyTarget):
    """The sized toy target whose sub/out/lo4/vsum may read a spilled operand from its slot."""

    def value_bytes(self, inst: Inst, k: int) -> int:
        """As SizedToyTarget."""
        return SizedToyTarget.value_bytes(self, inst, k)  # type: ignore[arg-type]

    def fold_fill(self, inst: Inst, k: int, slot_offset: int, size: int) -> Inst | None:
        """The slot at operand k, where FOLD_READS allows it and the slot is wide enough."""
        n = FOLD_READS.get((inst.op, k))
        if n is None or n > size:
            return None
        ops = list(inst.operands)
        ops[k] = Mem(SP, disp=slot_offset)
        return Inst(inst.op, ops, inst.clobbers, inst.kind, inst.arg, inst.slot)


class SizedToyTarget(ToyTarget):
    """The toy target with value widths: ``lo4`` carries 4-byte values and ``vlo`` 16-byte
    vectors; everything else the class's full width (a memory operand's registers: 8)."""

    def value_bytes(self, inst: Inst, k: int) -> int:
        """lo4: 4, vlo: 16, else the slot size of the operand's class."""
        o = inst.operands[k]
        if isinstance(o, Mem):
            return 8
        return {"lo4": 4, "vlo": 16}.get(inst.op) or self.spill_slot_size(o.reg.cls)


def d(r: Reg, **kw: object) -> RegOp:
    """A DEF operand."""
    return RegOp(r, Role.DEF, **kw)  # type: ignore[arg-type]


def u(r: Reg, **kw: object) -> RegOp:
    """A USE operand."""
    return RegOp(r, Role.USE, **kw)  # type: ignore[arg-type]


def m(r: Reg, **kw: object) -> RegOp:
    """A read-modify-write operand."""
    return RegOp(r, Role.DEF | Role.USE, **kw)  # type: ignore[arg-type]


def div(q: Reg, r: Reg, y: Reg) -> Inst:
    """The fixed-register divide."""
    return Inst("div", [m(q, fixed=R[0]), d(r, fixed=R[1]), u(y)])


def add(dst: Reg, a: Reg, b: Reg) -> Inst:
    """The two-address add."""
    return Inst("add", [d(dst, tied=1), u(a), u(b)])


def shl(dst: Reg, c: Reg) -> Inst:
    """The shift whose count must be in r2."""
    return Inst("shl", [m(dst), u(c, fixed=R[2])])


def call() -> Inst:
    """A call that clobbers the caller-saved registers."""
    return Inst("call", [], clobbers=CLOBBERED)


class InterpError(RuntimeError):
    """The interpreted code did something undefined."""


class Machine:
    """Runs a toy function: over virtual registers (unlimited) or physical ones + a stack."""

    def __init__(self, fn: MFunction, physical: bool, target: ToyTarget | None = None):
        self.fn, self.physical = fn, physical
        self.t = target or ToyTarget(wide=True)
        self.regs: dict[Reg, int] = {}
        self.stack: dict[int, tuple[int, int, int]] = {}
        self.poison = 0xDEAD_0000_0000

    def read(self, r: Reg) -> int:
        if r not in self.regs:
            raise InterpError(f"read of unset register {r!r}")
        return self.regs[r]

    def write(self, r: Reg, v: int) -> None:
        if self.physical and isinstance(r, PReg):
            units = set(self.t.reg_units(r))
            for q in list(self.regs):
                if isinstance(q, PReg) and q != r and units & set(self.t.reg_units(q)):
                    self.regs[q] = self._poison()
        self.regs[r] = v & MASK

    def _poison(self) -> int:
        self.poison += 1
        return self.poison

    def slot_read(self, o: Mem, size: int) -> int:
        """``size`` bytes at a frame address, from the one store that wrote them (a narrower
        or wider store there, or none, reads as poison)."""
        off = self.addr(o)
        cells = {self.stack.get(b) for b in range(off, off + size)}
        c = cells.pop() if len(cells) == 1 else None
        return c[2] if c and c[0] == off and c[1] >= size else self._poison()

    def addr(self, o: Mem) -> int:
        a = self.read(o.base) if o.base is not None else 0
        b = self.read(o.index) if o.index is not None else 0
        return (a + b * o.scale + o.disp) & MASK

    def run(self, args: list[int], max_steps: int = 100_000) -> list[int]:
        """Execute with ``args`` in the parameters; returns the values written by ``out``."""
        for (v, p), a in zip(self.fn.params, args):
            self.write(p if self.physical else v, a)
        if self.physical:
            self.regs[R[3]] = SENTINEL
            self.regs[SP] = 0
        labels = {x.operands[0].name: i for i, x in enumerate(self.fn.insts)  # type: ignore
                  if x.kind in (Kind.LABEL, Kind.LOOP_BEGIN)}
        out: list[int] = []
        pc, steps = 0, 0
        insts = self.fn.insts
        while pc < len(insts):
            steps += 1
            if steps > max_steps:
                raise InterpError("too many steps")
            inst = insts[pc]
            pc += 1
            jump = self.step(inst, out)
            if jump is not None:
                pc = labels[jump]
        return out

    def step(self, inst: Inst, out: list[int]) -> str | None:
        ops = inst.operands
        rd = self.read

        def val(k: int) -> int:
            o = ops[k]
            if isinstance(o, Mem) and op not in ("ld", "st", "ldm"):
                return self.slot_read(o, FOLD_READS[op, k])   # a fill folded into it
            return o.value if isinstance(o, Imm) else rd(o.reg)  # type: ignore

        op = inst.op
        if op in ("label", "loop"):
            return None
        if op == "bnz":
            return ops[1].name if val(0) != 0 else None  # type: ignore[union-attr]
        if op == "bz":
            return ops[1].name if val(0) == 0 else None  # type: ignore[union-attr]
        if op == "out":
            out.append(val(0))
            return None
        if op == "st":
            off, size = self.addr(ops[0]), inst.arg[1]  # type: ignore
            keep = val(1) & ((1 << 8 * size) - 1) if size < 8 else val(1)
            for b in range(off, off + size):
                self.stack[b] = (off, size, keep)
            return None
        if op == "ld":
            off, size = self.addr(ops[1]), inst.arg[1]  # type: ignore
            cells = {self.stack.get(b) for b in range(off, off + size)}
            c = cells.pop() if len(cells) == 1 else None
            self.write(ops[0].reg, c[2] if c and c[:2] == (off, size) else self._poison())
            return None
        if op == "call":
            if self.physical:
                for c in inst.clobbers:
                    self.write(c, self._poison())
            return None
        if op == "div":
            q, y = val(0), val(2)
            qq, rr = (q // y, q % y) if y else (MASK, q)
            self.write(ops[0].reg, qq)  # type: ignore[union-attr]
            self.write(ops[1].reg, rr)  # type: ignore[union-attr]
            return None
        if op == "pair":
            x = val(2)
            self.write(ops[0].reg, x + 1)  # type: ignore[union-attr]
            self.write(ops[1].reg, x + 2)  # type: ignore[union-attr]
            return None
        if op == "ldm":
            a = self.addr(ops[1])  # type: ignore[arg-type]
            res = (a * 0x9E37_79B9_7F4A_7C15) >> 7
        else:
            res = {
                "li": lambda: val(1), "mov": lambda: val(1), "vmov": lambda: val(1),
                "wmov": lambda: val(1), "add": lambda: val(1) + val(2),
                "sub": lambda: val(1) - val(2), "mul": lambda: val(0) * val(1),
                "addi": lambda: val(0) + val(1), "shl": lambda: val(0) << (val(1) & 15),
                "vsplat": lambda: 3 * val(1) + 1, "vadd": lambda: val(1) + val(2),
                "vsum": lambda: val(1) ^ 0x5555, "wpack": lambda: val(1) * 7,
                "wsum": lambda: val(1) + 1, "lo4": lambda: (3 * val(1) + 1) & 0xFFFF_FFFF,
                "vlo": lambda: val(1) ^ 0xF0F0,
            }[op]()
        self.write(ops[0].reg, res)  # type: ignore[union-attr]
        return None
