"""Splats of one scalar at two widths in one straight-line run (conv1d's 12 output columns as
8 + 4 lanes, each weight splat at both): the narrower reads the wider one's register, its low
lanes (kcc/isel/x86/analysis.py `wider_splats`), so the scalar is broadcast from memory once
— not once a width, which on x86-64-v4 were two embedded-broadcast loads every tap.

Checked: the broadcasts of the disassembly (one per scalar), which splats the analysis pairs
(none into or out of a loop, nor a narrower one before the wider), and results against the
reference interpreter on x86-64-v3 and v4, float32 and float64.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.isel.x86.analysis import wider_splats
from kcc.targets.x86.target import compile_x86, disasm_object
from passes_support import param, rng, strong
from x86_util import ARCHS, assert_same, compile_and_run, reference

BCST = re.compile(r"\{1to(\d+)\}")
SPLAT = re.compile(r"\bvbroadcasts[sd] ([xyz])mm\d+, \w+ ptr")
WIDE = {"float32": 8, "float64": 4}


def _kernel(dt: str, narrow_first: bool = False) -> str:
    """y[i] = x8[i] * splat8(s[i]) + ..., z[i] = x4[i] * splat4(s[i]): one scalar load of s,
    a splat of it at the full and the half width (ymm, xmm)."""
    w = WIDE[dt]
    h = w // 2
    sp = ", ".join
    wide = [f"%bw = STACK({sp(['%s'] * w)})", f"%pw = SHRINK(%x, %ow, {w})", "%vw = LOAD(%pw)",
            "%rw = MUL(%vw, %bw)", f"%qw = SHRINK(%y, %ow, {w})", "%sw = STORE(%qw, %rw)"]
    narrow = [f"%bh = STACK({sp(['%s'] * h)})", f"%ph = SHRINK(%x, %oh, {h})", "%vh = LOAD(%ph)",
              "%rh = MUL(%vh, %bh)", f"%qh = SHRINK(%z, %oh, {h})", "%sh = STORE(%qh, %rh)"]
    lines = ["# kcc-uop 1", f"%y = PARAM ParamArg(0, {dt}, {w * 6})",
             f"%z = PARAM ParamArg(1, {dt}, {w * 6})", f"%x = PARAM ParamArg(2, {dt}, {w * 6})",
             f"%t = PARAM ParamArg(3, {dt}, 6)",
             "%n = PARAM ParamArg(4, int32, vmin_vmax=(0, 6), addrspace=ALU)",
             "%i = RANGE(%n) (0, LOOP)",
             f"%ow = MUL(%i, {w})", f"%oh = ADD(%ow, {h})", "%pt = INDEX(%t, %i)",
             "%s = LOAD(%pt)"]
    lines += narrow + wide if narrow_first else wide + narrow
    lines += ["%g = GROUP(%sw, %sh)", "%e = END(%g, %i)", 'SINK(%e) KernelInfo(name="splats")']
    return "\n".join(lines) + "\n"


def _broadcasts(text: str, arch: str) -> tuple[list[str], list[str]]:
    obj, _ = compile_x86([parse(text)], arch)
    dis = disasm_object(obj)
    return SPLAT.findall(dis), BCST.findall(dis)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_narrow_splat_reads_the_wide_register(arch: str, dt: str) -> None:
    splats, embedded = _broadcasts(_kernel(dt), arch)
    assert splats == ["y"] and embedded == [], (splats, embedded)


def test_which_splats_read_a_wider_one() -> None:
    """Only a narrower splat after a wider one of the same scalar in the same loop nest (not
    into an inner loop, nor out of one; across a whole inner loop, yes); integer splats too;
    constants (from .rodata), a mixed STACK and bool lanes never."""
    s, t = param(0, dtypes.float32), param(1, dtypes.float32)
    w8, n4, m4 = (UOp(Ops.STACK, (s,) * k) for k in (8, 4, 4))
    c8, c4 = (UOp(Ops.STACK, (strong(2.0, dtypes.float32),) * k) for k in (8, 4))
    mixed = UOp(Ops.STACK, (s, t, s, s))
    r = rng(4, 0)
    end = UOp(Ops.END, (w8, r))
    assert wider_splats([s, t, w8, n4, m4, mixed]) == {n4: w8, m4: w8}
    assert wider_splats([s, n4, w8]) == {}
    assert wider_splats([s, w8, r, n4]) == {}                  # into an inner loop
    assert wider_splats([s, r, w8, end, n4]) == {}             # out of one
    assert wider_splats([s, w8, r, end, n4]) == {n4: w8}       # across one
    assert wider_splats([c8, c4]) == {}
    i, b = param(2, dtypes.int32), param(3, dtypes.bool)
    i8, i4 = (UOp(Ops.STACK, (i,) * k) for k in (8, 4))
    b8, b4 = (UOp(Ops.STACK, (b,) * k) for k in (8, 4))
    assert wider_splats([i, i8, i4, b, b8, b4]) == {i4: i8}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("narrow_first", [False, True])
def test_results_match_the_interpreter(arch: str, dt: str, narrow_first: bool) -> None:
    sink = parse(_kernel(dt, narrow_first))
    gen = np.random.default_rng(3)
    w = WIDE[dt]
    npdt = np.dtype(dt)
    args = [np.zeros(w * 6, npdt), np.zeros(w * 6, npdt),
            (gen.standard_normal(w * 6) * 4).astype(npdt),
            (gen.standard_normal(6) * 4).astype(npdt), np.int32(6)]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
