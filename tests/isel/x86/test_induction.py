"""Strength reduction of loop index sums on x86 (kcc/isel/x86/analysis.py `induction_sums`): a sum
`init + r*step` becomes a register that starts at init before the loop and adds step at its
END. Checked against the reference interpreter at trip counts 0, 1 and odd (MUL by a positive
and a negative constant, SHL, a scaled counter that is also a stored value, an int64 loop, a
step too wide for an immediate that must stay a multiply), and on the selected code."""

from __future__ import annotations

import io
import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.isel.x86.analysis import MAX_IVS, induction_sums
from kcc.passes.linearize import linearize
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.targets.x86.arch import X86_AVX2
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import assert_same, compile_and_run, reference

# (not under tests/data/kernels: the AMD target, which runs those files too, has no int64 RANGE)
KERNEL = """# kcc-uop 1
# Index sums `init + j*step` of every shape strength reduction takes: MUL by a positive and a
# negative constant, SHL, a bare scaled counter that is also a value, an int64 loop; inner trip
# counts from scalars (0 included).
%out = PARAM ParamArg(0, int32, 64)
%x = PARAM ParamArg(1, float32, 128)
%y = PARAM ParamArg(2, float32, 64)
%w = PARAM ParamArg(3, int64, 64)
%n = PARAM ParamArg(4, int32, vmin_vmax=(0, 8), addrspace=ALU)
%m = PARAM ParamArg(5, int64, vmin_vmax=(0, 8), addrspace=ALU)
%s = PARAM ParamArg(6, int32, vmin_vmax=(0, 40), addrspace=ALU)
%i = RANGE(8) (0, LOOP)
%j = RANGE(%n, %i) (1, LOOP)
%i8 = MUL(%i, 8)
%o = ADD(%i8, %j)
%j3 = MUL(%j, -3)
%b0 = ADD(%s, 60)
%xb = ADD(%b0, %j3)
%xi = INDEX(%x, %xb)
%xv = LOAD(%xi)
%j4 = SHL(%j, 2)
%yb = ADD(%j4, %i)
%yi = INDEX(%y, %yb)
%yv = LOAD(%yi)
%sum = ADD(%xv, %yv)
%cv = CAST(%sum) int32
%val = ADD(%cv, %j4)
%oi = INDEX(%out, %o)
%st = STORE(%oi, %val)
%e = END(%st, %j)
%k = RANGE(%m, %i) (2, LOOP)
%i8w = CAST(%i8) int64
%k5 = MUL(%k, -7)
%kb = MUL(%k, 5000000000)
%kk = MUL(%k, 1)
%wo = ADD(%i8w, %kk)
%wv0 = ADD(%k5, %i8w)
%wv = ADD(%wv0, %kb)
%wi = INDEX(%w, %wo)
%st2 = STORE(%wi, %wv)
%e2 = END(%st2, %k)
%g = GROUP(%e, %e2)
%ei = END(%g, %i)
SINK(%ei) KernelInfo(name="induction_sums")
"""


def _loops(text: str) -> list[list[str]]:
    """The ops of each loop body of the selected code (innermost bodies without their inner
    loops' code), in order of their LOOP_END."""
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(), dump_after="select", out=out)
    lines = [s.split(":", 1)[1].strip() for s in out.getvalue().splitlines()
             if s.split(":", 1)[0].strip().isdigit()]
    stack: list[list[str]] = []
    done = []
    for s in lines:
        if s.startswith("loop "):
            stack.append([])
        elif s.startswith("jl_rel32") or s.startswith("jb_rel32"):
            done.append(stack.pop())
        elif stack:
            stack[-1].append(s.split()[0])
    return done


def test_the_sums_are_counters_and_the_wide_step_stays_a_multiply() -> None:
    # (the int64 k loop is widened by 4 with a scalar tail loop after it: its symbolic bound
    # has no known factor; the main loop is the one checked)
    j_loop, k_loop, *_ = _loops(KERNEL)
    # j: x[s + 60 - 3j], y[4j + i], the stored 4j: three counters, no multiply, no shift
    assert not any(o.startswith(("imul", "shl")) for o in j_loop), j_loop
    assert j_loop.count("add_rm32_imm8") == 3, j_loop        # three counters ...
    assert j_loop.count("add_rm64_imm8") == 1, j_loop        # ... + the loop's (step_form)
    # k (int64): -7k is a counter; 5000000000k does not fit an imm32 and is multiplied
    assert k_loop.count("imul_r64_rm64") == 1 and "add_rm64_imm8" in k_loop, k_loop


