"""x86 selection of CAST from bool vectors to integer and float lanes (kcc/isel/x86/icast.py
vcast_bool: a lane mask shifted or ANDed, or on x86-64-v4 an opmask's zero-masked move of 1
unless a compare of the result's width casts to float lanes: rule `cast_vex_compare`),
against the reference interpreter, on x86-64-v3 and (where this CPU has AVX-512) x86-64-v4."""

from __future__ import annotations

import re

import numpy as np
import pytest
from x86_util import ARCHS, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.devectorize import devectorize
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.targets.x86.target import compile_x86, disasm_object, x86_desc


# (compared dtype, result dtype, lanes, the instruction x86-64-v3 makes the 0/1 lanes with)
CASES = [("float32", "int32", 8, "vpsrld"), ("float32", "float32", 8, "vandps"),
         ("float32", "int16", 8, "vpsrlw"), ("int8", "int8", 16, "vpsubb"),
         ("int8", "uint8", 32, "vpsubb"), ("int64", "int64", 4, "vpsrlq"),
         ("float64", "float64", 4, "vandpd"), ("int32", "uint32", 4, "vpsrld")]


def _kernel(src: str, dst: str, n: int, trips: int = 2) -> str:
    return f"""# kcc-uop 1
%out = PARAM ParamArg(0, {dst}, {trips * n})
%a   = PARAM ParamArg(1, {src}, {trips * n})
%b   = PARAM ParamArg(2, {src}, {trips * n})
%i   = RANGE({trips}) (0, LOOP)
%s   = MUL(%i, {n})
%pa  = SHRINK(%a, %s, {n})
%pb  = SHRINK(%b, %s, {n})
%va  = LOAD(%pa)
%vb  = LOAD(%pb)
%c   = CMPLT(%va, %vb)
%x   = CAST(%c) {dst}
%po  = SHRINK(%out, %s, {n})
%st  = STORE(%po, %x)
%e   = END(%st, %i)
SINK(%e) KernelInfo(name="bcast")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src,dst,n,form", CASES)
def test_bool_vector_cast_matches_interpreter(arch: str, src: str, dst: str, n: int,
                                              form: str) -> None:
    """The 0/1 (or 0.0/1.0) lanes agree with the interpreter, the CAST stays one vector node
    (legal at n lanes), and the object holds the selected instruction, no lane extraction."""
    sink = parse(_kernel(src, dst, n), "bcast.uop")
    args = random_inputs(sink, 5)
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    assert np.array_equal(got[0], want[0])
    assert 0 < int(np.count_nonzero(want[0])) < 2 * n          # both truth values occur
    g = devectorize(lower_weak_dtypes(sink), x86_desc(arch))
    assert any(u.op is Ops.CAST and u.shape == (n,) for u in toposort([g]))
    text = disasm_object(compile_x86([sink], arch)[0])
    assert "vpextr" not in text and "vpinsr" not in text
    if arch == "x86-64-v3":
        assert form in text and "{z}" not in text
    elif _lane_mask_on_v4(src, dst, text):
        assert _v4_form(dst, form) in text and "{z}" not in text
    else:
        assert "{z}" in text


def _lane_mask_on_v4(src: str, dst: str, text: str) -> bool:
    """x86-64-v4 casts a compare of lanes of the result's width in an xmm/ymm to float lanes
    as x86-64-v3 does, its lane mask ANDed with 1.0s (rule `cast_vex_compare`,
    kcc/isel/x86/kmask.py), and a compare of float lanes to 4- or 8-byte integer lanes ANDed
    with integer 1s (VPAND, not x86-64-v3's VPSRL); integer compares, float32 → int16 (a lane
    mask would be resized first) and a zmm (no VEX compare into one) keep the opmask's
    zero-masked move."""
    return (np.dtype(src).itemsize == np.dtype(dst).itemsize and "zmm" not in text
            and (dst.startswith("float") or src.startswith("float")))


def _v4_form(dst: str, form: str) -> str:
    """The instruction x86-64-v4's lane-mask cast uses: VPAND for integer lanes."""
    return form if dst.startswith("float") else "vpand"


def _loop_lines(text: str) -> list[str]:
    """The disassembly lines from the head of the kernel's (one) loop to its back edge: the
    target of the last `jl` and every line up to it."""
    lines = text.splitlines()
    back = max(k for k, s in enumerate(lines) if " jl " in f" {s} ")
    head = int(lines[back].split()[-1], 16)
    at = [(re.match(r"\s+([0-9a-f]+):", s), s) for s in lines[:back]]
    return [s for m, s in at if m and int(m.group(1), 16) >= head]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("src,dst,n,form", CASES)
def test_the_cast_constant_is_read_from_a_register_in_the_loop(arch: str, src: str, dst: str,
                                                               n: int, form: str) -> None:
    """The 1s a bool cast selects (x86-64-v4's {k}{z} move) or ANDs in (x86-64-v3's float
    VANDPS) are loaded from .rodata once before the loop and read from a register in it, not
    loaded on every iteration (the sweep's bool_sum and argmax_bool, 2026-12-03)."""
    # 256 trips: a loop of 2 would be copied out whole (passes/unroll_tiny.py), one of 32
    # (widened to 32 or 16 blocks) too (passes/unroll_widened.py), no loop left
    text = disasm_object(compile_x86([parse(_kernel(src, dst, n, 256), "bcast.uop")], arch)[0])
    body = _loop_lines(text)
    assert any("vcmp" in s or "vpcmp" in s for s in body), body     # the compare is in it
    assert not any("rip" in s for s in body), body
    if arch == "x86-64-v4" and not _lane_mask_on_v4(src, dst, text):
        assert any("{z}" in s for s in body) and "rip" in text
    elif arch == "x86-64-v4":
        assert any(_v4_form(dst, form) in s for s in body), body
    else:
        assert any(form in s for s in body), body


@pytest.mark.parametrize("arch", ARCHS)
def test_straight_line_float_casts_share_one_register_of_ones(arch: str) -> None:
    """Two float32 x 8 bool casts copied out of a 2-trip loop (cast_bool2f r_64_4's shape)
    compare into lane masks with VEX instructions on both arches, no opmask (rule
    `cast_vex_compare`), and AND one register of 1.0s loaded once, no .rodata operand per
    VANDPS (rule `bool_ones_reg`: those loads were the kernel's bound)."""
    sink = parse(_kernel("int32", "float32", 8), "bcast.uop")
    args = random_inputs(sink, 7)
    assert np.array_equal(compile_and_run(sink, args, arch)[0], reference(sink, args)[0])
    text = disasm_object(compile_x86([sink], arch)[0])
    ands = [s for s in text.splitlines() if "vandps" in s]
    assert len(ands) == 2 and not any("ptr" in s for s in ands), ands
    assert "vpcmpgtd" in text and "{z}" not in text and " k1" not in text
