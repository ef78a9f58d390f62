"""WMMA → per-lane arithmetic, for a target that does not select a form itself.

`TargetDesc.wmma(shape)` says which tensor-core forms a target selects as instructions (None:
all of them, the pass does nothing); every other WMMA is expanded here into what each lane
computes alone (docs/semantics.md, "WMMA"):
D's element e of lane l is (m, n) = c_at(l, e), and

    acc = c[e] (as float32);  acc = MULACC(A[m][k], B[k][n], acc) for k = 0 … K-1;  d[e] = acc

with A[m][k] and B[k][n] read where the lane that holds them computed them: the WMMA's A (B)
operand with `lidx0` replaced by that lane's index (kcc.ir.wmma's a_from/b_from: the lane
as index arithmetic of l, the element a constant). The chain is the semantics' own (one float32
fma per k, in order; one rounding to a float16 accumulator at the end; int8 products exact and
added in int32, wrapping), so the result equals the interpreter's bit for bit.

What it needs: a constant lidx0 bound that is a multiple of the form's lanes (so a warp lies
within one lidx0 row and only lidx0 differs between its lanes; tinygrad's lidx0 is the warp,
lidx1 counts warps), and the A and B operands are computed from the lane's indices, loops and
GLOBAL memory only (no REG or LOCAL buffer, whose contents another lane cannot see):
tinygrad's tensor-core kernels load their fragments from GLOBAL memory. Anything else is
refused by name.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, substitute, toposort
from kcc.passes.target import TargetDesc

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class WmmaError(Exception):
    """A WMMA the target neither selects nor this pass can expand."""


class _Lane:
    """Integer arithmetic on a lane index node (what a_from/b_from apply to l)."""

    def __init__(self, u: UOp):
        self.u = u

    def _op(self, op: Ops, k: int) -> _Lane:
        return _Lane(UOp(op, (self.u, UOp.const(k))))

    def __add__(self, k: int) -> _Lane:
        return self if k == 0 else self._op(Ops.ADD, k)

    def __mul__(self, k: int) -> _Lane:
        return self if k == 1 else self._op(Ops.MUL, k)

    def __floordiv__(self, k: int) -> _Lane:    # a lane is >= 0: CDIV truncates as floor
        return self._op(Ops.CDIV, k)

    def __mod__(self, k: int) -> _Lane:
        return self._op(Ops.CMOD, k)

    __radd__ = __add__
    __rmul__ = __mul__


def _check_operand(x: UOp, u: UOp, which: str) -> None:
    """Refuse an operand another lane cannot recompute (it reads private or shared scratch)."""
    from kcc.ir import wmma
    for n in toposort([u]):
        if n.op is Ops.BUFFER:          # LOCAL or REG scratch (a PARAM is GLOBAL)
            raise WmmaError(f"WMMA's {which} operand reads a {n.arg.addrspace.value} BUFFER, "
                            "which another lane cannot recompute; this target has no "
                            f"{wmma.shape_of(x).name} to select")


def _expand(x: UOp, lidx: list[UOp]) -> UOp:
    from kcc.ir import wmma
    sh = wmma.shape_of(x)
    a, b, c = x.src
    _check_operand(x, a, "A")
    _check_operand(x, b, "B")
    lid = lidx[0]
    lane = UOp(Ops.CMOD, (lid, UOp.const(sh.threads)))
    base = UOp(Ops.SUB, (lid, lane))
    at_lane: dict[tuple[int, UOp], UOp] = {}

    def operand(which: int, src: UOp, lane_expr: Any, elem: int) -> UOp:
        target = lane_expr.u if isinstance(lane_expr, _Lane) else UOp.const(lane_expr)
        key = (which, target)
        if key not in at_lane:
            idx = UOp(Ops.ADD, (base, target))
            at_lane[key] = substitute(src, {s: idx for s in lidx})
        return UOp(Ops.INDEX, (at_lane[key], UOp.const(elem)))

    out_dt = dtypes.by_name(sh.dtype_out)
    acc_dt = dtypes.int32 if out_dt.is_int else dtypes.float32
    lanes: list[UOp] = []
    for e in range(sh.per_lane[2]):
        acc = UOp(Ops.INDEX, (c, UOp.const(e)))
        if acc.dtype != acc_dt:
            acc = UOp(Ops.CAST, (acc,), acc_dt)
        for k in range(sh.k):
            la, ea = sh.a_from(_Lane(lane), e, k)
            lb, eb = sh.b_from(_Lane(lane), e, k)
            av = UOp(Ops.CAST, (operand(0, a, la, ea),), acc_dt)
            bv = UOp(Ops.CAST, (operand(1, b, lb, eb),), acc_dt)
            acc = UOp(Ops.MULACC, (av, bv, acc))
        lanes.append(acc if acc_dt == out_dt else UOp(Ops.CAST, (acc,), out_dt))
    return UOp(Ops.STACK, tuple(lanes))


def decompose_wmma(sink: UOp, desc: TargetDesc) -> UOp:
    """Every WMMA whose form the target does not select → per-lane MULACC chains."""
    if desc.wmma is None:
        return sink                     # the selector takes every WMMA (no walk: compile time)
    order = toposort([sink])
    if not any(n.op is Ops.WMMA for n in order):
        return sink
    # the shapes' tables are imported by a kernel with a WMMA only (start-up time)
    from kcc.ir import wmma
    todo = [n for n in order if n.op is Ops.WMMA and not desc.wmma(wmma.shape_of(n))]
    if not todo:
        return sink
    lidx = [n for n in order if n.op is Ops.SPECIAL and n.arg == "lidx0"]
    size = const_int(lidx[0].src[0]) if lidx else None
    for x in todo:
        threads = wmma.shape_of(x).threads
        if size is None or size % threads:
            got = "no lidx0" if not lidx else f"lidx0 < {size if size is not None else '?'}"
            raise WmmaError(f"{desc.name} has no {wmma.shape_of(x).name}, and a WMMA is "
                            f"expanded per lane only when lidx0 counts whole warps of {threads} "
                            f"lanes (a constant multiple of {threads}), not {got}")
    return substitute(sink, {x: _expand(x, lidx) for x in todo})
