"""float16 MAX in float32 where exact (kcc/passes/half_max.py, run at the start of slp):
tinygrad's half max chains (half_max_nan r_4_8) and REG max accumulators (half_softmax
r_5_4_77) compute in float32 when no operand can be a signalling NaN; a MAX reading float16
from memory keeps the bit select. The x86 objects agree with the reference interpreter bit for
bit on NaNs (MAX(NaN, x) = NaN, MAX(x, NaN) = x), ±0.0 in both orders, ±inf, overflow to inf
and values that round to the same float16."""

from __future__ import annotations

import numpy as np
import pytest
from test_slp_reg_scalar import HALF_MAX
from x86_util import ARCHS, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops, dtypes
from kcc.ir.uop import AddrSpace, UOp, toposort
from kcc.passes.half_max import half_max
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc


F16, F32 = dtypes.float16, dtypes.float32

# out[i] = max(h[8i], …, h[8i+7]) in this order, h = float16(in): tinygrad's max over a row
CHAIN = """# kcc-uop 1
%o = PARAM ParamArg(0, float16, 4)
%a = PARAM ParamArg(1, float32, 32)
%r = RANGE(4) (1, WEAK)
%s = SHL(%r, 3)
%p0 = SHRINK(%a, %s, 4)
%v0 = LOAD(%p0)
%s4 = MULACC(%r, 8, 4)
%p1 = SHRINK(%a, %s4, 4)
%v1 = LOAD(%p1)
""" + "".join(f"%x{k} = INDEX(%v{k // 4}, {k % 4})\n%h{k} = CAST(%x{k}) float16\n"
              for k in range(8)) + "".join(
    f"%m{k} = MAX(%{'h0' if k == 1 else f'm{k - 1}'}, %h{k})\n" for k in range(1, 8)) + """\
%po = INDEX(%o, %r)
%st = STORE(%po, %m7)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="half_max_chain")
"""

# the same maximum over float16 read from memory: a signalling NaN there must keep its bits,
# so this MAX stays a bit select
LOADED = """# kcc-uop 1
%o = PARAM ParamArg(0, float16, 8)
%a = PARAM ParamArg(1, float16, 16)
%r = RANGE(8) (1, WEAK)
%i = SHL(%r, 1)
%p0 = INDEX(%a, %i)
%l0 = LOAD(%p0)
%j = ADD(%i, 1)
%p1 = INDEX(%a, %j)
%l1 = LOAD(%p1)
%m = MAX(%l0, %l1)
%po = INDEX(%o, %r)
%st = STORE(%po, %m)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="half_max_loaded")
"""

NAN = float("nan")
# float32 inputs: NaN first, last and between, ±0.0 both ways, ±inf, overflow (65520 → inf),
# a value rounding to the float16 of its neighbour (1 + 2^-12 → 1.0), subnormal halves
EDGES = [NAN, 1.0, 2.0, -1.0, 0.5, 3.0, 1.5, 7.0,
         1.0, 2.0, NAN, 3.0, -4.0, 0.25, 0.0, 5.0,
         -0.0, 0.0, -0.0, 0.0, 0.0, -0.0, -0.0, 0.0,
         -np.inf, 65520.0, 65504.0, 1 + 2 ** -12, 1.0, 2 ** -24, 3 * 2 ** -25, NAN]


def _graph(src: str, desc) -> list[UOp]:
    return toposort([slp(simplify(lower_weak_dtypes(parse(src))), desc)])


def _run(src: str, args: list, arch: str) -> list:
    sink = parse(src)
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    for g, w in zip(got, want):
        bits = f"u{g.itemsize}"
        assert np.array_equal(g.view(bits), w.view(bits)), (g, w)
    return want


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_chain_is_float32_max(arch: str) -> None:
    """Seven float32 MAXes, one narrowing: no float16 MAX left for decompose's bit select."""
    order = _graph(CHAIN, x86_desc(arch))
    assert not [u for u in order if u.op is Ops.MAX and u.dtype == F16]
    assert len([u for u in order if u.op is Ops.MAX and u.dtype == F32]) == 7


@pytest.mark.parametrize("arch", ARCHS)
def test_chain_bit_exact(arch: str) -> None:
    want = _run(CHAIN, [np.zeros(4, np.float16), np.array(EDGES, np.float32)], arch)
    # the cases were reached: a NaN result (lane 0 NaN), a NaN skipped (lane 10 NaN), -0.0
    # kept where it is the first operand, inf from 65520
    assert np.isnan(want[0][0]) and not np.isnan(want[0][1])
    assert np.signbit(want[0][2]) and want[0][3] == np.inf


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_reg_accumulator_carried_in_float32(arch: str) -> None:
    """half_softmax's max reduction: the REG buffer is float32 and its stores pack."""
    order = _graph(HALF_MAX, x86_desc(arch))
    regs = [u for u in order if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.REG]
    assert [u.arg.dtype for u in regs] == [F32]
    assert not [u for u in order if u.op is Ops.MAX and u.dtype == F16]
    assert [u for u in order if u.op is Ops.MAX and u.shape == (4,)]


@pytest.mark.parametrize("arch", ARCHS)
def test_reg_accumulator_bit_exact(arch: str) -> None:
    """NaNs at the start, middle and end of columns, signed zeros, infinities, overflow."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-4, 4, 1540).astype(np.float32)
    a[[0, 77 * 5 + 40, 77 * 9 + 76]] = NAN                     # three columns see a NaN
    a[77 * 2: 77 * 3] = 0.0
    a[77 * 2 + 10] = -0.0                                      # -0.0 after +0.0: +0.0 kept
    a[77 * 3: 77 * 4] = -0.0
    a[77 * 3 + 5] = 0.0
    a[77 * 4 + 7] = np.inf
    a[77 * 6 + 3] = 70000.0                                    # rounds to inf in float16
    a[77 * 7: 77 * 8] = -np.inf
    want = _run(HALF_MAX, [np.zeros(20, np.float16), a], arch)
    out = want[0]
    # MAX(acc, x): a NaN x is skipped (acc < NaN is false); the first zero's sign stays
    assert not np.isnan(out).any() and not np.signbit(out[2]) and np.signbit(out[3])
    assert out[4] == np.inf and out[6] == np.inf and out[7] == -np.inf


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_loaded_halves_keep_the_bit_select(arch: str) -> None:
    order = _graph(LOADED, x86_desc(arch))
    assert [u for u in order if u.op is Ops.MAX and u.dtype == F16]
    assert not [u for u in order if u.op is Ops.MAX and u.dtype == F32]


@pytest.mark.parametrize("arch", ARCHS)
def test_loaded_signalling_nans_keep_their_bits(arch: str) -> None:
    bits = np.array([0x7C01, 0x3C00, 0x3C00, 0xFD55, 0x7D00, 0x7E00, 0x8000, 0x0000,
                     0x0000, 0x8000, 0xFC00, 0x7C00, 0x3555, 0x7C01, 0x7BFF, 0x7BFF],
                    np.uint16)
    want = _run(LOADED, [np.zeros(8, np.float16), bits.view(np.float16)], arch)
    assert want[0].view(np.uint16)[0] == 0x7C01                # a signalling NaN, kept


def test_gpu_targets_unchanged() -> None:
    """PTX has no MAX instruction with MAX's NaN rule for float32 either: nothing to gain."""
    sink = simplify(lower_weak_dtypes(parse(CHAIN)))
    assert half_max(sink, CUDA) is sink
