"""Loads folded into x86 ALU memory operands (kcc/isel/x86/analysis.py `foldable_loads`).

What folds (a single-use float load read by ADD/SUB/MUL/FDIV as its right operand, by ADD/MUL
as either, a scalar float32 lane of an inserted STACK) and what does not (two users, a STORE or
a loop boundary between the load and its user, MAX, the first lane of a STACK); the selected
code reads memory in the ALU instruction; the results match the reference interpreter at loop
trip counts 0, 1 and odd, unaligned places included.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.isel.x86.analysis import foldable_loads
from kcc.passes.linearize import linearize
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import assert_same, compile_and_run, reference

# y[i] = (a[i+1] + b[i]) * c[i] - d[i] / e[i], vectors of 4 at an odd (unaligned) offset,
# and w[i] = stack of 4 strided scalar loads * a scalar loaded once per iteration (folded as
# the left operand of MUL)
TEXT = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 64)
%w = PARAM ParamArg(1, float32, 64)
%a = PARAM ParamArg(2, float32, 80)
%b = PARAM ParamArg(3, float32, 80)
%n = PARAM ParamArg(4, int32, vmin_vmax=(0, 15), addrspace=ALU)
%i = RANGE(%n) (0, LOOP)
%i4 = MUL(%i, 4)
%ia = ADD(%i4, 1)
%pa = SHRINK(%a, %ia, 4)
%va = LOAD(%pa)
%pb = SHRINK(%b, %i4, 4)
%vb = LOAD(%pb)
%s = ADD(%va, %vb)
%pc = SHRINK(%b, %ia, 4)
%vc = LOAD(%pc)
%m = MUL(%s, %vc)
%i2 = ADD(%i4, 2)
%pd = SHRINK(%a, %i2, 4)
%vd = LOAD(%pd)
%i3 = ADD(%i4, 3)
%pe = SHRINK(%b, %i3, 4)
%ve = LOAD(%pe)
%q = FDIV(%vd, %ve)
%r = SUB(%m, %q)
%py = SHRINK(%y, %i4, 4)
%st = STORE(%py, %r)
%k0 = INDEX(%a, %i)
%x0 = LOAD(%k0)
%j1 = ADD(%i, 16)
%k1 = INDEX(%a, %j1)
%x1 = LOAD(%k1)
%j2 = ADD(%i, 32)
%k2 = INDEX(%a, %j2)
%x2 = LOAD(%k2)
%j3 = ADD(%i, 48)
%k3 = INDEX(%a, %j3)
%x3 = LOAD(%k3)
%xs = STACK(%x0, %x1, %x2, %x3)
%kb = INDEX(%b, %j3)
%sb = LOAD(%kb)
%sv = STACK(%sb, %sb, %sb, %sb)
%t = MUL(%sv, %xs)
%pw = SHRINK(%w, %i4, 4)
%st2 = STORE(%pw, %t)
%g = GROUP(%st, %st2)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="fold")
"""


def _mir(text: str, arch: str = "x86-64-v3") -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


def test_alu_ops_and_inserts_read_memory_in_place() -> None:
    mir = _mir(TEXT)
    lines = [s for s in mir.splitlines() if "[%v" in s]
    ops = [s.split(":", 1)[1].split()[0] for s in lines]
    # ADD (left or right), MUL, FDIV read a buffer operand; so do three lanes of the STACK,
    # each a VBROADCASTSS from memory blended in (kcc/isel/x86/vec.py build128: no VINSERTPS
    # m32, whose micro-op runs on port 5 only)
    assert {"vaddps_x_x_xm", "vmulps_x_x_xm", "vdivps_x_x_xm"} <= set(ops), ops
    assert "vinsertps_x_x_xm32_imm8" not in ops, ops
    assert mir.count("vblendps_x_x_xm_imm8") == 3, mir
    # what stays a load: the first STACK lane, the FDIV's dividend (its left operand), one
    # operand of the ADD (the broadcast scalar has two readers: a load, or a broadcast that
    # reads memory itself); and the three STACK lanes' broadcasts
    assert ops.count("vmovss_x_m32") + ops.count("vbroadcastss_x_xm32") == 2 + 3, ops
    assert ops.count("vmovups_x_xm") == 2, ops


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("n", [0, 1, 3, 15])
def test_folded_loads_match_the_interpreter(n: int, arch: str) -> None:
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU lacks AVX-512 (x86-64-v4)")
    sink = parse(TEXT)
    rng = np.random.default_rng(n)
    args = [np.zeros(64, np.float32), np.zeros(64, np.float32),
            (rng.standard_normal(80) * 3).astype(np.float32),
            (rng.standard_normal(80) * 3).astype(np.float32), np.int32(n)]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _lin(text: str) -> list:
    return linearize(parse(text))


