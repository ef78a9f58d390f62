"""bench/cuda_vs_tinygrad.py without a GPU: the SASS listing counter (classes, NOP padding and
the closing self-branch left out, out-of-line subroutines counted apart), the ptxas -v facts,
and a report that says when no SASS tool is installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import cuda_vs_tinygrad as cvt  # noqa: E402

from kcc.targets.cuda.target import find_ptxas  # noqa: E402

# the shape of a cuobjdump -sass listing (hand-written: two kernels, one with a CALL)
LISTING = """
\tcode for sm_80
\t\tFunction : k1
\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED"
        /*0000*/                   MOV R1, c[0x0][0x28] ;          /* 0x00000a0000017a02 */
        /*0010*/                   S2R R0, SR_TID.X ;              /* 0x0000000000007919 */
        /*0020*/                   LDG.E R2, [R2.64] ;             /* 0x0000000402027981 */
        /*0030*/              @!P0 FMUL R0, R0, 0.5 ;              /* 0x3f00000000008820 */
        /*0040*/                   MUFU.EX2 R5, R0 ;               /* 0x0000000000057308 */
        /*0050*/                   CALL.REL.NOINC 0x90 ;           /* 0x0000003000007944 */
        /*0060*/                   STG.E [R2.64], R5 ;             /* 0x0000000502007986 */
        /*0070*/                   EXIT ;                          /* 0x000000000000794d */
        /*0080*/                   BRA 0x80;                       /* 0xfffffff000007947 */
        /*0090*/                   IADD3 R4, R4, 0x1, RZ ;         /* 0x0000000104047810 */
        /*00a0*/                   RET.REL.NODEC R4 0x0 ;          /* 0xffffff6004007950 */
        /*00b0*/                   BRA 0xb0;                       /* 0xfffffff000007947 */
        /*00c0*/                   NOP;                            /* 0x0000000000007918 */
\t\t..........
\t\tFunction : k2
        /*0000*/                   DFMA R2, R2, R4, R6 ;           /* 0x000000040202722b */
        /*0010*/              @P1 BRA 0x30 ;                       /* 0x0000001000001947 */
        /*0020*/                   ULDC.64 UR4, c[0x0][0x118] ;    /* 0x0000460000047ab9 */
        /*0030*/                   EXIT ;                          /* 0x000000000000794d */
