"""The allocation checker on constants read in place (kcc/regalloc/checker.py).

x86 folds a rematerialized .rodata reload into its reader after allocation and drops constant
loads whose register is written before it is read (kcc/targets/x86/foldconst.py); the checker
runs after that pass, so it must accept a reader of the constant's memory operand in place of
the register that held it (through the target's ``constant_bytes`` and ``commute``) and catch
every fold that changes a value: a gone load whose register is still read, another entry's
label, a broadcast read as a whole vector, a read wider than the constant, a swap that
changes the bits (a NaN constant under a float add, a compare whose predicate was not
mirrored). The pass itself on real kernels: tests/targets/x86/test_foldconst.py (which runs
with KCC_CHECK_ALLOC=1, as every test does).
"""

from __future__ import annotations

import pytest

from kcc.ir.mir import Imm, Inst, Kind, Mem, MFunction, PReg, RegOp, Role, VReg
from kcc.regalloc import CheckError, check_allocation
from kcc.targets.x86.reginfo import X86RegInfo

ONES = b"\x00\x00\x80\x3f" * 8          # eight float32 1.0
NANS = b"\x00\x00\xc0\x7f" * 8          # eight float32 quiet NaNs
POOL = {".LC0": ONES, ".LC1": NANS}
RDI = PReg("rdi", "gpr")
Y = [PReg(f"xmm{k}", "vec") for k in range(4)]


def _const(d: object, label: str = ".LC0", form: str = "vmovups_y_ym") -> Inst:
    return Inst(form, [RegOp(d, Role.DEF), Mem()], arg={"rip": label})


def _load(d: object, p: object) -> Inst:
    return Inst("vmovups_y_ym", [RegOp(d, Role.DEF), Mem(p)])


def _store(p: object, v: object) -> Inst:
    return Inst("vmovups_m256_y", [Mem(p), RegOp(v)])


def _op(form: str, d: object, a: object, b: object, *imm: int) -> Inst:
    return Inst(form, [RegOp(d, Role.DEF), RegOp(a), *([RegOp(b)] if b is not None else []),
                       *[Imm(v) for v in imm]])


def _read_in_place(form: str, d: object, a: object, label: str = ".LC0", *imm: int) -> Inst:
    return Inst(form, [RegOp(d, Role.DEF), RegOp(a), Mem(), *[Imm(v) for v in imm]],
                arg={"rip": label})


def _ret() -> Inst:
    return Inst("ret", [], kind=Kind.RET)


def _check(before: list[Inst], after: list[Inst], params: list) -> None:
    fa = MFunction("f", before, params=params)
    fb = MFunction("f", after, params=[(p, p) for _, p in params])
    check_allocation(fa, fb, X86RegInfo(0, 32, constants=POOL))


def _case(form: str = "vsubps_y_y_ym", first: bool = False, label: str = ".LC0",
          imm: tuple[int, ...] = ()) -> tuple[list[Inst], list]:
    """before: x = [p]; c = .LC0; y = x OP c (or c OP x); [p] = y."""
    p, x, c, y = VReg(0, "gpr"), VReg(1, "vec"), VReg(2, "vec"), VReg(3, "vec")
    srcs = (c, x) if first else (x, c)
    before = [_load(x, p), _const(c, label), _op(form, y, *srcs, *imm), _store(p, y), _ret()]
    return before, [(p, RDI)]


def test_a_reader_of_the_constant_in_place_passes() -> None:
    before, params = _case()
    after = [_load(Y[0], RDI), _read_in_place("vsubps_y_y_ym", Y[1], Y[0]),
             _store(RDI, Y[1]), _ret()]
    _check(before, after, params)


def test_the_register_form_with_the_load_kept_still_passes() -> None:
    before, params = _case()
    after = [_load(Y[0], RDI), _const(Y[2]), _op("vsubps_y_y_ym", Y[1], Y[0], Y[2]),
             _store(RDI, Y[1]), _ret()]
    _check(before, after, params)


def test_a_gone_load_whose_register_is_still_read_fails() -> None:
    p, x, c, y, z = (VReg(0, "gpr"), VReg(1, "vec"), VReg(2, "vec"), VReg(3, "vec"),
                     VReg(4, "vec"))
    before = [_load(x, p), _const(c), _op("vsubps_y_y_ym", y, x, c),
              _op("vmulps_y_y_ym", z, y, c), _store(p, z), _ret()]
    after = [_load(Y[0], RDI), _read_in_place("vsubps_y_y_ym", Y[1], Y[0]),
             _op("vmulps_y_y_ym", Y[3], Y[1], Y[2]), _store(RDI, Y[3]), _ret()]
    with pytest.raises(CheckError, match="operand 2 reads xmm2 holding"):
        _check(before, after, [(p, RDI)])


def test_another_entrys_label_fails() -> None:
    before, params = _case()
    after = [_load(Y[0], RDI), _read_in_place("vsubps_y_y_ym", Y[1], Y[0], ".LC1"),
             _store(RDI, Y[1]), _ret()]
    with pytest.raises(CheckError, match="does not match original"):
        _check(before, after, params)


