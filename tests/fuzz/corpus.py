"""The op × dtype-pair × vector-width × arch corpus (issue 20, §2): every ALU op, CAST and
BITCAST crossed with every dtype pair the type rules accept, at widths 1, 2, 4, 8 and 16, for
x86-64-v3 and x86-64-v4, each kernel checked as `kcc run --check` checks one.

A cell is (op, operand dtype, stored dtype): the op on operands of the first dtype, its
result CAST to the second (None: stored as the op gives it; for CAST and BITCAST the pair is
the op's own). A case is a cell at one width and arch with the shape of its kernel drawn from
its own seed:

- each operand is a load in the loop (`loop`, one width of lanes per iteration), a load before
  it (`inv`, loop-invariant: what licm and linearize hoist), a scalar PARAM (`param`, a STACK of
  it for vectors) or a strong constant (`const`, a STACK of per-lane constants from the edges
  of the dtype: MIN, MAX, -1, 0, ±inf, NaN, a subnormal …);
- the kernel runs 8 loop iterations (`loop`, with at least one operand loaded in the loop)
  or is straight-line code (`flat`);
- width 1 is a scalar, or (30%) a 1-lane vector: a SHRINK of one element, a STACK of one.

The oracle is the reference interpreter, on inputs that kcc/targets/check.py draws inside every
op's domain (divisors in [-9, 9] without 0, shift amounts below the width, float specials);
what the semantics leave unspecified (x / 0 reached through a constant, MIN / -1) is found by
running the interpreter with both choices and left out, exactly as `kcc run --check` does.
EXP2/LOG2/SIN are compared within the CLI's ulp bound and stored unconverted.

`cases(seed)` is the whole corpus in a fixed order that interleaves the ops (a prefix of any
length covers them all about evenly); `check_case` runs one. tests/fuzz/test_fuzz_corpus.py
keeps a fixed slice in CI; scripts/op_corpus.py runs any count of it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from kcc.ir import AddrSpace, AxisType, KernelInfo, Ops, ParamArg, UOp, dtypes
from kcc.ir.dtype import STRONG, DType
from kcc.ir.rules import IRError

ARCHES = ("x86-64-v3", "x86-64-v4")
WIDTHS = (1, 2, 4, 8, 16)
FORMS = ("loop", "inv", "param", "const")
ITERS = 8                                    # loop iterations of a `loop` kernel
COMPARES = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
APPROX = (Ops.EXP2, Ops.LOG2, Ops.SIN)
OPS = (Ops.NEG, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC, Ops.ADD,
       Ops.SUB, Ops.MUL, Ops.MULHI, Ops.FDIV, Ops.CDIV, Ops.CMOD, Ops.MAX, *COMPARES, Ops.AND,
       Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.THREEFRY, Ops.WHERE, Ops.MULACC, Ops.CAST,
       Ops.BITCAST)
ARITY = {Ops.WHERE: 3, Ops.MULACC: 3, Ops.CAST: 1, Ops.BITCAST: 1,
         **{op: 1 for op in (Ops.NEG, *APPROX, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC)}}
ULP = 4                        # kcc/cli.py TRANSCENDENTAL_ULP: EXP2/LOG2/SIN's bound
FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, math.nan, 1e-40,
               5e-324, 65504.0, 3.0e38, -1e10, 2147483648.0)


@dataclass(frozen=True)
class Cell:
    """An op, the dtype of its operands, and the dtype stored (None: the op's result)."""

    op: Ops
    src: DType
    dst: DType | None

    def __str__(self) -> str:
        return f"{self.op.name} {self.src.name}" + (f"->{self.dst.name}" if self.dst else "")


@dataclass(frozen=True)
class Case:
    """A cell at a width and arch, with the kernel's shape drawn from `seed`."""

    cell: Cell
    width: int
    arch: str
    seed: int

    def __str__(self) -> str:
        return f"{self.cell} x{self.width} {self.arch} seed={self.seed}"


def _probe(dt: DType) -> UOp:
    return UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.PARAM, (), ParamArg(0, dt, 1)),
                                          UOp.const(0))),))


def _node(op: Ops, srcs: list[UOp], dst: DType | None) -> UOp:
    if op in (Ops.CAST, Ops.BITCAST):
        return UOp(op, (srcs[0],), dst)
    return UOp(op, tuple(srcs))


def accepts(op: Ops, src: DType, dst: DType | None = None) -> bool:
    """Whether the type rules accept op on operands of src (WHERE: its values; CAST/BITCAST:
    to dst)."""
    a = _probe(src)
    srcs = [_probe(dtypes.bool), a, a] if op is Ops.WHERE else [a] * ARITY.get(op, 2)
    try:
        return _node(op, srcs, dst).dtype is not None
    except IRError:
        return False