def test_at_most_max_ivs_counters_a_loop() -> None:
    body = "\n".join(f"%m{k} = MUL(%j, {k + 2})\n%a{k} = ADD(%m{k}, %s)\n"
                     f"%p{k} = INDEX(%x, %a{k})\n%v{k} = LOAD(%p{k})\n"
                     f"%st{k} = STORE(%p{k}, %v{k})" for k in range(MAX_IVS + 2))
    text = ("# kcc-uop 1\n%x = PARAM ParamArg(0, float32, 64)\n"
            "%s = PARAM ParamArg(1, int32, vmin_vmax=(0, 8), addrspace=ALU)\n"
            "%j = RANGE(8) (0, LOOP)\n" + body + "\n%g = GROUP(" +
            ", ".join(f"%st{k}" for k in range(MAX_IVS + 2)) + ")\n%e = END(%g, %j)\n"
            'SINK(%e) KernelInfo(name="many")\n')
    ivs = induction_sums(linearize(lower_weak_dtypes(parse(text), X86_AVX2)))
    assert [len(v) for v in ivs.values()] == [MAX_IVS]


@pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (3, 5), (8, 8)])
def test_strength_reduced_sums_match_the_interpreter(n: int, m: int) -> None:
    sink = parse(KERNEL)
    rng = np.random.default_rng(n * 9 + m)
    args = [np.zeros(64, np.int32), (rng.standard_normal(128) * 50).astype(np.float32),
            (rng.standard_normal(64) * 50).astype(np.float32), np.zeros(64, np.int64),
            np.int32(n), np.int64(m), np.int32(rng.integers(0, 41))]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))


# out[i*13 + j] = x[j*11 + i]: tinygrad's transpose, its read index a MULACC(j, 11, i)
TRANSPOSE = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 143)
%x = PARAM ParamArg(1, float32, 143)
%c11 = CAST(11) int32
%c13 = CAST(13) int32
%i = RANGE(%c11) (0, WEAK)
%j = RANGE(%c13, %i) (1, WEAK)
%xi = MULACC(%j, %c11, %i)
%xp = INDEX(%x, %xi)
%v = LOAD(%xp)
%oi = MULACC(%i, %c13, %j)
%op = INDEX(%out, %oi)
%st = STORE(%op, %v)
%e = END(%st, %j)
%e2 = END(%e, %i)
SINK(%e2) KernelInfo(name="transpose")
"""


def test_a_mulacc_of_the_counter_is_a_counter() -> None:
    loops = _loops(TRANSPOSE)
    inner = loops[0]
    assert not any(o.startswith("imul") for o in inner), inner
    sink = parse(TRANSPOSE)
    args = [np.zeros(143, np.float32), np.arange(143, dtype=np.float32)]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))


# MULACC(j, 14, 0): the index kcc/passes/unit_loops.py leaves where a folded one-trip
# counter was the addend (conv1d's r_2_16_12_8_3, simplify keeps the zero addend)
ZERO_ADDEND = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 3)
%x = PARAM ParamArg(1, float32, 1428)
%c0 = CAST(0) int32
%c3 = CAST(3) int32
%c7 = CAST(7) int32
%c14 = CAST(14) int32
%c100 = CAST(100) int32
%i = RANGE(%c3) (0, LOOP)
%j = RANGE(%c100, %i) (1, LOOP)
%j14 = MULACC(%j, %c14, %c0)
%xi = MULACC(%i, %c7, %j14)
%xp = INDEX(%x, %xi)
%v = LOAD(%xp)
%oi = INDEX(%out, %i)
%st = STORE(%oi, %v)
%e = END(%st, %j)
%e2 = END(%e, %i)
SINK(%e2) KernelInfo(name="zero_addend")
"""


def test_a_mulacc_with_a_zero_addend_is_a_counter() -> None:
    g = linearize(lower_weak_dtypes(parse(ZERO_ADDEND), X86_AVX2))
    ivs = induction_sums(g)
    from kcc.ir.consts import const_int
    j14 = next(u for u in g if u.op.name == "MULACC" and const_int(u.src[2]) == 0)
    assert any(node is j14 and init is None and step == 14
               for v in ivs.values() for node, init, step in v), ivs
    sink = parse(ZERO_ADDEND)
    args = [np.zeros(3, np.float32), np.arange(1428, dtype=np.float32)]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))
