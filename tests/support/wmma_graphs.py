"""WMMA test kernels: every lane loads its A, B and C fragments, one WMMA, every lane stores D.

`fragment_kernel(shape, warps, groups)` is a `.uop` text: `lidx0` runs over `warps` warps of
`shape.threads` lanes, `gidx0` over `groups` workgroups; buffer A holds lane t's A fragment
(per_lane[0] elements) of warp w in workgroup g at ((g*warps + w)*threads + t)*per_lane[0], and
likewise B, C and the output D.
"""

from __future__ import annotations

from typing import Any

from kcc.ir.wmma import WmmaShape


def fragment_kernel(sh: WmmaShape, warps: int = 2, groups: int = 2,
                    split: int | None = None) -> str:
    """The `.uop` text of the kernel (see the module docstring); slots: D, A, B, C. With
    `split`, the lanes are two thread indices: lidx0 < split and lidx1, lane lidx0 + split*lidx1
    (the order the hardware forms warps in)."""
    lanes = sh.threads * warps
    na, nb, nc = sh.per_lane
    total = lanes * groups
    n, m, k = sh.dims
    lines = [
        "# kcc-uop 1",
        f"%d = PARAM ParamArg(0, {sh.dtype_out}, {total * nc})",
        f"%a = PARAM ParamArg(1, {sh.dtype_in}, {total * na})",
        f"%b = PARAM ParamArg(2, {sh.dtype_in}, {total * nb})",
        f"%c = PARAM ParamArg(3, {sh.dtype_out}, {total * nc})",
        *([f'%l = SPECIAL({lanes}) "lidx0"'] if split is None else [
            f'%l0 = SPECIAL({split}) "lidx0"', f'%l1 = SPECIAL({lanes // split}) "lidx1"',
            f"%l1s = MUL(%l1, {split})", "%l = ADD(%l0, %l1s)"]),
        f'%g = SPECIAL({groups}) "gidx0"',
        f"%gl = MUL(%g, {lanes})",
        "%t = ADD(%gl, %l)",
    ]
    for name, w in (("a", na), ("b", nb), ("c", nc)):
        lines += [f"%{name}o = MUL(%t, {w})", f"%{name}p = SHRINK(%{name}, %{name}o, {w})",
                  f"%{name}v = LOAD(%{name}p)"]
    lines += [
        (f'%w = WMMA(%av, %bv, %cv) (({n}, {m}, {k}), {sh.dtype_in}, "{sh.device}", '
         f"{sh.threads}, None) : {sh.dtype_out}[{nc}]"),
        f"%dp = SHRINK(%d, %co, {nc})",
        "%st = STORE(%dp, %w)",
        'SINK(%st) KernelInfo(name="wmma")',
    ]
    return "\n".join(lines) + "\n"


def fragment_inputs(sh: WmmaShape, warps: int = 2, groups: int = 2, seed: int = 0,
                    specials: bool = False) -> list:
    """Arguments (D, A, B, C) of `fragment_kernel`: random matrices per warp scattered into the
    lanes' fragments by the form's maps (so RDNA3's replicated lanes agree); with `specials`,
    some float elements are ±0, ±inf, NaN and subnormals."""
    import numpy as np

    from kcc.ir import dtypes
    from kcc.ir import numerics as nm
    rng = np.random.default_rng(seed)
    w = warps * groups
    n, m, k = sh.dims

    def rand(dt: str, shape: tuple[int, ...]) -> np.ndarray:
        if dt == "int8":
            return rng.integers(-128, 128, shape).astype(np.int8)
        if dt == "int32":
            return rng.integers(-2**31, 2**31, shape).astype(np.int32)
        v = rng.standard_normal(shape)
        if specials:
            pick = rng.random(shape) < 0.05
            v[pick] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -130, 1e-7],
                                 int(pick.sum()))
        return nm.from_f64(v, dtypes.by_name(dt))

    mats = (rand(sh.dtype_in, (w, m, k)), rand(sh.dtype_in, (w, k, n)),
            rand(sh.dtype_out, (w, m, n)))
    frags = []
    for which, mat in zip("abc", mats):
        at = {"a": sh.a_at, "b": sh.b_at, "c": sh.c_at}[which]
        width = sh.per_lane["abc".index(which)]
        f = np.zeros((w, sh.threads, width), mat.dtype)
        for lane in range(sh.threads):
            for e in range(width):
                f[:, lane, e] = mat[:, at(lane, e)[0], at(lane, e)[1]]
        frags.append(f.reshape(-1))
    return [np.zeros_like(frags[2]), *frags]


# ulp of 1.0 in the dtype tinygrad stored a captured output in
TG_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23}


def _as_float64(v: Any, dtype: str) -> Any:
    import numpy as np
    if dtype == "bfloat16":
        return (v.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return v.astype(np.float64)


def assert_tinygrad_value(got: Any, want: Any, dtype: str) -> None:
    """A WMMA kernel's output against tinygrad's captured one: integers exactly, floats within
    4 ulps of the output dtype at the output's largest magnitude (tensor cores and the IR
    order the sums differently; docs/semantics.md, WMMA)."""
    import numpy as np
    if dtype in ("int32", "int8"):
        np.testing.assert_array_equal(got, want)
        return
    g, w = _as_float64(got, dtype), _as_float64(want, dtype)
    tol = 4 * TG_EPS[dtype] * np.abs(w).max()
    assert np.abs(g - w).max() <= tol, (np.abs(g - w).max(), tol)
