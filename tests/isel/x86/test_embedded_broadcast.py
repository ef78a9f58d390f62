"""EVEX embedded broadcasts on x86-64-v4: a packed float op whose operand is a splat of a
scalar just loaded reads the scalar itself (`vmulps zmm0, zmm0, dword ptr [mem]{1to16}`,
kcc/isel/x86/vec.py `embedded_broadcast`) instead of a VBROADCASTSS into a register first.

What is checked: the selected forms (which operand may be the broadcast one: ADD/MUL/MULACC
either, SUB/FDIV the second, MAX the first; x86-64-v3 never), that a store between the
broadcast and its user keeps the register, and results against the reference interpreter on
xmm, ymm and zmm for float32 and float64, MAX with NaNs and signed zeros included (bit-exact:
MAX returns one operand's bits). The encodings themselves are llvm-mc's (golden/x86/
evex_bcst.s, tests/encode/x86/test_x86_encode.py).
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import (X86Target, assembly_text, compile_x86, disasm_object,
                                    write_object)
from asm_compare import compare, read_object
from x86_util import NEEDS_V4, assert_same, compile_and_run, reference

# The kernels here are small: 512-bit vectors are asked for, so their zmm forms are what is
# selected (by default x86-64-v4 compiles a kernel of little work with ymm at most,
# kcc/targets/x86/arch.py `_narrow_v4`)
W512 = "512"

SHAPES = [("float32", 4), ("float32", 8), ("float32", 16), ("float64", 2), ("float64", 4),
          ("float64", 8)]
BCST = re.compile(r"\{1to(\d+)\}")
SPLAT = re.compile(r"\b(vbroadcasts[sd]|vmovddup)\b")


def _kernel(dt: str, lanes: int, body: str | None = None, n: int = 5) -> str:
    """y[i] = MAX(ADD(b4, MAX(b3, (x[i]² · b0 - b1) / b2)), b5), the b splats of six scalars
    loaded each iteration: all but the last MAX can read their splat in place. ``body``
    replaces the computation (from x, the t0 = x², b0…b5; it defines %r, stored to y)."""
    sp = ", ".join
    lines = ["# kcc-uop 1", f"%y = PARAM ParamArg(0, {dt}, {lanes * n})",
             f"%x = PARAM ParamArg(1, {dt}, {lanes * n})", f"%s = PARAM ParamArg(2, {dt}, {6 * n})",
             f"%n = PARAM ParamArg(3, int32, vmin_vmax=(0, {n}), addrspace=ALU)",
             "%i = RANGE(%n) (0, LOOP)", f"%o = MUL(%i, {lanes})",
             f"%px = SHRINK(%x, %o, {lanes})", "%vx = LOAD(%px)", "%i6 = MUL(%i, 6)"]
    body = body or ("%t0 = MUL(%vx, %vx)\n%t1 = MUL(%t0, %b0)\n%t2 = SUB(%t1, %b1)\n"
                    "%t3 = FDIV(%t2, %b2)\n%t4 = MAX(%b3, %t3)\n%t5 = ADD(%b4, %t4)\n"
                    "%r = MAX(%t5, %b5)")
    for k in range(6):
        if f"%b{k}" in body:
            lines += [f"%j{k} = ADD(%i6, {k})", f"%ps{k} = INDEX(%s, %j{k})",
                      f"%s{k} = LOAD(%ps{k})", f"%b{k} = STACK({sp([f'%s{k}'] * lanes)})"]
    lines += [body, f"%py = SHRINK(%y, %o, {lanes})", "%st = STORE(%py, %r)",
              "%e = END(%st, %i)", 'SINK(%e) KernelInfo(name="bcst")']
    return "\n".join(lines) + "\n"


def _disasm(text: str, arch: str, **kw: str) -> str:
    obj, _ = compile_x86([parse(text)], arch, vector_width=W512, **kw)
    return disasm_object(obj)


@pytest.mark.parametrize("dt,lanes", SHAPES)
def test_v4_reads_splats_in_place(dt: str, lanes: int) -> None:
    text = _disasm(_kernel(dt, lanes), "x86-64-v4")
    ops = {m.group(1) for m in re.finditer(r"(v\w+) [xyz]mm\d+, [xyz]mm\d+, \w+ ptr [^\n]*\{1to",
                                           text)}
    suffix = "ps" if dt == "float32" else "pd"
    assert ops == {f"v{o}{suffix}" for o in ("mul", "sub", "div", "max", "add")}, text
    assert [int(n) for n in BCST.findall(text)] == [lanes] * 5, text
    # the last MAX's splat is its second operand: MAX(a, b) = vmaxps(b, a) puts b in a
    # register, so that one broadcast stays
    assert len(SPLAT.findall(text)) == 1, text


def test_a_splat_with_two_users_stays_one_broadcast() -> None:
    """Embedding it in one user would keep the VBROADCASTSS for the other and only stretch
    its address registers' lives: both users read the register."""
    text = _kernel("float32", 16, "%t0 = MUL(%vx, %vx)\n%t1 = MUL(%t0, %b0)\n"
                   "%r = SUB(%t1, %b0)")
    dis = _disasm(text, "x86-64-v4")
    assert not BCST.search(dis) and len(SPLAT.findall(dis)) == 1, dis


