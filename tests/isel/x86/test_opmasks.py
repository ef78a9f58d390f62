"""Bool vectors as AVX-512 opmasks on x86-64-v4 (kcc/isel/x86/kmask.py): integer compares into
k registers (VPCMP[U]B/W/D/Q), WHERE as VPBLENDM*/VBLENDMP* for any pair of lane widths, mask
logic (KAND/KOR/KXOR/KNOT), zero-masked moves and loads for a +0 alt, integer MAX by VPCMP +
VPBLENDM, TRUNC by VRNDSCALE; the selection (no VEX-only compare or blend left, high vector
registers in every one of these forms), the allocation checker's k1-k7 rule for a write mask,
and the code against the interpreter where the CPU has AVX-512 (every compile in the tests runs
the checker: KCC_CHECK_ALLOC)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.mir import Imm, Inst, MFunction, PReg, RegOp, Role
from kcc.regalloc import CheckError, check_allocation
from kcc.targets.x86.target import X86RegInfo, compile_x86, disasm_object
from x86_util import (
    HAS_V4, NO_V4, assert_same, compile_and_run, high_vectors_first, random_inputs, reference)
from paths import DATA

KERNELS = DATA / "kernels"
HIGH = re.compile(r"\b[xyz]mm(1[6-9]|2\d|3[01])\b")
SFX = {1: "b", 2: "w", 4: "d", 8: "q"}


def _listing(src: str, arch: str = "x86-64-v4") -> str:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="allocate", out=buf)
    return buf.getvalue()


def _run(src: str, args: list | None = None, seeds: tuple[int, ...] = (0, 1)) -> None:
    """The kernel on x86-64-v4 against the interpreter (given inputs, else random ones)."""
    if not HAS_V4:
        pytest.skip(NO_V4)
    sink = parse(src)
    for a in [args] if args is not None else [random_inputs(sink, s) for s in seeds]:
        assert_same(sink, compile_and_run(sink, a, "x86-64-v4"), reference(sink, a))


WHERE = """# kcc-uop 1
%y = PARAM ParamArg(0, YT, 192)
%a = PARAM ParamArg(1, CT, 192)
%b = PARAM ParamArg(2, CT, 192)
%p = PARAM ParamArg(3, YT, 192)
%q = PARAM ParamArg(4, YT, 192)
%i = RANGE(RN) (0, LOOP)
%iL = MUL(%i, L)
%pa = SHRINK(%a, %iL, L)
%va = LOAD(%pa)
%pb = SHRINK(%b, %iL, L)
%vb = LOAD(%pb)
%pp = SHRINK(%p, %iL, L)
%vp = LOAD(%pp)
%pq = SHRINK(%q, %iL, L)
%vq = LOAD(%pq)
%c = CMP(%va, %vb)
%r = WHERE(%c, %vp, %vq)
%py = SHRINK(%y, %iL, L)
%st = STORE(%py, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="kw")
"""


def _where(ct: str, yt: str, lanes: int, cmp: str) -> str:
    return (WHERE.replace("YT", yt).replace("CT", ct).replace("RN", str(192 // lanes))
            .replace("L)", f"{lanes})").replace("CMP", cmp))


def _edge_inputs(ct: str, yt: str) -> list:
    """Every pair of edge values of the compared type (min, max, 0, ±1, …), random data."""
    info = np.iinfo(ct)
    edges = np.array(sorted({info.min, info.min + 1, -1 if info.min else 2, 0, 1, 7,
                             info.max - 1, info.max}), ct)
    x, y = np.meshgrid(edges, edges)
    rng = np.random.default_rng(5)
    data = [rng.integers(-99, 99, 192).astype(yt) for _ in range(2)]
    return [np.zeros(192, yt), np.resize(x.reshape(-1), 192), np.resize(y.reshape(-1), 192),
            *data]


INT_SHAPES = [("int8", 16), ("uint8", 32), ("int16", 8), ("uint16", 16), ("int32", 4),
              ("int32", 8), ("uint32", 8), ("int64", 4), ("uint64", 2)]


@pytest.mark.parametrize("ct,lanes", INT_SHAPES)
@pytest.mark.parametrize("cmp", ["CMPLT", "CMPEQ", "CMPNE"])
def test_int_compare_where_is_vpcmp_and_vpblendm(ct: str, lanes: int, cmp: str) -> None:
    """An integer vector compare is one VPCMP[U] into a k register (unsigned lanes: VPCMPU,
    no sign-flip XORs) and its WHERE one VPBLENDM of the lanes' width: no VEX compare into a
    vector, no VBLENDV/VPBLENDVB (xmm0-15 only); right on every pair of edge values."""
    size = np.dtype(ct).itemsize
    src = _where(ct, ct, lanes, cmp)
    sel = _listing(src)
    u = "u" if cmp == "CMPLT" and ct.startswith("u") else ""
    assert f"vpcmp{u}{SFX[size]}_k_" in sel and f"vpblendm{SFX[size]}_" in sel, sel
    assert not re.search(r"vpcmp(eq|gt)|vblendv|vpblendvb|vpxor", sel), sel
    _run(src, _edge_inputs(ct, ct))


@pytest.mark.parametrize("ct,yt,lanes", [("int64", "float32", 4), ("int32", "float64", 4),
                                         ("int8", "float32", 16), ("uint16", "int64", 4),
                                         ("int16", "int8", 16)])
def test_where_across_lane_widths_needs_no_mask_resize(ct: str, yt: str, lanes: int) -> None:
    """An opmask has one bit per lane: a compare of one lane width picks lanes of another
    with no sign extension or pack of a vector mask (VPMOVSX, VPACKSS, SHUFPS)."""
    src = _where(ct, yt, lanes, "CMPLT")
    sel = _listing(src)
    blend = f"vblendmp{'s' if yt == 'float32' else 'd'}" if yt.startswith("float") else \
        f"vpblendm{SFX[np.dtype(yt).itemsize]}"
    assert "_k_" in sel and blend in sel, sel
    assert not re.search(r"vpmovsx|vpackss|vshufps|vpextr|vpinsr", sel), sel
    _run(src, _edge_inputs(ct, yt) if yt.startswith("int") else None)


@pytest.mark.parametrize("yt,lanes", [("float32", 8), ("float64", 8), ("int32", 8),
                                      ("uint8", 32), ("float32", 16)])
def test_where_with_zero_alt_is_a_zero_masked_move(yt: str, lanes: int) -> None:
    """WHERE(c, x, 0) is one zero-masked move (`{k} {z}`), which reads a just-loaded float x
    from memory (masked-off lanes are not read at all); a second WHERE on the same compare
    (reading its opmask again) is a blend. (Not nested in the first: simplify folds
    WHERE(c, WHERE(c, x, 0), y) to WHERE(c, x, y).)"""
    zero = "0.0" if yt.startswith("float") else "0"
    src = _where("int32" if lanes <= 8 else "int8", yt, lanes, "CMPLT")
    py = re.search(r"%py = SHRINK.*\n", src).group(0)
    src = src.replace(py, "").replace(
        "%r = WHERE(%c, %vp, %vq)\n", f"%z = STACK({', '.join([zero] * lanes)})\n"
        f"%r0 = WHERE(%c, %vp, %z)\n{py}%vy = LOAD(%py)\n%r1 = WHERE(%c, %vq, %vy)\n"
        "%r = ADD(%r0, %r1)\n")
    if lanes == 16:
        src = src.replace("int8", "float32")     # a float32 x 16 compare: a zmm one
    sel = _listing(src)
    assert re.search(r"vmov(up[sd]|dqu\d+)_[xyz]_kz_[xyz]m", sel), sel
    assert not re.search(r"vand|vblendv|vpblendvb", sel), sel
    if yt.startswith("float"):
        assert re.search(r"vmovup[sd]_[xyz]_kz_[xyz]m .*\[", sel), sel    # the load folded
    _run(src)


MASK_OPS = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 64)
%b = PARAM ParamArg(1, bool, 64)
%a = PARAM ParamArg(2, int32, 64)
%f = PARAM ParamArg(3, float64, 64)
%x = PARAM ParamArg(4, float32, 64)
%i = RANGE(8) (0, LOOP)
%s = MUL(%i, 8)
%pa = SHRINK(%a, %s, 8)
%va = LOAD(%pa)
%pf = SHRINK(%f, %s, 8)
%vf = LOAD(%pf)
%px = SHRINK(%x, %s, 8)
%vx = LOAD(%px)
%t5 = STACK(5, 5, 5, 5, 5, 5, 5, 5)
%h = STACK(0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
%tt = STACK(true, true, true, true, true, true, true, true)
%alt = STACK(true, false, true, false, false, true, true, false)
%c1 = CMPLT(%va, %t5)
%c2 = CMPNE(%vf, %h)
%c3 = CMPLT(%vx, %h)
%o = OR(%c1, %c2)
%n = XOR(%tt, %o)
%m = AND(%n, %c3)
%x2 = XOR(%m, %alt)
%r = WHERE(%x2, %vx, %h)
%py = SHRINK(%y, %s, 8)
%st = STORE(%py, %r)
%l = INDEX(%x2, 5)
%pb = INDEX(%b, %i)
%sb = STORE(%pb, %l)
%g = GROUP(%st, %sb)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="kops")
"""


