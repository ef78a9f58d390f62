"""Regressions of x86 selection an independent fuzzer found (issue 12 §1-2): segfaults, internal
errors, refusals and wrong code of valid kernels. Each is a named test; the oracle is the
reference interpreter on the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from fuzz.harness import check_x86, run_reference, run_x86
from ptx_util import k



def _check(text: str, seeds: range = range(4)) -> None:
    sink = k(text)
    for seed in seeds:
        check_x86(sink, seed)




# -- x86: segfaults, internal errors, refusals, wrong code ---------------------------------

def test_int64_special_whose_worker_index_is_on_the_stack() -> None:
    """Six buffer/int PARAMs push the gidx worker index (a C int) to the stack; an int64
    SPECIAL read all 64 bits of its eightbyte (undefined upper half) and segfaulted."""
    _check("""%p0 = PARAM ParamArg(0, float64, 63)
%p1 = PARAM ParamArg(1, float16, 17)
%p2 = PARAM ParamArg(2, float16, addrspace=ALU)
%p3 = PARAM ParamArg(3, float64, addrspace=ALU)
%p4 = PARAM ParamArg(4, float64, addrspace=ALU)
%p5 = PARAM ParamArg(5, float64, 9)
%p6 = PARAM ParamArg(6, float64, 31)
%p7 = PARAM ParamArg(7, float64, 10)
%c9 = CAST(1) int64
%s10 = SPECIAL(%c9) "gidx1"
%m11 = MUL(%s10, 10)
%s17 = SHRINK(%p0, %m11, 2)
%c18 = CAST(1) float64
%s19 = STACK(%c18, %c18)
%s20 = STORE(%s17, %s19)
SINK(%s20) KernelInfo(name="k")
""")


def test_int64_special_with_many_workers_on_the_stack() -> None:
    """The same with 5 workers, each writing its own element."""
    _check("""%p0 = PARAM ParamArg(0, int64, 5)
%p1 = PARAM ParamArg(1, int64, 1)
%p2 = PARAM ParamArg(2, int64, 1)
%p3 = PARAM ParamArg(3, int64, 1)
%p4 = PARAM ParamArg(4, int64, 1)
%p5 = PARAM ParamArg(5, int64, 1)
%c = CAST(5) int64
%g = SPECIAL(%c) "gidx0"
%i = INDEX(%p0, %g)
%v = MUL(%g, 3)
%s = STORE(%i, %v)
SINK(%s, %p1, %p2, %p3, %p4, %p5) KernelInfo(name="k")
""")


def test_vector_shr_by_loaded_amounts_of_another_width() -> None:
    """SHR of int32 x 8 ones by uint64 x 8 loaded amounts: lanes 4-7 were left unshifted."""
    sink = k("""%o = PARAM ParamArg(0, int32, 8)
%a = PARAM ParamArg(1, uint64, 8)
%one = CAST(1) int32
%v = STACK(%one, %one, %one, %one, %one, %one, %one, %one)
%ap = SHRINK(%a, 0, 8)
%av = LOAD(%ap)
%r = SHR(%v, %av)
%op = SHRINK(%o, 0, 8)
%s = STORE(%op, %r)
SINK(%s) KernelInfo(name="k")
""")
    amounts = np.array([14, 18, 3, 1, 0, 2, 31, 15], np.uint64)
    want = [1 >> int(a) for a in amounts]
    assert want == [0, 0, 0, 0, 1, 0, 0, 0]
    assert run_reference(sink, [np.zeros(8, np.int32), amounts])[0].tolist() == want
    assert run_x86(sink, [np.zeros(8, np.int32), amounts])[0].tolist() == want


def test_vector_shift_by_constant_stack_of_another_width() -> None:
    """uint32 x 8 SHL by a constant uint64 x 8 STACK: KeyError 'vmovdqu_z_zm' (no zmm)."""
    sink = k("""%o = PARAM ParamArg(0, uint32, 8)
%x = PARAM ParamArg(1, uint32, 8)
%xp = SHRINK(%x, 0, 8)
%xv = LOAD(%xp)
%a0 = CAST(1) uint64
%a1 = CAST(3) uint64
%a2 = CAST(7) uint64
%a3 = CAST(31) uint64
%am = STACK(%a0, %a1, %a2, %a3, %a0, %a1, %a2, %a3)
%r = SHL(%xv, %am)
%op = SHRINK(%o, 0, 8)
%s = STORE(%op, %r)
SINK(%s) KernelInfo(name="k")
""")
    x = np.array([1, 3, 0xFFFFFFFF, 5, 7, 9, 11, 0x80000001], np.uint32)
    want = [(int(v) << a) & 0xFFFFFFFF for v, a in zip(x, [1, 3, 7, 31] * 2)]
    assert run_reference(sink, [np.zeros(8, np.uint32), x])[0].tolist() == want
    assert run_x86(sink, [np.zeros(8, np.uint32), x])[0].tolist() == want


@pytest.mark.parametrize("dt", ["int64", "uint64"])
def test_int64_to_bfloat16_of_a_value_read_back_from_reg(dt: str) -> None:
    """CAST int64/uint64 -> bfloat16 of a value stored to and reloaded from a REG buffer."""
    sink = k(f"""%o = PARAM ParamArg(0, bfloat16, 4)