@pytest.mark.parametrize("dt,lanes", [("float32", 16), ("float64", 4)])
def test_v3_has_no_embedded_broadcast(dt: str, lanes: int) -> None:
    text = _disasm(_kernel(dt, lanes), "x86-64-v3")
    assert not BCST.search(text)
    assert len(SPLAT.findall(text)) >= 6


def test_fused_multiply_add_reads_its_splat_in_place() -> None:
    """--fp-contract fast: b · x² + x is one VFMADD231PS with the splat {1to16}."""
    text = _kernel("float32", 16, "%t0 = MUL(%vx, %vx)\n%t1 = MUL(%b0, %t0)\n%r = ADD(%t1, %vx)")
    dis = _disasm(text, "x86-64-v4", fp_contract="fast")
    assert re.search(r"vfmadd231ps zmm\d+, zmm\d+, dword ptr \[[^\]]*\]\{1to16\}", dis), dis


def _inputs(dt: str, lanes: int, n: int, seed: int, special: bool = False) -> list:
    rng = np.random.default_rng(seed)
    npdt = np.dtype(dt)
    x = (rng.standard_normal(lanes * 5) * 4).astype(npdt)
    s = (rng.standard_normal(6 * 5) * 4).astype(npdt)
    s[2::6] = np.where(np.abs(s[2::6]) < 0.5, npdt.type(1.5), s[2::6])   # divisors
    if special:
        # MAX with NaN (two payloads, so the chosen operand shows) and zeros of both signs
        uint = np.dtype(f"u{npdt.itemsize}")
        nan_x = np.array([0x7FC00001 if npdt.itemsize == 4 else 0x7FF8000000000001],
                         uint).view(npdt)[0]
        nan_s = np.array([0x7FC00077 if npdt.itemsize == 4 else 0x7FF8000000000077],
                         uint).view(npdt)[0]
        x[::3], x[1::5] = nan_x, -0.0
        s[3::6] = [nan_s, 0.0, -0.0, 1.0, np.inf][: len(s[3::6])]
        s[5::6] = [0.0, nan_s, -np.inf, -0.0, 2.0][: len(s[5::6])]
    return [np.zeros(lanes * 5, npdt), x, s, np.int32(n)]


def _max_kernel(dt: str, lanes: int) -> str:
    """y = MAX(MAX(b3, x), b5): no arithmetic on the NaNs, only choices of operands."""
    return _kernel(dt, lanes, "%t4 = MAX(%b3, %vx)\n%r = MAX(%t4, %b5)")