def result_dtype(op: Ops, src: DType) -> DType:
    return dtypes.bool if op in COMPARES else src


def cells() -> list[Cell]:
    """Every (op, operand dtype, stored dtype) the type rules accept."""
    out = []
    for op in OPS:
        for src in STRONG:
            if op in (Ops.CAST, Ops.BITCAST):
                out += [Cell(op, src, d) for d in STRONG
                        if d != src and accepts(op, src, d)]
                continue
            if not accepts(op, src):
                continue
            res = result_dtype(op, src)
            dsts = (None,) if op in APPROX else (None, *(d for d in STRONG if d != res))
            out += [Cell(op, src, d) for d in dsts]
    return out


def cases(seed: int = 0, arches: tuple[str, ...] = ARCHES,
          widths: tuple[int, ...] = WIDTHS) -> list[Case]:
    """The whole corpus (every cell × width × arch) in a fixed order: each op's cases
    shuffled by seed, then taken one op at a time in turn, so a prefix covers every op."""
    rng = np.random.default_rng(seed)
    by_op: dict[Ops, list[tuple[Cell, int, str]]] = {}
    for c in cells():
        by_op.setdefault(c.op, []).extend((c, w, a) for w in widths for a in arches)
    queues = []
    for op in OPS:
        items = by_op.get(op, [])
        queues.append([items[k] for k in rng.permutation(len(items))])
    out: list[Case] = []
    for k in range(max(map(len, queues))):
        for q in queues:
            if k < len(q):
                c, w, a = q[k]
                out.append(Case(c, w, a, seed * 1_000_003 + len(out)))
    return out


# -- building a case's kernel -------------------------------------------------------------------

