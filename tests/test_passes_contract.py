"""Tests of opt-in FMA contraction (kcc/passes/contract.py): off by default; on, a float
MUL+ADD becomes MULACC (and x86 emits FMA), and the code computes what the interpreter computes
for the contracted graph (its MULACC rounds once, numpy-independent: tests/test_interp.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from passes_support import param
from x86_util import reference

from kcc.ir import AxisType, KernelInfo, Ops, UOp, dtypes
from kcc.ir.uop import toposort
from kcc.passes.contract import contract
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.target import X86_AVX2
from kcc.targets.objload import LoadedObject
from kcc.targets.manifest import check_launch
from kcc.targets.x86 import compile_x86, launch

C = UOp.const
FAST = replace(X86_AVX2, fp_contract=True)


def _kernel(two_users: bool = False, lanes: int = 1) -> UOp:
    out, a, b, c = (param(i, dtypes.float32, 64) for i in range(4))
    r = UOp(Ops.RANGE, (C(64 // lanes),), (0, AxisType.LOOP))

    def at(buf: UOp) -> UOp:
        if lanes == 1:
            return UOp(Ops.INDEX, (buf, r))
        return UOp(Ops.SHRINK, (buf, UOp(Ops.MUL, (r, C(lanes))), C(lanes)))
    m = UOp(Ops.MUL, (UOp(Ops.LOAD, (at(a),)), UOp(Ops.LOAD, (at(b),))))
    s = UOp(Ops.ADD, (UOp(Ops.LOAD, (at(c),)), m))
    if two_users:
        s = UOp(Ops.SUB, (s, m))
    st = UOp(Ops.STORE, (at(out), s))
    return UOp(Ops.SINK, (UOp(Ops.END, (st, r)),), KernelInfo("fma"))


def test_default_is_exact_as_written() -> None:
    g = lower_weak_dtypes(_kernel())
    assert contract(g, X86_AVX2) is g


def test_fast_fuses_a_single_use_mul() -> None:
    g = contract(lower_weak_dtypes(_kernel()), FAST)
    assert [u.op for u in toposort([g]) if u.op in (Ops.MUL, Ops.ADD, Ops.MULACC)
            and u.dtype == dtypes.float32] == [Ops.MULACC]


def test_a_mul_with_another_user_is_not_fused() -> None:
    g = contract(lower_weak_dtypes(_kernel(two_users=True)), FAST)
    assert not any(u.op is Ops.MULACC for u in toposort([g]))


def test_contracted_x86_code_matches_the_interpreter_on_the_contracted_graph() -> None:
    rng = np.random.default_rng(3)
    for lanes in (1, 8):
        sink = _kernel(lanes=lanes)
        args = [np.zeros(64, np.float32)] + [rng.standard_normal(64).astype(np.float32)
                                             for _ in range(3)]
        want = reference(contract(lower_weak_dtypes(sink), FAST), args)
        exact = reference(sink, args)
        obj, descs = compile_x86([sink], fp_contract="fast")
        got = [a.copy() for a in args]
        with LoadedObject(obj) as lo:
            launch(lo, descs[0], check_launch(descs[0], got))
        assert np.array_equal(got[0], want[0])
        assert not np.array_equal(want[0], exact[0])     # contraction is observable here
        asm, _ = compile_x86([sink], emit="asm", fp_contract="fast")
        assert b"vfmadd" in asm
