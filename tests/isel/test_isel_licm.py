"""Loop-invariant code motion after selection (kcc/isel/licm.py).

On hand-built machine functions: what moves to the preheader (an invariant mask chain, a
flag writer with its reader), what stays (loop-carried registers, buffer loads, a flag pair
with a variant half, the compare of an inner loop's guard, a register read before its write)
and how a constant read by moving and staying code is copied. End to end: a kernel whose gated
loads have gates that depend only on the outer loop, at inner trip counts 0, 1, odd and full
and gates true and false, against the reference interpreter, with the masks outside the loop.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp, Role, verify_mir
from kcc.isel.licm import hoist_invariants
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target, _alone, _flags_of, _movable
from x86_util import assert_same, compile_and_run, reference
from paths import DATA

D, U, DU = Role.DEF, Role.USE, Role.DEF | Role.USE
RDI, RSI = PReg("rdi", "gpr"), PReg("rsi", "gpr")
KERNEL = DATA / "kernels" / "loop_invariant_gates.uop"


def _fn(n: int = 8) -> tuple[MFunction, list]:
    fn = MFunction("k")
    vs = [fn.new_vreg("gpr") for _ in range(n)]
    fn.params += [(vs[0], RDI), (vs[1], RSI)]
    return fn, vs


def _loop(body: list[Inst], counter, label: str = "L") -> list[Inst]:
    """counter = 0; loop: body; counter += 1; while counter < 8."""
    return ([Inst("mov_r32_imm32", [RegOp(counter, D), Imm(0)]),
             Inst("label", [Label(label)], kind=Kind.LOOP_BEGIN)] + body +
            [Inst("add_rm32_imm8", [RegOp(counter, DU), Imm(1)]),
             Inst("cmp_rm32_imm8", [RegOp(counter, U), Imm(8)]),
             Inst("jl_rel32", [Label(label)], kind=Kind.LOOP_END)])


def _run(fn: MFunction) -> int:
    n = hoist_invariants(fn, _movable, _flags_of)
    verify_mir(fn)
    return n


def _inside(fn: MFunction, label: str = "L") -> list[str]:
    """The ops between the LOOP_BEGIN of label and its LOOP_END."""
    ops = [i.op if i.kind is not Kind.LOOP_BEGIN else f"begin {i.label()}" for i in fn.insts]
    b = ops.index(f"begin {label}")
    e = next(k for k in range(b, len(fn.insts)) if fn.insts[k].kind is Kind.LOOP_END
             and fn.insts[k].label() == label)
    return ops[b + 1:e]


def test_an_invariant_mask_chain_moves_before_the_loop() -> None:
    fn, v = _fn()
    x = fn.new_vreg("vec")
    body = [Inst("movzx_r32_rm8", [RegOp(v[3], D), RegOp(v[1], U)]),
            Inst("neg_rm64", [RegOp(v[3], DU)]),
            Inst("vmovq_x_r64", [RegOp(x, D), RegOp(v[3], U)]),
            Inst("vmovss_m32_x", [Mem(v[0], v[2], 4, 0), RegOp(x, U)])]
    fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
    assert _run(fn) == 3
    assert _inside(fn) == ["vmovss_m32_x", "add_rm32_imm8", "cmp_rm32_imm8"]
    assert [i.op for i in fn.insts[:4]] == ["mov_r32_imm32", "movzx_r32_rm8", "neg_rm64",
                                            "vmovq_x_r64"]


def test_a_loop_carried_register_and_what_reads_it_stay() -> None:
    fn, v = _fn()
    body = [Inst("mov_r64_rm64", [RegOp(v[3], D), RegOp(v[2], U)]),   # reads the counter
            Inst("add_rm32_imm8", [RegOp(v[4], DU), Imm(3)]),          # v4 carried around
            Inst("mov_rm32_r32", [Mem(v[0], v[3], 4, 0), RegOp(v[4], U)])]
    fn.insts = ([Inst("mov_r32_imm32", [RegOp(v[4], D), Imm(0)])] + _loop(body, v[2])
                + [Inst("ret", kind=Kind.RET)])
    assert _run(fn) == 0


def test_a_register_read_before_its_write_in_the_loop_stays() -> None:
    fn, v = _fn()
    body = [Inst("mov_rm32_r32", [Mem(v[0], v[2], 4, 0), RegOp(v[3], U)]),  # previous value
            Inst("mov_r64_rm64", [RegOp(v[3], D), RegOp(v[1], U)])]         # invariant def
    fn.insts = ([Inst("mov_r64_rm64", [RegOp(v[3], D), RegOp(v[0], U)])] + _loop(body, v[2])
                + [Inst("ret", kind=Kind.RET)])
    assert _run(fn) == 0
    # written only in the loop but read first: the read sees the last iteration's value
    fn2, w = _fn()
    fn2.insts = _loop([Inst("mov_rm32_r32", [Mem(w[0], w[2], 4, 0), RegOp(w[3], U)]),
                       Inst("mov_r64_rm64", [RegOp(w[3], D), RegOp(w[1], U)])], w[2]) + \
        [Inst("ret", kind=Kind.RET)]
    assert _run(fn2) == 0


def test_a_buffer_load_stays_and_so_does_what_it_feeds() -> None:
    fn, v = _fn()
    body = [Inst("mov_r32_rm32", [RegOp(v[3], D), Mem(v[1], None, 1, 0)]),  # invariant place
            Inst("add_r32_rm32", [RegOp(v[3], DU), RegOp(v[1], U)]),
            Inst("mov_rm32_r32", [Mem(v[0], v[2], 4, 0), RegOp(v[3], U)])]
    fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
    assert _run(fn) == 0


def test_a_flag_pair_moves_whole_or_not_at_all() -> None:
    fn, v = _fn()
    body = [Inst("mov_r64_rm64", [RegOp(v[3], D), RegOp(v[0], U)]),
            Inst("test_rm8_r8", [RegOp(v[1], U), RegOp(v[1], U)]),
            Inst("cmovne_r32_rm32", [RegOp(v[3], DU), RegOp(v[1], U)]),
            Inst("mov_rm32_r32", [Mem(v[0], v[2], 4, 0), RegOp(v[3], U)])]
    fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
    assert _run(fn) == 3
    assert [i.op for i in fn.insts[1:4]] == ["mov_r64_rm64", "test_rm8_r8", "cmovne_r32_rm32"]
    # the same pair with a variant cmov source: the invariant test must stay beside it
    fn2, w = _fn()
    body2 = [Inst("mov_r64_rm64", [RegOp(w[3], D), RegOp(w[0], U)]),
             Inst("test_rm8_r8", [RegOp(w[1], U), RegOp(w[1], U)]),
             Inst("mov_r64_rm64", [RegOp(w[5], D), RegOp(w[0], U)]),   # no flags between
             Inst("cmovne_r32_rm32", [RegOp(w[3], DU), RegOp(w[2], U)]),
             Inst("mov_rm32_r32", [Mem(w[0], w[2], 4, 0), RegOp(w[3], U)]),
             Inst("mov_rm32_r32", [Mem(w[0], w[2], 4, 4), RegOp(w[5], U)])]
    fn2.insts = _loop(body2, w[2]) + [Inst("ret", kind=Kind.RET)]
    _run(fn2)
    inside = _inside(fn2)
    assert "test_rm8_r8" in inside and "cmovne_r32_rm32" in inside
    assert inside.index("cmovne_r32_rm32") > inside.index("test_rm8_r8")


def test_an_inner_loop_guard_compare_stays_before_its_branch() -> None:
    fn, v = _fn()
    inner = [Inst("cmp_rm32_imm8", [RegOp(v[1], U), Imm(0)]),     # invariant bound
             Inst("jle_rel32", [Label("skip")], kind=Kind.BRANCH)]
    inner += _loop([Inst("mov_rm32_r32", [Mem(v[0], v[4], 4, 0), RegOp(v[2], U)])], v[4],
                   "J")
    inner += [Inst("label", [Label("skip")], kind=Kind.LABEL)]
    fn.insts = _loop(inner, v[2]) + [Inst("ret", kind=Kind.RET)]
    _run(fn)
    inside = _inside(fn)
    assert inside[inside.index("jle_rel32") - 1] == "cmp_rm32_imm8"


def test_a_constant_read_in_and_out_of_the_loop_is_copied_for_the_moved_code() -> None:
    fn, v = _fn()
    z, m = fn.new_vreg("vec"), fn.new_vreg("vec")
    body = [Inst("vzero", [RegOp(z, D)]),
            Inst("vpinsrd_x_x_rm32_imm8", [RegOp(m, D), RegOp(z, U), RegOp(v[1], U), Imm(0)]),
            Inst("vmovups_m128_x", [Mem(v[0], v[2], 4, 0), RegOp(m, U)]),
            Inst("vmovups_m128_x", [Mem(v[0], v[2], 4, 16), RegOp(z, U)])]
    fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
    _run(fn)
    inside = _inside(fn)
    assert inside.count("vzero") == 1 and "vpinsrd_x_x_rm32_imm8" not in inside
    pre = fn.insts[1:3]
    assert [i.op for i in pre] == ["vzero", "vpinsrd_x_x_rm32_imm8"]
    clone = pre[0].operands[0].reg
    assert clone is not z and pre[1].operands[1].reg is clone


def test_a_lone_constant_stays_in_its_loop() -> None:
    fn, v = _fn()
    z = fn.new_vreg("vec")
    body = [Inst("vzero", [RegOp(z, D)]),
            Inst("vmovups_m128_x", [Mem(v[0], v[2], 4, 0), RegOp(z, U)])]
    fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
    assert _run(fn) == 0


def _rodata_ones(fn: MFunction, t) -> Inst:
    """t = a ymm of 1s from .rodata."""
    return Inst("vmovups_y_ym", [RegOp(t, D), Mem()], arg={"rip": ".LC0"})


def test_a_vector_rodata_constant_moves_alone_where_the_target_says() -> None:
    """x86's `alone`: a whole-vector .rodata load read by a masked move that stays (its mask
    varies) leaves the loop; without `alone` it stays, and a vzero (no load) stays either way."""
    def build() -> MFunction:
        fn, v = _fn()
        c, z, t = fn.new_vreg("vec"), fn.new_vreg("vec"), fn.new_vreg("vec")
        k = fn.new_vreg("mask")
        body = [_rodata_ones(fn, c), Inst("vzero", [RegOp(z, D)]),
                Inst("kmovq_k_km64", [RegOp(k, D), Mem(v[0], v[2], 8, 0)]),
                Inst("vmovdqu32_y_kz_ym", [RegOp(t, D), RegOp(k, U), RegOp(c, U)]),
                Inst("vpaddd_y_y_ym", [RegOp(t, D), RegOp(t, U), RegOp(z, U)]),
                Inst("vmovups_m256_y", [Mem(v[0], v[2], 4, 0), RegOp(t, U)])]
        fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
        return fn

    fn = build()
    assert hoist_invariants(fn, _movable, _flags_of, alone=_alone) == 1
    verify_mir(fn)
    assert "vmovups_y_ym" not in _inside(fn) and "vzero" in _inside(fn)
    assert [i.op for i in fn.insts[:2]] == ["mov_r32_imm32", "vmovups_y_ym"]
    fn = build()
    assert _run(fn) == 0 and "vmovups_y_ym" in _inside(fn)


def test_a_movabs_constant_moves_alone_where_the_target_says() -> None:
    """x86's `alone`: a 64-bit immediate that needs MOVABS (u64_div's magic multiplier) leaves
    the loop by itself; a 32-bit immediate's MOV stays, as does the MOVABS without `alone`."""
    def build() -> MFunction:
        fn, v = _fn()
        c, k, t = fn.new_vreg("gpr"), fn.new_vreg("gpr"), fn.new_vreg("gpr")
        body = [Inst("movabs_r64_imm64", [RegOp(c, D), Imm(896011011859258473)]),
                Inst("mov_rm64_imm32", [RegOp(k, D), Imm(7)]),
                Inst("mov_r64_rm64", [RegOp(t, D), Mem(v[1], v[2], 8, 0)]),
                Inst("imul_r64_rm64", [RegOp(t, DU), RegOp(c, U)]),
                Inst("add_r64_rm64", [RegOp(t, DU), RegOp(k, U)]),
                Inst("mov_rm64_r64", [Mem(v[0], v[2], 8, 0), RegOp(t, U)])]
        fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
        return fn

    fn = build()
    assert hoist_invariants(fn, _movable, _flags_of, alone=_alone) == 1
    verify_mir(fn)
    assert "movabs_r64_imm64" not in _inside(fn) and "mov_rm64_imm32" in _inside(fn)
    assert fn.insts[1].op == "movabs_r64_imm64"
    fn = build()
    assert _run(fn) == 0 and "movabs_r64_imm64" in _inside(fn)


