"""x86 selection of an 8 x 8 float32 transpose read from memory: eight STACKs of 8 scalar
loads, column c's lane j at element K + c + s*j (a stride s >= 8), for every c in 0 … 7.

passes/widen.py widens a loop over the rows of such a block by 8 and leaves each column as a
STACK of strided loads (attention's r_4_8_8_8, q·kᵀ: column c of an 8 x 8 block of k;
cross_entropy's r_8_8: the max over 8 columns). kcc/isel/x86/gather.py reads each with one
VGATHERDPS (x86-64-v4), 8 loads and a mask a column; v3 inserts lane by lane. The 8 columns
together read exactly the 8 rows, so they are one transpose: for each half b of a row (elements
4b … 4b+3), Y_r = [row r half b | row r+4 half b] (a 16-byte load and a VINSERTF128 from
memory, r < 4), then the 4 x 4 transpose of each 128-bit lane of Y_0 … Y_3 (UNPCKLPS/UNPCKHPS
of Y_0, Y_1 and of Y_2, Y_3, then SHUFPS 0x44 / 0xEE of those pairs; SDM Vol. 2 "UNPCKLPS",
"SHUFPS": one selection per 128-bit lane) gives columns 4b … 4b+3 of rows 0-3 in the low lane
and rows 4-7 in the high one: 8 loads, 8 inserts and 16 shuffles for the block, made at the
first column selected and read by the other seven (clang's code for attention does the same
transposition with more shuffles).

Taken only where reading the rows at the first column gives what every load reads: all 64
loads and the 8 STACKs lie in one stretch of the schedule with no STORE, RANGE or END
(analysis.schedule_facts' barrier count), and every element of the 8 rows is one of the
loads, so no byte outside what the kernel reads is touched.
"""

from __future__ import annotations

from kcc.ir import UOp, dtypes
from kcc.ir.affine import affine
from kcc.ir.mir import Mem, VReg
from kcc.ir.ops import Ops

N = 8                     # rows, columns and lanes of the transposed block (a ymm of float32)
Group = tuple[int, int]   # (group number, column c) of a column STACK


def _lane_offsets(u: UOp, memo: dict) -> tuple[UOp, frozenset, list[int]] | None:
    """(buffer, the index's non-constant terms, each lane's constant) of a STACK of 8
    distinct ungated scalar float32 loads of one buffer whose indexes share their terms."""
    if u.op is not Ops.STACK or u.dtype != dtypes.float32 or len(u.src) != N \
            or len(set(u.src)) != N:
        return None
    buf, terms, ks = None, None, []
    for s in u.src:
        if s.op is not Ops.LOAD or len(s.src) != 1 or s.shape or s.src[0].op is not Ops.INDEX:
            return None
        b, idx = s.src[0].src
        a = affine(idx, None, memo, mulacc=True)
        if a is None:
            return None
        t = frozenset(a[0].items())
        if buf is None:
            buf, terms = b, t
        elif b is not buf or t != terms:
            return None
        ks.append(a[1])
    if buf is None or buf.op is not Ops.PARAM or terms is None:
        return None
    return buf, terms, ks


def transpose_groups(lin: list[UOp], facts: tuple) -> dict[UOp, Group]:
    """Column STACK → (group, c) for every 8 x 8 block the module docstring takes."""
    pos, _, barrier = facts
    memo: dict = {}
    cands: dict[tuple, dict[int, UOp]] = {}
    STACK = Ops.STACK
    for u in lin:
        if u.op is not STACK or len(u.src) != N:
            continue
        got = _lane_offsets(u, memo)
        if got is None:
            continue
        buf, terms, ks = got
        st = ks[1] - ks[0]
        if st < N or any(ks[j] != ks[0] + st * j for j in range(N)):
            continue
        # column c = ks[0] - K of the block at K; the key holds K's residue to split blocks
        cands.setdefault((buf, terms, st), {}).setdefault(ks[0], u)
    out: dict[UOp, Group] = {}
    for (_, _, st), cols in cands.items():
        for k0 in sorted(cols):
            block = [cols.get(k0 + c) for c in range(N)]
            if any(b is None or b in out for b in block):
                continue
            nodes = [x for b in block for x in (b, *b.src)]    # (not None: checked above)
            if len({barrier[pos[x]] for x in nodes}) != 1:
                continue
            g = len(out) // N
            for c, b in enumerate(block):
                out[b] = (g, c)
    return out


class X86Transpose:
    """The 8 x 8 transpose rule (mixed into X86Selector through X86Vec)."""

    def transpose8(self, u: UOp) -> VReg | None:
        """Column c of its block's transpose (module docstring), or None when u is no column
        of one or its lane 0's place is not known here."""
        got = self.transposed.get(u)
        if got is None:
            return None
        g, c = got
        cols = self._memo_get(("transpose8", g))
        if cols is None:
            m0 = self.deferred.get(u.src[0]) or self.loaded_mem(u.src[0])
            if m0 is None:
                return None
            st = self._stride(u)
            cols = self._transpose_rows(m0, c, st)
            self._memo_put(("transpose8", g), cols)
        for s in u.src:
            self.deferred.pop(s, None)
        return cols[c]

    @staticmethod
    def _stride(u: UOp) -> int:
        """The element stride between u's lanes (affine: transpose_groups checked it)."""
        a0 = affine(u.src[0].src[0].src[1], None, None, mulacc=True)
        a1 = affine(u.src[1].src[0].src[1], None, None, mulacc=True)
        assert a0 is not None and a1 is not None
        return a1[1] - a0[1]

    def _transpose_rows(self, m0: Mem, c: int, st: int) -> list[VReg]:
        """The 8 columns of the rows at m0 - 4c + 4*st*r (r < 8), as ymm registers."""
        def at(r: int, b: int) -> Mem:
            return Mem(m0.base, m0.index, m0.scale, m0.disp + 4 * (st * r - c + 4 * b))
        cols: list[VReg] = []
        for b in range(2):
            ys = []
            for r in range(4):
                x = self.new("vec")
                self.emit("vmovups_x_xm", x, at(r, b))
                y = self.new("vec")
                self.emit("vinsertf128_y_y_xm_imm8", y, x, at(r + 4, b), 1)
                ys.append(y)
            ts = []
            for p in (0, 2):
                for form in ("vunpcklps_y_y_ym", "vunpckhps_y_y_ym"):
                    t = self.new("vec")
                    self.emit(form, t, ys[p], ys[p + 1])
                    ts.append(t)
            lo0, hi0, lo1, hi1 = ts
            for a, d in ((lo0, lo1), (hi0, hi1)):
                for imm in (0x44, 0xEE):
                    t = self.new("vec")
                    self.emit("vshufps_y_y_ym_imm8", t, a, d, imm)
                    cols.append(t)
        return cols
