"""Named regressions of the AMD back end (issue 20, section 1), each on gfx1100 and gfx942.

Each kernel compiles (the allocation re-verified by the checker), llvm-mc-19 assembles its
listing where present, and it runs in kcc's emulator against the reference interpreter
(fuzz.harness.check_amd). The emulator reads a GLOBAL access's VGPR offset as the unsigned
32-bit number the hardware does and reports an access outside every buffer (or outside the
LDS allocation), so a wrong address fails here instead of reading 4 GiB past a buffer.
"""

from __future__ import annotations

import pytest

from fuzz.harness import check_amd
from kcc.encode.amd.operands import Imm
from kcc.frontend.parser import parse
from kcc.isel.amd.base import D
from kcc.isel.amd.regs import ARCHES

ARCHS = ("gfx1100", "gfx942")
HEAD = "# kcc-uop 1\n"


def _check(text: str, arch: str, seeds: range = range(2)) -> None:
    sink = parse(HEAD + text)
    for seed in seeds:
        assert check_amd([sink], arch, seed) == 1


def _asm(text: str, arch: str) -> list[str]:
    from kcc.targets.amd.target import compile_amd_code
    (code,) = compile_amd_code([parse(HEAD + text)], arch)
    return code.asm


# The reflect/reverse pattern of tinygrad's topk/sort and reflect-pad graphs: index
# (s - lidx) + 3, with (s - lidx) negative in some lanes while the sum is in bounds.
REVERSE_GLOBAL = """%out = PARAM ParamArg(0, float32, 16)
%x   = PARAM ParamArg(1, float32, 16)
%l   = SPECIAL(16) "lidx0"                  : weakint
%m   = SUB(12, %l)                          : weakint
%j   = ADD(%m, 3)                           : weakint
%xi  = INDEX(%x, %j)
%xv  = LOAD(%xi)                            : float32
%oi  = INDEX(%out, %l)
%st  = STORE(%oi, %xv)
SINK(%st) KernelInfo(name="reverse")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_global_offset_not_folded_over_a_negative_index(arch: str) -> None:
    """x[(12 - lidx) + 3] was selected as VGPR (12 - lidx)·4 with offset:12: for lidx > 12
    the VGPR offset is negative, which GLOBAL addressing reads as unsigned 32 bits, 4 GiB
    past the buffer (the emulator: "outside every buffer")."""
    _check(REVERSE_GLOBAL, arch)
    assert not any("offset:12" in line for line in _asm(REVERSE_GLOBAL, arch))


@pytest.mark.parametrize("arch", ARCHS)
def test_global_offset_still_folded_over_a_non_negative_index(arch: str) -> None:
    """x[lidx + 3]: lidx ≥ 0 by its value range, so the 3 stays in the immediate."""
    text = REVERSE_GLOBAL.replace("SUB(12, %l)", "ADD(%l, 0)").replace(
        "float32, 16)\n%l", "float32, 19)\n%l")
    _check(text, arch)
    assert any("offset:12" in line for line in _asm(text, arch))


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_lds_offset_not_folded_over_a_negative_index(arch: str) -> None:
    """The same split for LDS: lds[(12 - lidx) + 3] read at VGPR (12 - lidx)·4 + offset:12,
    an LDS address past the allocation for lidx > 12."""
    _check("""%out  = PARAM ParamArg(0, float32, 16)
