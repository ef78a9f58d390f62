"""Emulator semantics of scalar ALU, program control and memory instructions.

Meanings from "AMD RDNA3 Shader Instruction Set Architecture" (SALU §5, program flow §4,
s_waitcnt §4.5, SMEM §6, LDS/DS §11, global/flat §10) and "AMD Instinct MI300 CDNA3 ISA"
(§4-§5 SALU and control, §9 flat/global, §10 LDS). gfx1100 and gfx942 spell some forms
differently (``s_load_b64`` vs ``s_load_dwordx2``, ``s_and_not1_b32`` vs ``s_andn2_b32``,
``global_load_b32`` vs ``global_load_dword``); both names map to one meaning here.
Each function takes (wave, inst, workgroup).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from kcc.encode.amd.operands import SGPR, VGPR, Imm, Inst, Special
from kcc.targets.amd.emu.core import Semantic, Wave, Workgroup

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1


def _s32(v: int) -> int:
    v &= M32
    return v - (1 << 32) if v >> 31 else v


def _s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def _dwords(inst: Inst, i: int = 0) -> int:
    op = inst.ops[i]
    if isinstance(op, SGPR):
        return op.count
    if isinstance(op, Special) and op.name in ("vcc", "exec", "flat_scratch", "xnack_mask"):
        return 2
    return 1


OPS: dict[str, Semantic] = {}


def _reg(*names: str) -> Callable[[Semantic], Semantic]:
    def deco(fn: Semantic) -> Semantic:
        for n in names:
            OPS[n] = fn
        return fn
    return deco


# --- SOP2 / SOP1 / SOPK: integer results, SCC as the manuals define per opcode -----------
def _sop2(fn: Callable[[int, int, Wave], tuple[int, int | None]], width: int,
          *names: str) -> None:
    """A two-source scalar op: fn(a, b, wave) -> (result, new SCC or None to keep)."""
    n = width // 32

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        dst, a, b = inst.ops
        shift_src = 1 if names[0].startswith(("s_lshl_b64", "s_lshr_b64", "s_ashr_i64",
                                              "s_bfe_u64", "s_bfe_i64")) else n
        res, scc = fn(w.sread(a, n), w.sread(b, shift_src), w)
        w.swrite(dst, res & ((1 << width) - 1), n)
        if scc is not None:
            w.scc = int(bool(scc))
    for name in names:
        OPS[name] = run


for _w in (32, 64):
    _m = (1 << _w) - 1
    _t = "b32" if _w == 32 else "b64"
    nz = lambda r, m=_m: (r & m, (r & m) != 0)  # noqa: E731
    _sop2(lambda a, b, w, f=nz: f(a & b), _w, f"s_and_{_t}")
    _sop2(lambda a, b, w, f=nz: f(a | b), _w, f"s_or_{_t}")
    _sop2(lambda a, b, w, f=nz: f(a ^ b), _w, f"s_xor_{_t}")
    _sop2(lambda a, b, w, f=nz, m=_m: f(a & ~b & m), _w, f"s_and_not1_{_t}", f"s_andn2_{_t}")
    _sop2(lambda a, b, w, f=nz, m=_m: f((a | ~b) & m), _w, f"s_or_not1_{_t}", f"s_orn2_{_t}")
    _sop2(lambda a, b, w, f=nz, m=_m: f(~(a & b) & m), _w, f"s_nand_{_t}")
    _sop2(lambda a, b, w, f=nz, m=_m: f(~(a | b) & m), _w, f"s_nor_{_t}")
    _sop2(lambda a, b, w, f=nz, m=_m: f(~(a ^ b) & m), _w, f"s_xnor_{_t}")
    _sop2(lambda a, b, w, f=nz, s=_w - 1: f(a << (b & s)), _w, f"s_lshl_{_t}")
    _sop2(lambda a, b, w, f=nz, s=_w - 1: f(a >> (b & s)), _w, f"s_lshr_{_t}")
    _sop2(lambda a, b, w: (b if w.scc == 0 else a, None), _w, f"s_cselect_{_t}")

_sop2(lambda a, b, w: nz(_s32(a) >> (b & 31)), 32, "s_ashr_i32")
_sop2(lambda a, b, w: ((_s64(a) >> (b & 63)) & M64, (_s64(a) >> (b & 63)) != 0), 64,
      "s_ashr_i64")
# s_add_u32: SCC = carry out; s_addc_u32 adds SCC in; s_sub_u32: SCC = borrow.
_sop2(lambda a, b, w: (a + b, (a + b) >> 32), 32, "s_add_u32")
_sop2(lambda a, b, w: (a + b + w.scc, (a + b + w.scc) >> 32), 32, "s_addc_u32")
_sop2(lambda a, b, w: (a - b, b > a), 32, "s_sub_u32")
_sop2(lambda a, b, w: (a - b - w.scc, b + w.scc > a), 32, "s_subb_u32")
# s_add_i32 / s_sub_i32: SCC = signed overflow.
_sop2(lambda a, b, w: (a + b, not -2**31 <= _s32(a) + _s32(b) < 2**31), 32, "s_add_i32")
_sop2(lambda a, b, w: (a - b, not -2**31 <= _s32(a) - _s32(b) < 2**31), 32, "s_sub_i32")
_sop2(lambda a, b, w: (a * b, None), 32, "s_mul_i32")
_sop2(lambda a, b, w: ((a * b) >> 32, None), 32, "s_mul_hi_u32")
_sop2(lambda a, b, w: ((_s32(a) * _s32(b)) >> 32, None), 32, "s_mul_hi_i32")
# min/max: SCC = S0 < S1 (min) or S0 > S1 (max), i.e. whether S0 is the result.
_sop2(lambda a, b, w: (a if _s32(a) < _s32(b) else b, _s32(a) < _s32(b)), 32, "s_min_i32")
_sop2(lambda a, b, w: (a if a < b else b, a < b), 32, "s_min_u32")
_sop2(lambda a, b, w: (a if _s32(a) > _s32(b) else b, _s32(a) > _s32(b)), 32, "s_max_i32")
_sop2(lambda a, b, w: (a if a > b else b, a > b), 32, "s_max_u32")
for _k in (1, 2, 3, 4):
    _sop2(lambda a, b, w, k=_k: ((a << k) + b, ((a << k) + b) >> 32 != 0), 32,
          f"s_lshl{_k}_add_u32")
_sop2(lambda a, b, w: ((((1 << (a & 31)) - 1) << (b & 31)), None), 32, "s_bfm_b32")
_sop2(lambda a, b, w: ((((1 << (a & 63)) - 1) << (b & 63)), None), 64, "s_bfm_b64")


def _bfe(a: int, b: int, bits: int, signed: bool) -> tuple[int, bool]:
    """S_BFE: offset = S1[4:0] (5:0 for 64-bit), width = S1[22:16]; SCC = result != 0."""
    off = b & (bits - 1)
    width = (b >> 16) & 0x7F
    r = (a >> off) & ((1 << width) - 1) if width else 0
    if signed and width and r >> (width - 1) & 1:
        r -= 1 << width
    r &= (1 << bits) - 1
    return r, r != 0


_sop2(lambda a, b, w: _bfe(a, b, 32, False), 32, "s_bfe_u32")
_sop2(lambda a, b, w: _bfe(a, b, 32, True), 32, "s_bfe_i32")
_sop2(lambda a, b, w: _bfe(a, b, 64, False), 64, "s_bfe_u64")
_sop2(lambda a, b, w: _bfe(a, b, 64, True), 64, "s_bfe_i64")
_sop2(lambda a, b, w: ((a & 0xFFFF) | (b & 0xFFFF) << 16, None), 32, "s_pack_ll_b32_b16")
_sop2(lambda a, b, w: (abs(_s32(a) - _s32(b)), abs(_s32(a) - _s32(b)) != 0), 32,
      "s_absdiff_i32")


def _sop1(fn: Callable[[int, Wave], tuple[int, int | None]], dwords: int, *names: str,
          src_dwords: int | None = None) -> None:
    sd = dwords if src_dwords is None else src_dwords

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        dst, a = inst.ops
        res, scc = fn(w.sread(a, sd), w)
        w.swrite(dst, res & ((1 << (32 * dwords)) - 1), dwords)
        if scc is not None:
            w.scc = int(bool(scc))
    for name in names:
        OPS[name] = run


def _popcount(v: int) -> int:
    return bin(v).count("1")


def cls32(a: int) -> int:
    """Count of leading bits equal to bit 31 (bit 31 included), -1 (as u32) for 0 and -1."""
    a &= M32
    if a in (0, M32):
        return M32
    x = a ^ M32 if a >> 31 else a
    return 32 - x.bit_length()


def _wqm(a: int, bits: int) -> int:
    return sum(0xF << q for q in range(0, bits, 4) if (a >> q) & 0xF)


def _quadmask(a: int, bits: int) -> int:
    return sum(1 << (q // 4) for q in range(0, bits, 4) if (a >> q) & 0xF)


_sop1(lambda a, w: (a, None), 1, "s_mov_b32")
_sop1(lambda a, w: (a, None), 2, "s_mov_b64")
_sop1(lambda a, w: (~a, (~a & M32) != 0), 1, "s_not_b32")
_sop1(lambda a, w: (~a, (~a & M64) != 0), 2, "s_not_b64")
_sop1(lambda a, w: (abs(_s32(a)), abs(_s32(a)) != 0), 1, "s_abs_i32")
_sop1(lambda a, w: (int(f"{a:032b}"[::-1], 2), None), 1, "s_brev_b32")
_sop1(lambda a, w: (_popcount(a), _popcount(a) != 0), 1, "s_bcnt1_i32_b32")
_sop1(lambda a, w: (_popcount(a), _popcount(a) != 0), 1, "s_bcnt1_i32_b64", src_dwords=2)
_sop1(lambda a, w: ((a & -a).bit_length() - 1 if a else M32, None), 1, "s_ctz_i32_b32",
      "s_ff1_i32_b32")
_sop1(lambda a, w: (32 - a.bit_length() if a else M32, None), 1, "s_clz_i32_u32",
      "s_flbit_i32_b32")
_sop1(lambda a, w: (32 - _popcount(a), _popcount(a) != 32), 1, "s_bcnt0_i32_b32")
_sop1(lambda a, w: (int(f"{a:064b}"[::-1], 2), None), 2, "s_brev_b64")
_sop1(lambda a, w: ((a & -a).bit_length() - 1 if a else M32, None), 1, "s_ctz_i32_b64",
      "s_ff1_i32_b64", src_dwords=2)
# S_CLS_I32 / S_FLBIT_I32: leading bits equal to the sign bit (the sign bit counted); -1 for
# 0 and -1 (RDNA3 §15 SOP1 S_CLS_I32, CDNA3 S_FLBIT_I32).
_sop1(lambda a, w: (cls32(a), None), 1, "s_cls_i32", "s_flbit_i32")
# S_WQM: every 4-bit quad with a bit set becomes all ones; S_QUADMASK: bit i = any bit of
# quad i. SCC = result != 0.
_sop1(lambda a, w: (_wqm(a, 32), _wqm(a, 32) != 0), 1, "s_wqm_b32")
_sop1(lambda a, w: (_wqm(a, 64), _wqm(a, 64) != 0), 2, "s_wqm_b64")
_sop1(lambda a, w: (_quadmask(a, 32), _quadmask(a, 32) != 0), 1, "s_quadmask_b32")
_sop1(lambda a, w: (_s32(a << 24) >> 24, None), 1, "s_sext_i32_i8")
_sop1(lambda a, w: (_s32(a << 16) >> 16, None), 1, "s_sext_i32_i16")


@_reg("s_cmov_b32", "s_cmov_b64")
def _cmov(w: Wave, inst: Inst, wg: Workgroup) -> None:
    n = 2 if inst.name.endswith("64") else 1
    if w.scc:
        w.swrite(inst.ops[0], w.sread(inst.ops[1], n), n)


def _saveexec(fn: Callable[[int, int, int], int], *names: str) -> None:
    """S_*_SAVEEXEC: D = EXEC; EXEC = fn(S0, EXEC); SCC = EXEC != 0."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        n = 2 if w.lanes == 64 else 1
        m = (1 << w.lanes) - 1
        old = w.mask_value("exec")
        new = fn(w.sread(inst.ops[1], n), old, m) & m
        w.swrite(inst.ops[0], old, n)
        w.set_exec(new)
        w.scc = int(new != 0)
    for name in names:
        OPS[name] = run


