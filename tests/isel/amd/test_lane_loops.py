"""AMD loops that run per lane (kcc/isel/amd/select.py `lane_loop`): a VGPR counter, EXEC
narrowed to
the lanes still iterating, the loop left when EXEC is empty (s_cbranch_execz / execnz) and EXEC
restored after END. The format's bounds are static (docs/uop-format.md: constants and scalar
PARAMs), so what reaches this path is a 64-bit counter (SALU has no 64-bit signed compare) and
a uniform bound the VALU computed (a CDIV decomposed into float64 operations); both run here
nested, with REG accumulators (int32 and bool), loads, gated and ungated stores inside, zero
iterations and one, in kcc's emulator on gfx1100 and gfx942 against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import assert_same, reference

from kcc.frontend.parser import parse

# outer bound CDIV(n, 3): a uniform value the VALU computes; inner: an int64 counter
NESTED = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 64)
%x = PARAM ParamArg(1, int32, 64)
%n = PARAM ParamArg(2, int32, vmin_vmax=(0, 24), addrspace=ALU)
%m = PARAM ParamArg(3, int64, vmin_vmax=(0, 5), addrspace=ALU)
%c3 = CAST(3) int32
%b = CDIV(%n, %c3)
%acc = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%p0 = INDEX(%acc, 0)
%init = STORE(%p0, 7)
%i = RANGE(%b, %init) (0, REDUCE)
%j = RANGE(%m, %init) (1, REDUCE)
%accI = AFTER(%acc, %init, %i, %j)
%p1 = INDEX(%accI, 0)
%cur = LOAD(%p1)
%jj = CAST(%j) int32
%k = ADD(%i, %jj)
%xi = INDEX(%x, %k)
%xv = LOAD(%xi)
%s = ADD(%cur, %xv)
%st = STORE(%p1, %s)
%oi = INDEX(%out, %k)
%st1 = STORE(%oi, %s)
%g = GROUP(%st, %st1)
%ej = END(%g, %j)
%ei = END(%ej, %i)
%accE = AFTER(%acc, %ei)
%p2 = INDEX(%accE, 0)
%res = LOAD(%p2)
%o = INDEX(%out, 63)
%st2 = STORE(%o, %res)
SINK(%st2) KernelInfo(name="nest")
"""

# an int64 loop inside a 2 x 48 launch: a bool REG accumulator (any y > 0), a gated store
BOOL_ACC = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 96)
%flag = PARAM ParamArg(1, bool, 96)
%x = PARAM ParamArg(2, int32, 96)
%y = PARAM ParamArg(3, int32, 960)
%m = PARAM ParamArg(4, int64, vmin_vmax=(0, 10), addrspace=ALU)
%c48 = CAST(48) int32
%c2 = CAST(2) int32
%g = SPECIAL(%c2) "gidx0"
%l = SPECIAL(%c48) "lidx0"
%gl = MULACC(%g, %c48, %l)
%f = BUFFER ParamArg(0, bool, 1, addrspace=REG)
%fp = INDEX(%f, 0)
%fF = CAST(0) bool
%finit = STORE(%fp, %fF)
%j = RANGE(%m, %finit) (0, REDUCE)
%fI = AFTER(%f, %finit, %j)
%fp1 = INDEX(%fI, 0)
%cur = LOAD(%fp1)
%jj = CAST(%j) int32
%c10 = CAST(10) int32
%k = MULACC(%gl, %c10, %jj)
%yi = INDEX(%y, %k)
%yv = LOAD(%yi)
%c0 = CAST(0) int32
%pos = CMPLT(%c0, %yv)
%nf = OR(%cur, %pos)
%st = STORE(%fp1, %nf)
%c1 = CAST(1) int32
%odd = AND(%yv, %c1)
%isodd = CMPEQ(%odd, %c1)
%oi = INDEX(%out, %gl)
%st1 = STORE(%oi, %yv, %isodd)
%grp = GROUP(%st, %st1)
%ej = END(%grp, %j)
%fE = AFTER(%f, %ej)
%fp2 = INDEX(%fE, 0)
%res = LOAD(%fp2)
%fo = INDEX(%flag, %gl)
%st2 = STORE(%fo, %res)
SINK(%st2) KernelInfo(name="flag_any")
"""

# an int64 counter with a constant bound: both compares take inline constants
CONST_I64 = """# kcc-uop 1
%out = PARAM ParamArg(0, int64, 100)
%b = CAST(100) int64
%i = RANGE(%b) (0, LOOP)
%c3 = CAST(3) int64
%v = MUL(%i, %c3)
%oi = INDEX(%out, %i)
%st = STORE(%oi, %v)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="i64c")
"""


def _emulate(sink, args: list, arch: str) -> list:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    (code,) = compile_amd_code([sink], arch)
    assert any("s_cbranch_execnz" in line for line in code.asm), "no per-lane loop"
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
    return got


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_nested_lane_loops_with_a_valu_bound_and_an_int64_counter(arch: str) -> None:
    sink = parse(NESTED)
    for n in (0, 2, 3, 24):            # CDIV(n, 3) = 0, 0, 1, 8 outer iterations
        for m in (0, 1, 5):
            args = [np.zeros(64, np.int32), np.arange(64, dtype=np.int32) * 3 + 1,
                    np.int32(n), np.int64(m)]
            want = reference(sink, args)
            assert_same(sink, _emulate(sink, args, arch), want)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_int64_lane_loop_bool_accumulator_and_gated_store(arch: str) -> None:
    sink = parse(BOOL_ACC)
    rng = np.random.default_rng(0)
    seen = set()
    for m in (0, 1, 3, 10):
        args = [np.full(96, -5, np.int32), np.zeros(96, bool), np.zeros(96, np.int32),
                rng.integers(-20, 3, 960).astype(np.int32), np.int64(m)]
        want = reference(sink, args)
        seen.add(int(want[1].sum()))
        assert_same(sink, _emulate(sink, args, arch), want)
    assert len(seen) > 2        # the flags differ between the cases (none, some, most)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_int64_counter_with_a_constant_bound(arch: str) -> None:
    sink = parse(CONST_I64)
    args = [np.full(100, -1, np.int64)]
    got = _emulate(sink, args, arch)
    assert got[0].tolist() == reference(sink, args)[0].tolist() == [3 * i for i in range(100)]
