"""x86-64-v4 compiles a kernel of little work without 512-bit vectors (kcc/targets/x86/arch.py
`_narrow_v4`, through TargetDesc.narrow in the pipeline; issue 24 item 2: relu_spec's E_5_4,
20 floats, ran 0.82-1.10x clang with one zmm load and store, bimodal, and 1.14-1.16x with
ymm: a zmm unit idle for ~0.1 ms runs its first 512-bit instructions slowly)."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import dtypes
from kcc.targets.x86.arch import (X86_DIVIDER_BOUND, X86_DIVIDER_MAX_WORK, X86_ZMM_MIN_WORK,
                                  x86_desc)
from kcc.targets.x86.target import X86Target
from x86_util import ARCHS, assert_same, compile_and_run, reference, selected_text


def _relu(rows: int) -> str:
    """out[4i : 4i + 4] = max(0, x[4i : 4i + 4]) for i < rows (tinygrad's E_5_4 at 5)."""
    n = 4 * rows
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {n})
%a = PARAM ParamArg(1, float32, {n})
%z = CAST(0.0) float32
%zv = STACK(%z, %z, %z, %z)
%r = RANGE({rows}) (0, LOOP)
%b = SHL(%r, 2)
%p = SHRINK(%a, %b, 4)
%x = LOAD(%p)
%m = MAX(%zv, %x)
%d = SHRINK(%o, %b, 4)
%s = STORE(%d, %m)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="relu")
"""


def _zmm(sel: str) -> bool:
    """Whether a selected form names a zmm operand (`_z_`, `_zm`, `_m512`)."""
    return any(t in sel for t in ("_z_", "_zm", "_z ", "_m512"))


def test_little_work_has_no_zmm() -> None:
    sel = selected_text(_relu(5), "x86-64-v4")
    assert not _zmm(sel) and "vmaxps_y" in sel, sel


def test_more_work_keeps_zmm() -> None:
    # 64 rows: 832 element operations, past X86_ZMM_MIN_WORK
    assert 64 * 13 > X86_ZMM_MIN_WORK
    assert _zmm(selected_text(_relu(64), "x86-64-v4"))


def _sqrt_rows(rows: int, extra: int) -> str:
    """out[4i : 4i + 4] = sqrt(max(0, x[4i : 4i + 4])) + 1 + 1 … (`extra` additions)."""
    body = ["%q = SQRT(%m)", "%one = CAST(1.0) float32", "%ov = STACK(%one, %one, %one, %one)",
            "%t0 = ADD(%q, %ov)"] + [f"%t{k} = ADD(%t{k - 1}, %ov)" for k in range(1, extra)]
    last = f"%t{extra - 1}" if extra else "%q"
    return _relu(rows).replace("%s = STORE(%d, %m)",
                               "\n".join(body) + f"\n%s = STORE(%d, {last})")


def test_a_divider_bound_kernel_has_no_zmm() -> None:
    # 64 rows (past X86_ZMM_MIN_WORK) of a VSQRTPS and a few other ops an element: the
    # divider bounds it at any width (var_std's r_64_4), so ymm
    few, many = _sqrt_rows(64, 2), _sqrt_rows(64, 30)
    sel = selected_text(few, "x86-64-v4")
    assert not _zmm(sel) and "vsqrtps_y" in sel, sel
    # the same with 30 more additions an element: the other work bounds it, zmm
    assert _zmm(selected_text(many, "x86-64-v4"))
    from kcc.passes.work import work_split
    w, d = work_split(parse(few))
    assert w <= X86_DIVIDER_BOUND * d
    w, d = work_split(parse(many))
    assert w > X86_DIVIDER_BOUND * d
    # a long kernel keeps zmm (its warm-up paid back): 2^20 rows of 4
    big = _sqrt_rows(1 << 20, 2)
    w, d = work_split(parse(big))
    assert w > X86_DIVIDER_MAX_WORK and w <= X86_DIVIDER_BOUND * d
    v4 = x86_desc("x86-64-v4")
    assert v4.narrow(parse(big), v4) is None and v4.narrow(parse(few), v4) is not None


def test_only_v4_narrows() -> None:
    assert x86_desc("x86-64-v3").narrow is None
    v4 = x86_desc("x86-64-v4")
    narrowed = v4.narrow(parse(_relu(5)), v4)
    assert narrowed is not None and narrowed.alu_widths[dtypes.float32] == (8, 4)
    assert v4.narrow(parse(_relu(64)), v4) is None


def test_narrowed_keeps_fp_contract() -> None:
    """--fp-contract=fast holds for a narrowed kernel too: the ymm description is made from
    the one the target compiles with, not from x86-64-v4's plain one."""
    fast = X86Target("x86-64-v4", fp_contract="fast").desc
    narrowed = fast.narrow(parse(_relu(5)), fast)
    assert narrowed.fp_contract and not x86_desc("x86-64-v4").fp_contract


def test_vector_width_512_keeps_zmm() -> None:
    """`--vector-width 512` (X86Target's vector_width) asks for zmm in a kernel of little
    work; a bad value is refused."""
    assert X86Target("x86-64-v4", vector_width="512").desc.narrow is None
    sel = selected_text(_relu(5), "x86-64-v4", vector_width="512")
    assert _zmm(sel), sel
    with pytest.raises(ValueError):
        X86Target("x86-64-v4", vector_width="256")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("rows", [5, 64])
def test_matches_the_interpreter(arch: str, rows: int) -> None:
    sink = parse(_relu(rows))
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal(4 * rows) * 4).astype(np.float32)
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    args = [np.zeros(4 * rows, np.float32), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
