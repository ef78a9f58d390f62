"""Every example kernel (examples/*.uop and tests/data/kernels/shared) run in the reference
interpreter and checked against numpy / plain Python computed independently here."""

from __future__ import annotations

import struct
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse_file
from kcc.ir.interp import run
from paths import DATA

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
SHARED = DATA / "kernels" / "shared"   # the shared examples (project copy)
RNG = np.random.default_rng(1234)


# -- independent reference helpers -----------------------------------------------------------

def round_exact(v: Fraction, dt: type) -> float:
    """The float of numpy type dt nearest to the rational v (ties to even), by search."""
    with np.errstate(over="ignore"):
        guess = np.array(float(v)).astype(dt)  # within one ulp of the answer
    if not np.isfinite(guess):
        return dt(guess)                        # beyond the largest finite value: overflow
    with np.errstate(over="ignore"):
        cands = [guess, np.nextafter(guess, dt(np.inf)), np.nextafter(guess, dt(-np.inf))]
    cands = [c for c in cands if np.isfinite(c)]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - v),
                                     int(np.array(c).view(f"u{np.dtype(dt).itemsize}")) & 1))
    return dt(best)


def fma32(a: float, b: float, c: float) -> np.float32:
    return round_exact(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), np.float32)


def bf16_bits(x: float) -> int:
    """float32 -> bfloat16 bits by the integer rounding trick (finite) / quiet-bit rule (NaN)."""
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    if x != x:
        return (u >> 16) | 0x40
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def sat_int(x: float, bits: int, signed: bool) -> int:
    if x != x:
        return 0
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if x in (float("inf"), float("-inf")):
        return hi if x > 0 else lo
    return max(lo, min(hi, int(x)))   # int() truncates toward zero


def threefry_ref(x: int, key: int) -> int:
    """Threefry-2x32, 20 rounds, written from the definition in UOP_FORMAT.md."""
    M = 0xFFFFFFFF

    def rotl(v: int, r: int) -> int:
        return ((v << r) | (v >> (32 - r))) & M
    x0, x1, k0, k1 = x & M, x >> 32, key & M, key >> 32
    ks = [k1, k0 ^ k1 ^ 0x1BD11BDA, k0]
    a, b = (x0 + ks[2]) & M, (x1 + ks[0]) & M
    for i in range(5):
        for r in ((13, 15, 26, 6) if i % 2 == 0 else (17, 29, 16, 24)):
            a = (a + b) & M
            b = a ^ rotl(b, r)
        a = (a + ks[i % 3]) & M
        b = (b + ks[(i + 1) % 3] + i + 1) & M
    return (b << 32) | a


def f32(a) -> np.ndarray:
    return np.asarray(a, np.float32)


# -- the examples ----------------------------------------------------------------------------

def test_saxpy() -> None:
    x, y = f32(RNG.standard_normal(1024)), f32(RNG.standard_normal(1024))
    a = 1.7
    want = np.float32(a) * x + y      # two roundings: MUL then ADD, as the graph says
    out = y.copy()
    run(parse_file(EX / "saxpy.uop"), [out, x, a])
    assert out.tobytes() == want.tobytes()


def test_sum_reduce_sequential_order() -> None:
    x = f32(RNG.standard_normal(256) * 1e3)
    acc = np.float32(0)
    for v in x:
        acc = np.float32(acc + v)
    out = np.zeros(1, np.float32)
    run(parse_file(EX / "sum_reduce.uop"), [out, x])
    assert out[0] == acc


def test_matmul_tiled_fused() -> None:
    A = f32(RNG.standard_normal((16, 16)))
    B = f32(RNG.standard_normal((16, 16)))
    want = np.zeros((16, 16), np.float32)
    for r in range(16):
        for c in range(16):
            acc = np.float32(0)
            for k in range(16):
                acc = fma32(A[r, k], B[k, c], acc)
            want[r, c] = acc
    C = np.full(256, np.nan, np.float32)
    run(parse_file(EX / "matmul_tiled.uop"), [C, A.ravel(), B.ravel()])
    assert C.tobytes() == want.ravel().tobytes()
    assert np.allclose(C.reshape(16, 16), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)


