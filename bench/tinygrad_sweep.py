"""A wider sweep of tinygrad computations through DEV=CPU:KCC, each compared with tinygrad's
default DEV=CPU (clang) on the same inputs (floats to rtol 1e-3, everything else exactly).
Prints one line per computation; exits 1 if any fails. docs/tinygrad.md records the result.

    python bench/tinygrad_sweep.py [NAME ...]      # KCC_TINYGRAD_DUMP=dir keeps refused .uop
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kcc.tinygrad  # noqa: E402,F401
from tinygrad import Tensor, dtypes  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402

# inputs are made once: both devices see the same values
rng = np.random.default_rng(0)
F = rng.standard_normal((4, 8, 8)).astype(np.float32)
I = rng.integers(-50, 50, (4, 8, 8)).astype(np.int32)
BIG1 = rng.standard_normal(1 << 16).astype(np.float32)
BIG2 = rng.standard_normal((512, 512)).astype(np.float32)
U8 = rng.integers(0, 255, (64,)).astype(np.uint8)
ODD = rng.standard_normal((333, 77)).astype(np.float32)       # no tile or unroll factor divides
W = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
X = rng.standard_normal((2, 8, 14, 14)).astype(np.float32)
cases = {   # name -> a computation returning a numpy array
    "half_arith": lambda: (Tensor(F).cast(dtypes.half) * 1.5 + 2).numpy(),
    "half_sum": lambda: Tensor(F).cast(dtypes.half).sum(axis=2).numpy(),
    "bf16": lambda: (Tensor(F).cast(dtypes.bfloat16) * 3).cast(dtypes.float).numpy(),
    "int8_matmul": lambda: (Tensor(I[0]).cast(dtypes.int8)
                            @ Tensor(I[1]).cast(dtypes.int8)).numpy(),
    "cumsum": lambda: Tensor(F).cumsum(axis=2).numpy(),
    "maxpool": lambda: Tensor(F[None]).max_pool2d().numpy(),
    "avgpool": lambda: Tensor(F[None]).avg_pool2d().numpy(),
    "interp": lambda: Tensor(F[None]).interpolate((16, 16)).numpy(),
    "sort": lambda: Tensor(F[0, 0]).sort()[0].numpy(),
    "topk": lambda: Tensor(F[0, 0]).topk(3)[0].numpy(),
    "one_hot": lambda: Tensor(U8 % 10).cast(dtypes.int32).one_hot(10).numpy(),
    "embedding": lambda: Tensor(F[0])[Tensor(U8[:5] % 8)].numpy(),
    "scatter": lambda: Tensor.zeros(4, 8).contiguous().scatter(
        1, Tensor(np.array([[1, 2], [0, 3], [4, 5], [6, 7]], np.int32)), 1.0).numpy(),
    "pad_reflect": lambda: Tensor(F[0]).pad((1,1,2,2), mode="reflect").numpy(),
    "flip_cat": lambda: Tensor(F[0]).flip(1).cat(Tensor(F[1]), dim=0).numpy(),
    "bitwise_u8": lambda: ((Tensor(U8) & 0x0F) | (Tensor(U8) >> 3) ^ 0x55).numpy(),
    "shift_u8": lambda: (Tensor(U8) << 1).numpy(),
    "pow": lambda: (Tensor(np.abs(F)) ** 1.7).numpy(),
    "clamp_lerp": lambda: Tensor(F).clamp(-0.5, 0.5).lerp(Tensor(F*2), 0.3).numpy(),
    "any_all": lambda: np.array([(Tensor(F) > 1).any().numpy(), (Tensor(F) > -9).all().numpy()]),
    "logical": lambda: ((Tensor(F) > 0).logical_not() | (Tensor(F) < -1)).numpy(),
    "arange": lambda: (Tensor.arange(100) * 3 % 7).numpy(),
    "idiv_i64": lambda: (Tensor(I.astype(np.int64)) // 7 + Tensor(I.astype(np.int64)) % 5).numpy(),
    "uint32_div": lambda: (Tensor(np.abs(I).astype(np.uint32)) // 3).numpy(),
    "float64": lambda: (Tensor(F.astype(np.float64)).exp().sum(axis=1)).numpy(),
    "f64_sin": lambda: Tensor(F.astype(np.float64) * 100).sin().numpy(),
    "var_std": lambda: np.array([Tensor(F).var().numpy(), Tensor(F).std(axis=0).numpy().sum()]),
    "batchnorm_like": lambda: ((Tensor(F) - Tensor(F).mean(axis=(1, 2), keepdim=True))
                               / (Tensor(F).std(axis=(1, 2), keepdim=True) + 1e-5)).numpy(),
    "attention": lambda: Tensor(F[None]).scaled_dot_product_attention(
        Tensor(F[None]), Tensor(F[None])).numpy(),
    "cross_entropy": lambda: Tensor(F[0]).sparse_categorical_crossentropy(
        Tensor(np.arange(8, dtype=np.int32) % 8)).numpy(),
    "conv_transpose": lambda: Tensor(F[None, :2]).conv_transpose2d(
        Tensor(F[:2, :3, :3].reshape(2, 1, 3, 3))).numpy(),
    "mul_bool": lambda: (Tensor(F) > 0).cast(dtypes.float).mul(Tensor(F)).numpy(),
    "int16": lambda: (Tensor(I).cast(dtypes.int16) * 300).numpy(),
    "uint16_max": lambda: Tensor(np.abs(I).astype(np.uint16)).max(axis=1).numpy(),
    "large_ew": lambda: (Tensor(BIG1).sigmoid() * 2).numpy(),
    "big_reduce": lambda: Tensor(BIG2).sum(axis=0).numpy(),
    # the benchmark's workloads (bench/tinygrad_x86.py) at sizes that are not its own
    "matmul_64": lambda: (Tensor(BIG2[:64, :64]) @ Tensor(BIG2[64:128, :64])).numpy(),
    "matmul_36x44": lambda: (Tensor(ODD[:36, :64]) @ Tensor(BIG2[:64, :44])).numpy(),  # 11 of 4
    "matmul_36x48": lambda: (Tensor(ODD[:36, :64]) @ Tensor(BIG2[:64, :48])).numpy(),  # 16 of 3
    "matmul_odd": lambda: (Tensor(ODD[:37, :53]) @ Tensor(ODD[40:93, :29])).numpy(),
    "conv2d": lambda: Tensor(X).conv2d(Tensor(W), padding=1).numpy(),
    "conv2d_odd": lambda: Tensor(X[:1, :, :13, :11]).conv2d(Tensor(W[:5]), stride=2).numpy(),
    "softmax_rows": lambda: Tensor(BIG2[:64]).softmax(axis=1).numpy(),
    "softmax_odd": lambda: Tensor(ODD).softmax(axis=1).numpy(),
    "layernorm": lambda: Tensor(BIG2[:128]).layernorm().numpy(),
    "layernorm_odd": lambda: Tensor(ODD).layernorm().numpy(),
    "sum_odd": lambda: Tensor(ODD).sum(axis=1).numpy(),
    "max_odd": lambda: Tensor(ODD).max(axis=0).numpy(),
    "argmax": lambda: Tensor(ODD).argmax(axis=1).numpy(),
    "exp2_mul": lambda: (Tensor(BIG1).exp2() * Tensor(BIG1) + 1).numpy(),
}
failed = 0
names = sys.argv[1:] or list(cases)
for name in names:
    f = cases[name]
    try:
        with Context(DEV="CPU", PARALLEL=0):
            w = f()
    except Exception as e:                  # report and go on: this is a survey
        print(f"{name}: REFERENCE FAILED {type(e).__name__}: {str(e)[:200]}")
        failed += 1
        continue
    try:
        with Context(DEV="CPU:KCC", PARALLEL=0):
            g = f()
    except Exception as e:
        print(f"{name}: KCC FAILED {str(e)[:800]}")
        failed += 1
        continue
    w, g = np.asarray(w), np.asarray(g)
    if w.dtype.kind == "f":
        ok = np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-3, atol=1e-4,
                         equal_nan=True)
    else:
        ok = np.array_equal(g, w)
    failed += not ok
    diff = "" if ok else f" max diff {np.nanmax(np.abs(g.astype(np.float64) - w)):.3g}"
    print(f"{name}: {'ok' if ok else 'MISMATCH'}{diff}")
print(f"{len(names) - failed} of {len(names)} match")
sys.exit(1 if failed else 0)