def _edges(dt: DType, role: str) -> list:
    """Constants worth trying for an operand of dt in role ("value", "divisor", "amount")."""
    if dt.is_bool:
        return [False, True]
    if dt.is_float:
        return [v for v in FLOAT_EDGES if _finite_or_special(v, dt)]
    if role == "amount":
        return sorted({0, 1, dt.bits // 2, dt.bits - 1})
    lo, hi = dt.min(), dt.max()
    vals = {0, 1, 2, 3, 7, hi, hi - 1, lo, lo + 1, dt.bits - 1}
    if lo < 0:
        vals |= {-1, -2, -7}
    if role == "divisor":
        vals.discard(0)
    return sorted(vals)


def _finite_or_special(v: float, dt: DType) -> bool:
    """A float literal that stays finite in dt, or inf/NaN itself (the .uop parser refuses a
    finite literal that rounds to infinity, so the failure text would not parse)."""
    if not math.isfinite(v):
        return True
    with np.errstate(over="ignore"):
        if dt == dtypes.bfloat16:
            return bool(np.isfinite(np.float32(v))) and abs(v) < 3.38e38
        return bool(np.isfinite(dt.np.type(v)))


class _Builder:
    def __init__(self, case: Case):
        self.case = case
        self.rng = np.random.default_rng(case.seed)
        self.w = case.width
        self.params: list[UOp] = []
        self.flat = self.rng.random() < 0.25
        # width 1: a scalar, or sometimes a 1-lane vector (SHRINK of one element, STACK of one)
        self.vec = self.w > 1 or self.rng.random() < 0.3
        self.n = 1 if self.flat else ITERS
        self.i = (UOp.const(0) if self.flat else
                  UOp(Ops.RANGE, (UOp.const(self.n),), (0, AxisType.LOOP)))

    def param(self, dt: DType, size: int | None) -> UOp:
        slot = len(self.params)
        arg = ParamArg(slot, dt, size) if size else ParamArg(slot, dt, addrspace=AddrSpace.ALU)
        p = UOp(Ops.PARAM, (), arg)
        self.params.append(p)
        return p

    def place(self, buf: UOp, at: UOp) -> UOp:
        if not self.vec:
            return UOp(Ops.INDEX, (buf, at))
        return UOp(Ops.SHRINK, (buf, UOp(Ops.MUL, (at, UOp.const(self.w))),
                                UOp.const(self.w)))

    def splat(self, x: UOp) -> UOp:
        return UOp(Ops.STACK, (x,) * self.w) if self.vec else x

    def const(self, v, dt: DType) -> UOp:
        return UOp.const(v) if dt.is_bool else UOp(Ops.CAST, (UOp.const(v),), dt)

    def operand(self, dt: DType, form: str, role: str) -> UOp:
        if form == "loop":
            return UOp(Ops.LOAD, (self.place(self.param(dt, self.n * self.w), self.i),))
        if form == "inv":
            return UOp(Ops.LOAD, (self.place(self.param(dt, self.w), UOp.const(0)),))
        if form == "param":
            return self.splat(self.param(dt, None))
        edges = _edges(dt, role)
        lanes = [self.const(edges[k], dt) for k in self.rng.integers(0, len(edges), self.w)]
        return UOp(Ops.STACK, tuple(lanes)) if self.vec else lanes[0]

    def build(self) -> UOp:
        cell = self.case.cell
        op = cell.op
        out = self.param(cell.dst if op in (Ops.CAST, Ops.BITCAST) else
                         cell.dst or result_dtype(op, cell.src), self.n * self.w)
        n = ARITY.get(op, 2)
        forms = [FORMS[k] for k in self.rng.integers(0, len(FORMS), n)]
        if not self.flat and "loop" not in forms:
            forms[0] = "loop"           # else the whole op is invariant: hoisted, no loop left
        roles = ["value"] * n
        if op in (Ops.CDIV, Ops.CMOD):
            roles[1] = "divisor"
        elif op in (Ops.SHL, Ops.SHR):
            roles[1] = "amount"
        dts = [dtypes.bool, cell.src, cell.src] if op is Ops.WHERE else [cell.src] * n
        srcs = [self.operand(d, f, r) for d, f, r in zip(dts, forms, roles)]
        v = _node(op, srcs, cell.dst)
        if cell.dst is not None and op not in (Ops.CAST, Ops.BITCAST):
            v = UOp(Ops.CAST, (v,), cell.dst)
        st = UOp(Ops.STORE, (self.place(out, self.i), v))
        body = st if self.flat else UOp(Ops.END, (st, self.i))
        name = f"{op.name.lower()}_{cell.src.name}_{(cell.dst or cell.src).name}_x{self.w}"
        return UOp(Ops.SINK, (body,), KernelInfo(name))


def build(case: Case) -> UOp:
    """The kernel of a case (valid by construction)."""
    return _Builder(case).build()


# -- checking a case ----------------------------------------------------------------------------

def host_runs(arch: str) -> bool:
    """Whether this CPU runs arch's code (x86-64-v4 needs AVX-512 F/BW/CD/DQ/VL)."""
    from kcc.targets.x86.arch import V4_FLAGS, cpu_flags
    return arch != "x86-64-v4" or all(f in cpu_flags() for f in V4_FLAGS)


@dataclass(frozen=True)
class Outcome:
    """What checking a case found: "ok", "compiled" (the host cannot run the arch), or a
    failure ("mismatch", "error") with its message and the kernel's .uop text."""

    case: Case
    status: str
    detail: str = ""
    text: str = ""

    @property
    def failed(self) -> bool:
        return self.status not in ("ok", "compiled")


def check_case(case: Case, input_seed: int | None = None) -> Outcome:
    """Compile the case's kernel for its arch, run it on check.py's inputs and compare with
    the interpreter as `kcc run --check` does (unspecified elements left out)."""
    from kcc.frontend.printer import format_uop
    from kcc.ir.verify import verify
    from kcc.targets import check
    from kcc.targets.manifest import check_launch
    from kcc.targets.x86.objload import LoadedObject
    from kcc.targets.x86.target import compile_x86, launch
    sink = build(case)
    verify(sink)                        # a generator bug, not a compiler bug, if this fails
    text = format_uop(sink)
    try:
        # odd seeds: zmm even in little work (harness.vector_width's rule)
        width = "512" if case.seed % 2 else "auto"
        obj, (desc,) = compile_x86([sink], case.arch, vector_width=width)
    except Exception as e:              # noqa: BLE001 - a valid kernel is never refused
        return Outcome(case, "error", f"compile: {type(e).__name__}: {e}", text)
    if not host_runs(case.arch):
        return Outcome(case, "compiled")
    rng = np.random.default_rng(case.seed if input_seed is None else input_seed)
    values = check.check_inputs(sink, desc, rng)
    want, defined = check.reference(sink, values)
    got = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
    lo = LoadedObject(obj)
    try:
        launch(lo, desc, check_launch(desc, got))
    except Exception as e:              # noqa: BLE001
        return Outcome(case, "error", f"run: {type(e).__name__}: {e}", text)
    finally:
        lo.close()
    ulp = ULP if case.cell.op in APPROX else 0
    bad = check.compare(desc, got, want, defined, ulp)
    if bad:
        return Outcome(case, "mismatch", "; ".join(m.describe("x86") for m in bad), text)
    return Outcome(case, "ok")


def run_cases(todo: list[Case]) -> Iterator[Outcome]:
    """check_case over todo, in order."""
    for c in todo:
        yield check_case(c)