def _innermost_ops(sink) -> list[str]:
    out = io.StringIO()
    run_pipeline(sink, X86Target(), dump_after="select", out=out)
    # listing lines are "N:   op operands"; the innermost loop is the last one opened
    lines = [s.split(":", 1)[1].strip() for s in out.getvalue().splitlines()
             if s.split(":", 1)[0].strip().isdigit()]
    b = max(k for k, s in enumerate(lines) if s.startswith("loop "))
    e = next(k for k in range(b, len(lines)) if lines[k].startswith("jl_rel32"))
    return [s.split()[0] for s in lines[b + 1:e]]


def test_gate_masks_are_built_outside_the_inner_loop() -> None:
    sink = parse(KERNEL.read_text(), str(KERNEL))
    inside = _innermost_ops(sink)
    assert "vpinsrd_x_x_rm32_imm8" not in inside and "neg_rm64" not in inside, inside
    assert "vblendvps_x_x_xm_x" in inside     # the blends themselves stay


def _with_alt(alt: str) -> str:
    """The kernel with both gated loads' alt values replaced by alt."""
    return KERNEL.read_text().replace("CAST(1.5) float32", f"CAST({alt}) float32").replace(
        "LOAD(%xi, -2.0, %h)", f"LOAD(%xi, {alt}, %h)")