def test_softmax_row() -> None:
    x = f32(RNG.standard_normal(64) * 4)
    m = x.max()
    e = np.exp2((np.float32(1.4426950408889634) * (x - m)).astype(np.float64)).astype(np.float32)
    s = np.float32(0)
    for v in e:
        s = np.float32(s + v)
    want = e / s
    out = np.zeros(64, np.float32)
    run(parse_file(EX / "softmax_row.uop"), [out, x])
    assert out.tobytes() == want.tobytes()
    ref = np.exp(x.astype(np.float64) - x.max())
    assert np.allclose(out, ref / ref.sum(), rtol=1e-5)


def test_float4_vector() -> None:
    x = f32(RNG.standard_normal(64))
    want = (x.reshape(16, 4)[:, ::-1] * np.float32(2) + f32([0.5, 1.5, 2.5, 3.5])).ravel()
    out = np.zeros(64, np.float32)
    run(parse_file(EX / "float4_vector.uop"), [out, x])
    assert out.tobytes() == want.tobytes()


def test_gated_load_and_store() -> None:
    x = np.arange(100, 112, dtype=np.int32)
    out, out2 = np.full(16, 7, np.int32), np.full(16, 9, np.int32)
    want, want2 = out.copy(), out2.copy()
    for i in range(16):
        v = int(x[i - 2]) if 1 < i < 14 else -1
        if i % 2 == 0:
            want[i] = v
        if i < 4:
            want2[i + 8] = x[i]
    run(parse_file(EX / "gated.uop"), [out, out2, x])
    assert out.tolist() == want.tolist() and out2.tolist() == want2.tolist()


INT_DTS = [("int8", 8, True), ("uint8", 8, False), ("int16", 16, True), ("uint16", 16, False),
           ("int32", 32, True), ("uint32", 32, False), ("int64", 64, True),
           ("uint64", 64, False)]


def test_casts_every_family() -> None:
    x = f32([1.5, -2.7, 300.9, -1e10, np.nan, np.inf, 65519.0, 3.3895314e38])
    n = np.array([0, -1, 2**53 + 1, -(2**63), 0x12345678ABCDEF01, 16777217, 2**63 - 1, 255],
                 np.int64)
    h = np.array([0.1, -2.5, 65504, np.inf, np.nan, -0.0, 6e-8, 1.0], np.float16)
    b = np.array([True, False] * 4)
    outs = ([np.zeros(8, d) for d, _, _ in INT_DTS]
            + [np.zeros(8, np.float16), np.zeros(8, np.uint16), np.zeros(8, np.float64),
               np.zeros(8, bool)]
            + [np.zeros(8, np.float32), np.zeros(8, np.float16), np.zeros(8, np.uint16),
               np.zeros(8, np.float64), np.zeros(8, np.int8), np.zeros(8, bool),
               np.zeros(8, np.int64)]
            + [np.zeros(8, np.uint16), np.zeros(8, np.float32), np.zeros(8, np.float32),
               np.zeros(8, np.int32)])
    run(parse_file(EX / "casts.uop"), [x, n, h, b] + outs)
    for o, (name, bits, signed) in zip(outs, INT_DTS):
        assert o.tolist() == [sat_int(float(v), bits, signed) for v in x], name
    assert outs[8].tobytes() == np.array([round_exact(Fraction(float(v)), np.float16)
                                          if np.isfinite(v) else v for v in x],
                                         np.float16).tobytes()
    assert outs[9].tolist() == [bf16_bits(float(v)) for v in x]
    assert outs[10].tolist() == x.astype(np.float64).tolist() or np.isnan(outs[10][4])
    assert outs[11].tolist() == [v != 0 for v in x.tolist()]          # NaN -> True
    i_f32, i_f16, i_bf16, i_f64, i_i8, i_b, i_rt = outs[12:19]
    assert i_f32.tolist() == [float(round_exact(Fraction(int(v)), np.float32)) for v in n]
    assert i_f16.tobytes() == np.array([round_exact(Fraction(int(v)), np.float16)
                                        if abs(int(v)) < 65520 else np.copysign(np.inf, int(v))
                                        for v in n], np.float16).tobytes()
    assert i_bf16.tolist() == [bf16_bits(float(round_exact(Fraction(int(v)), np.float64)))
                               if abs(int(v)) < 2**53 else bf16_bits(float(i_f32[k]))
                               for k, v in enumerate(n)]
    assert i_f64.tolist() == [float(round_exact(Fraction(int(v)), np.float64)) for v in n]
    assert i_i8.tolist() == [((int(v) + 128) & 0xFF) - 128 for v in n]
    assert i_b.tolist() == [int(v) != 0 for v in n]
    assert i_rt.tolist() == [int(v) & 0xFFFFFFFF for v in n]
    assert i_rt[4] == 2882400001
    hb, hf, bf, bi = outs[19:]
    assert hb.tolist() == [bf16_bits(float(v)) for v in h.astype(np.float32)]
    assert hf.tobytes() == h.astype(np.float32).tobytes()
    assert bf.tolist() == [1.0, 0.0] * 4 and bi.tolist() == [1, 0] * 4


