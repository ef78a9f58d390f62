"""Integer MULACC by constants as LEA / IMUL-immediate, and kernels without a stack frame
(issue 24, item 2: the per-call and per-iteration cost of tinygrad's tiny kernels).

tinygrad's upcast indices are `i*k + j` (MULACC with constant k and j); x86 isel selects one LEA
for k in 1, 2, 3, 4, 5, 8, 9 (else IMUL by an immediate and ADD of an immediate) instead of
putting both constants in registers. A kernel with no REG buffer, no gated store and no spill
gets no `sub rsp` / `and rsp` / `lea rsp` at all. The oracle of every value is the reference
interpreter, on inputs that make the products and sums wrap around int32 and int64.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target, compile_x86
from x86_util import ARCHS, assert_same, compile_and_run, reference


# the loop's trip count: 16 iterations would be unrolled by kcc/passes/unroll_tiny.py (each
# copy's index a constant, no MULACC left to select)
N = 64


def _kernel(dt: str, k: int, j: int) -> str:
    """out[i] = x[i] * k + j (a value MULACC) and idx[i] = x[i*4 + 3] (an index MULACC)."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {N})
%x = PARAM ParamArg(1, {dt}, {4 * N})
%p = PARAM ParamArg(2, {dt}, {N})
%k = CAST({k}) {dt}
%j = CAST({j}) {dt}
%c4 = CAST(4) int32
%c3 = CAST(3) int32
%n = CAST({N}) int32
%i = RANGE(%n) (0, LOOP)
%xp = INDEX(%x, %i)
%xv = LOAD(%xp)
%r = MULACC(%xv, %k, %j)
%op = INDEX(%o, %i)
%s0 = STORE(%op, %r)
%a = MULACC(%i, %c4, %c3)
%yp = INDEX(%x, %a)
%yv = LOAD(%yp)
%pp = INDEX(%p, %i)
%s1 = STORE(%pp, %yv)
%g = GROUP(%s0, %s1)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="mulacc")
"""


def _selected(text: str, arch: str = "x86-64-v3", after: str = "select") -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after=after, out=out)
    return out.getvalue()


def _inputs(dt: str) -> list:
    info = np.iinfo(dt)
    x = np.array([v & (1 << info.bits) - 1 if info.min == 0 else v
                  for v in [info.min, info.max, -1, 0, 1, 7, -7, info.min + 1, info.max - 1,
                            12345, -12345, 1 << 20, -(1 << 20), 3, 100, -100] * (N // 4)], dt)
    return [np.zeros(N, dt), x, np.zeros(N, dt)]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["int32", "uint32", "int64"])
@pytest.mark.parametrize("k,j", [(1, 5), (2, -1), (3, 7), (4, 3), (5, -128), (8, 1 << 20),
                                 (9, -(1 << 31)), (7, 1), (-3, 2), (100000, -9), (6, 0)])
def test_mulacc_by_constants_wraps_as_the_interpreter(arch: str, dt: str, k: int, j: int):
    if dt == "uint32":
        k, j = k & 0xFFFFFFFF, j & 0xFFFFFFFF
    sink = parse(_kernel(dt, k, j))
    args = _inputs(dt)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("k,form", [(4, "lea_r32_m"), (9, "lea_r32_m"), (7, "imul_r32_rm32_imm8"),
                                    (1000, "imul_r32_rm32_imm32")])
def test_constant_mulacc_selects_lea_or_an_immediate_multiply(k: int, form: str) -> None:
    text = _selected(_kernel("int32", k, 3))
    ops = [ln.split(":", 1)[1].split()[0] for ln in text.splitlines()
           if ln.split(":", 1)[0].strip().isdigit()]
    assert form in ops, ops
    # the index i*4 + 3 is one LEA; no constant multiplier or addend is put in a register
    assert ops.count("lea_r32_m") >= 1 and "imul_r32_rm32" not in ops, ops
    assert "add_r32_rm32" not in ops, ops


def test_zero_addend_adds_nothing() -> None:
    # i*7 + 0 (tinygrad's MULACC(i, 16, 0) starts): the IMUL alone, no ADD of 0
    def adds(j: int) -> list[str]:
        text = _selected(_kernel("int32", 7, j))
        ops = [ln.split(":", 1)[1].split()[0] for ln in text.splitlines()
               if ln.split(":", 1)[0].strip().isdigit()]
        assert "imul_r32_rm32_imm8" in ops, ops
        return [o for o in ops if o.startswith("add_")]
    assert len(adds(0)) == len(adds(1)) - 1


def test_int64_mulacc_uses_the_64_bit_lea() -> None:
    ops = _selected(_kernel("int64", 8, -1))
    assert "lea_r64_m" in ops and "imul_r64_rm64 " not in ops, ops


def _prologue(text: str, arch: str) -> str:
    """The kernel's code as objdump (binutils, an independent disassembler) reads it."""
    obj, _ = compile_x86([parse(text)], arch)
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(obj)
        f.flush()
        text = subprocess.run(["objdump", "-d", "-M", "intel", f.name], check=True,
                              capture_output=True, text=True).stdout
    return " ".join(text.split())           # one space between mnemonic and operands


@pytest.mark.skipif(shutil.which("objdump") is None, reason="no objdump")
@pytest.mark.parametrize("arch", ARCHS)
def test_a_kernel_without_frame_slots_sets_up_no_frame(arch: str) -> None:
    code = _prologue(_kernel("int32", 4, 3), arch)
    assert " ret" in code, code
    assert "sub rsp," not in code and "and rsp," not in code and "lea rsp," not in code, code
    # nor a frame pointer: nothing addresses off rbp (kcc/targets/x86/code.py machine_code)
    assert "rbp" not in code, code


