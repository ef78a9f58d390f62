"""Splats of gated loads on x86 (kcc/isel/x86/shuf.py `gated_splat`): a lane of
`WHERE(gate, LOAD, +0.0)` (a gated load after legalize_gates) in every lane of a vector is a
VBROADCASTSS from the loaded memory AND the gate's mask broadcast to every lane, instead of
the load, its AND and a SHUFPS/VBROADCASTSS of the result; and a lane of a vector just loaded
is still broadcast from memory when only stores to kcc's own frame (a REG buffer) came between.

What is checked: results against the reference interpreter on x86-64-v3 and x86-64-v4 with
gates both true and false in one launch (a scalar gate's mask has only its low lanes set: a
broadcast that kept it as it is would zero lanes 2 and 3 of a true gate), gated scalars and
gated 4-lane vectors, a gated value also read unsplatted; and the forms in the loop: every
broadcast reads memory, no SHUFPS, no register VBROADCASTSS.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

N = 9


R = 3                                  # the inner loop's largest trip count (a scalar)
XS = 4 * N + 8 + 16 * R


def kernel(extra_use: bool = False, reg_acc: bool = False) -> str:
    """For i < N, r < n: y[4(iR+r) : +4] = Σ_t splat(x[i+t-1+16r] gated by 0 <= i+t-1 < N)
    · w[4t : 4t+4] (t = 0, 1, 2) + Σ_k splat(lane k of x[4i+4+16r : +4] gated by i < N-2)
    · w[12+4k : 16+4k]. The gates depend on i only: their masks leave the inner loop.
    ``extra_use``: the gated scalar x[i-1+16r] is also added to lane 0 unsplatted (its
    WHERE stays). ``reg_acc``: the sum goes through a REG buffer (a frame store between the
    vector's load and the splats of its lanes 2 and 3)."""
    t = ["# kcc-uop 1", f"%y = PARAM ParamArg(0, float32, {4 * N * R})",
         f"%x = PARAM ParamArg(1, float32, {XS})",
         "%w = PARAM ParamArg(2, float32, 28)",
         f"%n = PARAM ParamArg(3, int32, vmin_vmax=(0, {R}), addrspace=ALU)",
         "%z = CAST(0.0) float32", "%z4 = STACK(%z, %z, %z, %z)",
         f"%i = RANGE({N}) (0, LOOP)", "%r = RANGE(%n, %i) (1, LOOP)",
         "%r16 = MUL(%r, 16)", f"%iR = MUL(%i, {R})", "%row = ADD(%iR, %r)",
         "%o4 = MUL(%row, 4)"]
    if reg_acc:
        t += ["%acc = BUFFER ParamArg(0, float32, 4, addrspace=REG)"]
    for k, (off, gate) in enumerate([(-1, "CMPLT(0, %i)"), (0, None),
                                     (1, f"CMPLT(%i, {N - 1})")]):
        t += [f"%h{k} = ADD(%i, {off})", f"%j{k} = ADD(%h{k}, %r16)",
              f"%p{k} = INDEX(%x, %j{k})"]
        if gate:
            t += [f"%g{k} = {gate}", f"%s{k} = LOAD(%p{k}, %z, %g{k})"]
        else:
            t.append(f"%s{k} = LOAD(%p{k})")
        t += [f"%b{k} = STACK(%s{k}, %s{k}, %s{k}, %s{k})",
              f"%pw{k} = SHRINK(%w, {4 * k}, 4)", f"%w{k} = LOAD(%pw{k})",
              f"%m{k} = MUL(%b{k}, %w{k})"]
    t += ["%i4 = MUL(%i, 4)", "%v1 = ADD(%i4, 4)", "%v0 = ADD(%v1, %r16)",
          "%pv = SHRINK(%x, %v0, 4)", f"%gv = CMPLT(%i, {N - 2})",
          "%lv = LOAD(%pv, %z4, %gv)"]
    for k in range(4):
        t += [f"%e{k} = INDEX(%lv, {k})", f"%c{k} = STACK(%e{k}, %e{k}, %e{k}, %e{k})",
              f"%pu{k} = SHRINK(%w, {12 + 4 * k}, 4)", f"%u{k} = LOAD(%pu{k})",
              f"%n{k} = MUL(%c{k}, %u{k})"]
    acc = "%m0"
    for q, term in enumerate(["%m1", "%m2", "%n0", "%n1"]):
        t.append(f"%a{q} = ADD({acc}, {term})")
        acc = f"%a{q}"
    if reg_acc:
        t += ["%pr = SHRINK(%acc, 0, 4)", f"%sr = STORE(%pr, {acc})",
              "%ra = AFTER(%acc, %sr)", "%pr2 = SHRINK(%ra, 0, 4)", "%rl = LOAD(%pr2)"]
        acc = "%rl"
    for q, term in enumerate(["%n2", "%n3"]):
        t.append(f"%q{q} = ADD({acc}, {term})")
        acc = f"%q{q}"
    if extra_use:
        t += [f"%x0 = INDEX({acc}, 0)", "%x1 = ADD(%x0, %s0)", f"%x2 = INDEX({acc}, 1)",
              f"%x3 = INDEX({acc}, 2)", f"%x4 = INDEX({acc}, 3)",
              "%xs = STACK(%x1, %x2, %x3, %x4)"]
        acc = "%xs"
    t += ["%py = SHRINK(%y, %o4, 4)", f"%st = STORE(%py, {acc})", "%e = END(%st, %r)",
          "%ei = END(%e, %i)", 'SINK(%ei) KernelInfo(name="gated_splat")']
    return "\n".join(t) + "\n"


def _check(text: str, arch: str) -> None:
    sink = parse(text)
    args = random_inputs(sink, seed=3)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _loop(text: str, arch: str) -> list[str]:
    """The instructions between the loop's head and its backward branch."""
    obj, _ = compile_x86([parse(text)], arch)
    ins, at = [], {}
    for ln in disasm_object(obj).splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(.*)$", ln)
        if m:
            at[int(m.group(1), 16)] = len(ins)
            ins.append(m.group(2))
    # the innermost loop: the backward jump whose target is the latest
    back = [(at[int(t, 16)], k) for k, i in enumerate(ins)
            if (t := (re.match(r"j[a-z]+ (0x[0-9a-f]+)$", i) or [None, None])[1])
            and int(t, 16) in at and at[int(t, 16)] <= k]
    start, end = max(back)
    return ins[start:end + 1]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("extra_use,reg_acc", [(False, False), (True, False), (False, True)])
def test_gated_splats_match_the_interpreter(arch: str, extra_use: bool, reg_acc: bool) -> None:
    _check(kernel(extra_use, reg_acc), arch)


@pytest.mark.parametrize("arch", ["x86-64-v3"])
@pytest.mark.parametrize("reg_acc", [False, True])
def test_gated_splats_are_broadcasts_from_memory(arch: str, reg_acc: bool) -> None:
    # (x86-64-v4 selects these gated loads as opmask-masked loads, kcc/isel/x86/kmask.py:
    # no WHERE is left to splat there; its values are checked above)
    ins = _loop(kernel(reg_acc=reg_acc), arch)
    text = "\n".join(ins)
    # (x86-64-v4 reads the ungated scalar as an embedded broadcast, `{1to4}`)
    bc = [i for i in ins if i.startswith("vbroadcastss") or "{1to4}" in i]
    # 3 scalars + 4 lanes of the vector (per copy of the body, should it be unrolled), each
    # read from memory; the masks' broadcasts are invariant and left the loop
    assert bc and len(bc) % 7 == 0 and all("ptr [" in i for i in bc), text
    assert not any(i.startswith(("vshufps", "vpermilps")) for i in ins), text
    # the gated vector itself is not loaded any more: its lanes come from memory
    assert not any(re.match(r"vmovups xmm\d+, xmmword ptr \[r(?!sp)", i) for i in ins), text


@pytest.mark.parametrize("arch", ARCHS)
def test_gate_false_gives_zero_lanes(arch: str) -> None:
    """Explicit values: x all ones, w all ones; y[4i+l] counts the true gates of row i."""
    sink = parse(kernel())
    x = np.ones(XS, np.float32)
    w = np.ones(28, np.float32)
    got = compile_and_run(sink, [np.zeros(4 * N * R, np.float32), x, w, R], arch)[0]
    want = [(1 + (i > 0) + (i < N - 1)) + 4 * (i < N - 2) for i in range(N) for _ in range(R)]
    assert got.reshape(N * R, 4).tolist() == [[float(v)] * 4 for v in want]


FRAME_STORE_BETWEEN = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 4)
%a = PARAM ParamArg(1, float32, 4)
%k = PARAM ParamArg(2, int32, vmin_vmax=(0, 3), addrspace=ALU)
%r = BUFFER ParamArg(0, float32, 4, addrspace=REG)
%z = CAST(0.0) float32
%pk = INDEX(%r, %k)
%st00 = STORE(%pk, %z)
%r0 = AFTER(%r, %st00)
%pa = SHRINK(%a, 0, 4)
%va = LOAD(%pa)
%pr = SHRINK(%r0, 0, 4)
%st0 = STORE(%pr, %va)
%r1 = AFTER(%r, %st0)
%pr1 = SHRINK(%r1, 0, 4)
%vr = LOAD(%pr1)
%n1 = ADD(%vr, %vr)
%st1 = STORE(%pr1, %n1)
%l1 = INDEX(%vr, 1)
%sp = STACK(%l1, %l1, %l1, %l1)
%m = MUL(%sp, %n1)
%py = SHRINK(%y, 0, 4)
%st2 = STORE(%py, %m)
%g = GROUP(%st1, %st2)
SINK(%g) KernelInfo(name="frame_store_between")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_frame_store_over_a_frame_load_keeps_the_register(arch: str) -> None:
    """A REG buffer (in the frame: one of its places is not constant) is loaded, overwritten
    with twice the value, then lane 1 of the loaded value is splatted: a store to the frame
    does not block re-reading a buffer argument, but it does block re-reading the frame
    itself (the broadcast would read the new 2·a[1])."""
    sink = parse(FRAME_STORE_BETWEEN)
    args = [np.zeros(4, np.float32), np.array([1, 2, 3, 4], np.float32), 2]
    got = compile_and_run(sink, args, arch)
    assert list(got[0]) == [4.0, 8.0, 12.0, 16.0]
    assert_same(sink, got, reference(sink, args))
