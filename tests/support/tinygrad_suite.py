"""The tinygrad computations of the acceptance suite (issue 8), each a function of a seeded
numpy generator returning numpy results, so the same computation runs on two devices."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _t(a: np.ndarray) -> Any:
    from tinygrad import Tensor
    return Tensor(a)


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def elementwise_broadcast(rng: np.random.Generator) -> list[np.ndarray]:
    a, b, c = _t(_f32(rng, 3, 1, 5)), _t(_f32(rng, 4, 1)), _t(_f32(rng, 5))
    return [(a * b + c - 1.5).numpy(), (a / (b.abs() + 1)).numpy()]


def unary_ops(rng: np.random.Generator) -> list[np.ndarray]:
    x = _t(_f32(rng, 37) * 3)
    p = _t(np.abs(_f32(rng, 37)) + 0.1)
    return [y.numpy() for y in (
        x.exp(), x.exp2(), p.log(), p.log2(), x.sin(), x.cos(), x.tan(), p.sqrt(), p.rsqrt(),
        x.relu(), x.sigmoid(), x.tanh(), x.abs(), -x, p.reciprocal(), x.trunc(), x.floor(),
        x.ceil(), x.round(), x.sign(), x.square(), x.gelu(), x.silu(), x.softplus(),
        x.erf(), x.elu())]


def reductions(rng: np.random.Generator) -> list[np.ndarray]:
    x = _t(_f32(rng, 3, 4, 5))
    out = [x.sum().numpy(), x.max().numpy()]
    for ax in range(3):
        out += [x.sum(axis=ax).numpy(), x.max(axis=ax).numpy(), x.min(axis=ax).numpy(),
                x.mean(axis=ax).numpy()]
    return out


def matmul(rng: np.random.Generator) -> list[np.ndarray]:
    a, b = _t(_f32(rng, 9, 17)), _t(_f32(rng, 17, 13))
    return [(a @ b).numpy()]


def matmul_threads(rng: np.random.Generator) -> list[np.ndarray]:
    """Big enough that tinygrad splits it over CPU threads (core_id, kcc's gidx0)."""
    a, b, c = _t(_f32(rng, 64, 64)), _t(_f32(rng, 64, 64)), _t(_f32(rng, 64))
    return [(a @ b + c).numpy()]


def conv2d(rng: np.random.Generator) -> list[np.ndarray]:
    x, w = _t(_f32(rng, 2, 3, 8, 8)), _t(_f32(rng, 4, 3, 3, 3))
    return [x.conv2d(w, padding=1).numpy(), x.conv2d(w, stride=2).numpy()]


def softmax(rng: np.random.Generator) -> list[np.ndarray]:
    x = _t(_f32(rng, 4, 10) * 4)
    return [x.softmax(axis=1).numpy(), x.log_softmax(axis=0).numpy()]


def layernorm(rng: np.random.Generator) -> list[np.ndarray]:
    x = _t(_f32(rng, 6, 16))
    return [x.layernorm(axis=-1).numpy()]


def argmax(rng: np.random.Generator) -> list[np.ndarray]:
    x = _t(_f32(rng, 5, 7))
    return [x.argmax(axis=1).numpy(), x.argmax(axis=0).numpy(), x.argmin().numpy()]


def gather_uint8(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad import dtypes
    table = _t(_f32(rng, 10, 4))
    idx = _t(rng.integers(0, 10, size=(6,)).astype(np.uint8))
    col = _t(rng.integers(0, 4, size=(10, 3)).astype(np.uint8))
    return [table[idx].numpy(), table.gather(1, col.cast(dtypes.int32)).numpy()]


def casts(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad import dtypes
    x = _t((_f32(rng, 23) * 100))
    i = _t(rng.integers(-300, 300, size=(23,)).astype(np.int32))
    out = []
    for dt in (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.int64,
               dtypes.float16, dtypes.float64, dtypes.bool):
        out.append(i.cast(dt).numpy())
        # float -> int only in range: out of range, C (tinygrad's clang path) leaves the
        # result undefined where kcc saturates (docs/tinygrad.md)
        lo = 0 if dt in (dtypes.uint8, dtypes.bool) else -100
        out.append(x.clip(lo, 100).cast(dt).numpy())
    out.append(x.cast(dtypes.float16).cast(dtypes.float32).numpy())
    out.append(i.bitcast(dtypes.float32).numpy().view(np.uint32))
    return out


def int64_arith(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad import dtypes
    a = _t(rng.integers(-2**40, 2**40, size=(19,)).astype(np.int64))
    b = _t(rng.integers(1, 2**20, size=(19,)).astype(np.int64))
    return [(a * b + 7).numpy(), (a - b * 3).numpy(), (a ^ b).numpy(), (a >> 3).numpy(),
            (a << 2).numpy(), a.cast(dtypes.int32).numpy(), (a.max() + b.sum()).numpy()]


def div_mod(rng: np.random.Generator) -> list[np.ndarray]:
    a = _t(rng.integers(-1000, 1000, size=(31,)).astype(np.int32))
    b = _t(rng.integers(1, 50, size=(31,)).astype(np.int32) *
           rng.choice([-1, 1], size=31).astype(np.int32))
    return [(a // b).numpy(), (a % b).numpy(), (a // 7).numpy(), (a % 7).numpy(),
            (a // -3).numpy(), (a % 16).numpy()]


def rand(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad import Tensor
    Tensor.manual_seed(1234)
    return [Tensor.rand(3, 17).numpy(), Tensor.randint(9, low=0, high=100).numpy(),
            Tensor.rand(5, dtype="float16").numpy()]


def randn(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad import Tensor
    Tensor.manual_seed(99)
    return [Tensor.randn(20).numpy()]


def where_nan_inf(rng: np.random.Generator) -> list[np.ndarray]:
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 3e38, -3e38], np.float32)
    a = _t(vals)
    b = _t(vals[::-1].copy())
    return [a.maximum(b).numpy(), a.minimum(b).numpy(), (a < b).where(a, b).numpy(),
            a.isnan().numpy(), a.isinf().numpy(), (a == b).numpy(), a.relu().numpy(),
            a.maximum(0.5).numpy(), (a != a).where(0.0, a).numpy()]


def symbolic_variable(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad import Variable
    x, m, w = _t(_f32(rng, 12)), _t(_f32(rng, 12, 5)), _t(_f32(rng, 5, 3))
    out = []
    for n in (3, 7):
        v = Variable("n", 1, 12).bind(n)
        out.append(((x[:v] * 2 + 1).sum()).numpy())
        out.append(x[:v].max().numpy())
        out.append((m[:v] @ w).sum(axis=0).numpy())
    # a symbolic size in a kernel split over CPU threads: a Variable and core_id together
    big, wb = _t(_f32(rng, 64, 64)), _t(_f32(rng, 64, 64))
    v = Variable("rows", 1, 64).bind(40)
    out.append((big[:v] @ wb).sum(axis=0).numpy())
    return out


SUITE: dict[str, Callable[[np.random.Generator], list[np.ndarray]]] = {
    f.__name__: f for f in (elementwise_broadcast, unary_ops, reductions, matmul,
                            matmul_threads, conv2d,
                            softmax, layernorm, argmax, gather_uint8, casts, int64_arith,
                            div_mod, rand, randn, where_nan_inf, symbolic_variable)
}
# bit for bit with tinygrad's clang path (integers, selections, tinygrad's own generator); the
# others are float computations where clang contracts a*b+c into an FMA and kcc does not
EXACT = frozenset({"argmax", "gather_uint8", "int64_arith", "div_mod", "rand",
                   "where_nan_inf"})
