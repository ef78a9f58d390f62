"""The machine's memory bandwidth, measured beside the kernels (STREAM-style copy and add).

    python bench/bandwidth.py [--n 16777216] [--reps 11]      # standalone: the table only

`bench/tinygrad_x86.py` times these peers in the same interleaved rounds as its memory-bound
kernels (add 16M), over the same element count, so that a kernel's GB/s can be read as a
share of what this machine moved in the same minutes. The peers, all one thread:

- C compiled by clang -O3 -march=native -fno-builtin: `copy` (dst[i] = a[i]) and `add`
  (dst[i] = a[i] + b[i]) with ordinary stores (-fno-builtin: the copy loop stays a loop of
  VMOVUPS instead of becoming a call of memcpy), and the same loops with
  `__builtin_nontemporal_store` (which clang emits as VMOVNTPS: the stored lines bypass the
  caches, so no write-allocate read of the destination; an SFENCE ends the function, as it
  must for other threads to see the stores in order);
- `read` (the sum of a[i] in four 8-lane accumulators, nothing stored): what one thread can
  read, the reference for a kernel that only reads (a row sum); STREAM has no read-only
  kernel, and a read-only loop cannot move copy's counted bytes (copy's reads and its
  non-temporal writes overlap on the memory bus);
- libc's memcpy (glibc switches to non-temporal stores itself above a size threshold);
- numpy: `np.copyto(dst, a)` and `np.add(a, b, out=dst)`.

Bytes are counted as STREAM counts them: what the loop reads and writes (copy 8 bytes an
element, add 12), NOT the write-allocate read that an ordinary store also causes (the line of
dst is read before it is written: copy then moves 12 bytes an element through the memory bus
and add 16). That is why a non-temporal peer reads faster than an ordinary one here, and why
the reference is the best peer of each kind (copy, add) in the run.

STREAM's own rule is arrays of at least 4x the last-level cache, so that no run reads what
the previous one left in it. This VM reports a 480 MiB L3 (the host's), larger than the
arrays, so `Evictor` reads a buffer of twice the L3 (at most 1 GiB) before each timed call,
untimed: every call, a peer's or a kernel's, then starts from DRAM with no dirty lines left
by the call before it.
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

C_SRC = r"""
#include <stddef.h>
typedef float v8 __attribute__((vector_size(32), aligned(32)));

