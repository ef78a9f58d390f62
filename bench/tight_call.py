"""Per-call time of a loaded CPU kernel without tinygrad's ctypes call: a C loop calls the entry
point many times and the batch's time is divided by the count (bench/sweep_vs_clang.py
--tight).

tinygrad's CPUProgram calls a kernel through ctypes (~1 µs, the same for any object), so a
kernel of a few ns reads as that call. Here a small shared object (built with `cc -O2` on
first use) takes the entry's address and its arguments (buffer addresses, then the variable
values, each a uint64 as CPUProgram passes them; the core_id argument set to each worker in
turn as CPUProgram's loop does) and times `calls` calls with CLOCK_MONOTONIC. `pair` runs
two entry points batch by batch, alternating which goes first, so that a busy host slows both
alike; each batch's per-call ratio is a sample of the ratio.
"""

from __future__ import annotations

import ctypes
import statistics
import subprocess
import tempfile
from pathlib import Path

MAX_ARGS = 24          # the most arguments a call passes (tinygrad allows 63; the sweep's < 20)


def _source() -> str:
    """The helper's C: one call per argument count, selected by a switch."""
    cases = []
    for n in range(MAX_ARGS + 1):
        params = ", ".join(["u64"] * n) or "void"
        args = ", ".join(f"a[{i}]" for i in range(n))
        cases.append(f"  case {n}: {{ void (*g)({params}) = f; for (long c = 0; c < calls; c++)"
                     f" for (long t = 0; t < workers; t++) {{ if (core >= 0) a[core] = t;"
                     f" g({args}); }} break; }}")
    return (
        "#include <stdint.h>\n#include <time.h>\ntypedef uint64_t u64;\n"
        "static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);"
        " return t.tv_sec * 1e9 + t.tv_nsec; }\n"
        "double batch(void *f, u64 *a, int n, int core, long workers, long calls) {\n"
        "  double t0 = now();\n  switch (n) {\n" + "\n".join(cases) +
        "\n  default: return -1;\n  }\n  return (now() - t0) / calls;\n}\n")


_LIB: list = []


def _lib() -> ctypes.CDLL:
    """The compiled helper (built once per process)."""
    if not _LIB:
        d = Path(tempfile.mkdtemp(prefix="kcc_tight_"))
        (d / "tight.c").write_text(_source())
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(d / "tight.so"),
                        str(d / "tight.c")], check=True)
        lib = ctypes.CDLL(str(d / "tight.so"))
        lib.batch.restype = ctypes.c_double
        lib.batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.c_int,
                              ctypes.c_int, ctypes.c_long, ctypes.c_long]
        _LIB.append(lib)
    return _LIB[0]


class Entry:
    """One loaded kernel's entry point and the arguments CPUProgram would pass it."""

    def __init__(self, addr: int, args: list[int], core: int, workers: int):
        if len(args) > MAX_ARGS:
            raise ValueError(f"{len(args)} arguments: the helper takes at most {MAX_ARGS}")
        self.addr, self.n, self.core, self.workers = addr, len(args), core, workers
        self.args = (ctypes.c_uint64 * max(1, len(args)))(*args)

    def batch(self, calls: int) -> float:
        """Nanoseconds a call, over `calls` calls in a row."""
        return _lib().batch(self.addr, self.args, self.n, self.core, self.workers, calls)


def pair(a: Entry, b: Entry, batches: int, budget_ns: float = 20e3,
         reset=None) -> tuple[float, float, list[float]]:
    """(median ns a call of a, of b, per-batch ratios b / a) over `batches` batches each,
    alternating which runs first; each batch makes as many calls as fit in budget_ns (by a
    first single call of each). `reset`, if given, is called before every batch (outside the
    timed span) to restore the buffers."""
    if reset:
        reset()
    a.batch(1), b.batch(1)                                   # warm caches and branch state
    one = max(min(a.batch(1), b.batch(1)), 0.5)
    calls = max(1, min(100000, int(budget_ns / one)))
    ta, tb, ratios = [], [], []
    for i in range(batches):
        order = (a, b) if i % 2 == 0 else (b, a)
        got = {}
        for e in order:
            if reset:
                reset()
            got[id(e)] = e.batch(calls)
        ta.append(got[id(a)])
        tb.append(got[id(b)])
        ratios.append(got[id(b)] / got[id(a)])
    return statistics.median(ta), statistics.median(tb), ratios


def quantile(xs: list[float], q: float) -> float:
    """The q-quantile of xs (nearest rank)."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]