for _t in ("b32", "b64"):
    _saveexec(lambda s, e, m: s & e, f"s_and_saveexec_{_t}")
    _saveexec(lambda s, e, m: s | e, f"s_or_saveexec_{_t}")
    _saveexec(lambda s, e, m: s ^ e, f"s_xor_saveexec_{_t}")
    _saveexec(lambda s, e, m: ~s & e, f"s_and_not0_saveexec_{_t}", f"s_andn1_saveexec_{_t}")
    _saveexec(lambda s, e, m: s & ~e, f"s_and_not1_saveexec_{_t}", f"s_andn2_saveexec_{_t}")
    _saveexec(lambda s, e, m: ~s | e, f"s_or_not0_saveexec_{_t}", f"s_orn1_saveexec_{_t}")
    _saveexec(lambda s, e, m: s | ~e, f"s_or_not1_saveexec_{_t}", f"s_orn2_saveexec_{_t}")


def _simm16(inst: Inst, i: int = -1) -> int:
    op = inst.ops[i]
    assert isinstance(op, Imm)
    return _s32(op.value << 16) >> 16


@_reg("s_movk_i32")
def _movk(w: Wave, inst: Inst, wg: Workgroup) -> None:
    w.swrite(inst.ops[0], _simm16(inst) & M32)