void copy_plain(float *restrict d, const float *restrict a, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = a[i];
}
void add_plain(float *restrict d, const float *restrict a, const float *restrict b,
               size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i];
}
/* n a multiple of 8, d 32-byte aligned: 8-float non-temporal stores */
void copy_nt(float *restrict d, const float *restrict a, size_t n) {
    for (size_t i = 0; i < n; i += 8)
        __builtin_nontemporal_store(*(const v8 *)(a + i), (v8 *)(d + i));
    __builtin_ia32_sfence();
}
void add_nt(float *restrict d, const float *restrict a, const float *restrict b, size_t n) {
    for (size_t i = 0; i < n; i += 8)
        __builtin_nontemporal_store(*(const v8 *)(a + i) + *(const v8 *)(b + i),
                                    (v8 *)(d + i));
    __builtin_ia32_sfence();
}
/* STREAM's triad: d = a + s*b */
void triad_plain(float *restrict d, const float *restrict a, const float *restrict b,
                 float s, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = a[i] + s * b[i];
}
void triad_nt(float *restrict d, const float *restrict a, const float *restrict b, float s,
              size_t n) {
    for (size_t i = 0; i < n; i += 8)
        __builtin_nontemporal_store(*(const v8 *)(a + i) + s * *(const v8 *)(b + i),
                                    (v8 *)(d + i));
    __builtin_ia32_sfence();
}
/* n a multiple of 32: what one thread reads, nothing stored */
float read_sum(const float *restrict a, size_t n) {
    v8 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (size_t i = 0; i < n; i += 32) {
        s0 += *(const v8 *)(a + i); s1 += *(const v8 *)(a + i + 8);
        s2 += *(const v8 *)(a + i + 16); s3 += *(const v8 *)(a + i + 24);
    }
    v8 s = (s0 + s1) + (s2 + s3);
    float t = 0;
    for (int j = 0; j < 8; j++) t += s[j];
    return t;
}
"""
TRIAD_S = 3.0

# bytes one element moves as counted (no write-allocate), by kind
COUNTED = {"copy": 8, "add": 12, "triad": 12, "read": 4}
# bytes one element moves through memory with ordinary stores (the write-allocate read too)
WITH_ALLOCATE = {"copy": 12, "add": 16, "triad": 16, "read": 4}


def aligned(n: int, dt: Any = np.float32, align: int = 64) -> np.ndarray:
    """A zeroed array of n elements whose data starts at a multiple of align bytes."""
    dt = np.dtype(dt)
    raw = np.zeros(n * dt.itemsize + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + n * dt.itemsize].view(dt)


@dataclass
class Peer:
    """One reference loop: its kind (copy or add), how it stores, and the call."""

    name: str
    kind: str
    stores: str             # "ordinary", "non-temporal", "none" or "libc's choice" (memcpy)
    run: Callable[[], None]


class Peers:
    """The bandwidth peers over n float32 elements, on buffers of their own (64-byte aligned:
    the non-temporal loops need 32). Keep the object alive while its peers run."""

    def __init__(self, n: int, cc: str = "clang", tmp: Path | None = None,
                 triad: bool = False, read: bool = False):
        if n % 32:
            raise ValueError(f"n = {n} is not a multiple of 32")
        self.n = n
        rng = np.random.default_rng(1)
        self.a = aligned(n)
        self.a[:] = rng.standard_normal(n, dtype=np.float32)
        self.b = aligned(n)
        self.b[:] = rng.standard_normal(n, dtype=np.float32)
        self.d = aligned(n)
        self.peers: list[Peer] = []
        self.errors: list[str] = []
        self._so = self._build(cc, tmp)
        if self._so is not None:
            so, p = self._so, ctypes.c_void_p
            for name in ("copy_plain", "copy_nt"):
                getattr(so, name).argtypes = [p, p, ctypes.c_size_t]
            for name in ("add_plain", "add_nt"):
                getattr(so, name).argtypes = [p, p, p, ctypes.c_size_t]
            for name in ("triad_plain", "triad_nt"):
                getattr(so, name).argtypes = [p, p, p, ctypes.c_float, ctypes.c_size_t]
            so.read_sum.argtypes = [p, ctypes.c_size_t]
            so.read_sum.restype = ctypes.c_float
            d, a, b = self.d.ctypes.data, self.a.ctypes.data, self.b.ctypes.data
            self.read_got = 0.0

            def read() -> None:
                self.read_got = so.read_sum(a, n)
            self.peers += [Peer("clang -O3 read", "read", "none", read)] if read else []
            self.peers += [
                Peer("clang -O3 triad", "triad", "ordinary",
                     lambda: so.triad_plain(d, a, b, TRIAD_S, n)),
                Peer("clang -O3 triad, nontemporal", "triad", "non-temporal",
                     lambda: so.triad_nt(d, a, b, TRIAD_S, n)),
            ] if triad else []
            self.peers += [
                Peer("clang -O3 copy", "copy", "ordinary", lambda: so.copy_plain(d, a, n)),
                Peer("clang -O3 copy, nontemporal", "copy", "non-temporal",
                     lambda: so.copy_nt(d, a, n)),
                Peer("clang -O3 add", "add", "ordinary", lambda: so.add_plain(d, a, b, n)),
                Peer("clang -O3 add, nontemporal", "add", "non-temporal",
                     lambda: so.add_nt(d, a, b, n)),
            ]
        libc = ctypes.CDLL(None)
        libc.memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        libc.memcpy.restype = ctypes.c_void_p
        d, a = self.d.ctypes.data, self.a.ctypes.data
        self.peers += [
            Peer("libc memcpy", "copy", "libc's choice", lambda: libc.memcpy(d, a, 4 * n)),
            Peer("numpy copyto", "copy", "ordinary", lambda: np.copyto(self.d, self.a)),
            Peer("numpy add", "add", "ordinary", lambda: np.add(self.a, self.b, out=self.d)),
        ]

    def _build(self, cc: str, tmp: Path | None) -> Any:
        """The C peers as a shared object (None, with a note in errors, without clang)."""
        if shutil.which(cc) is None:
            self.errors.append(f"{cc} not found: no C peers")
            return None
        with tempfile.TemporaryDirectory(dir=tmp) as d:
            src, lib = Path(d) / "bw.c", Path(d) / "bw.so"
            src.write_text(C_SRC)
            subprocess.run([cc, "-O3", "-march=native", "-fno-builtin", "-shared", "-fPIC",
                            str(src), "-o", str(lib)], check=True)
            return ctypes.CDLL(str(lib))       # mapped: the file may go

    def check(self) -> list[str]:
        """Each peer's output against numpy's own (names of the peers that are wrong)."""
        bad = []
        want = {"copy": self.a.copy(), "add": self.a + self.b}
        for p in self.peers:
            self.d[:] = 0
            p.run()
            if p.kind == "read":             # a float32 sum in 32 lanes: within its roundings
                total = float(np.abs(self.a).astype(np.float64).sum())
                if abs(self.read_got - float(self.a.astype(np.float64).sum())) > 1e-5 * total:
                    bad.append(p.name)
            elif p.kind == "triad":        # contracted to an FMA or not: within one rounding
                tw = self.a.astype(np.float64) + TRIAD_S * self.b.astype(np.float64)
                if not np.allclose(self.d, tw, rtol=1e-6, atol=1e-6):
                    bad.append(p.name)
            elif not np.array_equal(self.d, want[p.kind]):
                bad.append(p.name)
        return bad

    def close(self) -> None:
        """Free the buffers (the timings stay readable; the peers cannot run again)."""
        def gone() -> None:
            raise RuntimeError("the bandwidth peers' buffers were freed")
        self.a = self.b = self.d = None         # type: ignore[assignment]
        self.peers = [Peer(p.name, p.kind, p.stores, gone) for p in self.peers]

    def fns(self) -> dict[str, Callable[[], None]]:
        """The peers by name, for an interleaved timing (bench/tinygrad_x86.timed)."""
        return {f"bw: {p.name}": p.run for p in self.peers}

    def gbs(self, times: dict[str, float]) -> dict[str, float]:
        """GB/s (counted bytes, no write-allocate) of each peer from median seconds."""
        return {p.name: self.n * COUNTED[p.kind] / times[f"bw: {p.name}"] / 1e9
                for p in self.peers if f"bw: {p.name}" in times}

    def best(self, times: dict[str, float], kind: str) -> tuple[str, float]:
        """The fastest peer of a kind (copy or add) in this run: name, GB/s."""
        g = self.gbs(times)
        name = max((p.name for p in self.peers if p.kind == kind and p.name in g),
                   key=lambda k: g[k])
        return name, g[name]

    def table(self, times: dict[str, float]) -> list[str]:
        """Markdown rows: every peer's time and GB/s, counted and with write-allocate."""
        g = self.gbs(times)
        rows = ["| reference | stores | ms | GB/s (counted) | GB/s with write-allocate |",
                "|---|---|---|---|---|"]
        for p in self.peers:
            t = times[f"bw: {p.name}"]
            wa = {"ordinary": f"{self.n * WITH_ALLOCATE[p.kind] / t / 1e9:.1f}",
                  "non-temporal": f"{g[p.name]:.1f}", "none": f"{g[p.name]:.1f}"
                  }.get(p.stores, "–")
            rows.append(f"| {p.name} | {p.stores} | {t * 1e3:.2f} | {g[p.name]:.1f} | {wa} |")
        return rows