%x = PARAM ParamArg(1, {dt}, 4)
%acc = BUFFER ParamArg(0, {dt}, 1, addrspace=REG)
%i = RANGE(4) (0, LOOP)
%xi = INDEX(%x, %i)
%xv = LOAD(%xi)
%ai = INDEX(%acc, 0)
%st = STORE(%ai, %xv)
%aa = AFTER(%acc, %st)
%ai2 = INDEX(%aa, 0)
%v = LOAD(%ai2)
%c = CAST(%v) bfloat16
%oi = INDEX(%o, %i)
%s = STORE(%oi, %c)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")
    x = np.array([-13, 1, -(2 ** 40) - 1, 2 ** 62 + 12345], np.int64).astype(dt)
    want = run_reference(sink, [np.zeros(4, np.uint16), x])[0]
    f32 = np.array([float(int(v)) for v in x], np.float32)      # exact here except the last
    assert want[:2].tolist() == (f32.view(np.uint32) >> 16).astype(np.uint16)[:2].tolist()
    got = run_x86(sink, [np.zeros(4, np.uint16), x])[0]
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_neg_where_max_keep_nan_bits(dt: str) -> None:
    """NEG flips only the sign bit and MAX/WHERE keep the chosen operand's bits, signalling
    NaNs included (a float32 round trip quieted 0x7c01 to 0xfe01)."""
    sink = k(f"""%o = PARAM ParamArg(0, {dt}, 8)
%m = PARAM ParamArg(1, {dt}, 8)
%w = PARAM ParamArg(2, {dt}, 8)
%x = PARAM ParamArg(3, {dt}, 8)
%y = PARAM ParamArg(4, {dt}, 8)
%i = RANGE(8) (0, LOOP)
%xi = INDEX(%x, %i)
%xv = LOAD(%xi)
%yi = INDEX(%y, %i)
%yv = LOAD(%yi)
%n = NEG(%xv)
%mx = MAX(%xv, %yv)
%c = CMPLT(%i, 4)
%wh = WHERE(%c, %xv, %yv)
%oi = INDEX(%o, %i)
%s = STORE(%oi, %n)
%mi = INDEX(%m, %i)
%s2 = STORE(%mi, %mx)
%wi = INDEX(%w, %i)
%s3 = STORE(%wi, %wh)
%g = GROUP(%s, %s2, %s3)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="k")
""")
    bits = [0x7C01, 0xFC01, 0x7D55, 0x3C00, 0x7F81, 0xFF81, 0x7FC1, 0x0001]
    carrier = np.float16 if dt == "float16" else np.uint16
    x = np.array(bits, np.uint16).view(carrier)
    y = np.array([0x3C00, 0x7C02, 0x0000, 0x7E01, 0x3C00, 0x8000, 0x7C01, 0x7F85],
                 np.uint16).view(carrier)
    args = [np.zeros(8, carrier) for _ in range(3)] + [x, y]
    for got in (run_reference(sink, args), run_x86(sink, args)):
        assert got[0].view(np.uint16).tolist() == [b ^ 0x8000 for b in bits]
        # MAX(x, y) = x < y ? y : x; with a NaN operand the compare is false: x
        assert got[1].view(np.uint16).tolist() == [
            int(yb) if (not np.isnan(xv) and not np.isnan(yv) and xv < yv) else int(xb)
            for xb, yb, xv, yv in zip(x.view(np.uint16), y.view(np.uint16),
                                      _as_f32(x, dt), _as_f32(y, dt))]
        assert got[2].view(np.uint16).tolist() == (bits[:4] + y.view(np.uint16)[4:].tolist())


def _as_f32(a: np.ndarray, dt: str) -> np.ndarray:
    """The values of half bit patterns (bfloat16: the top half of a float32), for compares."""
    if dt == "float16":
        return a.astype(np.float32)
    return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("dt,n", [("int32", 4), ("int64", 2), ("int32", 8), ("int16", 8)])
def test_int_vector_through_a_reg_buffer(dt: str, n: int) -> None:
    """An integer vector stored to and reloaded from a REG buffer (promoted to a register):
    'mov_r32_rm32 operand 1 wants a gpr register, got %v3:vec'."""
    _check(f"""%o = PARAM ParamArg(0, {dt}, {n})
%x = PARAM ParamArg(1, {dt}, {n})
%r = BUFFER ParamArg(0, {dt}, {n}, addrspace=REG)
%xp = SHRINK(%x, 0, {n})
%xv = LOAD(%xp)
%rp = SHRINK(%r, 0, {n})
%st = STORE(%rp, %xv)
%ra = AFTER(%r, %st)
%rp2 = SHRINK(%ra, 0, {n})
%v = LOAD(%rp2)
%w = ADD(%v, %v)
%op = SHRINK(%o, 0, {n})
%s = STORE(%op, %w)
SINK(%s) KernelInfo(name="k")
""")