@_reg("s_addk_i32")
def _addk(w: Wave, inst: Inst, wg: Workgroup) -> None:
    a, b = _s32(w.sread(inst.ops[0])), _simm16(inst)
    w.swrite(inst.ops[0], (a + b) & M32)
    w.scc = int(not -2**31 <= a + b < 2**31)


@_reg("s_mulk_i32")
def _mulk(w: Wave, inst: Inst, wg: Workgroup) -> None:
    w.swrite(inst.ops[0], (_s32(w.sread(inst.ops[0])) * _simm16(inst)) & M32)


@_reg("s_cmovk_i32")
def _cmovk(w: Wave, inst: Inst, wg: Workgroup) -> None:
    if w.scc:
        w.swrite(inst.ops[0], _simm16(inst) & M32)


# --- SOPC: compares set SCC --------------------------------------------------------------
_CMP = {"eq": lambda a, b: a == b, "lg": lambda a, b: a != b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}


def _sopc(name: str, fn: Callable[[int, int], bool], signed: bool, dwords: int) -> None:
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        a, b = (w.sread(o, dwords) for o in inst.ops)
        if signed:
            a, b = _s32(a), _s32(b)
        w.scc = int(fn(a, b))
    OPS[name] = run


for _c, _f in _CMP.items():
    _sopc(f"s_cmp_{_c}_i32", _f, True, 1)
    _sopc(f"s_cmp_{_c}_u32", _f, False, 1)
