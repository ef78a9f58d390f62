"""x86 selection of a STACK of scalar loads at constant offsets as one gather (x86-64-v4).

kcc/passes/widen_stride.py writes the k lanes of a load at a large constant stride s as
`STACK(LOAD(INDEX(buf, i0)), LOAD(INDEX(buf, i0 + s)), …)`. Each lane's address is
`base + i0*4 + disp_j` (X86Selector.address folds a constant addend into the displacement), so
the lanes differ only by constant displacements: VGATHERDPS zmm {k}, [g + vidx*1 + disp_0]
(SDM Vol. 2 "VGATHERDPS") with g = base + i0*4 (one LEA), vidx the dword lanes
disp_j - disp_0 (a constant vector from .rodata, read by every gather of that shape) and k
all ones reads exactly the 16 elements the scalar loads read, in lane order. A STACK of 8
such loads (a short strided loop widened by 8, attention's 8 x 8 transposed operand) is the
ymm form, VGATHERDPS ymm {k}, [g + vidx*1 + disp_0] (EVEX.256, AVX512VL), vidx a ymm. A
gather clears its mask as lanes complete and merges into its destination, so both are written
(a fresh all-ones opmask each time, a zeroed destination); the destination can never be the
index register (both are live into the instruction: #UD otherwise).

Taken only where reading at the STACK gives what the loads read: lanes 1 … n-1 are loads
deferred to the STACK (kcc/isel/x86/analysis.py foldable_loads: no STORE or loop boundary
between each load and the STACK) and lane 0's load is still reread in place (loaded_mem).
"""

from __future__ import annotations

from kcc.ir import UOp, dtypes
from kcc.ir.mir import Mem, VReg
from kcc.ir.ops import Ops

# the lane counts gathered: a zmm of 16 float32, a ymm of 8 (the form and its index's width)
_FORMS = {16: ("vgatherdps_z_k_vm32z", 64), 8: ("vgatherdps_y_k_vm32y", 32)}


def gather_lanes(u: UOp) -> bool:
    """Whether u is a STACK of 16 or 8 distinct ungated scalar float32 LOADs of one buffer
    (the shapes this selector gathers; the addresses are checked at selection)."""
    n = len(u.src)
    if u.op is not Ops.STACK or u.dtype != dtypes.float32 or n not in _FORMS:
        return False
    if len(set(u.src)) != n:
        return False
    buf = None
    for s in u.src:
        if s.op is not Ops.LOAD or len(s.src) != 1 or s.shape or s.src[0].op is not Ops.INDEX:
            return False
        b = s.src[0].src[0]
        if buf is None:
            buf = b
        elif b is not buf:
            return False
    return True


class X86Gather:
    """The gather rule (mixed into X86Selector through X86Vec)."""

    def gather(self, u: UOp) -> VReg | None:
        """VGATHERDPS of a STACK of 16 or 8 float32 loads whose addresses differ by constant
        displacements only (module docstring), or None (nothing emitted)."""
        if not self.evex or not gather_lanes(u):
            return None
        lane0, rest = u.src[0], u.src[1:]
        if any(s not in self.deferred for s in rest):
            return None
        m0 = self.deferred.get(lane0) or self.loaded_mem(lane0)
        if m0 is None:
            return None
        mems = [m0] + [self.deferred[s] for s in rest]
        if any(m.base is not m0.base or m.index is not m0.index or m.scale != m0.scale
               or m.base is None for m in mems):
            return None
        offs = [m.disp - m0.disp for m in mems]
        if any(not -(1 << 31) <= o < (1 << 31) for o in offs):
            return None
        for s in u.src:
            self.deferred.pop(s, None)
        base = m0.base
        if m0.index is not None:
            base = self.new("gpr")
            self.emit("lea_r64_m", base, Mem(m0.base, m0.index, m0.scale, 0))
        form, width = _FORMS[len(offs)]
        vidx = self._gather_index(offs, width)
        k = self.new("mask")
        g = self.new("gpr")
        self.emit("mov_r32_imm32", g, (1 << len(offs)) - 1)
        self.emit("kmovw_k_r32", k, g)
        t = self.new("vec")
        self.emit("vzero", t)
        self.emit(form, t, k, Mem(base, vidx, 1, m0.disp))
        return t

    def _gather_index(self, offs: list[int], width: int) -> VReg:
        """The dword offsets as a zmm (or ymm: width 32) from .rodata, once per loop nest that
        reads them (a gather only reads its index register)."""
        key = ("gather", tuple(offs))
        hit = self._memo_get(key)
        if hit is not None:
            return hit
        data = b"".join((o & 0xFFFFFFFF).to_bytes(4, "little") for o in offs)
        if width == 64:
            t = self._rodata_zmm(data)
        else:
            t = self.new("vec")
            self.emit("vmovups_y_ym", t, Mem(), arg={"rip": self.pool.label(data)})
        self._memo_put(key, t)
        return t
