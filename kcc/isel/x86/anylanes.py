"""x86 selection of "is any bit of these lanes set" as VPTEST: a scalar `x != 0` (`x == 0`)
where x is lane 0 of a lane tree that ORs every lane of one or more integer vectors together
(kcc/passes/lane_trees.py's reduction of an OR accumulator, e.g. tinygrad's `any` over a row:
argmax_bool r_333_77). The OR of all lanes is nonzero exactly when some bit of some lane is
set, which VPTEST v, v reads into ZF (SDM Vol. 2B "PTEST": ZF = ((v AND v) == 0)): one
instruction in place of the tree's extract, shuffles, ORs and lane move. A mixin of
X86Selector (kcc/isel/x86/select.py); the tree itself is still selected where it stands and
kcc/isel/dce.py removes it when nothing else reads it.
"""

from __future__ import annotations

from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.ir.mir import VReg
from kcc.isel.x86.base import vw
from kcc.isel.x86.regs import reg_class

_MAX_VISITS = 512     # (node, lane) pairs a tree may have: lane trees are a few dozen


def _lane_source(x: UOp) -> tuple[UOp, int] | None:
    """(v, j) when the scalar x is lane j of the vector v (`INDEX(v, j)`, j constant)."""
    if x.op is not Ops.INDEX or len(x.src) != 2 or not x.src[0].shape:
        return None
    j = const_int(x.src[1])
    return None if j is None or not 0 <= j < x.src[0].shape[0] else (x.src[0], j)


def or_tree_vectors(x: UOp) -> list[UOp] | None:
    """The integer vectors whose lanes, all ORed together, are the scalar x: x is lane j of
    a lane tree of vector ORs (lane i of `OR(a, b)` is a[i] | b[i]) and STACKs of lanes
    (lane i of `STACK(s...)` is s[i], each s[i] an `INDEX(y, k)`), and the tree's leaves
    cover every lane of each leaf vector (OR is idempotent: a lane read twice is harmless).
    None when x is no such tree, a leaf is not an integer vector of 16 or 32 bytes (an xmm
    or ymm: VPTEST's widths), or the leaves' widths differ. Each (node, lane) is visited
    once."""
    src = _lane_source(x)
    if src is None or not src[0].dtype.is_int or src[0].dtype.is_bool:
        return None
    seen: set[tuple[UOp, int]] = set()
    leaves: dict[UOp, set[int]] = {}
    stack = [src]
    while stack:
        node, i = stack.pop()
        if (node, i) in seen:
            continue
        seen.add((node, i))
        if len(seen) > _MAX_VISITS:
            return None
        if node.dtype != x.dtype:
            return None                # a cast or a view between: not the same lanes' bits
        if node.op is Ops.OR and len(node.src) == 2 and node.shape \
                and all(s.shape == node.shape for s in node.src):
            stack.extend((s, i) for s in node.src)
        elif node.op is Ops.STACK and len(node.src) == node.shape[0] \
                and (lane := _lane_source(node.src[i])) is not None:
            stack.append(lane)
        else:
            leaves.setdefault(node, set()).add(i)
    widths = set()
    for v, lanes in leaves.items():
        n = v.shape[0]
        if len(lanes) != n or v.dtype.itemsize * n not in (16, 32):
            return None
        widths.add(v.dtype.itemsize * n)
    return list(leaves) if len(widths) == 1 else None


class X86AnyLanes:
    """The any-bit test of a lane tree as VPTEST (mixed into X86Selector)."""

    def any_lanes_flags(self, c: UOp) -> str | None:
        """Flags for the scalar compare c = `x != 0` or `x == 0` whose x is an OR lane tree
        over whole xmm/ymm integer vectors (or_tree_vectors), set by VPTEST of the vectors
        (ORed together first when there are several): returns the condition code that reads
        c ("ne" / "e"), or None for any other c (nothing emitted)."""
        if c.op not in (Ops.CMPNE, Ops.CMPEQ) or c.shape or len(c.src) != 2:
            return None
        x, z = c.src
        if const_int(z) != 0:
            x, z = z, x
        if const_int(z) != 0 or not x.dtype.is_int or x.dtype.is_bool \
                or reg_class(x.dtype) != "gpr":
            return None
        vecs = or_tree_vectors(x)
        if vecs is None:
            return None
        n = vecs[0].shape[0]
        w = vw(vecs[0].dtype, n)
        acc: VReg = self.reg(vecs[0])
        for v in vecs[1:]:
            t = self.new("vec")
            self.emit(f"vpor_{w}_{w}_{w}m", t, acc, self.reg(v))
            acc = t
        self.emit(f"vptest_{w}_{w}m", acc, acc)
        return "ne" if c.op is Ops.CMPNE else "e"