_BASE = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 8)
%a = PARAM ParamArg(1, float32, 8)
%i = RANGE(8) (0, LOOP)
%pa = INDEX(%a, %i)
%va = LOAD(%pa)
%py = INDEX(%y, %i)
%vy = LOAD(%py)
BODY
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def _loads(text: str) -> set:
    lin = _lin(_BASE.replace("BODY", text))
    return {u.src[0].src[0].arg.slot for u in foldable_loads(lin)}


def test_what_is_not_folded() -> None:
    # the right operand folds; a second user keeps it a register
    assert _loads("%s = ADD(%vy, %va)\n%st = STORE(%py, %s)") == {0, 1}
    assert _loads("%s = ADD(%vy, %va)\n%t = MUL(%s, %va)\n%st = STORE(%py, %t)") == {0}
    # SUB and FDIV do not commute: only their right operand folds; MAX never
    assert _loads("%s = SUB(%vy, %va)\n%st = STORE(%py, %s)") == {1}
    assert _loads("%s = MAX(%vy, %va)\n%st = STORE(%py, %s)") == set()
    # the first lane of a STACK is the insert chain's base register
    assert _loads("%s = STACK(%va, %vy)\n%t = INDEX(%s, 1)\n%st = STORE(%py, %t)") == {0}


def test_a_store_between_the_load_and_its_user_keeps_the_load() -> None:
    body = ("%s = ADD(%vy, %va)\n%z = STORE(%pa, 2.0)\n%st1 = STORE(%py, %s)\n"
            "%st = GROUP(%z, %st1)")
    lin = _lin(_BASE.replace("BODY", body))
    va = next(u for u in lin if u.op is Ops.LOAD and u.src[0].src[0].arg.slot == 1)
    store = next(u for u in lin if u.op is Ops.STORE and u.src[0].src[0].arg.slot == 1)
    # a schedule with the store of a[i] after both loads and before the ADD, and one with it
    # after the ADD
    rest = [u for u in lin if u is not store]
    k = next(i for i, u in enumerate(rest) if u.op is Ops.ADD and u.dtype.is_float)
    lin = rest[:k + 1] + [store] + rest[k + 1:]
    lin2 = rest[:k] + [store] + rest[k:]
    assert va in foldable_loads(lin) and va not in foldable_loads(lin2)


# cnt[i] = (0.5 < a[4i..4i+3]) as int32, summed into an int32 x 4 accumulator over j: a
# vector compare whose load folds, read by ADD(acc, CAST(compare)) (bool_sum's rows)
CMP = """# kcc-uop 1
%y = PARAM ParamArg(0, int32, 4)
%a = PARAM ParamArg(1, float32, 64)
%acc = BUFFER ParamArg(0, int32, 4, addrspace=REG)
%z = STACK(0, 0, 0, 0)
%w = SHRINK(%acc, 0, 4)
%init = STORE(%w, %z)
%h = STACK(0.5, 0.5, 0.5, 0.5)
%j = RANGE(16, %init) (0, REDUCE)
%aa = AFTER(%acc, %init, %j)
%wa = SHRINK(%aa, 0, 4)
%old = LOAD(%wa)
%j4 = MUL(%j, 4)
%pa = SHRINK(%a, %j4, 4)
%va = LOAD(%pa)
%c = CMPOP
%ci = CAST(%c) int32
%s = ADD(%old, %ci)
%st = STORE(%wa, %s)
%e = END(%st, %j)
%af = AFTER(%acc, %e)
%wf = SHRINK(%af, 0, 4)
%fin = LOAD(%wf)
%py = SHRINK(%y, 0, 4)
%out = STORE(%py, %fin)
SINK(%out) KernelInfo(name="cmpsum")
"""