def test_gidx_index_folding_to_a_constant() -> None:
    """INDEX(%o, MUL(%g, 0)): simplification removes the SPECIAL, its worker argument still
    arrives (StopIteration in the selector)."""
    _check("""%o = PARAM ParamArg(0, float32, 4)
%g = SPECIAL(4) "gidx0"
%z = MUL(%g, 0)
%oi = INDEX(%o, %z)
%s = STORE(%oi, 1.0)
SINK(%s) KernelInfo(name="k")
""")


@pytest.mark.parametrize("cmp_dt,sel_dt,n", [("int64", "float32", 4), ("float64", "float32", 4),
                                             ("float32", "float64", 4), ("int32", "int64", 4),
                                             ("int16", "float32", 8), ("float32", "int8", 8),
                                             ("int64", "float64", 2), ("float32", "float64", 8)])
def test_vector_where_with_a_mask_of_another_lane_width(cmp_dt: str, sel_dt: str, n: int) -> None:
    """A vector WHERE whose mask is a compare of lanes of another width was refused ("a
    vector WHERE on float32 needs a mask of 32-bit lanes")."""
    _check(f"""%o = PARAM ParamArg(0, {sel_dt}, {n})
%a = PARAM ParamArg(1, {cmp_dt}, {n})
%b = PARAM ParamArg(2, {cmp_dt}, {n})
%x = PARAM ParamArg(3, {sel_dt}, {n})
%y = PARAM ParamArg(4, {sel_dt}, {n})
%ap = SHRINK(%a, 0, {n})
%av = LOAD(%ap)
%bp = SHRINK(%b, 0, {n})
%bv = LOAD(%bp)
%m = CMPLT(%av, %bv)
%xp = SHRINK(%x, 0, {n})
%xv = LOAD(%xp)
%yp = SHRINK(%y, 0, {n})
%yv = LOAD(%yp)
%w = WHERE(%m, %xv, %yv)
%op = SHRINK(%o, 0, {n})
%s = STORE(%op, %w)
SINK(%s) KernelInfo(name="k")
""")


def test_strong_constant_bounds_lengths_and_lanes_in_the_interpreter() -> None:
    """CAST(n) int32 as a SPECIAL and RANGE bound, a SHRINK length and a lane index: the
    interpreter runs it (it crashed on strong-constant bounds) and x86 agrees."""
    sink = k("""%o = PARAM ParamArg(0, float32, 8)
%x = PARAM ParamArg(1, float32, 8)
%n = CAST(2) int32
%w = CAST(4) int32
%g = SPECIAL(%n) "gidx0"
%i = RANGE(%n) (0, LOOP)
%gi = MUL(%g, %w)
%l = CAST(3) int32
%xp = SHRINK(%x, %gi, %w)
%xv = LOAD(%xp)
%e0 = INDEX(%xv, %l)
%ii = CAST(%i) int32
%j = ADD(%gi, %ii)
%oi = INDEX(%o, %j)
%s = STORE(%oi, %e0)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")
    x = np.arange(10, 18, dtype=np.float32)
    want = np.zeros(8, np.float32)
    for g in range(2):
        for i in range(2):
            want[g * 4 + i] = x[g * 4 + 3]
    assert run_reference(sink, [np.zeros(8, np.float32), x])[0].tolist() == want.tolist()
    assert run_x86(sink, [np.zeros(8, np.float32), x])[0].tolist() == want.tolist()


def _has_avx512() -> bool:
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    return all(f in cpu_flags() for f in V4_FLAGS)


@pytest.mark.skipif(not _has_avx512(), reason="this CPU has no AVX-512 (x86-64-v4 code "
                    "cannot run here)")
def test_zmm_float64_splat_of_a_scalar_param() -> None:
    """Found by the fuzzer at scale (zmm lanewise): STACK of 8 copies of a float64 scalar on
    x86-64-v4 filled only 2 lanes (an xmm unpack instead of a zmm broadcast)."""
    sink = k("""%o = PARAM ParamArg(0, float64, 8)
%p = PARAM ParamArg(1, float64, addrspace=ALU)
%r = RANGE(1) (0, LOOP)
%m = MUL(%r, 8)
%sp = SHRINK(%o, %m, 8)
%v = STACK(%p, %p, %p, %p, %p, %p, %p, %p)
%s = STORE(%sp, %v)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="k")
""")
    for seed in range(3):
        check_x86(sink, seed, "x86-64-v4")
