"""Loops that run no iteration (a symbolic bound n <= 0): the effects their body reaches that
lie outside the loop still run (docs/semantics.md, "Placement": a node runs once per iteration
of the loops it depends on; UOP_FORMAT.md: a RANGE counts over [0, bound)). A reduction's
accumulator then reads back as the value its initial STORE wrote (-inf for MAX, 1 for MUL, 7
for an ADD started at 7), as tinygrad's C code for DEV=CPU gives (the init store sits before a
`for` loop that never runs). The interpreter used to run such an init STORE only on demand in
the loop's iteration 0, so with no iteration it read the accumulator as 0. The oracle is a
plain numpy / Python computation; the x86 object must agree bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.interp import run
from kcc.targets.check import reference
from x86_util import compile_and_run

# per row i of 3: MAX of a[i, :n] from -inf, MUL of a[i, :n] from 1, ADD of b[i, :n] from 7
REDUCE = """# kcc-uop 1
%n = PARAM ParamArg(0, int32, vmin_vmax=(-3, 8), name="n", addrspace=ALU)
%omax = PARAM ParamArg(1, float32, 3)
%omul = PARAM ParamArg(2, float32, 3)
%oadd = PARAM ParamArg(3, int32, 3)
%a = PARAM ParamArg(4, float32, 24)
%b = PARAM ParamArg(5, int32, 24)
%m = BUFFER ParamArg(0, float32, 1, addrspace=REG)
%p = BUFFER ParamArg(1, float32, 1, addrspace=REG)
%s = BUFFER ParamArg(2, int32, 1, addrspace=REG)
%z = CAST(0) int32
%i = RANGE(3) (1, WEAK)
%mi = AFTER(%m, %i)
%mip = INDEX(%mi, %z)
%m0 = STORE(%mip, -inf)
%pi = AFTER(%p, %i)
%pip = INDEX(%pi, %z)
%p0 = STORE(%pip, 1.0)
%si = AFTER(%s, %i)
%sip = INDEX(%si, %z)
%s0 = STORE(%sip, 7)
%j = RANGE(%n, %i) (0, REDUCE)
%q = MULACC(%i, 8, %j)
%xp = INDEX(%a, %q)
%x = LOAD(%xp)
%yp = INDEX(%b, %q)
%y = LOAD(%yp)
%mj = AFTER(%m, %m0, %j)
%mjp = INDEX(%mj, %z)
%mold = LOAD(%mjp)
%mnew = MAX(%mold, %x)
%mst = STORE(%mjp, %mnew)
%pj = AFTER(%p, %p0, %j)
%pjp = INDEX(%pj, %z)
%pold = LOAD(%pjp)
%pnew = MUL(%pold, %x)
%pst = STORE(%pjp, %pnew)
%sj = AFTER(%s, %s0, %j)
%sjp = INDEX(%sj, %z)
%sold = LOAD(%sjp)
%snew = ADD(%sold, %y)
%sst = STORE(%sjp, %snew)
%g = GROUP(%mst, %pst, %sst)
%e = END(%g, %j)
%mf = AFTER(%m, %e)
%mfp = INDEX(%mf, %z)
%mv = LOAD(%mfp)
%pf = AFTER(%p, %e)
%pfp = INDEX(%pf, %z)
%pv = LOAD(%pfp)
%sf = AFTER(%s, %e)
%sfp = INDEX(%sf, %z)
%sv = LOAD(%sfp)
%o1 = INDEX(%omax, %i)
%st1 = STORE(%o1, %mv)
%o2 = INDEX(%omul, %i)
%st2 = STORE(%o2, %pv)
%o3 = INDEX(%oadd, %i)
%st3 = STORE(%o3, %sv)
%g2 = GROUP(%st1, %st2, %st3)
%e2 = END(%g2, %i)
SINK(%e2) KernelInfo(name="zero")
"""

# a loop over k (4 increments of d) that an END in the j loop's body runs but that does not
# depend on j: it lies outside j and runs once, however many times j runs (0 included)
INNER = """# kcc-uop 1
%n = PARAM ParamArg(0, int32, vmin_vmax=(-2, 5), name="n", addrspace=ALU)
%o = PARAM ParamArg(1, int32, 2)
%c = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%d = BUFFER ParamArg(1, int32, 1, addrspace=REG)
%z = CAST(0) int32
%c0p = INDEX(%c, %z)
%c0 = STORE(%c0p, 0)
%d0p = INDEX(%d, %z)
%d0 = STORE(%d0p, 0)
%j = RANGE(%n, %c0, %d0) (0, REDUCE)
%cj = AFTER(%c, %j)
%cjp = INDEX(%cj, %z)
%cold = LOAD(%cjp)
%cnew = ADD(%cold, 1)
%cst = STORE(%cjp, %cnew)
%k = RANGE(4) (1, REDUCE)
%dk = AFTER(%d, %k)
%dkp = INDEX(%dk, %z)
%dold = LOAD(%dkp)
%dnew = ADD(%dold, 1)
%dst = STORE(%dkp, %dnew)
%ek = END(%dst, %k)
%g = GROUP(%cst, %ek)
%e = END(%g, %j)
%cf = AFTER(%c, %e)
%cfp = INDEX(%cf, %z)
%cv = LOAD(%cfp)
%df = AFTER(%d, %e)
%dfp = INDEX(%df, %z)
%dv = LOAD(%dfp)
%o0 = INDEX(%o, 0)
%s0 = STORE(%o0, %cv)
%o1 = INDEX(%o, 1)
%s1 = STORE(%o1, %dv)
%gg = GROUP(%s0, %s1)
SINK(%gg) KernelInfo(name="inner")
"""


def _expected(n: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Row by row in plain Python: the accumulators from their initial values, n terms each
    (none when n <= 0); float32 products rounded at every step, int32 sums wrapped."""
    mx, pr, sm = [], [], []
    for i in range(3):
        m, p, s = np.float32(-np.inf), np.float32(1.0), 7
        for j in range(max(n, 0)):
            m = max(m, a[i * 8 + j])
            p = np.float32(p * a[i * 8 + j])
            s += int(b[i * 8 + j])
        mx.append(m)
        pr.append(p)
        sm.append((s + 2 ** 31) % 2 ** 32 - 2 ** 31)
    return (np.array(mx, np.float32), np.array(pr, np.float32), np.array(sm, np.int32))


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 5, 8])
def test_reduce_init_survives_zero_trips(n: int) -> None:
    """MAX from -inf, MUL from 1 and an int32 ADD from 7 over n terms a row: with n <= 0 the
    outputs are the initial values, defined (the same under either choice of unspecified
    storage contents), and the x86 object gives the same bits."""
    sink = parse(REDUCE, "zero.uop")
    rng = np.random.default_rng(n + 10)
    a = rng.uniform(-2, 2, 24).astype(np.float32)
    b = rng.integers(-2 ** 31, 2 ** 31, 24, dtype=np.int64).astype(np.int32)
    args = [n, np.zeros(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.int32), a, b]
    got, defined = reference(sink, args)
    want = _expected(n, a, b)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(got[k], want[k - 1])
        assert defined[k].all(), f"output {k} reads storage no STORE wrote"
    x86 = compile_and_run(sink, args)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(x86[k], want[k - 1])
    if n <= 0:
        assert list(got[1]) == [-np.inf] * 3 and list(got[2]) == [1.0] * 3
        assert list(got[3]) == [7] * 3


@pytest.mark.parametrize("n", [-2, 0, 3])
def test_outside_loop_in_empty_body_runs_once(n: int) -> None:
    """c counts the j iterations, max(n, 0); d counts the k loop's 4 iterations, once."""
    sink = parse(INNER, "inner.uop")
    want = np.array([max(n, 0), 4], np.int32)
    out = run(sink, [n, np.full(2, -1, np.int32)])[1]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(compile_and_run(sink, [n, np.full(2, -1, np.int32)])[1], want)