def test_a_positive_zero_alt_is_a_mask_and_not_a_blend() -> None:
    inside = _innermost_ops(parse(_with_alt("0.0")))
    assert "vandps_x_x_xm" in inside and "vblendvps_x_x_xm_x" not in inside, inside
    # -0.0 is not the all-zero bit pattern: it stays a blend
    inside = _innermost_ops(parse(_with_alt("-0.0")))
    assert "vandps_x_x_xm" not in inside and "vblendvps_x_x_xm_x" in inside, inside


@pytest.mark.parametrize("alt", ["1.5", "0.0", "-0.0"])
@pytest.mark.parametrize("n", [0, 1, 3, 8, 15])
@pytest.mark.parametrize("k", [-1, 0, 3, 9])
def test_gated_loads_with_invariant_gates_match_the_interpreter(n: int, k: int,
                                                                alt: str) -> None:
    sink = parse(_with_alt(alt), str(KERNEL))
    rng = np.random.default_rng(n * 31 + k + 1)
    args = [np.zeros(32, np.float32), (rng.standard_normal(64) * 4).astype(np.float32),
            np.int32(n), np.int32(k)]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))


def test_a_setcc_moves_with_its_flag_writer() -> None:
    # `cmp v1, -1; sete v3` reads no register but RFLAGS: it is no constant to leave in the
    # loop, where it read the loop counter's compare once the cmp had moved (issue 20, §2)
    fn, v = _fn()
    body = [Inst("cmp_rm32_imm8", [RegOp(v[1], U), Imm(-1)]),
            Inst("sete_rm8", [RegOp(v[3], D)]),
            Inst("mov_rm8_r8", [Mem(v[0], v[2], 1, 0), RegOp(v[3], U)])]
    fn.insts = _loop(body, v[2]) + [Inst("ret", kind=Kind.RET)]
    assert _run(fn) == 2
    assert _inside(fn) == ["mov_rm8_r8", "add_rm32_imm8", "cmp_rm32_imm8"]
    assert [i.op for i in fn.insts[1:3]] == ["cmp_rm32_imm8", "sete_rm8"]