def test_bool_ops_on_opmasks() -> None:
    """OR/AND/XOR of compares of three lane types are KOR/KAND/KXOR on their opmasks, NOT
    (XOR with all-true) is KNOT, a constant STACK a KMOVW of its bits, and a lane of the
    result one bit of the mask (KMOVD): no vector mask is built at all."""
    sel = _listing(MASK_OPS)
    for form in ("korb_k_k_k", "kandb_k_k_k", "kxorb_k_k_k", "knotb_k_k", "kmovw_k_r32",
                 "kmovd_r32_k", "vpcmpd_k_y_ym_imm8", "vcmppd_k_z_zm_imm8",
                 "vcmpps_k_y_ym_imm8", "vblendmps_y_k_y_ym"):
        assert form in sel, (form, sel)
    assert not re.search(r"vandp|vorp|vxorps_[yz]|vpmovsx|vpackss|vpextr|vpcmpgt|vcmpp._[xyz]_",
                         sel), sel
    _run(MASK_OPS, seeds=(0, 1, 2))


@pytest.mark.parametrize("name", ["vector_bool_ops.uop", "vector_bool_ops8.uop",
                                  "vector_mask_and.uop", "vector_int32.uop",
                                  "vector_int_widths.uop", "loop_invariant_gates.uop"])