"""


def test_count_sass_classes_padding_and_subroutines() -> None:
    c = cvt.count_sass(LISTING)
    k1, k2 = c["k1"], c["k2"]
    # MOV S2R LDG FMUL MUFU CALL STG EXIT | IADD3 RET; the two self-branches and NOP left out
    assert k1["total"] == 10 and k1["sub"] == 2
    assert (k1["INT"], k1["UNIF"], k1["MEM"], k1["FP32"], k1["MUFU"], k1["CTRL"]) == \
        (2, 1, 2, 1, 1, 3)
    assert k2["total"] == 4 and k2["sub"] == 0           # a forward BRA is an instruction
    assert (k2["FP64"], k2["CTRL"], k2["UNIF"]) == (1, 2, 1)


def test_sass_class() -> None:
    assert cvt.sass_class("FFMA.RZ") == "FP32" and cvt.sass_class("FSETP.GEU.AND") == "FP32"
    assert cvt.sass_class("IMAD.WIDE") == "INT" and cvt.sass_class("LOP3.LUT") == "INT"
    assert cvt.sass_class("LDG.E.128") == "MEM" and cvt.sass_class("STS") == "MEM"
    assert cvt.sass_class("BSSY") == "CTRL" and cvt.sass_class("DSETP.GT.AND") == "FP64"
    assert cvt.sass_class("MUFU.RCP") == "MUFU" and cvt.sass_class("UMOV") == "UNIF"


PTX = """.version 7.0
.target sm_80
.address_size 64
.visible .entry e(.param .u64 p)
{
.reg .f32 %f<3>; .reg .b64 %rd<2>;
ld.param.u64 %rd0, [p]; cvta.to.global.u64 %rd1, %rd0;
ld.global.f32 %f1, [%rd1];
ex2.approx.f32 %f2, %f1;
st.global.f32 [%rd1], %f2;
ret;
}
"""


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")
def test_ptxas_facts_and_counts(tmp_path: Path) -> None:
    cubin, facts = cvt.ptxas(PTX, "sm_80", tmp_path, "e")
    assert cubin.is_file() and facts["regs"] > 0 and facts["spill"] == 0 and facts["smem"] == 0
    tool = cvt.find_sass_tool()
    if tool is None:
        pytest.skip("no cuobjdump/nvdisasm")
    n = cvt.sass_counts(cubin, tool)
    assert n is not None and n["MUFU"] == 1 and n["MEM"] == 2 and n["sub"] == 0
    assert 6 <= n["total"] <= 20


def test_report_says_when_the_sass_tool_is_absent() -> None:
    row = {"comp": "exp2", "kernel": "E#0", "ks": None, "ts": None,
           "kf": {"regs": 16, "spill": 0, "smem": 0}, "tf": {"regs": 18, "spill": 0, "smem": 0}}
    text = cvt.report([row], "sm_80", None)
    assert "no cuobjdump/nvdisasm" in text and "both absent" in text
    assert "exp2:E#0" in text and " 16 " in text


# a loop nest: the outer loop 0x10..0x60, the inner (k) loop 0x20..0x50
LOOPS = """
\t\tFunction : mm
        /*0000*/                   S2R R0, SR_TID.X ;              /* 0x0000000000007919 */
        /*0010*/                   IMAD.MOV.U32 R1, RZ, RZ, RZ ;   /* 0x0000000000007919 */
        /*0020*/                   LDG.E R2, desc[UR4][R4.64] ;    /* 0x0000000000007919 */
        /*0030*/                   NOP ;                           /* 0x0000000000007918 */
        /*0040*/                   HMMA.16816.F32 R8, R2, R6, R8 ; /* 0x0000000000007919 */
        /*0050*/               @P0 BRA 0x20 ;                      /* 0x0000000000007947 */
        /*0060*/               @P1 BRA 0x10 ;                      /* 0x0000000000007947 */
        /*0070*/                   EXIT ;                          /* 0x000000000000794d */
        /*0080*/                   BRA 0x80;                       /* 0xfffffff000007947 */
"""


def test_loop_body_is_the_innermost_loop() -> None:
    assert cvt.loop_body(LOOPS) == ["LDG.E", "HMMA.16816.F32", "BRA"]
    assert cvt.loop_body(LISTING) == []                   # the self-branches are no loop
    assert cvt._loop_summary(["IADD3", "LDG.E", "LDG.E", "HMMA.16816.F32", "IADD3", "MOV"]) \
        == "6 insts: LDG.E:2 HMMA.16816.F32:1 IADD3:2 MOV:1"


@pytest.mark.skipif(find_ptxas() is None or cvt.find_sass_tool() is None,
                    reason="ptxas and cuobjdump/nvdisasm are needed")
def test_wmma_report_kcc_loads_no_more_than_tinygrad(tmp_path: Path) -> None:
    """`--wmma` at 64^3: kcc's k loop reads A's fragments as half2 (LDG.E, 32 bits) like
    tinygrad's PTX, not as pairs of 16-bit loads; no more loads an iteration than tinygrad."""
    pytest.importorskip("tinygrad")
    text = cvt.wmma("sm_90", 64, tmp_path, cvt.find_sass_tool())
    loops = [ln for ln in text.splitlines() if " loop " in ln]
    assert len(loops) == 4, text                          # kcc, tinygrad per accumulator

    def loads(line: str) -> dict[str, int]:
        return {k: int(v) for k, v in (t.split(":") for t in line.split()[3:])
                if k.startswith("LDG")}
    for kcc_line, tg_line in (loops[0:2], loops[2:4]):
        k, t = loads(kcc_line), loads(tg_line)
        assert k.get("LDG.E", 0) == t.get("LDG.E", 0) == 16, text
        assert sum(k.values()) <= sum(t.values()), text