@pytest.mark.parametrize("cmp", ["CMPLT(%h, %va)", "CMPEQ(%va, %h)", "CMPNE(%va, %h)",
                                 "CMPLT(%va, %h)"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_vector_compare_reads_its_load_in_place_and_counts_by_subtracting(
        cmp: str, arch: str) -> None:
    text = CMP.replace("CMPOP", cmp)
    mir = _mir(text, arch)
    folds = cmp != "CMPLT(%va, %h)"        # CMPLT's left operand does not (no swapped form)
    cmp_lines = [ln for ln in mir.splitlines() if "vcmpps" in ln]
    assert cmp_lines and all(("[%v" in ln) == folds for ln in cmp_lines), mir
    # acc - lane mask (all ones where true), not a 0/1 vector added
    assert "vpsubd_x_x_xm" in mir and "vpaddd_x_x_xm" not in mir, mir
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        return
    sink = parse(text)
    rng = np.random.default_rng(7)
    a = rng.choice(np.array([0.25, 0.5, 1.0, np.nan], np.float32), 64)
    args = [np.zeros(4, np.int32), a]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


_PAST = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 8)
%a = PARAM ParamArg(1, float32, 8)
%i = RANGE(2) (0, LOOP)
%i4 = MUL(%i, 4)
%pa = SHRINK(%a, %i4, 4)
%va = LOAD(%pa)
%py = SHRINK(%y, %i4, 4)
%vy = LOAD(%py)
%c = CMPLT(%vy, %va)
%two = STACK(2.0, 2.0, 2.0, 2.0)
%z = STORE(%pa, %two)
%f = WHERE(%c, %vy, %two)
%st1 = STORE(%py, %f)
%st = GROUP(%z, %st1)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def test_a_compare_whose_reader_is_past_a_store_keeps_its_load() -> None:
    # the lane mask may be made where the compare is read (x86-64-v4: at its reader), so a
    # store to the loaded buffer between the compare and its reader keeps the load a register
    lin = _lin(_PAST)
    store = next(u for u in lin if u.op is Ops.STORE and u.src[0].src[0].arg.slot == 1)
    va = next(u for u in lin if u.op is Ops.LOAD and u.src[0].src[0].arg.slot == 1)
    rest = [u for u in lin if u is not store]
    k = rest.index(next(u for u in rest if u.op is Ops.CMPLT))
    w = rest.index(next(u for u in rest if u.op is Ops.STORE))  # the WHERE's store
    between = rest[:k + 1] + [store] + rest[k + 1:]      # after the compare, before the WHERE
    later = rest[:w + 1] + [store] + rest[w + 1:]        # after the WHERE and its store
    assert va not in foldable_loads(between)
    assert va in foldable_loads(later)


# any(x[j] > 0.5) over {n} float32 per row, widened: an OR of all-ones lanes (widen_reduce)
ANY = """# kcc-uop 1
%o = PARAM ParamArg(0, bool, 3)
%x = PARAM ParamArg(1, float32, {size})
%acc = BUFFER ParamArg(0, bool, 1, addrspace=REG)
%r = RANGE(3) (0, WEAK)
%a0 = AFTER(%acc, %r)
%p0 = INDEX(%a0, 0)
%init = STORE(%p0, false)
%j = RANGE({n}, %init) (1, REDUCE)
%a1 = AFTER(%acc, %init, %j)
%p1 = INDEX(%a1, 0)
%old = LOAD(%p1)
%ix = MULACC(%r, {n}, %j)
%xp = INDEX(%x, %ix)
%v = LOAD(%xp)
%c = CMPLT(0.5, %v)
%new = OR(%old, %c)
%st = STORE(%p1, %new)
%e = END(%st, %j)
%a2 = AFTER(%acc, %e)
%p2 = INDEX(%a2, 0)
%fin = LOAD(%p2)
%op = INDEX(%o, %r)
%so = STORE(%op, %fin)
%e2 = END(%so, %r)
SINK(%e2) KernelInfo(name="any")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("n", [77, 64])
def test_or_of_compares_is_the_compare_mask(arch: str, n: int) -> None:
    """WHERE(compare, ~0, 0) on xmm/ymm lanes of the compare's width is the compare's lane
    mask (kmask.where_lane_mask): the loop ORs VCMPPS results, no 0/1 lanes (VPSRLD, a
    zero-masked move of ones). n = 64 on v4 takes 16 lanes: float32 x 16 compared into uint16
    lanes, a mask of another width, keeps the opmask's VMOVDQU16 (no lane-by-lane resize:
    any_all r_64_4 ran 30x slower with it)."""
    text = ANY.format(n=n, size=3 * n)
    mir = _mir(text, arch)
    assert "vpextrd" not in mir.split("vcmpps")[1].split("vpor")[0], mir
    if n == 77 or arch == "x86-64-v3":
        assert "vpsrld" not in mir and "kz" not in mir, mir
    else:
        assert "vmovdqu16_y_kz_ym" in mir and "vinsertf64x4" not in mir, mir
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        return
    sink = parse(text)
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 0.52, 3 * n).astype(np.float32)
    x[5] = 0.7                      # row 0 true by one element; rows 1, 2 by chance
    args = [np.zeros(3, np.bool_), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# cummax_777's r_3_4_4: a row of (-inf, v0, max(v0, v1), max(v0, v1, v2)): v0's load is a lane
# of the STACK and a MAX operand, so it stays a load and its register is inserted
SHARED = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 12)
%x = PARAM ParamArg(1, float32, 3072)
%i = RANGE(3) (0, LOOP)
%b = SHL(%i, 10)
%a0 = ADD(%b, 255)
%p0 = INDEX(%x, %a0)
%v0 = LOAD(%p0)
%a1 = ADD(%b, 511)
%p1 = INDEX(%x, %a1)
%v1 = LOAD(%p1)
%a2 = ADD(%b, 767)
%p2 = INDEX(%x, %a2)
%v2 = LOAD(%p2)
%m1 = MAX(%v0, %v1)
%m2 = MAX(%m1, %v2)
%ni = CAST(-inf) float32
%s = STACK(%ni, %v0, %m1, %m2)
%i4 = SHL(%i, 2)
%po = SHRINK(%o, %i4, 4)
%st = STORE(%po, %s)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="shared")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_lane_whose_load_has_other_users_is_inserted_from_its_register(arch: str) -> None:
    # (main re-read it: VBROADCASTSS m32 + VBLENDPS beside the VMOVSS the MAX reads, 2.9 ns a
    # call against clang's 2.7; VINSERTPS of the register, as clang: 2.6)
    ops = [s.split(":", 1)[1].split()[0] for s in _mir(SHARED, arch).splitlines()
           if s.strip() and ":" in s]
    assert "vbroadcastss_x_xm32" not in ops and "vblendps_x_x_xm_imm8" not in ops, ops
    assert ops.count("vinsertps_x_x_xm32_imm8") == 3 * 3, ops     # 3 rows (unroll_tiny) of 3
    sink = parse(SHARED)
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(3072).astype(np.float32)
        x[seed::5] = np.nan
        args = [np.zeros(12, np.float32), x]
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
