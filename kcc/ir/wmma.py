"""WMMA, the warp-cooperative matrix multiply-accumulate: its shapes and lane maps, in one place.

`D = A·B + C` with A an M×K matrix, B K×N, C and D M×N, computed together by `threads` lanes (a
CUDA warp, an AMD wave). Every lane holds a slice of each matrix as a vector (its *fragment*):
element `e` of lane `l`'s A vector is `A[row][col]` for `(row, col) = shape.a_at(l, e)`, and
likewise for B (`b_at`: (k, n)) and C/D (`c_at`: (m, n)). These maps are the one definition that
the interpreter, the back ends and the tests share (docs/semantics.md, "WMMA").

The shapes are the tensor cores tinygrad 0.14 defines (`tinygrad/codegen/opt/tc.py`) for NVIDIA
sm_80/sm_89/sm_90 and AMD RDNA3 (gfx1100, wave32) and CDNA3 (gfx942, wave64) with dtypes kcc
has (no fp8, no tf32). The maps are those of tinygrad's own WMMA model (`runtime/ops_python.py`),
which are the hardware fragment layouts tinygrad's codegen arranges the data for (tc.py's
swizzles): PTX ISA "Matrix Fragments for mma.m16n8k16 / m16n8k8", AMD "WMMA on RDNA3" (A and B
replicated in lanes 16..31) and the CDNA3 MFMA 16x16x16 layout.

The node: `WMMA(a, b, c) ((N, M, K), dtype_in, device, threads, None)`, tinygrad 0.14's arg
as it reaches a renderer (the fifth field, the upcast axes, is None after tinygrad's expander);
the result is C's dtype and width.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:          # numpy is imported by the functions that compute (start-up time)
    from typing import Any
    import numpy as np

Map = Callable[[int, int], tuple[int, int]]
DEVICES = ("CUDA", "AMD")


@dataclass(frozen=True)
class WmmaShape:
    """One tensor-core form: where each lane's fragment elements sit in A, B and C/D."""

    device: str
    dims: tuple[int, int, int]           # (N, M, K), tinygrad's order
    threads: int
    dtype_in: str                        # kcc dtype names
    dtype_out: str
    per_lane: tuple[int, int, int]       # elements per lane of A, B, C (tinygrad's
    #                                      elements_per_thread)
    a_at: Map                            # (lane, elem) -> (m, k)
    b_at: Map                            # (lane, elem) -> (k, n)
    c_at: Map                            # (lane, elem) -> (m, n)
    name: str                            # what the hardware calls it
    # for D's element e of lane l at (m, n) = c_at(l, e): the (lane, element) holding A[m][k]
    # and B[k][n]; written with + * // % and integer k, e only, so that l may be a symbolic
    # lane (kcc/passes/wmma.py builds index arithmetic with them); the element never depends
    # on l
    a_from: Callable[[Any, int, int], tuple[Any, int]]
    b_from: Callable[[Any, int, int], tuple[Any, int]]

    @property
    def n(self) -> int:
        return self.dims[0]

    @property
    def m(self) -> int:
        return self.dims[1]

    @property
    def k(self) -> int:
        return self.dims[2]

    def table(self, which: str) -> np.ndarray:
        """int array [threads, per_lane, 2]: the (row, col) of every fragment element."""
        import numpy as np
        i = "abc".index(which)
        at = (self.a_at, self.b_at, self.c_at)[i]
        return np.array([[at(lane, e) for e in range(self.per_lane[i])]
                         for lane in range(self.threads)], np.int64).reshape(
                             self.threads, self.per_lane[i], 2)


# -- the lane maps (facts from the PTX ISA / AMD docs, as tinygrad's model states them) -------
# NVIDIA, every shape with M=16 N=8: lane = 4*group + t (group = lane//4, t = lane%4).

def _nv_c(lane: int, e: int) -> tuple[int, int]:
    return lane // 4 + 8 * (e // 2), 2 * (lane % 4) + e % 2