def test_int64_bits() -> None:
    M = (1 << 64) - 1
    x = RNG.integers(0, 2**63, 8, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    y = RNG.integers(0, 2**63, 8, dtype=np.uint64) | np.uint64(1 << 63)
    a = np.array([-(2**63), -5, -1, 0, 1, 3037000500, 2**62, 2**63 - 1], np.int64)
    n = np.array([0, 1, 7, 31, 32, 33, 62, 63], np.uint64)
    outs = [np.zeros(8, d) for d in (np.uint64, np.uint64, np.int64, np.uint64, np.uint64,
                                     np.uint64, np.uint64, np.int64, np.int64)]
    run(parse_file(EX / "int64_bits.uop"), [x, y, a, n] + outs)
    X, Y, A, N = ([int(v) for v in arr] for arr in (x, y, a, n))

    def s64(v: int) -> int:
        v &= M
        return v - (1 << 64) if v >> 63 else v
    want = [[(p << q) & M for p, q in zip(X, N)], [p >> q for p, q in zip(X, N)],
            [p >> q for p, q in zip(A, N)], [p ^ q for p, q in zip(X, Y)],
            [p & q for p, q in zip(X, Y)], [p | q for p, q in zip(X, Y)],
            [(p * q) & M for p, q in zip(X, Y)], [s64(p * p) for p in A],
            [s64(p - 1) for p in A]]
    for o, w in zip(outs, want):
        assert [int(v) for v in o] == w


def test_gidx_workers() -> None:
    x = f32(RNG.standard_normal(256))
    want = np.zeros(256, np.float32)
    for g0 in range(4):
        for g1 in range(2):
            for i in range(32):
                k = (g0 * 2 + g1) * 32 + i
                want[k] = np.float32(np.float32(x[k] * x[k]) + np.float32(g0)) - np.float32(g1)
    out = np.zeros(256, np.float32)
    run(parse_file(EX / "gidx_workers.uop"), [out, x])
    assert out.tobytes() == want.tobytes()


def test_local_barrier_tree_reduction() -> None:
    x = f32(RNG.standard_normal(64))
    v = x.reshape(4, 16).copy()
    for half in (8, 4, 2, 1):
        v[:, :half] = v[:, :half] + v[:, half:2 * half]
    out = np.zeros(4, np.float32)
    run(parse_file(EX / "local_reduce.uop"), [out, x])
    assert out.tobytes() == v[:, 0].tobytes()


def test_threefry_matches_definition() -> None:
    x = RNG.integers(0, 2**64 - 64, 32, dtype=np.uint64)
    key = 0x243F6A8885A308D3
    out = np.zeros(32, np.uint64)
    run(parse_file(EX / "threefry.uop"), [out, x, key])
    assert [int(v) for v in out] == [threefry_ref(int(v) + i, key) for i, v in enumerate(x)]


def test_transcendentals() -> None:
    x = f32(RNG.uniform(0.01, 20, 64))
    x[:4] = [0.5, 1.0, 2.0, 1e-3]
    h = np.asarray(RNG.uniform(-8, 8, 64), np.float16)
    h[:3] = [0.0, -0.0, 4.0]
    outs = [np.zeros(64, np.float32) for _ in range(5)]
    outs += [np.zeros(64, np.float16), np.zeros(64, np.float16)]
    run(parse_file(EX / "transcendental.uop"), [x, h] + outs)
    d = x.astype(np.float64)
    # each result: the float64 function rounded once to float32 (docs/semantics.md)
    for o, f in zip(outs[:3], (np.exp2, np.log2, np.sin)):
        assert o.tobytes() == f(d).astype(np.float32).tobytes()
    assert outs[3].tobytes() == np.sqrt(x).tobytes()     # IEEE sqrt is correctly rounded
    assert all(Fraction(float(r)) ** 2 != Fraction(float(v)) or r * r == v
               for r, v in zip(outs[3], x))
    assert outs[4].tolist() == [float(round_exact(1 / Fraction(float(v)), np.float32)) for v in x]
    assert outs[5].tobytes() == np.exp2(h.astype(np.float64)).astype(np.float16).tobytes()
    # float64 sqrt rounded to float16 is the correctly rounded float16 sqrt (53 >= 2*11 + 2)
    hs = np.sqrt(h.astype(np.float64)).astype(np.float16)
    assert np.array_equal(outs[6], hs, equal_nan=True) and np.isnan(hs).any()
    # sanity against high-precision values: within 1 ulp of float32
    assert np.all(np.abs(outs[0] - np.exp2(d)) <= np.spacing(outs[0]))


# -- the shared examples ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["colmax_reg_acc", "pad_gated_load", "workers_scale"])
def test_shared_examples(name: str) -> None:
    sink = parse_file(SHARED / f"{name}.uop")
    if name == "colmax_reg_acc":
        a = f32(RNG.standard_normal(128))
        a[5] = np.nan          # MAX(acc, nan) is acc's operand rule: a < b ? b : a
        out = np.zeros(16, np.float32)
        run(sink, [out, a])
        want = []
        for j in range(16):
            m = -np.inf
            for i in range(8):
                v = a[i * 16 + j]
                m = v if m < v else m
            want.append(m)
        assert out.tobytes() == f32(want).tobytes()
    elif name == "pad_gated_load":
        x = np.arange(7, dtype=np.int32) * 3 + 1
        out = np.full(10, -9, np.int32)
        run(sink, [out, x])
        assert out.tolist() == [0, 0, 0] + x.tolist()
    else:
        x = RNG.standard_normal(256)
        y = np.zeros(256)
        run(sink, [y, x, -0.75])
        assert y.tobytes() == (x * -0.75).tobytes()


def test_every_example_file_is_tested() -> None:
    tested = {"saxpy", "sum_reduce", "matmul_tiled", "softmax_row", "float4_vector", "gated",
              "casts", "int64_bits", "gidx_workers", "local_reduce", "threefry",
              "transcendental"}
    assert {p.stem for p in EX.glob("*.uop")} == tested
    assert {p.stem for p in SHARED.glob("*.uop")} <= {"colmax_reg_acc", "pad_gated_load",
                                                       "workers_scale"}
