"""Speed of the reference interpreter (kcc/ir/interp.py) on two kernels; see docs/performance.md.

    python bench/interp.py

- matmul: C = A @ B, 64x64x64 float32, a REG accumulator per (i, j), fused MULACC over k.
- elementwise: c[i] = a[i] * b[i] + a[i] over 1M float32 elements.
Each is run once to learn which loops must run in order, then timed (best of 3).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kcc.frontend.parser import parse  # noqa: E402
from kcc.ir.interp import run  # noqa: E402

MATMUL = """# kcc-uop 1
%C    = PARAM ParamArg(0, float32, {nn})
%A    = PARAM ParamArg(1, float32, {nn})
%B    = PARAM ParamArg(2, float32, {nn})
%acc  = BUFFER ParamArg(0, float32, 1, addrspace=REG)
%i    = RANGE({n}) (0, LOOP)
%j    = RANGE({n}) (1, LOOP)
%accJ = AFTER(%acc, %i, %j)
%p0   = INDEX(%accJ, 0)
%init = STORE(%p0, 0.0)
%k    = RANGE({n}, %init) (2, REDUCE)
%accK = AFTER(%acc, %init, %k)
%p1   = INDEX(%accK, 0)
%cur  = LOAD(%p1)
%ir   = MUL(%i, {n})
%ai   = ADD(%ir, %k)
%ax   = INDEX(%A, %ai)
%av   = LOAD(%ax)
%kr   = MUL(%k, {n})
%bi   = ADD(%kr, %j)
%bx   = INDEX(%B, %bi)
%bv   = LOAD(%bx)
%m    = MULACC(%av, %bv, %cur)
%st   = STORE(%p1, %m)
%ek   = END(%st, %k)
%accE = AFTER(%acc, %ek)
%p2   = INDEX(%accE, 0)
%res  = LOAD(%p2)
%ci   = ADD(%ir, %j)
%cx   = INDEX(%C, %ci)
%stc  = STORE(%cx, %res)
%e    = END(%stc, %j, %i)
SINK(%e) KernelInfo(name="matmul")
"""

ELEMENTWISE = """# kcc-uop 1
%c  = PARAM ParamArg(0, float32, {n})
%a  = PARAM ParamArg(1, float32, {n})
%b  = PARAM ParamArg(2, float32, {n})
%i  = RANGE({n}) (0, LOOP)
%ai = INDEX(%a, %i)
%av = LOAD(%ai)
%bi = INDEX(%b, %i)
%bv = LOAD(%bi)
%m  = MUL(%av, %bv)
%s  = ADD(%m, %av)
%ci = INDEX(%c, %i)
%st = STORE(%ci, %s)
%e  = END(%st, %i)
SINK(%e) KernelInfo(name="elementwise")
"""


def bench(sink, args, reps: int = 3) -> float:
    """Best wall time of `reps` runs after one warm-up run (seconds)."""
    run(sink, args)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        run(sink, args)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    n = 64
    A = rng.standard_normal(n * n).astype(np.float32)
    B = rng.standard_normal(n * n).astype(np.float32)
    C = np.zeros(n * n, np.float32)
    mm = parse(MATMUL.format(n=n, nn=n * n), "matmul.uop")
    t_mm = bench(mm, [C, A, B])
    ok_mm = np.allclose(C.reshape(n, n), A.reshape(n, n).astype(np.float64) @ B.reshape(n, n),
                        rtol=1e-4, atol=1e-4)
    m = 1 << 20
    a = rng.standard_normal(m).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    c = np.zeros(m, np.float32)
    ew = parse(ELEMENTWISE.format(n=m), "elementwise.uop")
    t_ew = bench(ew, [c, a, b])
    ok_ew = c.tobytes() == (a * b + a).tobytes()
    print("| kernel | interpreter time | result checked |")
    print("|---|---|---|")
    print(f"| matmul 64x64x64 float32 (REG accumulator, fused MULACC) | {t_mm * 1e3:.1f} ms "
          f"| {'ok' if ok_mm else 'WRONG'} |")
    print(f"| elementwise a*b+a, 1M float32 | {t_ew * 1e3:.1f} ms "
          f"| {'ok' if ok_ew else 'WRONG'} |")


if __name__ == "__main__":
    main()
