"""float32 FDIV, RECIPROCAL and SQRT on AMD are the hardware sequences of kcc/isel/amd/fdiv.py
(LLVM 19's: v_div_scale/v_rcp_f32/v_div_fmas/v_div_fixup, v_sqrt_f32 with its neighbour
correction), run in kcc's emulator and compared bit for bit with the reference interpreter on
operands biased to every branch (denormals, zeros, infinities, NaN, quotients that overflow or
underflow, numerators and denominators at the ends of the range), with divisors per lane,
uniform (an SGPR) and constant (an inline constant or a literal); SQRT also with v_sqrt_f32 only
as accurate as documented, and everything with v_rcp_f32 / v_sqrt_f32 flushing denormals
(kcc.targets.amd.emu.valu_div FLUSH / APPROX)."""

from __future__ import annotations

import numpy as np
import pytest

from fuzz.harness import mismatch, run_reference
from kcc.frontend.parser import parse
from kcc.targets.amd.emu import valu_div
from tests.targets.amd.emu.test_emu_fdiv import _pairs, special_f32

ARCHS = ("gfx1100", "gfx942")
N = 512

# o0 = a / b, o1 = 1 / b, o2 = sqrt(a), o3 = a / c (c uniform: one value for the block),
# o4 = a / 3.0 (a literal), o5 = 2.0 / a (inline constants as numerator), o6 = sqrt(b)
KERNEL = f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {7 * N})
%a = PARAM ParamArg(1, float32, {N})
%b = PARAM ParamArg(2, float32, {N})
%c = PARAM ParamArg(3, float32, 1)
%l = SPECIAL({N}) "lidx0" : weakint
%ai = INDEX(%a, %l)
%x = LOAD(%ai)
%bi = INDEX(%b, %l)
%y = LOAD(%bi)
%ci = INDEX(%c, 0)
%z = LOAD(%ci)
%r0 = FDIV(%x, %y) : float32
%r1 = RECIPROCAL(%y) : float32
%r2 = SQRT(%x) : float32
%r3 = FDIV(%x, %z) : float32
%r4 = FDIV(%x, 3.0) : float32
%r5 = FDIV(2.0, %x) : float32
%r6 = SQRT(%y) : float32
""" + "".join(f"""%p{k} = ADD(%l, {k * N}) : weakint
%i{k} = INDEX(%o, %p{k})
%s{k} = STORE(%i{k}, %r{k})
""" for k in range(7)) + """%g = GROUP(%s0, %s1, %s2, %s3, %s4, %s5, %s6)
SINK(%g) KernelInfo(name="fdiv")
"""


def _inputs(seed: int) -> list:
    rng = np.random.default_rng(seed)
    a, b = special_f32(N, rng), special_f32(N, rng)
    with np.errstate(all="ignore"):
        _pairs(a, b, rng)
    c = np.array([b[seed % N]], np.float32)
    return [np.zeros(7 * N, np.float32), a, b, c]


def _run(arch: str, seeds: tuple[int, ...]) -> list[str]:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    sink = parse(KERNEL)
    (code,) = compile_amd_code([sink], arch)
    data = hsaco([code])
    for seed in seeds:
        args = _inputs(seed)
        want = run_reference(sink, args)
        got = [x.copy() for x in args]
        emulate(data, code.desc, check_launch(code.desc, got))
        assert not mismatch(sink, got, want), mismatch(sink, got, want)
    return code.asm


@pytest.mark.parametrize("arch", ARCHS)
def test_fdiv_sqrt_equal_the_interpreter(arch: str) -> None:
    asm = "\n".join(_run(arch, (0, 1, 2)))
    # the hardware sequences, not the float64 software ones
    assert asm.count("v_div_fixup_f32") == 5 and asm.count("v_sqrt_f32") == 2
    assert "_f64" not in asm


@pytest.mark.parametrize("arch", ARCHS)
def test_fdiv_sqrt_with_denormals_flushed_and_sqrt_as_documented(arch: str,
                                                                  monkeypatch) -> None:
    monkeypatch.setattr(valu_div, "FLUSH", True)
    monkeypatch.setattr(valu_div, "APPROX", None)
    _run(arch, (3,))
    # v_rcp_f32 exact: the division macro needs a better reciprocal than "within 1 ULP"
    # (tests/targets/amd/emu/test_emu_fdiv.py); v_sqrt_f32 either neighbour: the square
    # roots must still be exact. Only the SQRT outputs are compared under APPROX.
    monkeypatch.setattr(valu_div, "APPROX", np.random.default_rng(11))
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    sink = parse(KERNEL)
    (code,) = compile_amd_code([sink], arch)
    args = _inputs(4)
    want = run_reference(sink, args)[0]
    got = [x.copy() for x in args]
    emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
    for k in (2, 6):
        w, g = want[k * N:(k + 1) * N], got[0][k * N:(k + 1) * N]
        assert np.array_equal(np.isnan(w), np.isnan(g))
        assert np.array_equal(w[~np.isnan(w)].view(np.uint32), g[~np.isnan(w)].view(np.uint32))


def test_gfx942_div_fmas_is_4_valu_after_the_vcc_write() -> None:
    """gfx9: a VALU write of VCC then v_div_fmas within 4 wait states is a hazard (LLVM's
    GCNHazardRecognizer::checkDivFMasHazards); kcc does not insert waits for it, so the
    sequence must keep ≥ 4 instructions between them."""
    asm = _run("gfx942", ())
    lines = [ln.split()[0] for ln in asm if ln.strip() and not ln.strip().startswith((";", "."))
             and not ln.rstrip().endswith(":")]
    fmas = [i for i, op in enumerate(lines) if op.startswith("v_div_fmas")]
    assert fmas
    for i in fmas:
        last = max(j for j in range(i) if lines[j].startswith(("v_div_scale", "v_cmp", "v_add_co",
                                                                "v_addc", "v_sub_co",
                                                                "v_subb")))
        assert i - last > 4, lines[last:i + 1]