ARCHES = ["x86-64-v3", pytest.param("x86-64-v4", marks=NEEDS_V4)]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dt,lanes", SHAPES)
def test_results_match_the_interpreter(dt: str, lanes: int, arch: str) -> None:
    sink = parse(_kernel(dt, lanes))
    for n, seed in ((0, 0), (1, 1), (5, 2)):
        args = _inputs(dt, lanes, n, seed)
        got = compile_and_run(sink, args, arch, vector_width=W512)
        assert_same(sink, got, reference(sink, args))


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dt,lanes", [("float32", 16), ("float32", 4), ("float64", 8)])
def test_max_with_nans_and_zeros_matches_the_interpreter(dt: str, lanes: int,
                                                        arch: str) -> None:
    text = _max_kernel(dt, lanes)
    if arch == "x86-64-v4":                   # MAX(b3, x) reads b3 in place
        assert len(BCST.findall(_disasm(text, arch))) == 1
    sink = parse(text)
    args = _inputs(dt, lanes, 5, 3, special=True)
    assert_same(sink, compile_and_run(sink, args, arch, vector_width=W512), reference(sink, args))


class _Reordered(X86Target):
    """x86-64-v4 selecting a schedule with the scalar store moved (before or after the MUL)."""

    def __init__(self, between: bool):
        super().__init__("x86-64-v4", vector_width=W512)
        self.between = between

    def select(self, lin: list, sink):
        store = next(u for u in lin if u.op is Ops.STORE and not u.src[1].shape)
        mul = next(u for u in lin if u.op is Ops.MUL and u.shape == (16,) and
                   any(s.op is Ops.STACK for s in u.src))
        rest = [u for u in lin if u is not store]
        k = rest.index(mul) + (0 if self.between else 1)
        return super().select(rest[:k] + [store] + rest[k:], sink)


def test_a_store_between_the_broadcast_and_its_user_keeps_the_register() -> None:
    """A schedule that stores to the broadcast scalar's place between the splat and the MUL
    must not read the place again; with the store after the MUL it may."""
    text = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 16)
%x = PARAM ParamArg(1, float32, 16)
%s = PARAM ParamArg(2, float32, 1)
%px = SHRINK(%x, 0, 16)
%vx = LOAD(%px)
%t0 = MUL(%vx, %vx)
%ps = INDEX(%s, 0)
%sc = LOAD(%ps)
%b = STACK(""" + ", ".join(["%sc"] * 16) + """)
%t1 = MUL(%t0, %b)
%py = SHRINK(%y, 0, 16)
%st = STORE(%py, %t1)
%z = STORE(%ps, 2.0)
%g = GROUP(%st, %z)
SINK(%g) KernelInfo(name="k")
"""
    listing = {}
    for between in (False, True):
        out = io.StringIO()
        run_pipeline(parse(text), _Reordered(between), dump_after="select", out=out)
        listing[between] = out.getvalue()
    assert "vmulps_z_z_m32bcst" in listing[False]
    assert "vmulps_z_z_m32bcst" not in listing[True]
    assert "vbroadcastss_z_xm32" in listing[True]


@pytest.mark.parametrize("tool", ["as", "llvm-mc"])
def test_asm_of_embedded_broadcasts_assembles_to_kcc_bytes(tool: str, tmp_path) -> None:
    """`--emit asm` on x86-64-v4 prints `{1toN}`; GNU as and llvm-mc assemble it to the bytes
    of kcc's own object (tests/encode/x86/test_asm_roundtrip.py's comparison)."""
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    target = X86Target("x86-64-v4", vector_width=W512)
    k, _ = run_pipeline(parse(_kernel("float32", 16)), target)
    (tmp_path / "k.o").write_bytes(write_object([k], target.pool))
    (tmp_path / "k.s").write_text(assembly_text([k], target.pool))
    assert "{1to16}" in (tmp_path / "k.s").read_text()
    cmd = ["as", "--64"] if tool == "as" else ["llvm-mc", "-triple=x86_64", "-filetype=obj"]
    subprocess.run(cmd + [str(tmp_path / "k.s"), "-o", str(tmp_path / "a.o")], check=True)
    compare(read_object(tmp_path / "k.o"), read_object(tmp_path / "a.o"))