def llc_bytes() -> int:
    """The last-level cache's size as Linux reports it for cpu0 (0 if it does not)."""
    idx = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"))
    best = 0
    for d in idx:
        try:
            size = (d / "size").read_text().strip()
        except OSError:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        best = max(best, int(size.rstrip("KMG")) * mult)
    return best


class Evictor:
    """Reads a buffer of twice the last-level cache (64 MiB to 1 GiB) so that what a call
    leaves in the caches (lines to read again, dirty lines to write back) does not fall on the
    next timed call: STREAM's arrays-larger-than-the-cache rule, kept for arrays that are not."""

    def __init__(self, limit: int = 1 << 30):
        self.nbytes = min(max(2 * llc_bytes(), 64 << 20), limit)
        self.buf = aligned(self.nbytes // 4, np.float32)
        self.buf[:] = 1.0                   # touched: its pages exist before any timing

    def __call__(self) -> None:
        self.buf.sum(dtype=np.float32)


def interleaved(fns: dict[str, Callable[[], None]], reps: int,
                before: Callable[[], None] | None = None) -> dict[str, float]:
    """Median seconds of each fn over reps rounds after a warm-up, order reversed every other
    round (as bench/tinygrad_x86.timed); before, if given, runs untimed before each call."""
    for f in fns.values():
        f()
    ts: dict[str, list[float]] = {k: [] for k in fns}
    order = list(fns.items())
    for r in range(reps):
        for k, f in (order if r % 2 == 0 else order[::-1]):
            if before is not None:
                before()
            t = time.perf_counter()
            f()
            ts[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in ts.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--no-evict", action="store_true",
                    help="do not read a buffer of twice the last-level cache before each call")
    opt = ap.parse_args()
    peers = Peers(opt.n, triad=True, read=True)
    bad = peers.check()
    ev = None if opt.no_evict else Evictor()
    t = interleaved(peers.fns(), opt.reps, before=ev)
    print(f"n = {opt.n} float32, median of {opt.reps} interleaved rounds, one thread; "
          f"caches evicted before each call: {ev is not None}; wrong: {bad or 'none'}")
    print()
    print("\n".join(peers.table(t)))
    for kind in ("copy", "add", "triad", "read"):
        name, g = peers.best(t, kind)
        print(f"best {kind}: {name}, {g:.1f} GB/s")
    if bad:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
