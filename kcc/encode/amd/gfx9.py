"""CDNA3 (gfx942, wave64) instruction forms: one row per form, see :mod:`kcc.encode.amd.table`.

Opcodes are those of the "AMD Instinct MI300 CDNA3 Instruction Set Architecture" reference
guide, §12 "Microcode Formats" (SOP2 §12.1.1, SOPK §12.1.2, SOP1 §12.1.3, SOPC §12.1.4,
SOPP §12.1.5, SMEM §12.2, VOP2 §12.3.1, VOP1 §12.3.2, VOPC §12.3.3, VOP3A §12.3.4, VOP3B
§12.3.5, DS §12.6, FLAT/GLOBAL/SCRATCH §12.9, VOP3P-MAI §12.3: the MFMA matrix ops, VOP3P
§12.3.6: the packed-f32 ops v_pk_*_f32 / v_pk_mov_b32, opcodes below 0x40), spelled
as LLVM's assembler spells them (``s_load_dwordx2``, ``global_load_dword``, ``v_add_u32``).
Lane masks are SGPR pairs (``vcc``, ``s[4:5]``). VOP3B forms are written VOP3SD here, as in RDNA3.
"""
from __future__ import annotations

from kcc.encode.amd.table import Row, parse_rows

# FORMAT  OPCODE MNEMONIC                 DSTS:SRCS              FLAGS
TABLE = """
SOP2    0x000 s_add_u32                s32:b32,b32
SOP2    0x001 s_sub_u32                s32:b32,b32
SOP2    0x002 s_add_i32                s32:b32,b32
SOP2    0x003 s_sub_i32                s32:b32,b32
SOP2    0x004 s_addc_u32               s32:b32,b32
SOP2    0x005 s_subb_u32               s32:b32,b32
SOP2    0x006 s_min_i32                s32:b32,b32
SOP2    0x007 s_min_u32                s32:b32,b32
SOP2    0x008 s_max_i32                s32:b32,b32
SOP2    0x009 s_max_u32                s32:b32,b32
SOP2    0x00a s_cselect_b32            s32:b32,b32
SOP2    0x00c s_and_b32                s32:b32,b32
SOP2    0x00e s_or_b32                 s32:b32,b32
SOP2    0x010 s_xor_b32                s32:b32,b32
SOP2    0x012 s_andn2_b32              s32:b32,b32
SOP2    0x014 s_orn2_b32               s32:b32,b32
SOP2    0x016 s_nand_b32               s32:b32,b32
SOP2    0x018 s_nor_b32                s32:b32,b32
SOP2    0x01a s_xnor_b32               s32:b32,b32
SOP2    0x01c s_lshl_b32               s32:b32,b32
SOP2    0x01e s_lshr_b32               s32:b32,b32
SOP2    0x020 s_ashr_i32               s32:b32,b32
SOP2    0x022 s_bfm_b32                s32:b32,b32
SOP2    0x024 s_mul_i32                s32:b32,b32
SOP2    0x025 s_bfe_u32                s32:b32,b32
SOP2    0x026 s_bfe_i32                s32:b32,b32
SOP2    0x02c s_mul_hi_u32             s32:b32,b32
SOP2    0x02d s_mul_hi_i32             s32:b32,b32
SOP2    0x02e s_lshl1_add_u32          s32:b32,b32
SOP2    0x02f s_lshl2_add_u32          s32:b32,b32
SOP2    0x030 s_lshl3_add_u32          s32:b32,b32
SOP2    0x031 s_lshl4_add_u32          s32:b32,b32
SOP2    0x032 s_pack_ll_b32_b16        s32:b32,b32
SOP2    0x02a s_absdiff_i32            s32:b32,b32
SOP2    0x00b s_cselect_b64            s64:b64,b64
SOP2    0x00d s_and_b64                s64:b64,b64
SOP2    0x00f s_or_b64                 s64:b64,b64
SOP2    0x011 s_xor_b64                s64:b64,b64
SOP2    0x013 s_andn2_b64              s64:b64,b64
SOP2    0x015 s_orn2_b64               s64:b64,b64
SOP2    0x017 s_nand_b64               s64:b64,b64
SOP2    0x019 s_nor_b64                s64:b64,b64
SOP2    0x01b s_xnor_b64               s64:b64,b64
SOP2    0x01d s_lshl_b64               s64:b64,b32
SOP2    0x01f s_lshr_b64               s64:b64,b32
SOP2    0x021 s_ashr_i64               s64:b64,b32
SOP2    0x027 s_bfe_u64                s64:b64,b32
SOP2    0x028 s_bfe_i64                s64:b64,b32
SOP2    0x023 s_bfm_b64                s64:b32,b32
SOP1    0x000 s_mov_b32                s32:b32
SOP1    0x002 s_cmov_b32               s32:b32
SOP1    0x004 s_not_b32                s32:b32
SOP1    0x008 s_brev_b32               s32:b32
SOP1    0x010 s_ff1_i32_b32            s32:b32
SOP1    0x012 s_flbit_i32_b32          s32:b32
SOP1    0x014 s_flbit_i32              s32:b32
SOP1    0x00c s_bcnt1_i32_b32          s32:b32
SOP1    0x00a s_bcnt0_i32_b32          s32:b32
SOP1    0x016 s_sext_i32_i8            s32:b32
SOP1    0x017 s_sext_i32_i16           s32:b32
SOP1    0x030 s_abs_i32                s32:b32
SOP1    0x006 s_wqm_b32                s32:b32
SOP1    0x028 s_quadmask_b32           s32:b32
SOP1    0x001 s_mov_b64                s64:b64
SOP1    0x003 s_cmov_b64               s64:b64
SOP1    0x005 s_not_b64                s64:b64
SOP1    0x007 s_wqm_b64                s64:b64
SOP1    0x009 s_brev_b64               s64:b64
SOP1    0x00d s_bcnt1_i32_b64          s32:b64
SOP1    0x011 s_ff1_i32_b64            s32:b64
SOP1    0x01c s_getpc_b64              s64:
SOP1    0x01d s_setpc_b64              :b64
SOP1    0x01e s_swappc_b64             s64:b64
SOP1    0x020 s_and_saveexec_b64       s64:b64
SOP1    0x021 s_or_saveexec_b64        s64:b64
SOP1    0x022 s_xor_saveexec_b64       s64:b64
SOP1    0x023 s_andn2_saveexec_b64     s64:b64
SOP1    0x024 s_orn2_saveexec_b64      s64:b64
SOPC    0x000 s_cmp_eq_i32             :b32,b32
SOPC    0x001 s_cmp_lg_i32             :b32,b32
SOPC    0x002 s_cmp_gt_i32             :b32,b32
SOPC    0x003 s_cmp_ge_i32             :b32,b32
SOPC    0x004 s_cmp_lt_i32             :b32,b32
SOPC    0x005 s_cmp_le_i32             :b32,b32
SOPC    0x006 s_cmp_eq_u32             :b32,b32
SOPC    0x007 s_cmp_lg_u32             :b32,b32
SOPC    0x008 s_cmp_gt_u32             :b32,b32
SOPC    0x009 s_cmp_ge_u32             :b32,b32
SOPC    0x00a s_cmp_lt_u32             :b32,b32
SOPC    0x00b s_cmp_le_u32             :b32,b32
SOPC    0x012 s_cmp_eq_u64             :b64,b64
SOPC    0x013 s_cmp_lg_u64             :b64,b64
SOPC    0x00c s_bitcmp0_b32            :b32,b32
SOPC    0x00d s_bitcmp1_b32            :b32,b32
SOPK    0x000 s_movk_i32               s32:hex16
SOPK    0x001 s_cmovk_i32              s32:hex16
SOPK    0x00e s_addk_i32               s32:hex16
SOPK    0x00f s_mulk_i32               s32:hex16
SOPK    0x002 s_cmpk_eq_i32            :b32,hex16
SOPK    0x003 s_cmpk_lg_i32            :b32,hex16
SOPK    0x004 s_cmpk_gt_i32            :b32,hex16
SOPK    0x005 s_cmpk_ge_i32            :b32,hex16
SOPK    0x006 s_cmpk_lt_i32            :b32,hex16
SOPK    0x007 s_cmpk_le_i32            :b32,hex16
SOPK    0x008 s_cmpk_eq_u32            :b32,hex16
SOPK    0x009 s_cmpk_lg_u32            :b32,hex16
SOPK    0x00a s_cmpk_gt_u32            :b32,hex16
SOPK    0x00b s_cmpk_ge_u32            :b32,hex16
SOPK    0x00c s_cmpk_lt_u32            :b32,hex16
SOPK    0x00d s_cmpk_le_u32            :b32,hex16
SOPP    0x000 s_nop                    :dec16
SOPP    0x001 s_endpgm                 :
SOPP    0x002 s_branch                 :label
SOPP    0x004 s_cbranch_scc0           :label
SOPP    0x005 s_cbranch_scc1           :label
SOPP    0x006 s_cbranch_vccz           :label
SOPP    0x007 s_cbranch_vccnz          :label
SOPP    0x008 s_cbranch_execz          :label
SOPP    0x009 s_cbranch_execnz         :label
SOPP    0x00a s_barrier                :
SOPP    0x00c s_waitcnt                :waitcnt
SOPP    0x010 s_sendmsg                :sendmsg
SOPP    0x00e s_sleep                  :dec16
SOPP    0x00f s_setprio                :dec16
SOPP    0x012 s_trap                   :dec16
SOPP    0x013 s_icache_inv             :
SMEM    0x000 s_load_dword             s32:s64,soff
SMEM    0x001 s_load_dwordx2           s64:s64,soff
SMEM    0x002 s_load_dwordx4           s128:s64,soff
SMEM    0x003 s_load_dwordx8           s256:s64,soff
SMEM    0x004 s_load_dwordx16          s512:s64,soff
VOP1    0x001 v_mov_b32                b32:b32                e64
VOP1    0x038 v_mov_b64                b64:b64                e64
VOP1    0x003 v_cvt_i32_f64            i32:f64                e64
VOP1    0x004 v_cvt_f64_i32            f64:i32                e64
VOP1    0x005 v_cvt_f32_i32            f32:i32                e64
VOP1    0x006 v_cvt_f32_u32            f32:u32                e64
VOP1    0x007 v_cvt_u32_f32            u32:f32                e64
VOP1    0x008 v_cvt_i32_f32            i32:f32                e64
VOP1    0x00a v_cvt_f16_f32            f16:f32                e64
VOP1    0x00b v_cvt_f32_f16            f32:f16                e64
VOP1    0x00f v_cvt_f32_f64            f32:f64                e64
VOP1    0x010 v_cvt_f64_f32            f64:f32                e64
VOP1    0x015 v_cvt_u32_f64            u32:f64                e64
VOP1    0x016 v_cvt_f64_u32            f64:u32                e64
VOP1    0x011 v_cvt_f32_ubyte0         f32:b32                e64
VOP1    0x012 v_cvt_f32_ubyte1         f32:b32                e64
VOP1    0x013 v_cvt_f32_ubyte2         f32:b32                e64
VOP1    0x014 v_cvt_f32_ubyte3         f32:b32                e64
VOP1    0x039 v_cvt_f16_u16            f16:u16                e64
VOP1    0x03a v_cvt_f16_i16            f16:i16                e64
VOP1    0x03b v_cvt_u16_f16            u16:f16                e64
VOP1    0x03c v_cvt_i16_f16            i16:f16                e64
VOP1    0x02b v_not_b32                b32:b32                e64
VOP1    0x02c v_bfrev_b32              b32:b32                e64
VOP1    0x02d v_ffbh_u32               b32:b32                e64
VOP1    0x02e v_ffbl_b32               b32:b32                e64
VOP1    0x02f v_ffbh_i32               b32:b32                e64
VOP1    0x030 v_frexp_exp_i32_f64      i32:f64                e64
VOP1    0x031 v_frexp_mant_f64         f64:f64                e64
VOP1    0x033 v_frexp_exp_i32_f32      i32:f32                e64
VOP1    0x034 v_frexp_mant_f32         f32:f32                e64
VOP1    0x043 v_frexp_exp_i16_f16      i16:f16                e64
VOP1    0x042 v_frexp_mant_f16         f16:f16                e64
VOP1    0x01c v_trunc_f32              f32:f32                e64
VOP1    0x01d v_ceil_f32               f32:f32                e64
VOP1    0x01e v_rndne_f32              f32:f32                e64
VOP1    0x01f v_floor_f32              f32:f32                e64
VOP1    0x01b v_fract_f32              f32:f32                e64
VOP1    0x022 v_rcp_f32                f32:f32                e64
VOP1    0x024 v_rsq_f32                f32:f32                e64
VOP1    0x027 v_sqrt_f32               f32:f32                e64
VOP1    0x017 v_trunc_f64              f64:f64                e64
VOP1    0x018 v_ceil_f64               f64:f64                e64
VOP1    0x019 v_rndne_f64              f64:f64                e64
VOP1    0x01a v_floor_f64              f64:f64                e64
VOP1    0x032 v_fract_f64              f64:f64                e64
VOP1    0x025 v_rcp_f64                f64:f64                e64
VOP1    0x026 v_rsq_f64                f64:f64                e64
VOP1    0x028 v_sqrt_f64               f64:f64                e64
VOP1    0x046 v_trunc_f16              f16:f16                e64
VOP1    0x045 v_ceil_f16               f16:f16                e64
VOP1    0x047 v_rndne_f16              f16:f16                e64
VOP1    0x044 v_floor_f16              f16:f16                e64
VOP1    0x048 v_fract_f16              f16:f16                e64
VOP1    0x03d v_rcp_f16                f16:f16                e64
VOP1    0x03f v_rsq_f16                f16:f16                e64
VOP1    0x03e v_sqrt_f16               f16:f16                e64
VOP1    0x020 v_exp_f32                f32:f32                e64
VOP1    0x021 v_log_f32                f32:f32                e64
VOP1    0x029 v_sin_f32                f32:f32                e64
VOP1    0x02a v_cos_f32                f32:f32                e64
VOP1    0x041 v_exp_f16                f16:f16                e64
VOP1    0x040 v_log_f16                f16:f16                e64
VOP1    0x049 v_sin_f16                f16:f16                e64
VOP1    0x04a v_cos_f16                f16:f16                e64
VOP1    0x023 v_rcp_iflag_f32          f32:f32                e64
VOP1    0x002 v_readfirstlane_b32      s32:b32
VOP1    0x000 v_nop                    :
VOP2    0x001 v_add_f32                f32:f32,f32            e64
VOP2    0x002 v_sub_f32                f32:f32,f32            e64
VOP2    0x003 v_subrev_f32             f32:f32,f32            e64
VOP2    0x005 v_mul_f32                f32:f32,f32            e64
VOP2    0x00a v_min_f32                f32:f32,f32            e64
VOP2    0x00b v_max_f32                f32:f32,f32            e64
VOP2    0x006 v_mul_i32_i24            i32:i32,i32            e64
VOP2    0x007 v_mul_hi_i32_i24         i32:i32,i32            e64
VOP2    0x008 v_mul_u32_u24            u32:u32,u32            e64
VOP2    0x009 v_mul_hi_u32_u24         u32:u32,u32            e64
VOP2    0x00c v_min_i32                i32:i32,i32            e64
VOP2    0x00d v_max_i32                i32:i32,i32            e64
VOP2    0x00e v_min_u32                u32:u32,u32            e64
VOP2    0x00f v_max_u32                u32:u32,u32            e64
VOP2    0x010 v_lshrrev_b32            b32:b32,b32            e64
VOP2    0x011 v_ashrrev_i32            i32:b32,i32            e64
VOP2    0x012 v_lshlrev_b32            b32:b32,b32            e64
VOP2    0x013 v_and_b32                b32:b32,b32            e64
VOP2    0x014 v_or_b32                 b32:b32,b32            e64
VOP2    0x015 v_xor_b32                b32:b32,b32            e64
VOP2    0x03b v_fmac_f32               f32:f32,f32            e64
VOP2    0x017 v_fmamk_f32              f32:f32,k32,f32
VOP2    0x018 v_fmaak_f32              f32:f32,f32,k32
VOP2    0x034 v_add_u32                u32:u32,u32            e64
VOP2    0x035 v_sub_u32                u32:u32,u32            e64
VOP2    0x036 v_subrev_u32             u32:u32,u32            e64
VOP2    0x01f v_add_f16                f16:f16,f16            e64
VOP2    0x020 v_sub_f16                f16:f16,f16            e64
VOP2    0x021 v_subrev_f16             f16:f16,f16            e64
VOP2    0x022 v_mul_f16                f16:f16,f16            e64
VOP2    0x02d v_max_f16                f16:f16,f16            e64
VOP2    0x02e v_min_f16                f16:f16,f16            e64
VOP2    0x033 v_ldexp_f16              f16:f16,i16            e64
VOP2    0x000 v_cndmask_b32            b32:b32,b32,lane       e64
VOP2    0x01c v_addc_co_u32            u32,lane:u32,u32,lane  e64
VOP2    0x01d v_subb_co_u32            u32,lane:u32,u32,lane  e64
VOP2    0x01e v_subbrev_co_u32         u32,lane:u32,u32,lane  e64
VOP2    0x019 v_add_co_u32             u32,lane:u32,u32       e64
VOP2    0x01a v_sub_co_u32             u32,lane:u32,u32       e64
VOP2    0x01b v_subrev_co_u32          u32,lane:u32,u32       e64
VOP2    0x026 v_add_u16                u16:u16,u16            e64
VOP2    0x027 v_sub_u16                u16:u16,u16            e64
VOP2    0x029 v_mul_lo_u16             u16:u16,u16            e64
VOP2    0x02a v_lshlrev_b16            b16:b16,b16            e64
VOP2    0x02b v_lshrrev_b16            b16:b16,b16            e64
VOP2    0x02c v_ashrrev_i16            i16:b16,i16            e64
VOP2    0x02f v_max_u16                u16:u16,u16            e64
VOP2    0x030 v_max_i16                i16:i16,i16            e64
VOP2    0x031 v_min_u16                u16:u16,u16            e64
VOP2    0x032 v_min_i16                i16:i16,i16            e64
VOP2    0x03d v_xnor_b32               b32:b32,b32            e64
VOP2    0x004 v_fmac_f64               f64:f64,f64            e64
VOPC    0x020 v_cmp_f_f16              lane:f16,f16           e64
VOPC    0x021 v_cmp_lt_f16             lane:f16,f16           e64
VOPC    0x022 v_cmp_eq_f16             lane:f16,f16           e64
VOPC    0x023 v_cmp_le_f16             lane:f16,f16           e64
VOPC    0x024 v_cmp_gt_f16             lane:f16,f16           e64
VOPC    0x025 v_cmp_lg_f16             lane:f16,f16           e64
VOPC    0x026 v_cmp_ge_f16             lane:f16,f16           e64
VOPC    0x027 v_cmp_o_f16              lane:f16,f16           e64
VOPC    0x028 v_cmp_u_f16              lane:f16,f16           e64
VOPC    0x029 v_cmp_nge_f16            lane:f16,f16           e64
VOPC    0x02a v_cmp_nlg_f16            lane:f16,f16           e64
VOPC    0x02b v_cmp_ngt_f16            lane:f16,f16           e64
VOPC    0x02c v_cmp_nle_f16            lane:f16,f16           e64
VOPC    0x02d v_cmp_neq_f16            lane:f16,f16           e64
VOPC    0x02e v_cmp_nlt_f16            lane:f16,f16           e64
VOPC    0x02f v_cmp_tru_f16            lane:f16,f16           e64
VOPC    0x014 v_cmp_class_f16          lane:f16,b32           e64
VOPC    0x040 v_cmp_f_f32              lane:f32,f32           e64
VOPC    0x041 v_cmp_lt_f32             lane:f32,f32           e64
VOPC    0x042 v_cmp_eq_f32             lane:f32,f32           e64
VOPC    0x043 v_cmp_le_f32             lane:f32,f32           e64
VOPC    0x044 v_cmp_gt_f32             lane:f32,f32           e64
VOPC    0x045 v_cmp_lg_f32             lane:f32,f32           e64
VOPC    0x046 v_cmp_ge_f32             lane:f32,f32           e64
VOPC    0x047 v_cmp_o_f32              lane:f32,f32           e64
VOPC    0x048 v_cmp_u_f32              lane:f32,f32           e64
VOPC    0x049 v_cmp_nge_f32            lane:f32,f32           e64
VOPC    0x04a v_cmp_nlg_f32            lane:f32,f32           e64
VOPC    0x04b v_cmp_ngt_f32            lane:f32,f32           e64
VOPC    0x04c v_cmp_nle_f32            lane:f32,f32           e64
VOPC    0x04d v_cmp_neq_f32            lane:f32,f32           e64
VOPC    0x04e v_cmp_nlt_f32            lane:f32,f32           e64
VOPC    0x04f v_cmp_tru_f32            lane:f32,f32           e64
VOPC    0x010 v_cmp_class_f32          lane:f32,b32           e64
VOPC    0x060 v_cmp_f_f64              lane:f64,f64           e64
VOPC    0x061 v_cmp_lt_f64             lane:f64,f64           e64
VOPC    0x062 v_cmp_eq_f64             lane:f64,f64           e64
VOPC    0x063 v_cmp_le_f64             lane:f64,f64           e64
VOPC    0x064 v_cmp_gt_f64             lane:f64,f64           e64
VOPC    0x065 v_cmp_lg_f64             lane:f64,f64           e64
VOPC    0x066 v_cmp_ge_f64             lane:f64,f64           e64
VOPC    0x067 v_cmp_o_f64              lane:f64,f64           e64
VOPC    0x068 v_cmp_u_f64              lane:f64,f64           e64
VOPC    0x069 v_cmp_nge_f64            lane:f64,f64           e64
VOPC    0x06a v_cmp_nlg_f64            lane:f64,f64           e64
VOPC    0x06b v_cmp_ngt_f64            lane:f64,f64           e64
VOPC    0x06c v_cmp_nle_f64            lane:f64,f64           e64
VOPC    0x06d v_cmp_neq_f64            lane:f64,f64           e64
VOPC    0x06e v_cmp_nlt_f64            lane:f64,f64           e64
VOPC    0x06f v_cmp_tru_f64            lane:f64,f64           e64
VOPC    0x012 v_cmp_class_f64          lane:f64,b32           e64
VOPC    0x0a0 v_cmp_f_i16              lane:i16,i16           e64
VOPC    0x0a1 v_cmp_lt_i16             lane:i16,i16           e64
VOPC    0x0a2 v_cmp_eq_i16             lane:i16,i16           e64
VOPC    0x0a3 v_cmp_le_i16             lane:i16,i16           e64
VOPC    0x0a4 v_cmp_gt_i16             lane:i16,i16           e64
VOPC    0x0a5 v_cmp_ne_i16             lane:i16,i16           e64
VOPC    0x0a6 v_cmp_ge_i16             lane:i16,i16           e64
VOPC    0x0a7 v_cmp_t_i16              lane:i16,i16           e64
VOPC    0x0a8 v_cmp_f_u16              lane:u16,u16           e64
VOPC    0x0a9 v_cmp_lt_u16             lane:u16,u16           e64
VOPC    0x0aa v_cmp_eq_u16             lane:u16,u16           e64
VOPC    0x0ab v_cmp_le_u16             lane:u16,u16           e64
VOPC    0x0ac v_cmp_gt_u16             lane:u16,u16           e64
VOPC    0x0ad v_cmp_ne_u16             lane:u16,u16           e64
VOPC    0x0ae v_cmp_ge_u16             lane:u16,u16           e64
VOPC    0x0af v_cmp_t_u16              lane:u16,u16           e64
VOPC    0x0c0 v_cmp_f_i32              lane:i32,i32           e64
VOPC    0x0c1 v_cmp_lt_i32             lane:i32,i32           e64
VOPC    0x0c2 v_cmp_eq_i32             lane:i32,i32           e64
VOPC    0x0c3 v_cmp_le_i32             lane:i32,i32           e64
VOPC    0x0c4 v_cmp_gt_i32             lane:i32,i32           e64
VOPC    0x0c5 v_cmp_ne_i32             lane:i32,i32           e64
VOPC    0x0c6 v_cmp_ge_i32             lane:i32,i32           e64
VOPC    0x0c7 v_cmp_t_i32              lane:i32,i32           e64
VOPC    0x0c8 v_cmp_f_u32              lane:u32,u32           e64
VOPC    0x0c9 v_cmp_lt_u32             lane:u32,u32           e64
VOPC    0x0ca v_cmp_eq_u32             lane:u32,u32           e64
VOPC    0x0cb v_cmp_le_u32             lane:u32,u32           e64
VOPC    0x0cc v_cmp_gt_u32             lane:u32,u32           e64
VOPC    0x0cd v_cmp_ne_u32             lane:u32,u32           e64
VOPC    0x0ce v_cmp_ge_u32             lane:u32,u32           e64
VOPC    0x0cf v_cmp_t_u32              lane:u32,u32           e64
VOPC    0x0e0 v_cmp_f_i64              lane:i64,i64           e64
VOPC    0x0e1 v_cmp_lt_i64             lane:i64,i64           e64
VOPC    0x0e2 v_cmp_eq_i64             lane:i64,i64           e64
VOPC    0x0e3 v_cmp_le_i64             lane:i64,i64           e64
VOPC    0x0e4 v_cmp_gt_i64             lane:i64,i64           e64
VOPC    0x0e5 v_cmp_ne_i64             lane:i64,i64           e64
VOPC    0x0e6 v_cmp_ge_i64             lane:i64,i64           e64
VOPC    0x0e7 v_cmp_t_i64              lane:i64,i64           e64
VOPC    0x0e8 v_cmp_f_u64              lane:u64,u64           e64
VOPC    0x0e9 v_cmp_lt_u64             lane:u64,u64           e64
VOPC    0x0ea v_cmp_eq_u64             lane:u64,u64           e64
VOPC    0x0eb v_cmp_le_u64             lane:u64,u64           e64
VOPC    0x0ec v_cmp_gt_u64             lane:u64,u64           e64
VOPC    0x0ed v_cmp_ne_u64             lane:u64,u64           e64
VOPC    0x0ee v_cmp_ge_u64             lane:u64,u64           e64
VOPC    0x0ef v_cmp_t_u64              lane:u64,u64           e64
VOPC    0x050 v_cmpx_f_f32             lane:f32,f32           e64
VOPC    0x051 v_cmpx_lt_f32            lane:f32,f32           e64
VOPC    0x052 v_cmpx_eq_f32            lane:f32,f32           e64
VOPC    0x053 v_cmpx_le_f32            lane:f32,f32           e64
VOPC    0x054 v_cmpx_gt_f32            lane:f32,f32           e64
VOPC    0x055 v_cmpx_lg_f32            lane:f32,f32           e64
VOPC    0x056 v_cmpx_ge_f32            lane:f32,f32           e64
VOPC    0x057 v_cmpx_o_f32             lane:f32,f32           e64
VOPC    0x058 v_cmpx_u_f32             lane:f32,f32           e64
VOPC    0x059 v_cmpx_nge_f32           lane:f32,f32           e64
VOPC    0x05a v_cmpx_nlg_f32           lane:f32,f32           e64
VOPC    0x05b v_cmpx_ngt_f32           lane:f32,f32           e64
VOPC    0x05c v_cmpx_nle_f32           lane:f32,f32           e64
VOPC    0x05d v_cmpx_neq_f32           lane:f32,f32           e64
VOPC    0x05e v_cmpx_nlt_f32           lane:f32,f32           e64
VOPC    0x05f v_cmpx_tru_f32           lane:f32,f32           e64
VOPC    0x0d0 v_cmpx_f_i32             lane:i32,i32           e64
VOPC    0x0d1 v_cmpx_lt_i32            lane:i32,i32           e64
VOPC    0x0d2 v_cmpx_eq_i32            lane:i32,i32           e64
VOPC    0x0d3 v_cmpx_le_i32            lane:i32,i32           e64
VOPC    0x0d4 v_cmpx_gt_i32            lane:i32,i32           e64
VOPC    0x0d5 v_cmpx_ne_i32            lane:i32,i32           e64
VOPC    0x0d6 v_cmpx_ge_i32            lane:i32,i32           e64
VOPC    0x0d7 v_cmpx_t_i32             lane:i32,i32           e64
VOPC    0x0d8 v_cmpx_f_u32             lane:u32,u32           e64
VOPC    0x0d9 v_cmpx_lt_u32            lane:u32,u32           e64
VOPC    0x0da v_cmpx_eq_u32            lane:u32,u32           e64
VOPC    0x0db v_cmpx_le_u32            lane:u32,u32           e64
VOPC    0x0dc v_cmpx_gt_u32            lane:u32,u32           e64
VOPC    0x0dd v_cmpx_ne_u32            lane:u32,u32           e64
VOPC    0x0de v_cmpx_ge_u32            lane:u32,u32           e64
VOPC    0x0df v_cmpx_t_u32             lane:u32,u32           e64
VOP3    0x1cb v_fma_f32                f32:f32,f32,f32
VOP3    0x1cc v_fma_f64                f64:f64,f64,f64
VOP3    0x206 v_fma_f16                f16:f16,f16,f16
VOP3    0x1c3 v_mad_u32_u24            u32:u32,u32,u32
VOP3    0x1c2 v_mad_i32_i24            i32:i32,i32,i32
VOP3    0x1c8 v_bfe_u32                u32:u32,u32,u32
VOP3    0x1c9 v_bfe_i32                i32:i32,u32,u32
VOP3    0x1ca v_bfi_b32                b32:b32,b32,b32
VOP3    0x1ce v_alignbit_b32           b32:b32,b32,b32
VOP3    0x1d0 v_min3_f32               f32:f32,f32,f32
VOP3    0x1d3 v_max3_f32               f32:f32,f32,f32
VOP3    0x1d1 v_min3_i32               i32:i32,i32,i32
VOP3    0x1d4 v_max3_i32               i32:i32,i32,i32
VOP3    0x1d2 v_min3_u32               u32:u32,u32,u32
VOP3    0x1d5 v_max3_u32               u32:u32,u32,u32
VOP3    0x1d6 v_med3_f32               f32:f32,f32,f32
VOP3    0x1d7 v_med3_i32               i32:i32,i32,i32
VOP3    0x1d8 v_med3_u32               u32:u32,u32,u32
VOP3    0x1de v_div_fixup_f32          f32:f32,f32,f32
VOP3    0x1df v_div_fixup_f64          f64:f64,f64,f64
VOP3    0x207 v_div_fixup_f16          f16:f16,f16,f16
VOP3    0x1e2 v_div_fmas_f32           f32:f32,f32,f32
VOP3    0x1e3 v_div_fmas_f64           f64:f64,f64,f64
VOP3    0x280 v_add_f64                f64:f64,f64
VOP3    0x281 v_mul_f64                f64:f64,f64
VOP3    0x282 v_min_f64                f64:f64,f64
VOP3    0x283 v_max_f64                f64:f64,f64
VOP3    0x284 v_ldexp_f64              f64:f64,i32
VOP3    0x288 v_ldexp_f32              f32:f32,i32
VOP3    0x285 v_mul_lo_u32             u32:u32,u32
VOP3    0x286 v_mul_hi_u32             u32:u32,u32
VOP3    0x287 v_mul_hi_i32             i32:i32,i32
VOP3    0x28f v_lshlrev_b64            b64:b32,b64
VOP3    0x290 v_lshrrev_b64            b64:b32,b64
VOP3    0x291 v_ashrrev_i64            i64:b32,i64
VOP3    0x1fd v_lshl_add_u32           u32:u32,u32,u32
VOP3    0x1fe v_add_lshl_u32           u32:u32,u32,u32
VOP3    0x2a0 v_pack_b32_f16           b32:f16,f16
VOP3    0x1eb v_mad_legacy_u16         u16:u16,u16,u16
VOP3    0x1ff v_add3_u32               u32:u32,u32,u32
VOP3    0x200 v_lshl_or_b32            b32:b32,b32,b32
VOP3    0x201 v_and_or_b32             b32:b32,b32,b32
VOP3    0x202 v_or3_b32                b32:b32,b32,b32
VOP3    0x1f3 v_xad_u32                u32:u32,u32,u32
VOP3    0x289 v_readlane_b32           s32:b32,sb32
VOP3    0x28a v_writelane_b32          b32:sb32,sb32
VOP3    0x28b v_bcnt_u32_b32           u32:b32,u32
VOP3    0x28c v_mbcnt_lo_u32_b32       u32:b32,u32
VOP3    0x28d v_mbcnt_hi_u32_b32       u32:b32,u32
VOP3    0x1ed v_perm_b32               b32:b32,b32,b32
VOP3    0x292 v_trig_preop_f64         f64:f64,i32
VOP3    0x208 v_lshl_add_u64           u64:u64,u32,u64
VOP3    0x1f1 v_mad_u32_u16            u32:u16,u16,u32
VOP3    0x29c v_add_i32                i32:i32,i32
VOP3    0x29d v_sub_i32                i32:i32,i32
VOP3P   0x04d v_mfma_f32_16x16x16_f16   v128:v64,v64,c128
VOP3P   0x061 v_mfma_f32_16x16x16_bf16  v128:v64,v64,c128
VOP3P   0x030 v_pk_fma_f32             v64:pk64,pk64,pk64
VOP3P   0x031 v_pk_mul_f32             v64:pk64,pk64
VOP3P   0x032 v_pk_add_f32             v64:pk64,pk64
VOP3P   0x033 v_pk_mov_b32             v64:pk64,pk64
VOP3SD  0x1e8 v_mad_u64_u32            u64,lane:u32,u32,u64
VOP3SD  0x1e9 v_mad_i64_i32            i64,lane:i32,i32,i64
VOP3SD  0x1e0 v_div_scale_f32          f32,lane:f32,f32,f32
VOP3SD  0x1e1 v_div_scale_f64          f64,lane:f64,f64,f64
GLOBAL  0x010 global_load_ubyte        v32:vaddr,saddr
GLOBAL  0x011 global_load_sbyte        v32:vaddr,saddr
GLOBAL  0x012 global_load_ushort       v32:vaddr,saddr
GLOBAL  0x013 global_load_sshort       v32:vaddr,saddr
GLOBAL  0x014 global_load_dword        v32:vaddr,saddr
GLOBAL  0x015 global_load_dwordx2      v64:vaddr,saddr
GLOBAL  0x016 global_load_dwordx3      v96:vaddr,saddr
GLOBAL  0x017 global_load_dwordx4      v128:vaddr,saddr
GLOBAL  0x018 global_store_byte        :vaddr,v32,saddr
GLOBAL  0x01a global_store_short       :vaddr,v32,saddr
GLOBAL  0x01c global_store_dword       :vaddr,v32,saddr
GLOBAL  0x01d global_store_dwordx2     :vaddr,v64,saddr
GLOBAL  0x01e global_store_dwordx3     :vaddr,v96,saddr
GLOBAL  0x01f global_store_dwordx4     :vaddr,v128,saddr
FLAT    0x010 flat_load_ubyte          v32:v64
FLAT    0x011 flat_load_sbyte          v32:v64
FLAT    0x012 flat_load_ushort         v32:v64
FLAT    0x013 flat_load_sshort         v32:v64
FLAT    0x014 flat_load_dword          v32:v64
FLAT    0x015 flat_load_dwordx2        v64:v64
FLAT    0x016 flat_load_dwordx3        v96:v64
FLAT    0x017 flat_load_dwordx4        v128:v64
FLAT    0x018 flat_store_byte          :v64,v32
FLAT    0x01a flat_store_short         :v64,v32
FLAT    0x01c flat_store_dword         :v64,v32
FLAT    0x01d flat_store_dwordx2       :v64,v64
FLAT    0x01e flat_store_dwordx3       :v64,v96
FLAT    0x01f flat_store_dwordx4       :v64,v128
SCRATCH 0x010 scratch_load_ubyte       v32:vaddr,saddr32
SCRATCH 0x011 scratch_load_sbyte       v32:vaddr,saddr32
SCRATCH 0x012 scratch_load_ushort      v32:vaddr,saddr32
SCRATCH 0x013 scratch_load_sshort      v32:vaddr,saddr32
SCRATCH 0x014 scratch_load_dword       v32:vaddr,saddr32
SCRATCH 0x015 scratch_load_dwordx2     v64:vaddr,saddr32
SCRATCH 0x016 scratch_load_dwordx3     v96:vaddr,saddr32
SCRATCH 0x017 scratch_load_dwordx4     v128:vaddr,saddr32
SCRATCH 0x018 scratch_store_byte       :vaddr,v32,saddr32
SCRATCH 0x01a scratch_store_short      :vaddr,v32,saddr32
SCRATCH 0x01c scratch_store_dword      :vaddr,v32,saddr32
SCRATCH 0x01d scratch_store_dwordx2    :vaddr,v64,saddr32
SCRATCH 0x01e scratch_store_dwordx3    :vaddr,v96,saddr32
SCRATCH 0x01f scratch_store_dwordx4    :vaddr,v128,saddr32
GLOBAL  0x042 global_atomic_add        :vaddr,v32,saddr
GLOBAL  0x04d global_atomic_add_f32    :vaddr,v32,saddr
VOP3    0x296 v_cvt_pkrtz_f16_f32      b32:f32,f32
DS      0x036 ds_read_b32              v32:v32
DS      0x076 ds_read_b64              v64:v32
DS      0x0fe ds_read_b96              v96:v32
DS      0x0ff ds_read_b128             v128:v32
DS      0x03a ds_read_u8               v32:v32
DS      0x039 ds_read_i8               v32:v32
DS      0x03c ds_read_u16              v32:v32
DS      0x03b ds_read_i16              v32:v32
DS      0x00d ds_write_b32             :v32,v32
DS      0x04d ds_write_b64             :v32,v64
DS      0x0de ds_write_b96             :v32,v96
DS      0x0df ds_write_b128            :v32,v128
DS      0x01e ds_write_b8              :v32,v32
DS      0x01f ds_write_b16             :v32,v32
DS      0x037 ds_read2_b32             v64:v32 off2
DS      0x00e ds_write2_b32            :v32,v32,v32 off2
DS      0x077 ds_read2_b64             v128:v32 off2
DS      0x04e ds_write2_b64            :v32,v64,v64 off2
DS      0x000 ds_add_u32               :v32,v32
DS      0x020 ds_add_rtn_u32           v32:v32,v32
DS      0x015 ds_add_f32               :v32,v32
DS      0x035 ds_add_rtn_f32           v32:v32,v32
DS      0x028 ds_max_rtn_u32           v32:v32,v32
DS      0x03f ds_bpermute_b32          v32:v32,v32
"""

ROWS: tuple[Row, ...] = parse_rows("gfx942", TABLE)
