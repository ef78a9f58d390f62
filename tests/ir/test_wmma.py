"""WMMA in the IR: the rule table's checks of its arg and operand widths, and the lane maps of
every tensor-core form (kcc/ir/wmma.py): each covers its matrices as the form says."""

from __future__ import annotations

import numpy as np
import pytest
from wmma_graphs import fragment_kernel

from kcc.frontend.parser import parse
from kcc.ir import IRError, Ops, UOp, dtypes, utype_of
from kcc.ir.wmma import SHAPES, WmmaShape, find

NAMES = [f"{s.device}-{s.dims}-{s.threads}-{s.dtype_in}-{s.dtype_out}" for s in SHAPES]


def _vec(dt: str, n: int) -> UOp:
    zero = UOp(Ops.CAST, (UOp(Ops.CONST, (), 0),), dtypes.by_name(dt))
    return UOp(Ops.STACK, (zero,) * n)


def _srcs(sh: WmmaShape, widths: tuple[int, int, int] | None = None) -> tuple[UOp, ...]:
    wa, wb, wc = widths or sh.per_lane
    return (_vec(sh.dtype_in, wa), _vec(sh.dtype_in, wb), _vec(sh.dtype_out, wc))


def _arg(sh: WmmaShape) -> tuple:
    return (sh.dims, dtypes.by_name(sh.dtype_in), sh.device, sh.threads, None)


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_every_form_types_to_its_accumulator(sh: WmmaShape) -> None:
    t = utype_of(Ops.WMMA, _srcs(sh), _arg(sh))
    assert (t.dtype.name, t.shape, t.kind) == (sh.dtype_out, (sh.per_lane[2],), "value")


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_every_form_covers_its_matrices(sh: WmmaShape) -> None:
    """Per lane the counts tinygrad's TensorCore gives; every matrix element is held, C/D's
    exactly once; A and B exactly once but for RDNA3's replicated lanes 16..31."""
    n, m, k = sh.dims
    assert sh.per_lane[2] * sh.threads == m * n
    for which, rows, cols in (("a", m, k), ("b", k, n), ("c", m, n)):
        tab = sh.table(which).reshape(-1, 2)
        count = np.zeros((rows, cols), int)
        np.add.at(count, (tab[:, 0], tab[:, 1]), 1)
        copies = 2 if which != "c" and sh.device == "AMD" and sh.threads == 32 else 1
        assert (count == copies).all(), which


def test_rdna3_a_and_b_repeat_in_the_upper_half_wave() -> None:
    sh = find("AMD", (16, 16, 16), 32, "float16", "float32")
    assert sh is not None
    for which in "ab":
        tab = sh.table(which)
        assert (tab[:16] == tab[16:]).all()


def test_the_ptx_isa_m16n8k16_layout() -> None:
    """PTX ISA, mma.m16n8k16 .f16: groupID = lane>>2, threadID_in_group = lane%4; a0..a7 rows
    groupID (+8 for a2,a3,a6,a7), columns 2*t + (i&1) (+8 for a4..a7); b0..b3 rows 2*t + (i&1)
    (+8 for b2,b3), column groupID; c0..c3 row groupID (+8 for c2,c3), column 2*t + (i&1)."""
    sh = find("CUDA", (8, 16, 16), 32, "float16", "float32")
    assert sh is not None
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(8):
            assert sh.a_at(lane, i) == (g + 8 * (i in (2, 3, 6, 7)), 2 * t + (i & 1) + 8 * (i >= 4))
        for i in range(4):
            assert sh.b_at(lane, i) == (2 * t + (i & 1) + 8 * (i >= 2), g)
            assert sh.c_at(lane, i) == (g + 8 * (i >= 2), 2 * t + (i & 1))


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_wrong_operand_widths_are_refused_naming_the_operand(sh: WmmaShape) -> None:
    for i in range(3):
        widths = list(sh.per_lane)
        widths[i] *= 2
        with pytest.raises(IRError) as e:
            utype_of(Ops.WMMA, _srcs(sh, tuple(widths)), _arg(sh))
        assert e.value.src_index == i and "per lane" in e.value.msg


@pytest.mark.parametrize("arg, fragment", [
    (((8, 16, 16), dtypes.float16, "CUDA", 32), "WMMA takes"),
    (((8, 16), dtypes.float16, "CUDA", 32, None), "WMMA takes"),
    (((8, 16, 16), dtypes.float16, "CUDA", 32, ((1, 2),)), "WMMA takes"),
    (((8, 16, 16), dtypes.float16, "METAL", 32, None), "device 'METAL'"),
    (((8, 16, 16), dtypes.float16, "CUDA", 64, None), "no tensor-core form"),
    (((8, 16, 8), dtypes.float32, "CUDA", 32, None), "no tensor-core form"),
])
def test_bad_args_are_refused(arg: tuple, fragment: str) -> None:
    sh = find("CUDA", (8, 16, 16), 32, "float16", "float32")
    assert sh is not None
    with pytest.raises(IRError, match=fragment):
        utype_of(Ops.WMMA, _srcs(sh), arg)


def test_a_dtype_other_than_dtype_in_is_refused() -> None:
    sh = find("CUDA", (8, 16, 16), 32, "float16", "float32")
    assert sh is not None
    srcs = (_vec("bfloat16", 8),) + _srcs(sh)[1:]
    with pytest.raises(IRError, match="WMMA's A is float16"):
        utype_of(Ops.WMMA, srcs, _arg(sh))


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_fragment_kernels_parse(sh: WmmaShape) -> None:
    sink = parse(fragment_kernel(sh))
    assert any(n.op is Ops.WMMA for n in sink.toposort())


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_operand_holders_agree_with_the_maps(sh: WmmaShape) -> None:
    """a_from/b_from (what the decomposition substitutes) name a lane and element that hold
    A[m][k] and B[k][n] for every D element (m, n) of every lane."""
    for lane in range(sh.threads):
        for e in range(sh.per_lane[2]):
            m, n = sh.c_at(lane, e)
            for k in range(sh.k):
                la, ea = sh.a_from(lane, e, k)
                lb, eb = sh.b_from(lane, e, k)
                assert sh.a_at(la, ea) == (m, k) and sh.b_at(lb, eb) == (k, n)
                assert 0 <= la < sh.threads and 0 <= lb < sh.threads