DIVIDE_BY_PARAM = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, 16)
%x = PARAM ParamArg(1, {dt}, 16)
%d = PARAM ParamArg(2, {dt}, 1)
%di = INDEX(%d, 0)
%d0 = LOAD(%di)
%i = RANGE(16) (0, LOOP)
%xi = INDEX(%x, %i)
%xv = LOAD(%xi)
%q = {op}(%xv, %d0)
%oi = INDEX(%out, %i)
%s = STORE(%oi, %q)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("op", ["CDIV", "CMOD"])
@pytest.mark.parametrize("divisor", [-1, 1, -2, 3])
def test_division_by_a_loaded_minus_one_is_right_in_every_iteration(dt: str, op: str,
                                                                    divisor: int) -> None:
    # tinygrad's Tensor.div(Tensor([-1]), rounding_mode="trunc"): the divisor's -1 test
    # moved out of the loop without its SETcc, so only the first element was negated
    sink = parse(DIVIDE_BY_PARAM.format(dt=dt, op=op))
    x = np.array([5, 6, 7, 0, -5, -6, -7, 1, -1, 100, -100, 9, -9, 2, -2, 3], dt)
    args = [np.zeros(16, dt), x, np.array([divisor], dt)]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))


INT8_VECTOR_DIVIDE_TO_BF16 = """# kcc-uop 1
%out = PARAM ParamArg(0, bfloat16, 32)
%a = PARAM ParamArg(1, int8, 32)
%d = PARAM ParamArg(2, int8, {w})
%dp = SHRINK(%d, 0, {w})
%dv = LOAD(%dp)
%i = RANGE({n}) (0, LOOP)
%base = MUL(%i, {w})
%ap = SHRINK(%a, %base, {w})
%av = LOAD(%ap)
%q = CDIV(%av, %dv)
%c = CAST(%q) bfloat16
%op = SHRINK(%out, %base, {w})
%s = STORE(%op, %c)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("w", [2, 4, 16])
def test_int8_vector_division_cast_to_bfloat16_keeps_its_sign(arch: str, w: int) -> None:
    # issue 20, §2 ("x86 gave 0x41c8, the interpreter 0xc1c8"): the lanes' divisor -1 SETcc
    # stayed in the loop reading the wrong flags, so quotients by 1..9 were negated at random
    from kcc.targets.x86.arch import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(INT8_VECTOR_DIVIDE_TO_BF16.format(w=w, n=32 // w))
    a = (np.arange(-16, 16) * 7).astype(np.int8)
    d = np.array([1, 2, 3, -1, 9, -4, 5, 7, 1, -2, 3, 4, 6, -9, 8, 2][:w], np.int8)
    args = [np.zeros(32, np.uint16), a, d]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


CLAMP = """# kcc-uop 1
%o = PARAM ParamArg(0, int8, 64)
%x = PARAM ParamArg(1, float32, 64)
%m = PARAM ParamArg(2, bool, 1)
%k = CAST(40.0) float32
%i = RANGE(64) (0, LOOP)
%xp = INDEX(%x, %i)
%xv = LOAD(%xp)
%y = MUL(%xv, %k)
%c = CAST(%y) int8
%op = INDEX(%o, %i)
%s = STORE(%op, %c)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="clamp")
"""


# the same cast stored in reverse order (out[63 - i]): the loop stays scalar (widen_lanes takes
# counter + constant places only), so its constants are scalar .rodata loads
CLAMP_REV = CLAMP.replace("%op = INDEX(%o, %i)", "%ri = SUB(63, %i)\n%op = INDEX(%o, %ri)")
# the same cast over 1024 elements: a widened loop of 64 (16-lane) iterations stays a loop
# (a widened loop of a few iterations becomes straight-line blocks: passes/unroll_widened.py)
CLAMP_LONG = CLAMP.replace("64", "1024")


def _loop_split(text: str, arch: str) -> tuple[list[str], list[str], list[str]]:
    """The selected kernel's lines before its innermost loop, inside it (their forms) and
    the lines before it (whole, operands included)."""
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    lines = [s.split(":", 1)[1].strip() for s in out.getvalue().splitlines()
             if s.split(":", 1)[0].strip().isdigit()]
    b = max(k for k, s in enumerate(lines) if s.startswith("loop "))
    e = next(k for k in range(b, len(lines)) if lines[k].startswith("jl_rel"))
    return [s.split()[0] for s in lines[:b]], [s.split()[0] for s in lines[b + 1:e]], \
        lines[b + 1:e]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_scalar_float_constants_leave_the_loop(arch: str) -> None:
    """A float → int8 cast's clamp bounds (-128.0, 127.0) and the factor are scalar .rodata
    loads (VMOVSS) in a scalar loop: `alone` moves them out (cast_f2i8 E_64_4 reloaded two
    per lane per iteration), and the values stay the interpreter's (NaN → 0, saturation both
    ways). Widened (the loop as written), the bounds are vectors loaded before the loop."""
    before, inside, _ = _loop_split(CLAMP_REV, arch)
    assert "vmaxss_x_x_xm32" in inside and "vmovss_x_m32" not in inside, inside
    assert before.count("vmovss_x_m32") >= 2, before
    _, vinside, vlines = _loop_split(CLAMP_LONG, arch)
    assert any(f.startswith("vmaxps") for f in vinside), vinside
    assert not any("rip" in ln for ln in vlines), vlines
    x = np.array([np.nan, np.inf, -np.inf, 3.2, -3.2, 3.3, -3.3, 0.0, -0.01, 3.174, -3.2249,
                  1e9, -1e9, 0.5, 2.5, -2.5] * 4, np.float32)
    for text in (CLAMP, CLAMP_REV):
        sink = parse(text)
        args = [np.zeros(64, np.int8), x, np.zeros(1, np.bool_)]
        want = reference(sink, args)
        if text is CLAMP:
            assert list(want[0][:7]) == [0, 127, -128, 127, -128, 127, -128]
        assert_same(sink, compile_and_run(sink, args, arch), want)
