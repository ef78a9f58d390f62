"""The one affine decomposition of an index (kcc/ir/affine.py), as the non-temporal store
check (every other node a leaf) and unroll (the caller's leaves, else None) use it."""

from __future__ import annotations

from passes_support import op, param, rng, strong

from kcc.ir.affine import affine
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp

I32, I64 = dtypes.int32, dtypes.int64


def test_sums_products_and_shifts_of_constants():
    r = rng(strong(8, I32), 0)
    n = param(0, I32)
    assert affine(op(Ops.ADD, op(Ops.MUL, r, strong(8, I32)), strong(16, I32))) == ({r: 8}, 16)
    # a constant factor on either side, a shift, a subtraction
    assert affine(op(Ops.MUL, strong(4, I32), r)) == ({r: 4}, 0)
    assert affine(op(Ops.SHL, r, strong(3, I32))) == ({r: 8}, 0)
    assert affine(op(Ops.SUB, op(Ops.MUL, n, strong(3, I32)), op(Ops.ADD, r, strong(2, I32)))
                  ) == ({n: 3, r: -1}, -2)
    # a constant is what const_int reads: a CAST chain over a literal too
    five = UOp(Ops.CAST, (strong(5, I64),), I32)
    assert affine(op(Ops.ADD, r, five)) == ({r: 1}, 5)


def test_cancelled_terms_are_dropped():
    r = rng(strong(8, I32), 0)
    n = param(0, I32)
    assert affine(op(Ops.SUB, op(Ops.ADD, r, n), r)) == ({n: 1}, 0)
    assert affine(op(Ops.MUL, r, strong(0, I32))) == ({}, 0)


def test_other_nodes_are_leaves_without_a_leaf_test():
    r = rng(strong(8, I32), 0)
    n = param(0, I32)
    prod = op(Ops.MUL, r, n)
    assert affine(op(Ops.ADD, prod, strong(1, I32))) == ({prod: 1}, 1)
    # a shift whose factor reaches the sign bit is not a product: a leaf
    big = op(Ops.SHL, r, strong(31, I32))
    assert affine(big) == ({big: 1}, 0)
    r64 = rng(strong(8, I64), 1)
    assert affine(op(Ops.SHL, r64, strong(31, I64))) == ({r64: 1 << 31}, 0)


def test_a_leaf_test_keeps_its_leaves_whole_and_refuses_the_rest():
    r = rng(strong(8, I32), 0)
    n = param(0, I32)
    inv = op(Ops.ADD, op(Ops.MUL, n, strong(2, I32)), strong(1, I32))   # free of r

    def leaf(u: UOp) -> bool:
        return u is r or u is inv or u is n

    idx = op(Ops.ADD, op(Ops.MUL, r, strong(4, I32)), inv)
    assert affine(idx, leaf) == ({r: 4, inv: 1}, 0)      # inv not split into 2n + 1
    assert affine(idx) == ({r: 4, n: 2}, 1)              # without the test it is
    assert affine(op(Ops.ADD, op(Ops.MUL, r, n), strong(1, I32)), leaf) is None
    memo: dict = {}
    assert affine(idx, leaf, memo) == ({r: 4, inv: 1}, 0)
    assert memo[idx] == ({r: 4, inv: 1}, 0) and r in memo


def test_mulacc_by_a_constant_is_a_product_plus_a_sum_when_asked():
    # tinygrad's row index MULACC(i, 77, c) = 77*i + c, the constant on either side (unroll's
    # store check: the index is linear in the counter); without mulacc a MULACC is a leaf
    r = rng(strong(8, I32), 0)
    n = param(0, I32)
    c = op(Ops.ADD, r, strong(2, I32))
    mac77 = op(Ops.MULACC, n, strong(77, I32), c)
    assert affine(mac77, mulacc=True) == ({n: 77, r: 1}, 2)
    assert affine(op(Ops.MULACC, strong(3, I32), r, r), mulacc=True) == ({r: 4}, 0)
    assert affine(mac77) == ({mac77: 1}, 0)

    def leaf(u: UOp) -> bool:
        return u is r or u is n

    assert affine(mac77, leaf, mulacc=True) == ({n: 77, r: 1}, 2)
    assert affine(mac77, leaf) is None
    # a product of two non-constants is no sum of the leaves
    assert affine(op(Ops.MULACC, r, n, strong(1, I32)), leaf, mulacc=True) is None