for _c in ("eq", "lg"):
    _sopc(f"s_cmp_{_c}_u64", _CMP[_c], False, 2)
_sopc("s_bitcmp0_b32", lambda a, b: not (a >> (b & 31)) & 1, False, 1)
_sopc("s_bitcmp1_b32", lambda a, b: bool((a >> (b & 31)) & 1), False, 1)


def _sopk_cmp(name: str, fn: Callable[[int, int], bool], signed: bool) -> None:
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        a = w.sread(inst.ops[0])
        k = inst.ops[1].value & 0xFFFF  # type: ignore[union-attr]
        if signed:
            a, k = _s32(a), _s32(k << 16) >> 16
        w.scc = int(fn(a, k))
    OPS[name] = run


for _c, _f in _CMP.items():
    _sopk_cmp(f"s_cmpk_{_c}_i32", _f, True)
    _sopk_cmp(f"s_cmpk_{_c}_u32", _f, False)


# --- SOPP: program control ---------------------------------------------------------------
def _branch(cond: Callable[[Wave], bool], *names: str) -> None:
    """Branch target = address of the next instruction + SIMM16 * 4 (RDNA3 §4.3)."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        if cond(w):
            w.next_pc = w.pc + 4 + 4 * _simm16(inst)
    for name in names:
        OPS[name] = run


_branch(lambda w: True, "s_branch")
_branch(lambda w: w.scc == 0, "s_cbranch_scc0")
_branch(lambda w: w.scc == 1, "s_cbranch_scc1")
_branch(lambda w: w.mask_value("vcc") == 0, "s_cbranch_vccz")
_branch(lambda w: w.mask_value("vcc") != 0, "s_cbranch_vccnz")
_branch(lambda w: w.mask_value("exec") == 0, "s_cbranch_execz")
_branch(lambda w: w.mask_value("exec") != 0, "s_cbranch_execnz")


@_reg("s_endpgm")
def _endpgm(w: Wave, inst: Inst, wg: Workgroup) -> None:
    w.done = True


@_reg("s_barrier")
def _barrier(w: Wave, inst: Inst, wg: Workgroup) -> None:
    w.at_barrier = True


@_reg("s_nop", "s_clause", "s_delay_alu", "s_sendmsg", "s_setprio", "s_sleep",
      "s_inst_prefetch", "s_icache_inv", "s_waitcnt_depctr", "s_set_inst_prefetch_distance",
      "s_ttracedata", "s_sethalt")
def _noop(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """No architectural effect in a functional model (scheduling hints, messages)."""


@_reg("s_trap")
def _trap(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """s_trap enters the trap handler the HSA runtime installs, which for every trap ID it
    defines terminates the dispatch and puts its queue into the error state when no debugger
    is attached (LLVM AMDGPUUsage, "Trap Handler ABI": llvm.trap is s_trap 2, llvm.debugtrap
    s_trap 3 "handled same as llvm.trap" without a debugger). The emulator has no debugger:
    the dispatch ends with an error naming the trap ID."""
    trap_id = int(getattr(inst.ops[0], "value", inst.ops[0])) & 0xFF if inst.ops else 0
    raise w.error(f"s_trap {trap_id}: the trap handler terminates the dispatch "
                  "(HSA trap handler ABI; no debugger)")


@_reg("s_code_end")
def _code_end(w: Wave, inst: Inst, wg: Workgroup) -> None:
    raise w.error("executed s_code_end: the program ran past its s_endpgm")


@_reg("s_getpc_b64")
def _getpc(w: Wave, inst: Inst, wg: Workgroup) -> None:
    w.swrite(inst.ops[0], w.pc + 4, 2)


@_reg("s_setpc_b64")
def _setpc(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """PC = S0 (a byte address; outside .text the fetch stops with an error)."""
    w.next_pc = w.sread(inst.ops[0], 2)


@_reg("s_swappc_b64")
def _swappc(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """D = the address of the next instruction (PC + 4), then PC = S0."""
    target = w.sread(inst.ops[1], 2)
    w.swrite(inst.ops[0], w.pc + 4, 2)
    w.next_pc = target


@_reg("s_waitcnt")
def _waitcnt(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """SIMM16 layout: gfx11 vmcnt 15:10, lgkmcnt 9:4, expcnt 2:0 (RDNA3 §4.5); gfx9 vmcnt
    3:0 and 15:14, expcnt 6:4, lgkmcnt 11:8 (CDNA3 §4.4)."""
    v = inst.ops[0].value if inst.ops else 0  # type: ignore[union-attr]
    if w.fam == "gfx11":
        vm, lgkm = (v >> 10) & 0x3F, (v >> 4) & 0x3F
    else:
        vm, lgkm = (v & 0xF) | ((v >> 14) & 3) << 4, (v >> 8) & 0xF
    w.wait("vm", vm)
    w.wait("lgkm", lgkm)


@_reg("s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_vscnt", "s_waitcnt_expcnt")
def _waitcnt_k(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """SOPK waits: count = SGPR (null reads 0) + SIMM16 (RDNA3 §4.5)."""
    n = w.sread(inst.ops[0]) + (inst.ops[1].value & 0xFFFF)  # type: ignore[union-attr]
    counter = inst.name.split("_")[-1][:-3]
    if counter in ("vm", "lgkm"):
        w.wait(counter, n)
    elif counter == "vs":
        w.wait("vs", n)


# --- SMEM: scalar loads ------------------------------------------------------------------
SMEM_LOADS = {"s_load_b32": 1, "s_load_b64": 2, "s_load_b128": 4, "s_load_b256": 8,
              "s_load_b512": 16, "s_load_dword": 1, "s_load_dwordx2": 2, "s_load_dwordx4": 4,
              "s_load_dwordx8": 8, "s_load_dwordx16": 16}


def _smem_load(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """Address = SBASE + offset (an immediate, or an SGPR plus the instruction offset),
    dword aligned (the low two bits are ignored)."""
    n = SMEM_LOADS[inst.name]
    dst, base, off = inst.ops
    addr = w.sread(base, 2)
    if isinstance(off, Imm):
        addr += off.value  # the decoder gives the signed 21-bit offset
    elif not (isinstance(off, Special) and off.name == "null"):
        addr += w.sread(off) + int(inst.mod("offset", 0))  # type: ignore[arg-type]
    addr &= ~3 & M64
    raw = wg.memory.read(np.array([addr], np.uint64), 4 * n, f"at {w.pc:#x} {inst.name}")
    vals = raw.reshape(n, 4).view(np.uint32).reshape(-1)
    w.swrite(dst, int.from_bytes(vals.tobytes(), "little"), n)
    assert isinstance(dst, SGPR)
    w.issue_load("lgkm", {("s", dst.index + k) for k in range(n)}, smem=True)


for _n in SMEM_LOADS:
    OPS[_n] = _smem_load


# --- GLOBAL / FLAT ----------------------------------------------------------------------
# name -> (bytes, signed, dwords written/read)
_LOADS = {"b32": (4, False), "b64": (8, False), "b96": (12, False), "b128": (16, False),
          "u8": (1, False), "i8": (1, True), "u16": (2, False), "i16": (2, True),
          "dword": (4, False), "dwordx2": (8, False), "dwordx3": (12, False),
          "dwordx4": (16, False), "ubyte": (1, False), "sbyte": (1, True),
          "ushort": (2, False), "sshort": (2, True)}
_STORES = {"b8": 1, "b16": 2, "b32": 4, "b64": 8, "b96": 12, "b128": 16, "byte": 1,
           "short": 2, "dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16}


def _address(w: Wave, inst: Inst, vaddr, saddr) -> np.ndarray:
    """GLOBAL: with SADDR, addr = SADDR + zero-extended 32-bit VADDR + offset; with
    ``off``, addr = 64-bit VADDR + offset (RDNA3 §10.1, CDNA3 §9.1). FLAT: 64-bit VADDR."""
    off = np.uint64(int(inst.mod("offset", 0)) & M64)  # type: ignore[arg-type]
    if saddr is None or (isinstance(saddr, Special) and saddr.name == "off"):
        return w.vread(vaddr, 64) + off
    return np.uint64(w.sread(saddr, 2)) + w.vread(vaddr, 32).astype(np.uint64) + off


def _global_load(w: Wave, inst: Inst, wg: Workgroup) -> None:
    kind = inst.name.split("_")[-1]
    size, signed = _LOADS[kind]
    dst, vaddr = inst.ops[0], inst.ops[1]
    saddr = inst.ops[2] if len(inst.ops) > 2 else None
    m = w.exec
    assert isinstance(dst, VGPR)
    nd = max(1, size // 4)
    if m.any():
        addrs = _address(w, inst, vaddr, saddr)[m]
        raw = wg.memory.read(addrs, size, f"at {w.pc:#x} {inst.name}")
        if size >= 4:
            vals = raw.view(np.uint32).reshape(len(addrs), nd)
        else:
            dt = {(1, False): np.uint8, (1, True): np.int8, (2, False): np.uint16,
                  (2, True): np.int16}[(size, signed)]
            vals = raw.view(dt).astype(np.int64).astype(np.uint32).reshape(-1, 1)
        for k in range(nd):
            w.check_pending(("v", dst.index + k, 1))
            w.v[dst.index + k, m] = vals[:, k]
    w.issue_load("vm", {("v", dst.index + k) for k in range(nd)})


def _global_store(w: Wave, inst: Inst, wg: Workgroup) -> None:
    size = _STORES[inst.name.split("_")[-1]]
    vaddr, data = inst.ops[0], inst.ops[1]
    saddr = inst.ops[2] if len(inst.ops) > 2 else None
    m = w.exec
    assert isinstance(data, VGPR)
    nd = max(1, size // 4)
    if m.any():
        addrs = _address(w, inst, vaddr, saddr)[m]
        for k in range(nd):
            w.check_pending(("v", data.index + k, 1))
        vals = np.ascontiguousarray(w.v[data.index:data.index + nd, m].T)
        raw = vals.view(np.uint8).reshape(len(addrs), 4 * nd)[:, :size]
        wg.memory.write(addrs, np.ascontiguousarray(raw), f"at {w.pc:#x} {inst.name}")
    w.issue_other("vs" if w.fam == "gfx11" else "vm")


for _pre in ("global", "flat"):
    for _k in _LOADS:
        OPS[f"{_pre}_load_{_k}"] = _global_load
    for _k in _STORES:
        OPS[f"{_pre}_store_{_k}"] = _global_store


# --- SCRATCH: the private segment -------------------------------------------------------
def _scratch_addr(w: Wave, inst: Inst, vaddr, saddr, size: int, m: np.ndarray) -> np.ndarray:
    """Each active lane's byte offset in its own private segment: VADDR (unless ``off``) +
    SADDR (unless ``off``) + the signed offset (RDNA3 §10.1 / CDNA3 §9.1, scratch
    addressing: a per-work-item address space from 0). An access outside the kernel's
    private segment (the descriptor's PRIVATE_SEGMENT_FIXED_SIZE) is an error here."""
    if w.scratch is None:
        raise w.error("scratch access, but the kernel has no private segment")
    a = np.full(w.lanes, int(inst.mod("offset", 0)), np.int64)  # type: ignore[arg-type]
    if not (isinstance(vaddr, Special) and vaddr.name == "off"):
        a += w.vread(vaddr).astype(np.int64)
    if not (isinstance(saddr, Special) and saddr.name == "off"):
        a += w.sread(saddr)
    a = a[m]
    bad = (a < 0) | (a + size > w.scratch.shape[1])
    if bad.any():
        raise w.error(f"scratch access of {size} bytes at {int(a[bad][0]):#x} is outside the "
                      f"{w.scratch.shape[1]}-byte private segment")
    return a


def _scratch_load(w: Wave, inst: Inst, wg: Workgroup) -> None:
    size, signed = _LOADS[inst.name.split("_")[-1]]
    dst, vaddr, saddr = inst.ops
    assert isinstance(dst, VGPR)
    m = w.exec
    nd = max(1, size // 4)
    lanes = np.nonzero(m)[0]
    a = _scratch_addr(w, inst, vaddr, saddr, size, m)
    raw = np.ascontiguousarray(w.scratch[lanes[:, None], a[:, None] + np.arange(size)])
    if size >= 4:
        vals = raw.view(np.uint32).reshape(len(a), nd)
    else:
        dt = {(1, False): np.uint8, (1, True): np.int8, (2, False): np.uint16,
              (2, True): np.int16}[(size, signed)]
        vals = raw.view(dt).astype(np.int64).astype(np.uint32).reshape(-1, 1)
    for k in range(nd):
        w.check_pending(("v", dst.index + k, 1))
        w.v[dst.index + k, m] = vals[:, k]
    w.issue_load("vm", {("v", dst.index + k) for k in range(nd)})


def _scratch_store(w: Wave, inst: Inst, wg: Workgroup) -> None:
    size = _STORES[inst.name.split("_")[-1]]
    vaddr, data, saddr = inst.ops
    assert isinstance(data, VGPR)
    m = w.exec
    nd = max(1, size // 4)
    lanes = np.nonzero(m)[0]
    a = _scratch_addr(w, inst, vaddr, saddr, size, m)
    for k in range(nd):
        w.check_pending(("v", data.index + k, 1))
    vals = np.ascontiguousarray(w.v[data.index:data.index + nd, m].T)
    raw = vals.view(np.uint8).reshape(len(a), 4 * nd)[:, :size]
    w.scratch[lanes[:, None], a[:, None] + np.arange(size)] = raw
    w.issue_other("vs" if w.fam == "gfx11" else "vm")


for _k in _LOADS:
    OPS[f"scratch_load_{_k}"] = _scratch_load
for _k in _STORES:
    OPS[f"scratch_store_{_k}"] = _scratch_store


def _global_atomic_add(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """GLOBAL_ATOMIC_ADD_{U32,F32} without return: lane by lane (in lane order) memory =
    memory + data (f32: one IEEE rounding per lane)."""
    vaddr, data = inst.ops[0], inst.ops[1]
    saddr = inst.ops[2] if len(inst.ops) > 2 else None
    m = w.exec
    assert isinstance(data, VGPR)
    if m.any():
        addrs = _address(w, inst, vaddr, saddr)[m]
        w.check_pending(("v", data.index, 1))
        vals = w.v[data.index, m]
        what = f"at {w.pc:#x} {inst.name}"
        for a, v in zip(addrs.tolist(), vals.tolist()):
            at = np.array([a], np.uint64)
            old = wg.memory.read(at, 4, what).reshape(-1).view(np.uint32)[0]
            if inst.name.endswith("_f32"):
                new = (np.array([old], np.uint32).view(np.float32)
                       + np.array([v], np.uint32).view(np.float32)).view(np.uint32)[0]
            else:
                new = np.uint32((int(old) + v) & M32)
            wg.memory.write(at, np.array([new], np.uint32).view(np.uint8).reshape(1, 4), what)
    w.issue_other("vs" if w.fam == "gfx11" else "vm")


for _n in ("global_atomic_add_u32", "global_atomic_add", "global_atomic_add_f32"):
    OPS[_n] = _global_atomic_add


# --- DS (LDS) ---------------------------------------------------------------------------
def _lds_addr(w: Wave, wg: Workgroup, inst: Inst, addr: VGPR, off: int, size: int,
              m: np.ndarray) -> np.ndarray:
    """LDS address = VGPR + offset, the VGPR read as an unsigned 32-bit number and the sum
    taken without wrapping (kcc never relies on a wrap: a negative base plus an offset is
    reported, issue 20); an access past the workgroup's allocation is an error here
    (hardware returns 0 / drops the write, which hides a bug)."""
    a = w.vread(addr).astype(np.int64)[m] + off
    bad = (a < 0) | (a + size > len(wg.lds))
    if bad.any():
        raise w.error(f"LDS access of {size} bytes at {int(a[bad][0]):#x} is outside the "
                      f"{len(wg.lds)} bytes the kernel allocates")
    return a


_DS_LOADS = {"ds_load_b32": (4, False), "ds_load_b64": (8, False), "ds_load_b96": (12, False),
             "ds_load_b128": (16, False), "ds_load_u8": (1, False), "ds_load_i8": (1, True),
             "ds_load_u16": (2, False), "ds_load_i16": (2, True),
             "ds_read_b32": (4, False), "ds_read_b64": (8, False), "ds_read_b96": (12, False),
             "ds_read_b128": (16, False), "ds_read_u8": (1, False), "ds_read_i8": (1, True),
             "ds_read_u16": (2, False), "ds_read_i16": (2, True)}
_DS_STORES = {"ds_store_b8": 1, "ds_store_b16": 2, "ds_store_b32": 4, "ds_store_b64": 8,
              "ds_store_b96": 12, "ds_store_b128": 16, "ds_write_b8": 1, "ds_write_b16": 2,
              "ds_write_b32": 4, "ds_write_b64": 8, "ds_write_b96": 12, "ds_write_b128": 16}


def _ds_load(w: Wave, inst: Inst, wg: Workgroup) -> None:
    size, signed = _DS_LOADS[inst.name]
    dst, addr = inst.ops
    m = w.exec
    nd = max(1, size // 4)
    assert isinstance(dst, VGPR) and isinstance(addr, VGPR)
    a = _lds_addr(w, wg, inst, addr, int(inst.mod("offset", 0)), size, m)  # type: ignore
    raw = wg.lds[a[:, None] + np.arange(size)]
    if size >= 4:
        vals = np.ascontiguousarray(raw).view(np.uint32).reshape(len(a), nd)
    else:
        dt = {1: np.int8 if signed else np.uint8, 2: np.int16 if signed else np.uint16}[size]
        vals = np.ascontiguousarray(raw).view(dt).astype(np.int64).astype(np.uint32)
        vals = vals.reshape(-1, 1)
    for k in range(nd):
        w.check_pending(("v", dst.index + k, 1))
        w.v[dst.index + k, m] = vals[:, k]
    w.issue_load("lgkm", {("v", dst.index + k) for k in range(nd)})


def _ds_store(w: Wave, inst: Inst, wg: Workgroup) -> None:
    size = _DS_STORES[inst.name]
    addr, data = inst.ops
    m = w.exec
    nd = max(1, size // 4)
    assert isinstance(data, VGPR) and isinstance(addr, VGPR)
    a = _lds_addr(w, wg, inst, addr, int(inst.mod("offset", 0)), size, m)  # type: ignore
    for k in range(nd):
        w.check_pending(("v", data.index + k, 1))
    vals = np.ascontiguousarray(w.v[data.index:data.index + nd, m].T)
    raw = vals.view(np.uint8).reshape(len(a), 4 * nd)[:, :size]
    # Lanes store in order, so the highest active lane wins a conflict.
    for lane in range(len(a)):
        wg.lds[a[lane]:a[lane] + size] = raw[lane]
    w.issue_other("lgkm")


def _ds_2addr(load: bool, size: int, stride: int) -> Semantic:
    """DS_{LOAD,STORE}_2ADDR*: two accesses at VGPR + offset0*stride, + offset1*stride."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        m = w.exec
        offs = [int(inst.mod("offset0", 0)) * stride,  # type: ignore[arg-type]
                int(inst.mod("offset1", 0)) * stride]  # type: ignore[arg-type]
        nd = size // 4
        if load:
            dst, addr = inst.ops
            assert isinstance(dst, VGPR) and isinstance(addr, VGPR)
            for half, off in enumerate(offs):
                a = _lds_addr(w, wg, inst, addr, off, size, m)
                vals = np.ascontiguousarray(wg.lds[a[:, None] + np.arange(size)])
                vals = vals.view(np.uint32).reshape(len(a), nd)
                for k in range(nd):
                    w.check_pending(("v", dst.index + half * nd + k, 1))
                    w.v[dst.index + half * nd + k, m] = vals[:, k]
            w.issue_load("lgkm", {("v", dst.index + k) for k in range(2 * nd)})
        else:
            addr, d0, d1 = inst.ops
            assert isinstance(d0, VGPR) and isinstance(d1, VGPR) and isinstance(addr, VGPR)
            for data, off in ((d0, offs[0]), (d1, offs[1])):
                a = _lds_addr(w, wg, inst, addr, off, size, m)
                vals = np.ascontiguousarray(w.v[data.index:data.index + nd, m].T)
                raw = vals.view(np.uint8).reshape(len(a), size)
                for lane in range(len(a)):
                    wg.lds[a[lane]:a[lane] + size] = raw[lane]
            w.issue_other("lgkm")
    return run


for _n in _DS_LOADS:
    OPS[_n] = _ds_load
for _n in _DS_STORES:
    OPS[_n] = _ds_store
for _gfx11, _gfx9 in (("load", "read"), ("store", "write")):
    for _nm in (_gfx11, _gfx9):
        OPS[f"ds_{_nm}_2addr_b32"] = OPS[f"ds_{_nm}2_b32"] = _ds_2addr(_nm in ("load", "read"),
                                                                       4, 4)
        OPS[f"ds_{_nm}_2addr_b64"] = OPS[f"ds_{_nm}2_b64"] = _ds_2addr(_nm in ("load", "read"),
                                                                       8, 8)
        OPS[f"ds_{_nm}_2addr_stride64_b32"] = OPS[f"ds_{_nm}2st64_b32"] = _ds_2addr(
            _nm in ("load", "read"), 4, 256)

SCALAR_OPS = OPS