def test_mask_kernels_keep_no_vex_only_compare_or_blend(name: str) -> None:
    """The bool-vector kernels of tests/data/kernels on x86-64-v4: every compare, bool op and WHERE
    goes by opmasks, so no VEX-only vector compare or variable blend is left (these are
    what kept values in xmm0-15), and the code matches the interpreter."""
    src = (KERNELS / name).read_text()
    text = disasm_object(compile_x86([parse(src)], "x86-64-v4")[0])
    assert re.search(r"\bk[1-7]\b", text), text
    # (capstone spells VPCMPD k, .., 0 as "vpcmpeqd k1, ...": a vector destination is VEX)
    assert not re.search(r"\bvpcmp(gt|eq)\w [xyz]mm|\b(vblendv\w+|vpblendvb) ", text), text
    assert not re.search(r"\bvcmp\w+ [xyz]mm", text), text
    _run(src, seeds=(0, 1, 2))


INT_MAX = """# kcc-uop 1
%y = PARAM ParamArg(0, DT, 64)
%a = PARAM ParamArg(1, DT, 64)
%b = PARAM ParamArg(2, DT, 64)
%i = RANGE(@N) (0, LOOP)
%s = MUL(%i, @L)
%pa = SHRINK(%a, %s, @L)
%va = LOAD(%pa)
%pb = SHRINK(%b, %s, @L)
%vb = LOAD(%pb)
%r = MAX(%va, %vb)
%py = SHRINK(%y, %s, @L)
%st = STORE(%py, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="kmax")
"""