%x    = PARAM ParamArg(1, float32, 16)
%lds  = BUFFER ParamArg(0, float32, 16, addrspace=LOCAL)
%l    = SPECIAL(16) "lidx0"                 : weakint
%xi   = INDEX(%x, %l)
%xv   = LOAD(%xi)                           : float32
%pl   = INDEX(%lds, %l)
%st0  = STORE(%pl, %xv)
%bar  = BARRIER
%ldsA = AFTER(%lds, %st0, %bar)
%m    = SUB(12, %l)                         : weakint
%j    = ADD(%m, 3)                          : weakint
%pr   = INDEX(%ldsA, %j)
%v    = LOAD(%pr)                           : float32
%oi   = INDEX(%out, %l)
%st   = STORE(%oi, %v)
SINK(%st) KernelInfo(name="lds_reverse")
""", arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_folded_offset_fits_every_lane_of_a_vector_access(arch: str) -> None:
    """x[2·lidx + 1023 .. +1]: offset 4092 fits the 13-bit signed field, but the second
    element's 4096 does not (AmdEncodeError: offset 4096 is outside [-4096, 4095])."""
    _check("""%out = PARAM ParamArg(0, float32, 32)
%x   = PARAM ParamArg(1, float32, 1100)
%l   = SPECIAL(16) "lidx0"                  : weakint
%m   = MUL(%l, 2)                           : weakint
%j   = ADD(%m, 1023)                        : weakint
%src = SHRINK(%x, %j, 2)
%v   = LOAD(%src)
%dst = SHRINK(%out, %m, 2)
%st  = STORE(%dst, %v)
SINK(%st) KernelInfo(name="far_pair")
""", arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_uniform_where_of_two_literals(arch: str) -> None:
    """A uniform WHERE of two constants that are no inline constants became
    s_cselect_b32 d, 0x43f, 0x3ff: "AmdEncodeError: s_cselect_b32: more than one literal
    value" (an SOP2 word holds one literal dword). Found by the fuzzer in a float64 SQRT
    decomposition; 0x3f800000 (1.0) is an inline constant and stays in place."""
    text = """%out = PARAM ParamArg(0, int32, 2)
%n   = PARAM ParamArg(1, int32, addrspace=ALU)
%c   = CMPLT(%n, 5)                         : bool
%a   = CAST(1087) int32
%b   = CAST(1023) int32
%w   = WHERE(%c, %a, %b)                    : int32
%one = CAST(1065353216) int32
%k   = CAST(2000) int32
%w2  = WHERE(%c, %one, %k)                  : int32
%o0  = INDEX(%out, 0)
%s0  = STORE(%o0, %w)
%o1  = INDEX(%out, 1)
%s1  = STORE(%o1, %w2)
%g   = GROUP(%s0, %s1)
SINK(%g) KernelInfo(name="two_literals")
"""
    sink = parse(HEAD + text)
    for seed in range(4):                       # n < 5 and n ≥ 5 both drawn
        assert check_amd([sink], arch, seed) == 1
    sel = [line for line in _asm(text, arch) if "s_cselect_b32" in line]
    assert any("0x3f800000" in line or "1.0" in line for line in sel), sel


@pytest.mark.parametrize("arch", ARCHS)
def test_valu_literals_are_legalized_per_encoding(arch: str) -> None:
    """The selector's emit keeps at most one literal per SALU instruction and per RDNA3
    VALU instruction, and none in a CDNA3 VALU instruction but v_mov_b32 (CDNA3's VOP3
    takes no literal)."""
    from kcc.isel.amd.select import AmdSelector
    from kcc.isel.amd.base import literal32
    sel = AmdSelector("k", ARCHES[arch], [])
    a, d = sel.new("v"), sel.new("v")
    sel.emit("v_fma_f32", D(d), Imm(0x12345), Imm(0x12345), a)
    sel.emit("v_fma_f32", D(d), Imm(0x12345), Imm(0x6789A), a)
    sel.emit("s_add_i32", D(sel.new("s")), Imm(1000), Imm(2000))
    sel.emit("v_mov_b32", D(d), Imm(0x12345))
    for inst in sel.fn.insts:
        tmpl, _ = inst.arg
        lits = {literal32(o) for o in tmpl if literal32(o) is not None}
        cdna_vop = arch == "gfx942" and inst.op.startswith("v_") and inst.op != "v_mov_b32"
        assert len(lits) <= (0 if cdna_vop else 1), (inst.op, tmpl)
    ops = [inst.op for inst in sel.fn.insts]
    assert ops.count("v_fma_f32") == 2 and ops.count("s_add_i32") == 1


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_offset_not_folded_over_an_unsigned_index_that_wraps(arch: str) -> None:
    """x[u + 3] for a uint32 u loaded from memory: u = 0xFFFFFFFF wraps u + 3 to 2, in
    bounds, while VGPR u·4 (0xFFFFFFFC) + offset:12 is 4 GiB past the buffer. u's range
    is [0, 2^32 - 1]: non-negative, but u·4 does not fit 32 bits, so no fold."""
    sink = parse(HEAD + """%out = PARAM ParamArg(0, float32, 4)
%x   = PARAM ParamArg(1, float32, 8)
%u   = PARAM ParamArg(2, uint32, 4)
%l   = SPECIAL(4) "lidx0"                   : weakint
%ui  = INDEX(%u, %l)
%uv  = LOAD(%ui)                            : uint32
%three = CAST(3) uint32
%j   = ADD(%uv, %three)                     : uint32
%xi  = INDEX(%x, %j)
%xv  = LOAD(%xi)                            : float32
%oi  = INDEX(%out, %l)
%st  = STORE(%oi, %xv)
SINK(%st) KernelInfo(name="wrapped")
""")
    import numpy as np

    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    from x86_util import reference
    args = [np.zeros(4, np.float32), np.arange(8, dtype=np.float32),
            np.array([0xFFFFFFFF, 0, 0xFFFFFFFD, 4], np.uint32)]
    want = reference(sink, args)
    (code,) = compile_amd_code([sink], arch)
    got = [a.copy() for a in args]
    emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
    assert got[0].tolist() == want[0].tolist() == [2.0, 3.0, 0.0, 7.0]


# a float4 through LDS (found by scripts/fuzz_amd.py --seed 8, kernels 371 and 372)
LDS_FLOAT4 = """%0 = PARAM ParamArg(0, float32, 20)
%1 = PARAM ParamArg(1, float32, 20)
%2 = BUFFER ParamArg(0, float32, 20, addrspace=LOCAL)
%l = SPECIAL(5) "lidx0" : weakint
%6 = MUL(%l, 4) : weakint
%7 = SHRINK(%1, %6, 4)
%8 = SHRINK(%2, %6, 4)
%9 = SHRINK(%0, %6, 4)
%10 = LOAD(%9) : float32[4]
%11 = STORE(%8, %10)
%12 = BARRIER(%11)
%13 = AFTER(%2, %12)
%15 = ADD(%l, 6) : weakint
%16 = MUL(%15, 4) : weakint
%18 = ADD(%16, -24) : weakint
%19 = SHRINK(%13, %18, 4)
%20 = LOAD(%19) : float32[4]
%21 = STORE(%7, %20)
SINK(%21) KernelInfo(name="lds4")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_lds_b128_has_its_cdna3_spelling(arch: str) -> None:
    """A 16-byte LDS store and load were spelled ds_store_b128/ds_load_b128 on gfx942 too
    (the RDNA3 names; 'unknown instruction' in the assembler): CDNA3 says ds_write_b128 and
    ds_read_b128."""
    _check(LDS_FLOAT4, arch)
    text = "\n".join(_asm(LDS_FLOAT4, arch))
    want = ("ds_write_b128", "ds_read_b128") if arch == "gfx942" else \
        ("ds_store_b128", "ds_load_b128")
    assert all(w in text for w in want), text