def _nv_a16(lane: int, e: int) -> tuple[int, int]:      # m16n8k16 A: 8 elements
    return lane // 4 + 8 * ((e // 2) % 2), 2 * (lane % 4) + e % 2 + 8 * (e // 4)


def _nv_b16(lane: int, e: int) -> tuple[int, int]:      # m16n8k16 B: 4 elements
    return 2 * (lane % 4) + e % 2 + 8 * (e // 2), lane // 4


def _nv_a8(lane: int, e: int) -> tuple[int, int]:       # m16n8k8 A: 4 elements
    return lane // 4 + 8 * (e // 2), 2 * (lane % 4) + e % 2


def _nv_b8(lane: int, e: int) -> tuple[int, int]:       # m16n8k8 B: 2 elements
    return 2 * (lane % 4) + e, lane // 4


# AMD RDNA3 wave32 16x16x16: A row / B column = lane % 16, element = k (lanes 16..31 repeat
# lanes 0..15); C/D element e of lane l is row 2e + l//16, column l%16.
def _rdna3_a(lane: int, e: int) -> tuple[int, int]:
    return lane % 16, e


def _rdna3_b(lane: int, e: int) -> tuple[int, int]:
    return e, lane % 16


def _rdna3_c(lane: int, e: int) -> tuple[int, int]:
    return 2 * e + lane // 16, lane % 16


# AMD CDNA3 wave64 MFMA 16x16x16: A row / B column = lane % 16, k = 4*(lane//16) + element;
# C/D element e of lane l is row 4*(l//16) + e, column l%16.
def _cdna_a(lane: int, e: int) -> tuple[int, int]:
    return lane % 16, 4 * (lane // 16) + e


def _cdna_b(lane: int, e: int) -> tuple[int, int]:
    return 4 * (lane // 16) + e, lane % 16


def _cdna_c(lane: int, e: int) -> tuple[int, int]:
    return 4 * (lane // 16) + e, lane % 16


# Where D's element e of lane l finds its A and B operands (derived from the maps above; the
# tests check them against the maps for every lane). NVIDIA: (m, n) = (l//4 + 8*(e//2),
# 2*(l%4) + e%2), so m%8 = l//4, m//8 = e//2 and n = 2*(l%4) + e%2.
def _nv_a16_from(l: Any, e: int, k: int) -> tuple[Any, int]:
    return (l // 4) * 4 + (k // 2) % 4, k % 2 + 2 * (e // 2) + 4 * (k // 8)


def _nv_b16_from(l: Any, e: int, k: int) -> tuple[Any, int]:
    return (l % 4) * 8 + 4 * (e % 2) + (k // 2) % 4, k % 2 + 2 * (k // 8)


def _nv_a8_from(l: Any, e: int, k: int) -> tuple[Any, int]:
    return (l // 4) * 4 + k // 2, k % 2 + 2 * (e // 2)


def _nv_b8_from(l: Any, e: int, k: int) -> tuple[Any, int]:
    return (l % 4) * 8 + 4 * (e % 2) + k // 2, k % 2


def _rdna3_a_from(l: Any, e: int, k: int) -> tuple[Any, int]:     # m = 2e + l//16
    return l // 16 + 2 * e, k


def _rdna3_b_from(l: Any, e: int, k: int) -> tuple[Any, int]:     # n = l%16
    return l % 16, k


def _cdna_a_from(l: Any, e: int, k: int) -> tuple[Any, int]:      # m = 4*(l//16) + e
    return (l // 16) * 4 + e + 16 * (k // 4), k % 4


def _cdna_b_from(l: Any, e: int, k: int) -> tuple[Any, int]:      # n = l%16
    return l % 16 + 16 * (k // 4), k % 4


def _shapes() -> tuple[WmmaShape, ...]:
    out: list[WmmaShape] = []
    for di, do in (("float16", "float32"), ("bfloat16", "float32"), ("float16", "float16")):
        out.append(WmmaShape("CUDA", (8, 16, 16), 32, di, do, (8, 4, 4), _nv_a16, _nv_b16,
                             _nv_c, f"mma.sync.aligned.m16n8k16 {di}->{do}", _nv_a16_from,
                             _nv_b16_from))
    for di, do in (("float16", "float32"), ("float16", "float16")):
        out.append(WmmaShape("CUDA", (8, 16, 8), 32, di, do, (4, 2, 4), _nv_a8, _nv_b8, _nv_c,
                             f"mma.sync.aligned.m16n8k8 {di}->{do}", _nv_a8_from, _nv_b8_from))
    for di, do, ins in (("float16", "float32", "v_wmma_f32_16x16x16_f16"),
                        ("float16", "float16", "v_wmma_f16_16x16x16_f16"),
                        ("bfloat16", "float32", "v_wmma_f32_16x16x16_bf16"),
                        ("int8", "int32", "v_wmma_i32_16x16x16_iu8")):
        out.append(WmmaShape("AMD", (16, 16, 16), 32, di, do, (16, 16, 8), _rdna3_a, _rdna3_b,
                             _rdna3_c, ins, _rdna3_a_from, _rdna3_b_from))
    for di, ins in (("float16", "v_mfma_f32_16x16x16_f16"),
                    ("bfloat16", "v_mfma_f32_16x16x16_bf16")):
        out.append(WmmaShape("AMD", (16, 16, 16), 64, di, "float32", (4, 4, 4), _cdna_a,
                             _cdna_b, _cdna_c, ins, _cdna_a_from, _cdna_b_from))
    return tuple(out)


SHAPES: tuple[WmmaShape, ...] = _shapes()
_BY_KEY = {(s.device, s.dims, s.threads, s.dtype_in, s.dtype_out): s for s in SHAPES}


def find(device: str, dims: tuple[int, int, int], threads: int, dtype_in: str,
         dtype_out: str) -> WmmaShape | None:
    """The tensor-core form of these parameters, or None if kcc has none."""
    return _BY_KEY.get((device, dims, threads, dtype_in, dtype_out))


def shape_of(node: Any) -> WmmaShape:
    """The form of a (well-typed) WMMA node: its arg and its accumulator's dtype."""
    dims, dtype_in, device, threads, _ = node.arg
    sh = find(device, tuple(dims), threads, dtype_in.name, node.dtype.name)
    assert sh is not None, "a typed WMMA node has a known form"
    return sh


def supported_text() -> str:
    """The forms, one per line, for error messages and docs."""
    return "; ".join(f"{s.device} {s.dims} threads={s.threads} {s.dtype_in}->{s.dtype_out}"
                     for s in SHAPES)


# -- the matrix product ------------------------------------------------------------------------

def gather(sh: WmmaShape, which: str, frag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The matrix a fragment holds, and whether its copies agree.

    frag: [..., threads, per_lane]; returns ([..., rows, cols], ok[...]). An element held by
    more than one lane (RDNA3's A and B, replicated in lanes 16..31) is read from its first
    holder in lane order; `ok` is False where another copy differs (bitwise).
    """
    import numpy as np
    tab = sh.table(which)
    rows = sh.m if which in "ac" else sh.k
    cols = sh.k if which == "a" else sh.n
    out = np.zeros(frag.shape[:-2] + (rows, cols), frag.dtype)
    seen = np.zeros((rows, cols), bool)
    ok = np.ones(frag.shape[:-2], bool)
    for lane in range(sh.threads):
        for e in range(tab.shape[1]):
            r, c = tab[lane, e]
            v = frag[..., lane, e]
            if seen[r, c]:
                ok &= out[..., r, c].view(_bits(out.dtype)) == v.view(_bits(v.dtype))
            else:
                out[..., r, c] = v
                seen[r, c] = True
    assert seen.all(), f"{sh.name}: the {which} fragments do not cover the matrix"
    return out, ok


def scatter(sh: WmmaShape, mat: np.ndarray) -> np.ndarray:
    """The C/D fragments [..., threads, per_lane] of an M×N matrix [..., M, N]."""
    tab = sh.table("c")
    return mat[..., tab[..., 0], tab[..., 1]]


def _bits(dt: np.dtype) -> np.dtype:
    import numpy as np
    return np.dtype(f"u{np.dtype(dt).itemsize}")


def matmul(sh: WmmaShape, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = A·B + C on matrices [..., M, K], [..., K, N], [..., M, N] (kcc carrier arrays).

    Floats: for each (m, n), acc = C[m][n] as float32, then for k = 0, 1, …, K-1 in order
    acc = fma(A[m][k], B[k][n], acc) rounded to float32 (the inputs are float16/bfloat16, so
    each product is exact in float32 and the fma is one rounding of the sum); D = acc rounded
    once to dtype_out. int8 -> int32: the exact sum of products wrapped to int32.
    """
    import numpy as np

    from kcc.ir import numerics as nm
    from kcc.ir.dtype import dtypes
    din, dout = dtypes.by_name(sh.dtype_in), dtypes.by_name(sh.dtype_out)
    if dout.is_int:
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        acc = c.astype(np.int64) + np.einsum("...mk,...kn->...mn", a64, b64)
        return acc.astype(np.int32)       # int64 carries the exact sum; keep the low 32 bits
    f32 = dtypes.float32
    af, bf = nm.to_compute(a, din).astype(np.float32), nm.to_compute(b, din).astype(np.float32)
    acc = nm.to_compute(c, dout).astype(np.float32)
    for k in range(sh.k):
        acc = nm.fma(af[..., :, k:k + 1], bf[..., k:k + 1, :], acc, f32)
    return nm.from_compute(acc, dout)


def warp_apply(sh: WmmaShape, a: np.ndarray, b: np.ndarray, c: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """D's fragments from A's, B's and C's: each [..., threads, per_lane].

    Returns (d [..., threads, per_lane C], ok [...]): ok is False where a replicated A or B
    element differs between its lanes (the result there is not defined)."""
    am, ok_a = gather(sh, "a", a)
    bm, ok_b = gather(sh, "b", b)
    cm, _ = gather(sh, "c", c)
    return scatter(sh, matmul(sh, am, bm, cm)), ok_a & ok_b


def on_lane_axes(sh: WmmaShape, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                 lanes: list[tuple[int, int]]) -> np.ndarray:
    """D for operands laid out as the interpreter holds them: one numpy axis per thread index.

    a, b, c: [axes…, width]; `lanes` is (axis, size) of lidx0, lidx1, lidx2 (those the kernel
    has, in that order). A workgroup's threads are numbered lidx0 + L0*(lidx1 + L1*lidx2) and
    every `threads` consecutive ones are one warp/wave. Raises ValueError when the workgroup
    does not split into whole warps, or a replicated element differs between its copies.
    """
    import numpy as np
    nax = a.ndim - 1
    full = list(np.broadcast_shapes(a.shape[:-1], b.shape[:-1], c.shape[:-1]))
    for ax, size in lanes:
        full[ax] = size
    a, b, c = (np.broadcast_to(v, tuple(full) + v.shape[-1:]) for v in (a, b, c))
    total = int(np.prod([s for _, s in lanes], dtype=np.int64)) if lanes else 1
    if total % sh.threads:
        raise ValueError(f"WMMA {sh.name} needs whole warps of {sh.threads} lanes; the "
                         f"workgroup has {total} threads")
    lane_axes = [ax for ax, _ in reversed(lanes)]              # lidx2 outermost
    rest = [ax for ax in range(nax) if ax not in lane_axes]
    order = rest + lane_axes + [nax]
    batch = [full[ax] for ax in rest]

    def frag(v: np.ndarray) -> np.ndarray:
        return np.transpose(v, order).reshape(batch + [total // sh.threads, sh.threads,
                                                       v.shape[-1]])
    d, ok = warp_apply(sh, frag(a), frag(b), frag(c))
    if not ok.all():
        raise ValueError(f"WMMA {sh.name}: the lanes that replicate an A or B element "
                         "(lanes 16..31 repeat lanes 0..15) hold different values")
    d = d.reshape(batch + [full[ax] for ax in lane_axes] + [d.shape[-1]])
    return np.transpose(d, np.argsort(order))
