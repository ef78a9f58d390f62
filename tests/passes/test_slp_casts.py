"""slp and CASTs of lanes that pack into nothing better (kcc/passes/slp.py `_Packer._build`),
and upcast stores at `a*c`, `a*c + 1`, … (kcc/passes/slp_index.py `lane_offset`'s ``scaled``).

- half_softmax's max reduction reads four strided float32 elements a step, narrows each to
  float16 and widens it again: the lanes are one CAST of a STACK of the four loads (two F16C
  conversions for the four), not a STACK of four scalar CAST pairs (eight).
- cast_half2i stores its four int16 lanes at `i << 2` and `MULACC(i, 4, k)`: one run of
  consecutive stores (one vector store), where lane 0's SHL and the others' MULACC used to
  have different bases. Loads keep their grouping (conv2d's staged weights regrouped by
  the same rule ran 1.5x slower).
Values: the x86 objects against the reference interpreter."""

from __future__ import annotations

import pytest
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops, dtypes
from kcc.ir.uop import UOp, toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.slp_index import lane_offset
from kcc.targets.x86.arch import x86_desc


# out[4i + k] = float32(float16(a[i + 77k])) + b[4i + k]: four strided loads rounded to half
STRIDED = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 32)
%a = PARAM ParamArg(1, float32, 240)
%b = PARAM ParamArg(2, float32, 32)
%r = RANGE(8) (0, LOOP)
%s = SHL(%r, 2)
%pb = SHRINK(%b, %s, 4)
%vb = LOAD(%pb)
""" + "".join(f"""%i{k} = ADD(%r, {77 * k})
%p{k} = INDEX(%a, %i{k})
%l{k} = LOAD(%p{k})
%h{k} = CAST(%l{k}) float16
%f{k} = CAST(%h{k}) float32
%b{k} = INDEX(%vb, {k})
%y{k} = ADD(%f{k}, %b{k})
""" for k in range(4)) + """%y = STACK(%y0, %y1, %y2, %y3)
%po = SHRINK(%o, %s, 4)
%st = STORE(%po, %y)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="strided_casts")
"""

# out[4i + k] = int16(float16(a[4i + k]) * 64), stored one element at a time (cast_half2i)
UPCAST = """# kcc-uop 1
%o = PARAM ParamArg(0, int16, 256)
%a = PARAM ParamArg(1, float32, 256)
%r = RANGE(64) (0, WEAK)
%s = SHL(%r, 2)
%pa = SHRINK(%a, %s, 4)
%va = LOAD(%pa)
%c = CAST(64.0) float16
""" + "".join(f"""%x{k} = INDEX(%va, {k})
%h{k} = CAST(%x{k}) float16
%m{k} = MUL(%h{k}, %c)
%n{k} = CAST(%m{k}) int16
%i{k} = {"%s" if k == 0 else f"MULACC(%r, 4, {k})"}
%p{k} = INDEX(%o, %i{k})
%t{k} = STORE(%p{k}, %n{k})
""" for k in range(4)).replace("%i0 = %s\n", "").replace("INDEX(%o, %i0)", "INDEX(%o, %s)") \
    + """%g = GROUP(%t0, %t1, %t2, %t3)
%e = END(%g, %r)
SINK(%e) KernelInfo(name="upcast_stores")
"""


def _slp(src: str, arch: str) -> list[UOp]:
    return toposort([slp(simplify(lower_weak_dtypes(parse(src))), x86_desc(arch))])


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_casts_of_strided_loads_are_one_vector_cast(arch: str) -> None:
    order = _slp(STRIDED, arch)
    casts = [u for u in order if u.op is Ops.CAST and u.dtype in (dtypes.float16,
                                                                   dtypes.float32)]
    assert casts and all(u.shape == (4,) for u in casts), casts
    assert any(u.op is Ops.CAST and u.src[0].op is Ops.STACK for u in casts)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_upcast_stores_are_one_vector_store(arch: str) -> None:
    order = _slp(UPCAST, arch)
    stores = [u for u in order if u.op is Ops.STORE]
    assert len(stores) == 1 and stores[0].src[1].shape == (4,), stores


def test_scaled_offsets_share_lane_zeros_base() -> None:
    """`i << 2` and MULACC(i, 4, 3) share a base: with ``scaled`` (stores) MULACC(i, 4, 0),
    without it lane 0's own `i << 2` (slp_index._product); each lane at its offset."""
    sink = simplify(lower_weak_dtypes(parse(UPCAST)))
    idx = [u.src[0].src[1] for u in toposort([sink]) if u.op is Ops.STORE]
    for scaled in (False, True):
        offs = [lane_offset(i, scaled=scaled) for i in idx]
        assert len({b for b, _ in offs}) == 1 and sorted(k for _, k in offs) == [0, 1, 2, 3]
    assert lane_offset(idx[0])[0].op is not Ops.MULACC


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src", [STRIDED, UPCAST], ids=["strided", "upcast"])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_the_interpreter(src: str, arch: str, seed: int) -> None:
    sink = parse(src)
    args = random_inputs(sink, seed)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
