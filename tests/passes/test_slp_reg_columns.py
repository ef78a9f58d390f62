"""slp's column store groups (kcc/passes/slp_reg.py `column_groups`): in a kernel without
vectors, a run of scalar stores to consecutive elements of an output whose values pack into a
vector that inserts no scalars becomes one vector store. unroll's jammed column loop (conv1d:
four output columns a step, now eight and a remainder of four) packs its accumulators into one
REG group and stored it back one lane at a time; now one vector store a group. A run whose
values would be gathered into lanes from unrelated scalars (four strided loads, four scalar
accumulators) stays scalar stores: the inserts cost what the stores saved. Values: the x86
object vs the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.unroll import unroll
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference

CONV1D = Path(__file__).resolve().parents[1] / "data" / "kernels" / "conv1d_columns.uop"

# out[4r + k] = a[{index}] * 2 for k = 0 … 3: four stores to consecutive elements (32 rows:
# 16 are within kcc/passes/unroll_tiny.py's budget, whose copies are no loop of columns)
FOUR = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 128)
%a = PARAM ParamArg(1, float32, 160)
%r = RANGE(32) (0, WEAK)
%o = MUL(%r, 4)
{body}
%g = GROUP(%s0, %s1, %s2, %s3)
%e = END(%g, %r)
SINK(%e) KernelInfo(name="four")
"""


def _four(stride: int) -> str:
    lines = []
    for k in range(4):
        lines += [f"%i{k} = ADD(%o, {k * stride})", f"%p{k} = INDEX(%a, %i{k})",
                  f"%x{k} = LOAD(%p{k})", f"%m{k} = MUL(%x{k}, 2.0)",
                  f"%q{k} = ADD(%o, {k})", f"%d{k} = INDEX(%out, %q{k})",
                  f"%s{k} = STORE(%d{k}, %m{k})"]
    return FOUR.format(body="\n".join(lines))


def _stores(g, slot: int) -> list:
    return [u for u in toposort([g]) if u.op is Ops.STORE
            and u.src[0].src[0].op is Ops.PARAM and u.src[0].src[0].arg.slot == slot]


def _packed(src: str, desc=None):
    desc = desc or x86_desc("x86-64-v3")
    return slp(unroll(simplify(lower_weak_dtypes(parse(src))), desc), desc)


def test_conv1d_columns_are_one_vector_store() -> None:
    # its 12 columns jammed by 8, the remainder by 4 (passes/unroll_columns.py `wide_columns`)
    stores = _stores(_packed(CONV1D.read_text()), 0)
    assert [u.src[1].shape for u in stores] == [(8,), (4,)]


def test_consecutive_loads_scaled_are_one_store() -> None:
    stores = _stores(_packed(_four(1)), 0)
    assert [u.src[1].shape for u in stores] == [(4,)]


def test_gathered_lanes_stay_scalar_stores() -> None:
    # lanes 8 elements apart: the packing would insert four loads into lanes
    stores = _stores(_packed(_four(8)), 0)
    assert [u.src[1].shape for u in stores] == [()] * 4


def test_gpu_targets_keep_their_stores() -> None:
    stores = _stores(_packed(_four(1), CUDA), 0)
    assert all(u.src[1].shape == () for u in stores)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("which", ["conv1d", "four1", "four8"])
def test_matches_the_interpreter(arch: str, which: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    src = CONV1D.read_text() if which == "conv1d" else _four(int(which[4:]))
    sink = parse(src)
    args = random_inputs(sink, 5)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_a_run_no_width_divides_is_cut_greedily(monkeypatch) -> None:
    """A run of 14 column stores (mean over axes 0 and 2, jammed whole in chunks 8 + 4 + 2:
    passes/unroll_columns.py `column_chunks`, no overlapping chunks) has no dividing width:
    it is cut 8 + 4 and the last 2 (no 2-lane float32 vector on x86) stay scalar, where all
    14 stayed scalar."""
    from test_unroll_columns import _exact_chunks, _mean
    _exact_chunks(monkeypatch)
    stores = _stores(_packed(_mean()), 0)
    assert [u.src[1].shape for u in stores] == [(8,), (4,), (), ()]


def test_stores_of_overlapping_chunks_are_runs_in_program_order(monkeypatch) -> None:
    """mean's 14 columns jammed as two overlapping 8-lane chunks (columns 0..7 and 6..13)
    store columns 6 and 7 twice. By offset the first store of an element stood for it: one
    run of 14 cut 8 + 4 + 2, the second chunk's lanes stored one by one; in program order
    (slp_reg.py `overlap_runs`) each chunk is a run, one 8-lane store of its vector."""
    from test_unroll_columns import _mean
    stores = _stores(_packed(_mean()), 0)
    assert [u.src[1].shape for u in stores] == [(8,), (8,)]
    import kcc.passes.slp_reg as slp_reg
    monkeypatch.setattr(slp_reg, "overlap_runs",
                        lambda st, key: slp_reg.consecutive_runs(st, scaled=True))
    stores = _stores(_packed(_mean()), 0)
    assert [u.src[1].shape for u in stores] != [(8,), (8,)]
