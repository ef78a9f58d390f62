"""kcc/isel/x86/idioms.py and kmask.gate_ones against the reference interpreter, with the
instructions each rule is for:

- WHERE(c, x, k) with a constant k: the copy is of x, the CMOVcc of k on the negated
  condition (no copy of the shared constant's register);
- WHERE((x % 5 != 0) & (x < 0), 5, 0): MOVZX and one LEA, no CMOVcc;
- XOR(MAX(XOR(x, ~0), c), ~0) on int32/uint8/int16 lanes: one VPMIN, no XOR;
- a vector load gated by a scalar compare (embedding's `idx < 8`) on x86-64-v4: its opmask
  from CMP and CMOVcc, no MOVZX/NEG, and one CMP shared with the safe index's CMOVcc."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from x86_util import assert_same, compile_and_run, reference


def _listing(src: str, arch: str, stage: str = "allocate") -> str:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after=stage, out=buf)
    return buf.getvalue()


def _check(src: str, args: list, arch: str) -> None:
    sink = parse(src)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


SCALE = """# kcc-uop 1
%y = PARAM ParamArg(0, int64, 16)
%x = PARAM ParamArg(1, int64, 16)
%i.n = CAST(16) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%v = LOAD(%px)
%five = CAST(5) int64
%zero = CAST(0) int64
%k = CAST(K) int64
%r = CMOD(%v, %five)
%nz = CMPNE(%r, %zero)
%neg = CMPLT(%v, %zero)
%fix = AND(%nz, %neg)
%w = WHERE(%fix, %k, %zero)
%out = ADD(%r, %w)
%py = INDEX(%y, %i)
%st = STORE(%py, %out)
SINK(%st) KernelInfo(name="ks")
"""


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 9, 7])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_bool_times_a_constant(k: int, arch: str) -> None:
    src = SCALE.replace("CAST(K)", f"CAST({k})")
    text = _listing(src, arch)
    assert ("cmov" in text) == (k == 7), text       # 7: no single shift or LEA, a CMOVcc
    x = np.array([-2**63, -11, -10, -6, -5, -1, 0, 1, 4, 5, 6, 11, 2**63 - 1, -3, 3, 7],
                 np.int64)
    _check(src, [np.zeros(16, np.int64), x], arch)


MINMAX = """# kcc-uop 1
%y = PARAM ParamArg(0, DT, 64)
%a = PARAM ParamArg(1, DT, 64)
%b = PARAM ParamArg(2, DT, 64)
%n = CAST(16) int32
%r = RANGE(%n) (0, WEAK)
%four = CAST(4) int32
%o = MUL(%r, %four)
%pa = SHRINK(%a, %o, %four)
%va = LOAD(%pa)
%pb = SHRINK(%b, %o, %four)
%vb = LOAD(%pb)
%m = MAX(%va, %vb)
%ones1 = CAST(-1) DT
%ones = STACK(%ones1, %ones1, %ones1, %ones1)
%nm = XOR(%m, %ones)
%c1 = CAST(C) DT
%c = STACK(%c1, %c1, %c1, %c1)
%mx = MAX(%nm, %c)
%out = XOR(%mx, %ones)
%py = SHRINK(%y, %o, %four)
%st = STORE(%py, %out)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="km")
"""


@pytest.mark.parametrize("dt,c", [("int32", -21), ("int32", 5), ("uint8", 200),
                                  ("int16", -300), ("uint32", 7)])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_complemented_max_is_a_min(dt: str, c: int, arch: str) -> None:
    src = MINMAX.replace("DT", dt).replace("CAST(C)", f"CAST({c})")
    if dt.startswith("u"):
        src = src.replace("CAST(-1)", f"CAST({np.iinfo(dt).max})")
    text = _listing(src, arch)
    assert "vpmin" in text and "vpxor" not in text, text
    info = np.iinfo(dt)
    rng = np.random.default_rng(1)
    a = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    a[:6] = [info.min, info.max, 0, c % (info.max + 1) if dt.startswith("u") else c, 1, -1 % (
        info.max + 1) if dt.startswith("u") else -1]
    _check(src, [np.zeros(64, dt), a, b], arch)


GATED = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 40)
%ix = PARAM ParamArg(1, uint8, 5)
%t = PARAM ParamArg(2, float32, 64)
%n = CAST(5) int32
%r = RANGE(%n) (0, WEAK)
%pi = INDEX(%ix, %r)
%b = LOAD(%pi)
%bi = CAST(%b) int32
%eight = CAST(8) int32
%g = CMPLT(%bi, %eight)
%st0 = MUL(%bi, %eight)
%pt = SHRINK(%t, %st0, %eight)
%z1 = CAST(0.0) float32
%z = STACK(%z1, %z1, %z1, %z1, %z1, %z1, %z1, %z1)
%v = LOAD(%pt, %z, %g)
%o = MUL(%r, %eight)
%py = SHRINK(%y, %o, %eight)
%st = STORE(%py, %v)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="kg")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_scalar_gate_of_a_vector_load(arch: str) -> None:
    text = _listing(GATED, arch)
    if arch == "x86-64-v4":
        body = text.split("; after allocate")[-1]
        assert "kmovd" in body and "neg_rm32" not in body, body
        # one CMP a row for the mask's CMOVcc and the index's
        assert body.count("cmp_rm32_imm8") == body.count("kmovd_k_r32"), body
    idx = np.array([0, 7, 8, 255, 3], np.uint8)
    t = np.arange(64, dtype=np.float32) + 0.5
    _check(GATED, [np.zeros(40, np.float32), idx, t], arch)


def test_a_gate_on_a_non_negative_index_is_the_carry_by_sbb() -> None:
    """`idx < 8` of a zero-extended byte: CMP sets CF exactly where it holds (a signed
    compare of two non-negative values is the unsigned one), so the opmask's all-ones-or-zero
    is one SBB of a register with itself (kmask.gate_ones), not a copy and a CMOVcc."""
    body = _listing(GATED, "x86-64-v4").split("; after allocate")[-1]
    assert body.count("sbb_self") == body.count("kmovd_k_r32") > 0, body
    assert "cmovl" not in body, body
    # a signed byte may be negative: `idx < 8` is not the carry, the CMOVcc stays
    signed = _listing(GATED.replace("uint8, 5", "int8, 5"), "x86-64-v4")
    body = signed.split("; after allocate")[-1]
    assert "sbb_self" not in body and "cmovl" in body, body
