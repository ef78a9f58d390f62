"""Frames larger than a page are probed page by page (kcc/targets/x86/code.py `probed_frame`).

What is checked: walking the prologue's items, rsp never reaches past the page below the
lowest page touched so far (the pushes', then each probe's: a guard page is never stepped
over), and it ends FRAME_ALIGN-aligned exactly `frame` bytes below the aligned entry; a
kernel with a 16 KiB REG buffer gets the probe loop (read back by capstone) and no larger
single `sub rsp`, and computes what numpy's reverse does; a frame within a page keeps the
two-instruction prologue.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.x86.code import FRAME_ALIGN, PAGE, PROBE_LABEL, probed_frame
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import compile_and_run


def walk(items: list[tuple], entry: int) -> tuple[int, int]:
    """rsp after items from entry (an address the pushes just wrote), and the most pages rsp
    ever went below the lowest page touched before it."""
    rsp, lowest, worst, r11, k = entry, entry, 0, None, 0
    labels = {it[1]: n for n, it in enumerate(items) if it[0] == "label"}
    zf = False
    while k < len(items):
        op, *ops = items[k]
        k += 1
        if op == "and_rm64_imm8":
            rsp &= ops[1].value
        elif op.startswith("sub_rm64"):
            rsp -= ops[1].value
        elif op == "lea_r64_m":
            r11 = rsp + ops[1].disp
        elif op == "or_rm64_imm8":
            lowest = min(lowest, rsp + ops[0].disp)
        elif op == "cmp_rm64_r64":
            zf = rsp == r11
        elif op == "jne_rel8":
            if not zf:
                k = labels[ops[0].name]
        elif op != "label":
            raise AssertionError(op)
        worst = max(worst, lowest // PAGE - rsp // PAGE)
    return rsp, worst


@pytest.mark.parametrize("frame", [PAGE + 64, 2 * PAGE, 2 * PAGE + 4032, 64 * PAGE, 65536 + 640])
@pytest.mark.parametrize("entry", [0x7000_0000_1000, 0x7000_0000_1008, 0x7000_0000_1ff8])
def test_no_step_over_a_page(frame, entry):
    rsp, worst = walk(probed_frame(frame), entry)
    assert rsp % FRAME_ALIGN == 0 and rsp == (entry & -FRAME_ALIGN) - frame
    assert worst <= 1


def big_frame_kernel(n: int) -> str:
    """out[i] = x[n-1-i] through a REG buffer of n float32 (a frame of 4n bytes)."""
    return "\n".join([
        "# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {n})",
        f"%x = PARAM ParamArg(1, float32, {n})",
        f"%t = BUFFER ParamArg(0, float32, {n}, addrspace=REG)",
        f"%i = RANGE({n}) (0, LOOP)", "%xi = INDEX(%x, %i)", "%v = LOAD(%xi)",
        f"%j = SUB({n - 1}, %i)", "%tj = INDEX(%t, %j)", "%s = STORE(%tj, %v)",
        "%e = END(%s, %i)", "%a = AFTER(%t, %e)",
        f"%k = RANGE({n}) (1, LOOP)", "%tk = INDEX(%a, %k)", "%w = LOAD(%tk)",
        "%ok = INDEX(%out, %k)", "%s2 = STORE(%ok, %w)", "%e2 = END(%s2, %k)",
        'SINK(%e2) KernelInfo(name="rev")']) + "\n"


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_big_frame_is_probed_and_runs(arch):
    sink = parse(big_frame_kernel(4096), "k.uop")
    text = disasm_object(compile_x86([sink], arch)[0])
    subs = [int(v, 16) for v in re.findall(r"sub rsp, (0x[0-9a-f]+)", text)]
    assert PAGE in subs and max(subs) == PAGE
    assert "or qword ptr [rsp], 0" in text and "cmp rsp, r11" in text
    x = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    out = compile_and_run(sink, [np.zeros(4096, np.float32), x], arch)[0]
    assert np.array_equal(out, x[::-1])


def test_a_small_frame_keeps_its_prologue():
    sink = parse(big_frame_kernel(64), "k.uop")
    text = disasm_object(compile_x86([sink], "x86-64-v3")[0])
    assert "sub rsp, 0x" in text and "r11" not in text and PROBE_LABEL not in text
