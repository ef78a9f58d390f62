"""Emulator semantics of the LDS atomics (RDNA3 ISA §11 / CDNA3 §11 "DS" opcodes): each
active lane, in lane order, reads the dword at VGPR + offset, writes op(old, data) back and,
for the ``_rtn`` forms, returns old in its VDST. The float add rounds once per lane (IEEE
binary32, round-to-nearest-even, denormals kept, as the other float ops here)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from kcc.encode.amd.operands import VGPR, Inst
from kcc.targets.amd.emu.core import Semantic, Wave, Workgroup
from kcc.targets.amd.emu.ops import OPS, _lds_addr


def _f32_add(old: np.uint32, v: np.uint32) -> np.uint32:
    with np.errstate(all="ignore"):
        s = np.array([old], np.uint32).view(np.float32) + np.array([v], np.uint32).view(
            np.float32)
    return s.view(np.uint32)[0]


_ATOMICS: dict[str, Callable[[np.uint32, np.uint32], np.uint32]] = {
    "add_u32": lambda old, v: np.uint32((int(old) + int(v)) & 0xFFFFFFFF),
    "max_u32": lambda old, v: max(old, v),
    "add_f32": _f32_add,
}


def _ds_atomic(fn: Callable[[np.uint32, np.uint32], np.uint32], rtn: bool) -> Semantic:
    """DS_<OP>[_RTN]: [vdst,] vaddr, vdata, offset."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        dst, addr, data = inst.ops if rtn else (None, *inst.ops)
        assert isinstance(addr, VGPR) and isinstance(data, VGPR)
        m = w.exec
        a = _lds_addr(w, wg, inst, addr, int(inst.mod("offset", 0)), 4, m)  # type: ignore
        vals = w.vread(data)[m]
        olds = np.empty(len(a), np.uint32)
        for lane, (at, v) in enumerate(zip(a.tolist(), vals)):
            olds[lane] = wg.lds[at:at + 4].copy().view(np.uint32)[0]
            wg.lds[at:at + 4] = np.array([fn(olds[lane], v)], np.uint32).view(np.uint8)
        if dst is not None:
            assert isinstance(dst, VGPR)
            w.check_pending(("v", dst.index, 1))
            w.v[dst.index, m] = olds
            w.issue_load("lgkm", {("v", dst.index)})
        else:
            w.issue_other("lgkm")
    return run


for _op, _fn in _ATOMICS.items():
    OPS[f"ds_{_op}"] = _ds_atomic(_fn, False)
    OPS[f"ds_{_op.replace('_', '_rtn_')}"] = _ds_atomic(_fn, True)


def _ds_bpermute(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """DS_BPERMUTE_B32 vdst, vaddr, vdata [offset]: a gather across the wave through the LDS
    crossbar, touching no LDS memory: each active lane i reads lane j = ((vaddr[i] + offset)
    >> 2) mod the wave size of vdata, and 0 where lane j is inactive (LLVM's
    llvm.amdgcn.ds.bpermute: a byte address per lane; "reading from inactive lanes returns
    0")."""
    dst, addr, data = inst.ops
    assert isinstance(dst, VGPR) and isinstance(addr, VGPR) and isinstance(data, VGPR)
    m = w.exec
    n = len(m)
    src = w.vread(data)
    lane = ((w.vread(addr).astype(np.int64) + int(inst.mod("offset", 0))) >> 2) % n
    got = np.where(m[lane], src[lane], 0).astype(np.uint32)
    w.check_pending(("v", dst.index, 1))
    w.v[dst.index, m] = got[m]
    w.issue_load("lgkm", {("v", dst.index)})


OPS["ds_bpermute_b32"] = _ds_bpermute
