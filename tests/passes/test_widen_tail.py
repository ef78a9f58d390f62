"""One leftover iteration of a widened loop that multiplies int32 (kcc/passes/widen_tail.py
`lone_tail`, `tail_loop(one=True)`; x86's TargetDesc.slow_vector_mul): matmul_int's r_7_5_8
(5 columns = one 4-lane block + 1) runs the fifth column as scalar IMULs in straight line,
not as a second, overlapping 4-lane block of VPMULLD (two micro-ops each). A loop without
such a multiply, or with more than one iteration left, keeps the overlapping block. The
oracle is the reference interpreter, on the graph after widen and on the compiled object."""

from __future__ import annotations

import re

import pytest
from widen_util import range_bounds, widen_check, widen_prep
from x86_util import ARCHS, assert_same, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.consts import const_int
from kcc.targets.x86.target import compile_x86, disasm_object


# out[r*n + j] = a[r*4] * b[j] + a[r*4 + 1] * b[n + j] (int32): a's lanes are loop-invariant
# in the j loop (splat in its vector block), b's rows consecutive in j
MATMUL = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, {osize})
%a = PARAM ParamArg(1, int32, 28)
%b = PARAM ParamArg(2, int32, {bsize})
%r = RANGE(7) (0, WEAK)
%ar = SHL(%r, 2)
%as = SHRINK(%a, %ar, 4)
%av = LOAD(%as)
%a0 = INDEX(%av, 0)
%a1 = INDEX(%av, 1)
%j = RANGE({n}, %r) (1, WEAK)
%b0p = INDEX(%b, %j)
%b0 = LOAD(%b0p)
%j1 = ADD(%j, {n})
%b1p = INDEX(%b, %j1)
%b1 = LOAD(%b1p)
{body}
%p = MULACC(%r, {n}, %j)
%op = INDEX(%out, %p)
%st = STORE(%op, %d)
%e = END(%st, %j)
%e2 = END(%e, %r)
SINK(%e2) KernelInfo(name="mm")
"""


MULS = "%m = MUL(%a1, %b1)\n%d = MULACC(%a0, %b0, %m)"
ADDS = "%t = ADD(%a1, %b1)\n%u = ADD(%a0, %b0)\n%d = ADD(%t, %u)"


def _kernel(n: int, body: str = MULS) -> str:
    return MATMUL.format(n=n, osize=7 * n, bsize=2 * n, body=body)


def _store_widths(g) -> list[int]:
    """The width of every STORE of g (1: an element INDEX)."""
    return sorted(const_int(u.src[0].src[2]) if u.src[0].op is Ops.SHRINK else 1
                  for u in g.toposort() if u.op is Ops.STORE)


@pytest.mark.parametrize("arch", ARCHS)
def test_one_leftover_int32_multiply_iteration_is_scalar(arch: str) -> None:
    w = widen_check(_kernel(5), arch)
    # a 4-lane block (a loop of one trip: straight line for the selector) and the fifth
    # column as one scalar store, in no loop of its own
    assert _store_widths(w) == [1, 4] and range_bounds(w) == [7, 1]
    text = disasm_object(compile_x86([parse(_kernel(5), "k.uop")], arch)[0])
    # the scalar column: IMULs of a's lanes read from memory, none extracted from a vector
    # (a row block each: two VPMULLD and two IMUL, whether or not the row loop is unrolled)
    imuls, vmuls = len(re.findall(r"\bimul\s", text)), len(re.findall(r"vpmulld", text))
    assert imuls == vmuls > 0 and "vpextrd" not in text, text


@pytest.mark.parametrize("n,want", [(5, [1, 4]), (9, [1, 8])])
def test_the_graph_has_one_scalar_store_after_the_blocks(n: int, want: list[int]) -> None:
    # 9 = 8 + 1 on x86-64-v3 (int32 x 8)
    sink, _, w = widen_prep(_kernel(n))
    assert _store_widths(w) == want and range_bounds(w) == [7, 1]
    args = random_inputs(sink, 1)
    assert_same(sink, reference(w, args), reference(sink, args))


@pytest.mark.parametrize("n,body", [(5, ADDS), (6, MULS)])
def test_otherwise_the_last_block_overlaps(n: int, body: str) -> None:
    # no int32 multiply (5 = 4 + 1), or two iterations left (6 = 4 + 2)
    sink, _, w = widen_prep(_kernel(n, body))
    assert _store_widths(w) == [4, 4] and range_bounds(w) == [7]
    args = random_inputs(sink, 1)
    assert_same(sink, reference(w, args), reference(sink, args))


def test_a_loop_of_one_iteration_is_left_alone() -> None:
    # (factors(1) is empty: lone_tail must not take its first)
    sink, _, w = widen_prep(_kernel(1))
    assert _store_widths(w) == [1]
    args = random_inputs(sink, 1)
    assert_same(sink, reference(w, args), reference(sink, args))