SCALAR_MIN = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 2)
%x = PARAM ParamArg(1, float32, 2)
%p = INDEX(%x, 0)
%q = INDEX(%x, 1)
%a = LOAD(%p)
%b = LOAD(%q)
%m = MAX(%a, %b)
%na = NEG(%a)
%nb = NEG(%b)
%k = MAX(%na, %nb)
%n = NEG(%k)
%po = INDEX(%o, 0)
%pq = INDEX(%o, 1)
%s = STORE(%po, %m)
%t = STORE(%pq, %n)
SINK(%s, %t) KernelInfo(name="pair")
"""


@pytest.mark.skipif(shutil.which("objdump") is None, reason="no objdump")
@pytest.mark.parametrize("arch", ARCHS)
def test_a_scalar_leaf_is_its_body_and_ret(arch: str) -> None:
    # sort's bitonic steps (issue 24 item 2, a few ns a call): no push/pop rbp, and no
    # VZEROUPPER where only xmm registers were written (VEX xmm ops zero the upper bits)
    code = _prologue(SCALAR_MIN, arch)
    assert "rbp" not in code and "vzeroupper" not in code and " ret" in code, code


GATED = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 16)
%x = PARAM ParamArg(1, float32, 16)
%n = CAST(16) int32
%h = CAST(8) int32
%i = RANGE(%n) (0, LOOP)
%xp = INDEX(%x, %i)
%xv = LOAD(%xp)
%g = CMPLT(%i, %h)
%op = INDEX(%o, %i)
%s = STORE(%op, %xv, %g)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="gated")
"""


@pytest.mark.skipif(shutil.which("objdump") is None, reason="no objdump")
def test_a_gated_store_keeps_its_scratch_slot_and_frame() -> None:
    """x86-64-v3's gated store writes a frame slot when its gate is false: that kernel keeps
    the 64-byte aligned frame, and its values are the interpreter's."""
    code = _prologue(GATED, "x86-64-v3")
    assert "sub rsp," in code and "and rsp," in code and "lea rsp," in code, code
    sink = parse(GATED)
    args = [np.full(16, -1.0, np.float32), np.arange(16, dtype=np.float32)]
    got = compile_and_run(sink, args)
    assert_same(sink, got, reference(sink, args))
    assert got[0].tolist() == list(range(8)) + [-1.0] * 8


def _rows_kernel(dt: str, n: int = 10, rows: int = 6) -> str:
    """For each row r and column c: o[r*n + c] = x[r*n + c] * y[c] + x[r*n + c + 1] (index
    MULACCs whose addend, the column, is a register, and a value MULACC of three registers)."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {rows * n})
%x = PARAM ParamArg(1, {dt}, {rows * n + 1})
%y = PARAM ParamArg(2, {dt}, {n})
%c10 = CAST({n}) int32
%r = RANGE({rows}) (0, LOOP)
%c = RANGE({n}) (1, LOOP)
%a = MULACC(%r, %c10, %c)
%xp = INDEX(%x, %a)
%xv = LOAD(%xp)
%a1 = ADD(%a, 1)
%xq = INDEX(%x, %a1)
%xw = LOAD(%xq)
%yp = INDEX(%y, %c)
%yv = LOAD(%yp)
%v = MULACC(%xv, %yv, %xw)
%op = INDEX(%o, %a)
%s = STORE(%op, %v)
%ec = END(%s, %c)
%er = END(%ec, %r)
SINK(%er) KernelInfo(name="rows")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["int32", "uint32", "int64"])
@pytest.mark.parametrize("n", [10, 8, 2, 1])
def test_register_addend_mulacc_wraps_as_the_interpreter(arch: str, dt: str, n: int) -> None:
    """a*b + j with j in a register is IMUL then LEA, or one LEA for b in 1, 2, 4, 8 (the sum
    wraps as ADD's: LEA r32 keeps the low 32 bits); the products wrap on these inputs."""
    sink = parse(_rows_kernel(dt, n))
    rng = np.random.default_rng(7)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, 6 * n + 1, dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    args = [np.zeros(6 * n, dt), x, y]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_a_row_product_leaves_the_column_loop() -> None:
    """r*72 of the index r*72 + c is invariant in c's loop: IMUL into its own register, LEA
    adds c, and LICM moves the IMUL before the loop (ADD in place kept it in the loop). (72
    columns: nine trips of 8 lanes, over passes/unroll_widened.py's INNER_TRIPS, which
    copies a row of three blocks (24 columns) into the row loop; 10 would leave a one-trip
    column loop, straight-line. 48 rows: 6 rows would be copied out whole.)"""
    text = _selected(_rows_kernel("int32", 72, rows=48))
    lines = [ln.split(":", 1)[1].split() for ln in text.splitlines()
             if ln.split(":", 1)[0].strip().isdigit()]
    ops = [x[0] for x in lines if x]
    inner = ops[max(k for k, o in enumerate(ops) if o == "loop"):]
    inner = inner[:inner.index("jl_rel32")]
    assert "imul_r32_rm32_imm8" in ops and "imul_r32_rm32_imm8" not in inner, ops
    assert "lea_r32_m" in inner, inner


def test_a_power_of_two_row_width_is_one_lea() -> None:
    """r*8 + c is `lea [c + r*8]`: no IMUL anywhere (ADD of the column in place before).
    int64 values keep the column loop (no int64 vector multiply on x86-64-v3; an int32 loop
    of 8 is one 8-lane block, passes/widen_lanes.py, and its index no sum at all)."""
    text = _selected(_rows_kernel("int64", 8))
    ops = [ln.split(":", 1)[1].split()[0] for ln in text.splitlines()
           if ln.split(":", 1)[0].strip().isdigit()]
    assert "lea_r32_m" in ops and not any(o.startswith("imul_r32_rm32_imm") for o in ops), ops