def test_a_broadcast_is_not_read_as_a_whole_vector() -> None:
    p, x, c, y = VReg(0, "gpr"), VReg(1, "vec"), VReg(2, "vec"), VReg(3, "vec")
    before = [_load(x, p), _const(c, form="vbroadcastss_y_xm32"),
              _op("vsubps_y_y_ym", y, x, c), _store(p, y), _ret()]
    after = [_load(Y[0], RDI), _read_in_place("vsubps_y_y_ym", Y[1], Y[0]),
             _store(RDI, Y[1]), _ret()]
    with pytest.raises(CheckError, match="original instructions after allocation"):
        _check(before, after, [(p, RDI)])


def test_a_read_wider_than_the_constant_fails() -> None:
    p, x, c, y = VReg(0, "gpr"), VReg(1, "vec"), VReg(2, "vec"), VReg(3, "vec")
    before = [_load(x, p), _const(c, form="vmovups_x_xm"), _op("vsubps_y_y_ym", y, x, c),
              _store(p, y), _ret()]
    after = [_load(Y[0], RDI), _read_in_place("vsubps_y_y_ym", Y[1], Y[0]),
             _store(RDI, Y[1]), _ret()]
    with pytest.raises(CheckError, match="reads 32 bytes of a 16-byte constant"):
        _check(before, after, [(p, RDI)])


def test_a_constant_first_add_swapped_passes() -> None:
    before, params = _case("vaddps_y_y_ym", first=True)
    after = [_load(Y[0], RDI), _read_in_place("vaddps_y_y_ym", Y[1], Y[0]),
             _store(RDI, Y[1]), _ret()]
    _check(before, after, params)


def test_a_nan_constant_swapped_under_a_float_add_fails() -> None:
    # with both sources NaN the first one's payload is the result (SDM Vol. 1 §4.8.3.5)
    before, params = _case("vaddps_y_y_ym", first=True, label=".LC1")
    after = [_load(Y[0], RDI), _read_in_place("vaddps_y_y_ym", Y[1], Y[0], ".LC1"),
             _store(RDI, Y[1]), _ret()]
    with pytest.raises(CheckError, match="does not match original"):
        _check(before, after, params)


def test_a_non_commuting_reader_swapped_fails() -> None:
    before, params = _case("vsubps_y_y_ym", first=True)
    after = [_load(Y[0], RDI), _read_in_place("vsubps_y_y_ym", Y[1], Y[0]),
             _store(RDI, Y[1]), _ret()]
    with pytest.raises(CheckError):
        _check(before, after, params)


@pytest.mark.parametrize(("pred", "ok"), [(0x0E, True), (1, False)])
def test_a_swapped_compare_needs_its_predicate_mirrored(pred: int, ok: bool) -> None:
    # c < x is x > c: LT_OS (1) becomes GT_OS (0x0E), SDM Vol. 2 "CMPPS" Table 3-1
    before, params = _case("vcmpps_y_y_ym_imm8", first=True, imm=(1,))
    after = [_load(Y[0], RDI), _read_in_place("vcmpps_y_y_ym_imm8", Y[1], Y[0], ".LC0", pred),
             _store(RDI, Y[1]), _ret()]
    if ok:
        _check(before, after, params)
    else:
        with pytest.raises(CheckError):
            _check(before, after, params)


def _reused() -> tuple[list[Inst], list]:
    """before: x = [p]; c = x - x; [p] = c; c = .LC0 (the value redefined by a constant
    load: the selector reuses a register for a constant and a result); y = x + c; [p] = y."""
    p, x, c, y = VReg(0, "gpr"), VReg(1, "vec"), VReg(2, "vec"), VReg(3, "vec")
    before = [_load(x, p), _op("vsubps_y_y_ym", c, x, x), _store(p, c), _const(c),
              _op("vaddps_y_y_ym", y, x, c), _store(p, y), _ret()]
    return before, [(p, RDI)]


def test_a_redefined_value_read_in_place_from_its_last_load_passes() -> None:
    before, params = _reused()
    after = [_load(Y[0], RDI), _op("vsubps_y_y_ym", Y[1], Y[0], Y[0]), _store(RDI, Y[1]),
             _read_in_place("vaddps_y_y_ym", Y[2], Y[0]), _store(RDI, Y[2]), _ret()]
    _check(before, after, params)


def test_a_gone_load_ends_the_old_value_of_its_register() -> None:
    # the constant load went but its reader reads the register still holding c's old value
    before, params = _reused()
    after = [_load(Y[0], RDI), _op("vsubps_y_y_ym", Y[1], Y[0], Y[0]), _store(RDI, Y[1]),
             _op("vaddps_y_y_ym", Y[2], Y[0], Y[1]), _store(RDI, Y[2]), _ret()]
    with pytest.raises(CheckError, match="operand 2 reads xmm1 holding nothing"):
        _check(before, after, params)