@pytest.mark.parametrize("dt,lanes", [("int64", 4), ("uint64", 2)])
def test_int_max_without_vpmax_is_vpcmp_and_vpblendm(dt: str, lanes: int) -> None:
    """MAX of lanes with no VPMAX row here: a < b into k, then VPBLENDM (no VEX blend).
    (Byte and word lanes have VPMAXSB/UB/SW/UW: tests/isel/x86/test_int_minmax.py.)"""
    src = INT_MAX.replace("DT", dt).replace("@N", str(64 // lanes)).replace("@L", str(lanes))
    sel = _listing(src)
    size = np.dtype(dt).itemsize
    assert f"vpblendm{SFX[size]}_" in sel and "vpblendvb" not in sel, sel
    info = np.iinfo(dt)
    edges = np.array([info.min, info.max, 0, 1, -1 if info.min else 2, 3, info.max - 1, 5],
                     dt)
    x, y = np.meshgrid(edges, edges)
    _run(src, [np.zeros(64, dt), x.reshape(-1), y.reshape(-1)])


TRUNC = """# kcc-uop 1
%y = PARAM ParamArg(0, DT, 64)
%a = PARAM ParamArg(1, DT, 64)
%i = RANGE(@N) (0, LOOP)
%s = MUL(%i, @L)
%pa = @P(%a, %s@W)
%va = LOAD(%pa)
%r = TRUNC(%va)
%py = @P(%y, %s@W)
%st = STORE(%py, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="ktrunc")
"""
SPECIAL = [float("nan"), 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.99, float("inf"),
           float("-inf"), 1e-40, -1e-40, 8388607.5, -8388607.5, 1e300]


def _specials(dt: str) -> np.ndarray:
    """SPECIAL in dt (the float64-only magnitudes left out of float32), 64 of them."""
    vals = [v for v in SPECIAL if dt == "float64" or not abs(v) < float("inf") or abs(v) < 3e38]
    return np.resize(np.array(vals, dt), 64)


def _trunc(dt: str, lanes: int) -> str:
    # the scalar loop runs 63 iterations in place (a[i] = trunc(a[i])): a bound 2 divides
    # would be widened across iterations (kcc/passes/widen_lanes.py) into the vector forms the
    # other cases test, and a loop storing a buffer it does not load would run its last
    # iterations as one overlapping vector block; in place they are a scalar tail loop
    n = 63 if lanes == 1 else 64 // lanes
    text = (TRUNC.replace("DT", dt).replace("@N", str(n)).replace("@L", str(lanes))
            .replace("@P", "INDEX" if lanes == 1 else "SHRINK")
            .replace("@W", "" if lanes == 1 else f", {lanes}"))
    return text.replace("INDEX(%y, %s)", "INDEX(%a, %s)") if lanes == 1 else text


@pytest.mark.parametrize("dt,lanes", [("float32", 4), ("float32", 8), ("float32", 16),
                                      ("float64", 2), ("float64", 4), ("float64", 8),
                                      ("float32", 1), ("float64", 1)])
def test_trunc_is_vrndscale_in_any_register(dt: str, lanes: int) -> None:
    """TRUNC is VRNDSCALEPS/PD/SS/SD (imm8 0b1011: truncate, no precision exception): a zmm one
    whole, and with xmm16-31 handed out first its operands are high registers (VROUND, VEX
    only, could not name them); every special value truncates as the interpreter's."""
    src = _trunc(dt, lanes)
    t = "s" if dt == "float32" else "d"
    sel = _listing(src)
    assert f"vrndscale{'p' if lanes > 1 else 's'}{t}_" in sel and "vround" not in sel, sel
    assert "vextractf64x4" not in sel, sel                 # no ymm halves of a zmm
    with high_vectors_first():
        text = disasm_object(compile_x86([parse(src)], "x86-64-v4")[0])
        lines = [ln for ln in text.splitlines() if "vrndscale" in ln]
        assert lines and all(HIGH.search(ln) for ln in lines), text
        _run(src, [np.zeros(64, dt), _specials(dt)])
    _run(src, [np.zeros(64, dt), _specials(dt)])


GATED = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 64)
%z = PARAM ParamArg(1, float32, 16)
%x = PARAM ParamArg(2, float32, 64)
%i = RANGE(16) (0, LOOP)
%s = MUL(%i, 4)
%s2 = SUB(%s, 8)
%lo = CMPLT(1, %i)
%hi = CMPLT(%i, 14)
%g = AND(%lo, %hi)
%px = SHRINK(%x, %s2, 4)
%zero = STACK(0.0, 0.0, 0.0, 0.0)
%v = LOAD(%px, %zero, %g)
%py = SHRINK(%y, %s, 4)
%st = STORE(%py, %v)
%sx = INDEX(%x, %s2)
%w = LOAD(%sx, 0.0, %g)
%pz = INDEX(%z, %i)
%st2 = STORE(%pz, %w)
%grp = GROUP(%st, %st2)
%e = END(%grp, %i)
SINK(%e) KernelInfo(name="kgate")
"""


def _no_copies(monkeypatch) -> None:
    """passes/unroll_tiny.py copies no nest: not as its copies fold (FOLD_CAP), nor as
    written within its budget (`_nest`, which counts a copy's gates and index arithmetic as
    the constants they are)."""
    import kcc.passes.unroll_tiny as unroll_tiny
    monkeypatch.setattr(unroll_tiny, "FOLD_CAP", 0)
    monkeypatch.setattr(unroll_tiny, "_nest", lambda *args: None)


def _keep_gates(monkeypatch) -> None:
    """Keep GATED's loop and its gates: passes/unroll_tiny.py would copy its 16 iterations
    out (`_no_copies`), and passes/split_gates.py run it as three loops (MAX_PIECES), both
    with constant gates: no gated load left for these tests to select."""
    import kcc.passes.split_gates as split_gates
    monkeypatch.setattr(split_gates, "MAX_PIECES", 1)
    _no_copies(monkeypatch)


def test_gated_loads_are_zero_masked_loads(monkeypatch) -> None:
    """A gated float load with alt 0 (vector or scalar, the gate a scalar bool) is one
    zero-masked load from memory, its opmask made from the gate by KMOVW; no vector mask
    and no VANDPS."""
    _keep_gates(monkeypatch)
    sel = _listing(GATED)
    assert "vmovups_x_kz_xm" in sel and "vmovss_x_kz_m32" in sel, sel
    assert "kmovd_k_r32" in sel and "vand" not in sel, sel
    _run(GATED, seeds=(0, 1, 2))


def _blend_alloc(k_reg: str, dst: str = "xmm20") -> tuple[MFunction, MFunction]:
    """VPCMPD into a mask and VPBLENDMD by it, and a hand allocation with k_reg the mask."""
    before = MFunction("h")
    z, k, r = before.new_vreg("vec"), before.new_vreg("mask"), before.new_vreg("vec")

    def body(zr, kr, rr) -> list[Inst]:
        return [Inst("vzero", [RegOp(zr, Role.DEF)]),
                Inst("vpcmpd_k_x_xm_imm8", [RegOp(kr, Role.DEF), RegOp(zr, Role.USE),
                                            RegOp(zr, Role.USE), Imm(1)]),
                Inst("vpblendmd_x_k_x_xm", [RegOp(rr, Role.DEF), RegOp(kr, Role.USE),
                                            RegOp(zr, Role.USE), RegOp(zr, Role.USE)])]
    before.insts = body(z, k, r)
    cls = "mask" if k_reg.startswith("k") else "vec"
    after = MFunction("h", body(PReg("xmm17", "vec"), PReg(k_reg, cls), PReg(dst, "vec")))
    return before, after


def test_checker_verifies_the_write_mask() -> None:
    """The allocation checker accepts k1-k7 and xmm16-31 in the EVEX compare and blend, and
    refuses k0 as the blend's write mask (EVEX.aaa = 0 means no masking) and a vector register
    where a mask belongs."""
    info = X86RegInfo(0, 64)
    check_allocation(*_blend_alloc("k1"), info)
    check_allocation(*_blend_alloc("k7", "xmm31"), info)
    with pytest.raises(CheckError, match="operand 1 cannot be k0"):
        check_allocation(*_blend_alloc("k0"), info)
    with pytest.raises(CheckError, match="operand 1 cannot be xmm3|not of class mask"):
        check_allocation(*_blend_alloc("xmm3"), info)


def test_v3_is_unchanged_vector_masks() -> None:
    """x86-64-v3 has no opmasks: the same kernels keep VEX compares and blends there."""
    sel = _listing(_where("int32", "float32", 8, "CMPLT"), "x86-64-v3")
    assert "vpcmpgtd" in sel and "vblendvps" in sel and "_k_" not in sel, sel
    sel = _listing(_trunc("float32", 8), "x86-64-v3")
    assert "vroundps" in sel and "vrndscale" not in sel, sel


GATED_STORES = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 40)
%z = PARAM ParamArg(1, float64, 10)
%w = PARAM ParamArg(2, int32, 40)
%x = PARAM ParamArg(3, float32, 64)
%v = PARAM ParamArg(4, int32, 64)
%i = RANGE(16) (0, LOOP)
%s = MUL(%i, 4)
%g = CMPLT(%i, 10)
%px = SHRINK(%x, %s, 4)
%vx = LOAD(%px)
%py = SHRINK(%y, %s, 4)
%st = STORE(%py, %vx, %g)
%sx = INDEX(%x, %s)
%lx = LOAD(%sx)
%cx = CAST(%lx) float64
%pz = INDEX(%z, %i)
%n5 = CMPNE(%i, 5)
%h = AND(%g, %n5)
%st2 = STORE(%pz, %cx, %h)
%pv = SHRINK(%v, %s, 4)
%vv = LOAD(%pv)
%n3 = CMPNE(%i, 3)
%c = AND(%g, %n3)
%pw = SHRINK(%w, %s, 4)
%st3 = STORE(%pw, %vv, %c)
%grp = GROUP(%st, %st2, %st3)
%e = END(%grp, %i)
SINK(%e) KernelInfo(name="kstore")
"""


def _at_page_end(a: np.ndarray, keep: list) -> np.ndarray:
    """A copy of a whose last byte is the last of a page followed by an inaccessible page
    (PROT_NONE): a write past its end faults."""
    import ctypes
    import mmap
    page = mmap.PAGESIZE
    size = -(-a.nbytes // page) * page
    mm = mmap.mmap(-1, size + page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mprotect(ctypes.c_void_p(base + size), ctypes.c_size_t(page), 0) == 0
    out = np.frombuffer(mm, a.dtype, a.size, size - a.nbytes)
    out[:] = a
    keep.append(mm)
    return out


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_gated_stores_write_nothing_where_false(arch: str) -> None:
    """Gated stores of a float vector, a float64 scalar and an int32 vector: on x86-64-v4 one
    masked store each (`[mem] {k}`, the opmask made from the gate by KMOVW), no scratch
    address. Their places run past the end of the buffers under false gates; the buffers end
    at an inaccessible page, so a masked-off lane that were written (or a fault that were not
    suppressed) would crash or show: the outputs match the interpreter's, which writes
    nothing there."""
    if arch == "x86-64-v4":
        sel = _listing(GATED_STORES)
        for form in ("vmovups_m128_k_x", "vmovsd_m64_k_x", "vmovdqu32_m128_k_x"):
            assert form in sel, (form, sel)
        assert "cmove" not in sel, sel
        if not HAS_V4:
            pytest.skip(NO_V4)
    _launch_guarded(GATED_STORES, arch, (0, 1, 2), 4)


def _launch_guarded(src: str, arch: str, guarded: tuple[int, ...], seed: int) -> None:
    """Run src with the buffers numbered in `guarded` ending at an inaccessible page, and
    compare every output with the interpreter's."""
    from kcc.targets.manifest import check_launch
    from kcc.targets.x86.objload import LoadedObject
    from kcc.targets.x86.target import launch
    sink = parse(src)
    args = random_inputs(sink, seed)
    keep: list = []
    mine = [_at_page_end(a, keep) if k in guarded else a.copy() for k, a in enumerate(args)]
    obj, descs = compile_x86([sink], arch)
    lo = LoadedObject(obj)
    try:
        launch(lo, descs[0], check_launch(descs[0], mine))
    finally:
        lo.close()
    assert_same(sink, [np.array(m) for m in mine], reference(sink, args))


GATED_PAST_END = GATED.replace("%x = PARAM ParamArg(2, float32, 64)",
                               "%x = PARAM ParamArg(2, float32, 48)").replace(
    "%w = LOAD(%sx, 0.0, %g)", "%w = LOAD(%sx, -2.5, %g)")


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_gated_loads_past_the_end_read_nothing(arch: str, monkeypatch) -> None:
    """Gated loads whose places leave the buffer where the gate is false (x ends at an
    inaccessible page; i = 14, 15 read past it): on x86-64-v4 they stay gated through
    legalize_gates (TargetDesc.masked_load) and are one masked load each, zero-masked for a
    0 alt and merging into a copy of the alt otherwise, with no safe index (`i & -gate`);
    a masked-off element is not read, so nothing faults and the alt is what comes back.
    As the pipeline compiles it by default (its iterations copied out, their gates
    constants), and split into three loops (passes/split_gates.py), the last two iterations
    read nothing either: their loads are the alts."""
    for seed in (0, 1):
        _launch_guarded(GATED_PAST_END, arch, (2,), seed)
    _no_copies(monkeypatch)
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    buf = io.StringIO()
    run_pipeline(parse(GATED_PAST_END), X86Target(arch), dump_after="unroll", out=buf)
    assert buf.getvalue().count("= RANGE(") == 3, buf.getvalue()     # the three loops
    for seed in (0, 1):
        _launch_guarded(GATED_PAST_END, arch, (2,), seed)
    _keep_gates(monkeypatch)
    if arch == "x86-64-v4":
        sel = _listing(GATED_PAST_END)
        assert "vmovups_x_kz_xm" in sel and "vmovss_x_k_m32" in sel, sel
        assert "neg_rm64" not in sel and "vblend" not in sel, sel      # no safe index
        if not HAS_V4:
            pytest.skip(NO_V4)
    for seed in (0, 1):
        _launch_guarded(GATED_PAST_END, arch, (2,), seed)


SCALAR_WHERE = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 64)
%x = PARAM ParamArg(1, float32, 64)
%w = PARAM ParamArg(2, float32, 64)
%i.n = CAST(64) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%vx = LOAD(%px)
%pw = INDEX(%w, %i)
%vw = LOAD(%pw)
%c = CMPLT(%i, 20)
%d = CMPLT(40, %i)
%a = MUL(%vx, %vw)
%r0 = WHERE(%c, ALT, %a)
%r = WHERE(%d, %r0, %vw)
%py = INDEX(%y, %i)
%st = STORE(%py, %r)
SINK(%st) KernelInfo(name="kws")
"""


@pytest.mark.parametrize("alt", ["0.0", "-inf", "%vx"])
def test_scalar_where_on_int_compare_is_a_masked_blend(alt: str) -> None:
    """A float scalar WHERE on a bool in a GPR (an integer compare: tinygrad's padded cummax;
    a worker per element, so nothing widens it) takes the compare's opmask (MOVZX, KMOVW) and
    one VBLENDMPS {k}, or a zero-masked move for a +0 arm, instead of a mask made in an xmm
    and a VBLENDVPS."""
    src = SCALAR_WHERE.replace("ALT", alt)
    sel = _listing(src)
    assert not re.search(r"vblendv|vmovq_x_r64", sel), sel
    assert re.search(r"vblendmps_x_k_x_xm", sel), sel
    _run(src)
