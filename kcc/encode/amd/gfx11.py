"""RDNA3 (gfx1100, wave32) instruction forms: one row per form, see :mod:`kcc.encode.amd.table`.

Opcodes are those of the "AMD RDNA3 Shader Instruction Set Architecture" reference guide,
§16 "Microcode Formats" (SOP2 §16.1.1, SOPK §16.1.2, SOP1 §16.1.3, SOPC §16.1.4, SOPP §16.1.5,
SMEM §16.2, VOP2 §16.3.1, VOP1 §16.3.2, VOPC §16.3.3, VOP3 §16.3.4, VOP3SD §16.3.5, DS §16.5,
FLAT/GLOBAL/SCRATCH §16.8, VOP3P §16.3: the WMMA matrix ops), spelled as LLVM's assembler
spells them (``s_load_b64``, ``global_load_b32``, ``v_add_nc_u32``). 16-bit VALU forms are the
32-bit-register ("fake16") ones; wave32 lane masks are single SGPRs (``vcc_lo``, ``s4``).
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
SOP2    0x012 s_min_i32                s32:b32,b32
SOP2    0x013 s_min_u32                s32:b32,b32
SOP2    0x014 s_max_i32                s32:b32,b32
SOP2    0x015 s_max_u32                s32:b32,b32
SOP2    0x030 s_cselect_b32            s32:b32,b32
SOP2    0x016 s_and_b32                s32:b32,b32
SOP2    0x018 s_or_b32                 s32:b32,b32
SOP2    0x01a s_xor_b32                s32:b32,b32
SOP2    0x022 s_and_not1_b32           s32:b32,b32
SOP2    0x024 s_or_not1_b32            s32:b32,b32
SOP2    0x01c s_nand_b32               s32:b32,b32
SOP2    0x01e s_nor_b32                s32:b32,b32
SOP2    0x020 s_xnor_b32               s32:b32,b32
SOP2    0x008 s_lshl_b32               s32:b32,b32
SOP2    0x00a s_lshr_b32               s32:b32,b32
SOP2    0x00c s_ashr_i32               s32:b32,b32
SOP2    0x02a s_bfm_b32                s32:b32,b32
SOP2    0x02c s_mul_i32                s32:b32,b32
SOP2    0x026 s_bfe_u32                s32:b32,b32
SOP2    0x027 s_bfe_i32                s32:b32,b32
SOP2    0x02d s_mul_hi_u32             s32:b32,b32
SOP2    0x02e s_mul_hi_i32             s32:b32,b32
SOP2    0x00e s_lshl1_add_u32          s32:b32,b32
SOP2    0x00f s_lshl2_add_u32          s32:b32,b32
SOP2    0x010 s_lshl3_add_u32          s32:b32,b32
SOP2    0x011 s_lshl4_add_u32          s32:b32,b32
SOP2    0x032 s_pack_ll_b32_b16        s32:b32,b32
SOP2    0x006 s_absdiff_i32            s32:b32,b32
SOP2    0x031 s_cselect_b64            s64:b64,b64
SOP2    0x017 s_and_b64                s64:b64,b64
SOP2    0x019 s_or_b64                 s64:b64,b64
SOP2    0x01b s_xor_b64                s64:b64,b64
SOP2    0x023 s_and_not1_b64           s64:b64,b64
SOP2    0x025 s_or_not1_b64            s64:b64,b64
SOP2    0x01d s_nand_b64               s64:b64,b64
SOP2    0x01f s_nor_b64                s64:b64,b64
SOP2    0x021 s_xnor_b64               s64:b64,b64
SOP2    0x009 s_lshl_b64               s64:b64,b32
SOP2    0x00b s_lshr_b64               s64:b64,b32
SOP2    0x00d s_ashr_i64               s64:b64,b32
SOP2    0x028 s_bfe_u64                s64:b64,b32
SOP2    0x029 s_bfe_i64                s64:b64,b32
SOP2    0x02b s_bfm_b64                s64:b32,b32
SOP1    0x000 s_mov_b32                s32:b32
SOP1    0x002 s_cmov_b32               s32:b32
SOP1    0x01e s_not_b32                s32:b32
SOP1    0x004 s_brev_b32               s32:b32
SOP1    0x008 s_ctz_i32_b32            s32:b32
SOP1    0x00a s_clz_i32_u32            s32:b32
SOP1    0x00c s_cls_i32                s32:b32
SOP1    0x018 s_bcnt1_i32_b32          s32:b32
SOP1    0x016 s_bcnt0_i32_b32          s32:b32
SOP1    0x00e s_sext_i32_i8            s32:b32
SOP1    0x00f s_sext_i32_i16           s32:b32
SOP1    0x015 s_abs_i32                s32:b32
SOP1    0x01c s_wqm_b32                s32:b32
SOP1    0x01a s_quadmask_b32           s32:b32
SOP1    0x001 s_mov_b64                s64:b64
SOP1    0x003 s_cmov_b64               s64:b64
SOP1    0x01f s_not_b64                s64:b64
SOP1    0x01d s_wqm_b64                s64:b64
SOP1    0x005 s_brev_b64               s64:b64
SOP1    0x019 s_bcnt1_i32_b64          s32:b64
SOP1    0x009 s_ctz_i32_b64            s32:b64
SOP1    0x047 s_getpc_b64              s64:
SOP1    0x048 s_setpc_b64              :b64
SOP1    0x049 s_swappc_b64             s64:b64
SOP1    0x020 s_and_saveexec_b32       s32:b32
SOP1    0x022 s_or_saveexec_b32        s32:b32
SOP1    0x024 s_xor_saveexec_b32       s32:b32
SOP1    0x030 s_and_not1_saveexec_b32  s32:b32
SOP1    0x032 s_or_not1_saveexec_b32   s32:b32
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
SOPC    0x010 s_cmp_eq_u64             :b64,b64
SOPC    0x011 s_cmp_lg_u64             :b64,b64
SOPC    0x00c s_bitcmp0_b32            :b32,b32
SOPC    0x00d s_bitcmp1_b32            :b32,b32
SOPK    0x000 s_movk_i32               s32:hex16
SOPK    0x002 s_cmovk_i32              s32:hex16
SOPK    0x00f s_addk_i32               s32:hex16
SOPK    0x010 s_mulk_i32               s32:hex16
SOPK    0x003 s_cmpk_eq_i32            :b32,hex16
SOPK    0x004 s_cmpk_lg_i32            :b32,hex16
SOPK    0x005 s_cmpk_gt_i32            :b32,hex16
SOPK    0x006 s_cmpk_ge_i32            :b32,hex16
SOPK    0x007 s_cmpk_lt_i32            :b32,hex16
SOPK    0x008 s_cmpk_le_i32            :b32,hex16
SOPK    0x009 s_cmpk_eq_u32            :b32,hex16
SOPK    0x00a s_cmpk_lg_u32            :b32,hex16
SOPK    0x00b s_cmpk_gt_u32            :b32,hex16
SOPK    0x00c s_cmpk_ge_u32            :b32,hex16
SOPK    0x00d s_cmpk_lt_u32            :b32,hex16
SOPK    0x00e s_cmpk_le_u32            :b32,hex16
SOPP    0x01f s_code_end               :
SOPP    0x000 s_nop                    :dec16
SOPP    0x030 s_endpgm                 :
SOPP    0x020 s_branch                 :label
SOPP    0x021 s_cbranch_scc0           :label
SOPP    0x022 s_cbranch_scc1           :label
SOPP    0x023 s_cbranch_vccz           :label
SOPP    0x024 s_cbranch_vccnz          :label
SOPP    0x025 s_cbranch_execz          :label
SOPP    0x026 s_cbranch_execnz         :label
SOPP    0x03d s_barrier                :
SOPP    0x009 s_waitcnt                :waitcnt
SOPP    0x036 s_sendmsg                :sendmsg
SOPP    0x003 s_sleep                  :dec16
SOPP    0x035 s_setprio                :dec16
SOPP    0x010 s_trap                   :dec16
SOPP    0x03c s_icache_inv             :
SOPP    0x005 s_clause                 :hex16
SOPP    0x007 s_delay_alu              :delay
SOPP    0x008 s_waitcnt_depctr         :depctr
SOPP    0x004 s_set_inst_prefetch_distance :hex16
SOPK    0x018 s_waitcnt_vscnt          :s32,hex16
SOPK    0x019 s_waitcnt_vmcnt          :s32,hex16
SOPK    0x01b s_waitcnt_lgkmcnt        :s32,hex16
SMEM    0x000 s_load_b32               s32:s64,soff
SMEM    0x001 s_load_b64               s64:s64,soff
SMEM    0x002 s_load_b128              s128:s64,soff
SMEM    0x003 s_load_b256              s256:s64,soff
SMEM    0x004 s_load_b512              s512:s64,soff
VOP1    0x001 v_mov_b32                b32:b32                e64
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
VOP1    0x050 v_cvt_f16_u16            f16:u16                e64
VOP1    0x051 v_cvt_f16_i16            f16:i16                e64
VOP1    0x052 v_cvt_u16_f16            u16:f16                e64
VOP1    0x053 v_cvt_i16_f16            i16:f16                e64
VOP1    0x037 v_not_b32                b32:b32                e64
VOP1    0x038 v_bfrev_b32              b32:b32                e64
VOP1    0x039 v_clz_i32_u32            b32:b32                e64
VOP1    0x03a v_ctz_i32_b32            b32:b32                e64
VOP1    0x03b v_cls_i32                b32:b32                e64
VOP1    0x03c v_frexp_exp_i32_f64      i32:f64                e64
VOP1    0x03d v_frexp_mant_f64         f64:f64                e64
VOP1    0x03f v_frexp_exp_i32_f32      i32:f32                e64
VOP1    0x040 v_frexp_mant_f32         f32:f32                e64
VOP1    0x05a v_frexp_exp_i16_f16      i16:f16                e64
VOP1    0x059 v_frexp_mant_f16         f16:f16                e64
VOP1    0x021 v_trunc_f32              f32:f32                e64
VOP1    0x022 v_ceil_f32               f32:f32                e64
VOP1    0x023 v_rndne_f32              f32:f32                e64
VOP1    0x024 v_floor_f32              f32:f32                e64
VOP1    0x020 v_fract_f32              f32:f32                e64
VOP1    0x02a v_rcp_f32                f32:f32                e64
VOP1    0x02e v_rsq_f32                f32:f32                e64
VOP1    0x033 v_sqrt_f32               f32:f32                e64
VOP1    0x017 v_trunc_f64              f64:f64                e64
VOP1    0x018 v_ceil_f64               f64:f64                e64
VOP1    0x019 v_rndne_f64              f64:f64                e64
VOP1    0x01a v_floor_f64              f64:f64                e64
VOP1    0x03e v_fract_f64              f64:f64                e64
VOP1    0x02f v_rcp_f64                f64:f64                e64
VOP1    0x031 v_rsq_f64                f64:f64                e64
VOP1    0x034 v_sqrt_f64               f64:f64                e64
VOP1    0x05d v_trunc_f16              f16:f16                e64
VOP1    0x05c v_ceil_f16               f16:f16                e64
VOP1    0x05e v_rndne_f16              f16:f16                e64
VOP1    0x05b v_floor_f16              f16:f16                e64
VOP1    0x05f v_fract_f16              f16:f16                e64
VOP1    0x054 v_rcp_f16                f16:f16                e64
VOP1    0x056 v_rsq_f16                f16:f16                e64
VOP1    0x055 v_sqrt_f16               f16:f16                e64
VOP1    0x025 v_exp_f32                f32:f32                e64
VOP1    0x027 v_log_f32                f32:f32                e64
VOP1    0x035 v_sin_f32                f32:f32                e64
VOP1    0x036 v_cos_f32                f32:f32                e64
VOP1    0x058 v_exp_f16                f16:f16                e64
VOP1    0x057 v_log_f16                f16:f16                e64
VOP1    0x060 v_sin_f16                f16:f16                e64
VOP1    0x061 v_cos_f16                f16:f16                e64
VOP1    0x02b v_rcp_iflag_f32          f32:f32                e64
VOP1    0x06a v_cvt_i32_i16            i32:i16                e64
VOP1    0x06b v_cvt_u32_u16            u32:u16                e64
VOP1    0x002 v_readfirstlane_b32      s32:b32
VOP1    0x000 v_nop                    :
VOP2    0x003 v_add_f32                f32:f32,f32            e64
VOP2    0x004 v_sub_f32                f32:f32,f32            e64
VOP2    0x005 v_subrev_f32             f32:f32,f32            e64
VOP2    0x008 v_mul_f32                f32:f32,f32            e64
VOP2    0x00f v_min_f32                f32:f32,f32            e64
VOP2    0x010 v_max_f32                f32:f32,f32            e64
VOP2    0x009 v_mul_i32_i24            i32:i32,i32            e64
VOP2    0x00a v_mul_hi_i32_i24         i32:i32,i32            e64
VOP2    0x00b v_mul_u32_u24            u32:u32,u32            e64
VOP2    0x00c v_mul_hi_u32_u24         u32:u32,u32            e64
VOP2    0x011 v_min_i32                i32:i32,i32            e64
VOP2    0x012 v_max_i32                i32:i32,i32            e64
VOP2    0x013 v_min_u32                u32:u32,u32            e64
VOP2    0x014 v_max_u32                u32:u32,u32            e64
VOP2    0x019 v_lshrrev_b32            b32:b32,b32            e64
VOP2    0x01a v_ashrrev_i32            i32:b32,i32            e64
VOP2    0x018 v_lshlrev_b32            b32:b32,b32            e64
VOP2    0x01b v_and_b32                b32:b32,b32            e64
VOP2    0x01c v_or_b32                 b32:b32,b32            e64
VOP2    0x01d v_xor_b32                b32:b32,b32            e64
VOP2    0x02b v_fmac_f32               f32:f32,f32            e64
VOP2    0x025 v_add_nc_u32             u32:u32,u32            e64
VOP2    0x026 v_sub_nc_u32             u32:u32,u32            e64
VOP2    0x027 v_subrev_nc_u32          u32:u32,u32            e64
VOP2    0x032 v_add_f16                f16:f16,f16            e64
VOP2    0x033 v_sub_f16                f16:f16,f16            e64
VOP2    0x034 v_subrev_f16             f16:f16,f16            e64
VOP2    0x035 v_mul_f16                f16:f16,f16            e64
VOP2    0x036 v_fmac_f16               f16:f16,f16            e64
VOP2    0x039 v_max_f16                f16:f16,f16            e64
VOP2    0x03a v_min_f16                f16:f16,f16            e64
VOP2    0x03b v_ldexp_f16              f16:f16,i16            e64
VOP2    0x001 v_cndmask_b32            b32:b32,b32,lane       e64
VOP2    0x01e v_xnor_b32               b32:b32,b32            e64
VOP2    0x020 v_add_co_ci_u32          u32,lane:u32,u32,lane  e64
VOP2    0x021 v_sub_co_ci_u32          u32,lane:u32,u32,lane  e64
VOP2    0x022 v_subrev_co_ci_u32       u32,lane:u32,u32,lane  e64
VOP2    0x02f v_cvt_pk_rtz_f16_f32     b32:f32,f32            e64
VOP2    0x02c v_fmamk_f32              f32:f32,k32,f32
VOP2    0x02d v_fmaak_f32              f32:f32,f32,k32
VOP2    0x037 v_fmamk_f16              f16:f16,k16,f16
VOP2    0x038 v_fmaak_f16              f16:f16,f16,k16
VOPC    0x000 v_cmp_f_f16              lane:f16,f16           e64
VOPC    0x001 v_cmp_lt_f16             lane:f16,f16           e64
VOPC    0x002 v_cmp_eq_f16             lane:f16,f16           e64
VOPC    0x003 v_cmp_le_f16             lane:f16,f16           e64
VOPC    0x004 v_cmp_gt_f16             lane:f16,f16           e64
VOPC    0x005 v_cmp_lg_f16             lane:f16,f16           e64
VOPC    0x006 v_cmp_ge_f16             lane:f16,f16           e64
VOPC    0x007 v_cmp_o_f16              lane:f16,f16           e64
VOPC    0x008 v_cmp_u_f16              lane:f16,f16           e64
VOPC    0x009 v_cmp_nge_f16            lane:f16,f16           e64
VOPC    0x00a v_cmp_nlg_f16            lane:f16,f16           e64
VOPC    0x00b v_cmp_ngt_f16            lane:f16,f16           e64
VOPC    0x00c v_cmp_nle_f16            lane:f16,f16           e64
VOPC    0x00d v_cmp_neq_f16            lane:f16,f16           e64
VOPC    0x00e v_cmp_nlt_f16            lane:f16,f16           e64
VOPC    0x00f v_cmp_t_f16              lane:f16,f16           e64
VOPC    0x07d v_cmp_class_f16          lane:f16,b32           e64
VOPC    0x010 v_cmp_f_f32              lane:f32,f32           e64
VOPC    0x011 v_cmp_lt_f32             lane:f32,f32           e64
VOPC    0x012 v_cmp_eq_f32             lane:f32,f32           e64
VOPC    0x013 v_cmp_le_f32             lane:f32,f32           e64
VOPC    0x014 v_cmp_gt_f32             lane:f32,f32           e64
VOPC    0x015 v_cmp_lg_f32             lane:f32,f32           e64
VOPC    0x016 v_cmp_ge_f32             lane:f32,f32           e64
VOPC    0x017 v_cmp_o_f32              lane:f32,f32           e64
VOPC    0x018 v_cmp_u_f32              lane:f32,f32           e64
VOPC    0x019 v_cmp_nge_f32            lane:f32,f32           e64
VOPC    0x01a v_cmp_nlg_f32            lane:f32,f32           e64
VOPC    0x01b v_cmp_ngt_f32            lane:f32,f32           e64
VOPC    0x01c v_cmp_nle_f32            lane:f32,f32           e64
VOPC    0x01d v_cmp_neq_f32            lane:f32,f32           e64
VOPC    0x01e v_cmp_nlt_f32            lane:f32,f32           e64
VOPC    0x01f v_cmp_t_f32              lane:f32,f32           e64
VOPC    0x07e v_cmp_class_f32          lane:f32,b32           e64
VOPC    0x020 v_cmp_f_f64              lane:f64,f64           e64
VOPC    0x021 v_cmp_lt_f64             lane:f64,f64           e64
VOPC    0x022 v_cmp_eq_f64             lane:f64,f64           e64
VOPC    0x023 v_cmp_le_f64             lane:f64,f64           e64
VOPC    0x024 v_cmp_gt_f64             lane:f64,f64           e64
VOPC    0x025 v_cmp_lg_f64             lane:f64,f64           e64
VOPC    0x026 v_cmp_ge_f64             lane:f64,f64           e64
VOPC    0x027 v_cmp_o_f64              lane:f64,f64           e64
VOPC    0x028 v_cmp_u_f64              lane:f64,f64           e64
VOPC    0x029 v_cmp_nge_f64            lane:f64,f64           e64
VOPC    0x02a v_cmp_nlg_f64            lane:f64,f64           e64
VOPC    0x02b v_cmp_ngt_f64            lane:f64,f64           e64
VOPC    0x02c v_cmp_nle_f64            lane:f64,f64           e64
VOPC    0x02d v_cmp_neq_f64            lane:f64,f64           e64
VOPC    0x02e v_cmp_nlt_f64            lane:f64,f64           e64
VOPC    0x02f v_cmp_t_f64              lane:f64,f64           e64
VOPC    0x07f v_cmp_class_f64          lane:f64,b32           e64
VOPC    0x031 v_cmp_lt_i16             lane:i16,i16           e64
VOPC    0x032 v_cmp_eq_i16             lane:i16,i16           e64
VOPC    0x033 v_cmp_le_i16             lane:i16,i16           e64
VOPC    0x034 v_cmp_gt_i16             lane:i16,i16           e64
VOPC    0x035 v_cmp_ne_i16             lane:i16,i16           e64
VOPC    0x036 v_cmp_ge_i16             lane:i16,i16           e64
VOPC    0x039 v_cmp_lt_u16             lane:u16,u16           e64
VOPC    0x03a v_cmp_eq_u16             lane:u16,u16           e64
VOPC    0x03b v_cmp_le_u16             lane:u16,u16           e64
VOPC    0x03c v_cmp_gt_u16             lane:u16,u16           e64
VOPC    0x03d v_cmp_ne_u16             lane:u16,u16           e64
VOPC    0x03e v_cmp_ge_u16             lane:u16,u16           e64
VOPC    0x040 v_cmp_f_i32              lane:i32,i32           e64
VOPC    0x041 v_cmp_lt_i32             lane:i32,i32           e64
VOPC    0x042 v_cmp_eq_i32             lane:i32,i32           e64
VOPC    0x043 v_cmp_le_i32             lane:i32,i32           e64
VOPC    0x044 v_cmp_gt_i32             lane:i32,i32           e64
VOPC    0x045 v_cmp_ne_i32             lane:i32,i32           e64
VOPC    0x046 v_cmp_ge_i32             lane:i32,i32           e64
VOPC    0x047 v_cmp_t_i32              lane:i32,i32           e64
VOPC    0x048 v_cmp_f_u32              lane:u32,u32           e64
VOPC    0x049 v_cmp_lt_u32             lane:u32,u32           e64
VOPC    0x04a v_cmp_eq_u32             lane:u32,u32           e64
VOPC    0x04b v_cmp_le_u32             lane:u32,u32           e64
VOPC    0x04c v_cmp_gt_u32             lane:u32,u32           e64
VOPC    0x04d v_cmp_ne_u32             lane:u32,u32           e64
VOPC    0x04e v_cmp_ge_u32             lane:u32,u32           e64
VOPC    0x04f v_cmp_t_u32              lane:u32,u32           e64
VOPC    0x050 v_cmp_f_i64              lane:i64,i64           e64
VOPC    0x051 v_cmp_lt_i64             lane:i64,i64           e64
VOPC    0x052 v_cmp_eq_i64             lane:i64,i64           e64
VOPC    0x053 v_cmp_le_i64             lane:i64,i64           e64
VOPC    0x054 v_cmp_gt_i64             lane:i64,i64           e64
VOPC    0x055 v_cmp_ne_i64             lane:i64,i64           e64
VOPC    0x056 v_cmp_ge_i64             lane:i64,i64           e64
VOPC    0x057 v_cmp_t_i64              lane:i64,i64           e64
VOPC    0x058 v_cmp_f_u64              lane:u64,u64           e64
VOPC    0x059 v_cmp_lt_u64             lane:u64,u64           e64
VOPC    0x05a v_cmp_eq_u64             lane:u64,u64           e64
VOPC    0x05b v_cmp_le_u64             lane:u64,u64           e64
VOPC    0x05c v_cmp_gt_u64             lane:u64,u64           e64
VOPC    0x05d v_cmp_ne_u64             lane:u64,u64           e64
VOPC    0x05e v_cmp_ge_u64             lane:u64,u64           e64
VOPC    0x05f v_cmp_t_u64              lane:u64,u64           e64
VOPC    0x090 v_cmpx_f_f32             :f32,f32               e64
VOPC    0x091 v_cmpx_lt_f32            :f32,f32               e64
VOPC    0x092 v_cmpx_eq_f32            :f32,f32               e64
VOPC    0x093 v_cmpx_le_f32            :f32,f32               e64
VOPC    0x094 v_cmpx_gt_f32            :f32,f32               e64
VOPC    0x095 v_cmpx_lg_f32            :f32,f32               e64
VOPC    0x096 v_cmpx_ge_f32            :f32,f32               e64
VOPC    0x097 v_cmpx_o_f32             :f32,f32               e64
VOPC    0x098 v_cmpx_u_f32             :f32,f32               e64
VOPC    0x099 v_cmpx_nge_f32           :f32,f32               e64
VOPC    0x09a v_cmpx_nlg_f32           :f32,f32               e64
VOPC    0x09b v_cmpx_ngt_f32           :f32,f32               e64
VOPC    0x09c v_cmpx_nle_f32           :f32,f32               e64
VOPC    0x09d v_cmpx_neq_f32           :f32,f32               e64
VOPC    0x09e v_cmpx_nlt_f32           :f32,f32               e64
VOPC    0x09f v_cmpx_t_f32             :f32,f32               e64
VOPC    0x0c0 v_cmpx_f_i32             :i32,i32               e64
VOPC    0x0c1 v_cmpx_lt_i32            :i32,i32               e64
VOPC    0x0c2 v_cmpx_eq_i32            :i32,i32               e64
VOPC    0x0c3 v_cmpx_le_i32            :i32,i32               e64
VOPC    0x0c4 v_cmpx_gt_i32            :i32,i32               e64
VOPC    0x0c5 v_cmpx_ne_i32            :i32,i32               e64
VOPC    0x0c6 v_cmpx_ge_i32            :i32,i32               e64
VOPC    0x0c7 v_cmpx_t_i32             :i32,i32               e64
VOPC    0x0c8 v_cmpx_f_u32             :u32,u32               e64
VOPC    0x0c9 v_cmpx_lt_u32            :u32,u32               e64
VOPC    0x0ca v_cmpx_eq_u32            :u32,u32               e64
VOPC    0x0cb v_cmpx_le_u32            :u32,u32               e64
VOPC    0x0cc v_cmpx_gt_u32            :u32,u32               e64
VOPC    0x0cd v_cmpx_ne_u32            :u32,u32               e64
VOPC    0x0ce v_cmpx_ge_u32            :u32,u32               e64
VOPC    0x0cf v_cmpx_t_u32             :u32,u32               e64
VOPC    0x0d0 v_cmpx_f_i64             :i64,i64               e64
VOPC    0x0d1 v_cmpx_lt_i64            :i64,i64               e64
VOPC    0x0d2 v_cmpx_eq_i64            :i64,i64               e64
VOPC    0x0d3 v_cmpx_le_i64            :i64,i64               e64
VOPC    0x0d4 v_cmpx_gt_i64            :i64,i64               e64
VOPC    0x0d5 v_cmpx_ne_i64            :i64,i64               e64
VOPC    0x0d6 v_cmpx_ge_i64            :i64,i64               e64
VOPC    0x0d7 v_cmpx_t_i64             :i64,i64               e64
VOPC    0x0d8 v_cmpx_f_u64             :u64,u64               e64
VOPC    0x0d9 v_cmpx_lt_u64            :u64,u64               e64
VOPC    0x0da v_cmpx_eq_u64            :u64,u64               e64
VOPC    0x0db v_cmpx_le_u64            :u64,u64               e64
VOPC    0x0dc v_cmpx_gt_u64            :u64,u64               e64
VOPC    0x0dd v_cmpx_ne_u64            :u64,u64               e64
VOPC    0x0de v_cmpx_ge_u64            :u64,u64               e64
VOPC    0x0df v_cmpx_t_u64             :u64,u64               e64
VOP3    0x213 v_fma_f32                f32:f32,f32,f32
VOP3    0x214 v_fma_f64                f64:f64,f64,f64
VOP3    0x248 v_fma_f16                f16:f16,f16,f16
VOP3    0x20b v_mad_u32_u24            u32:u32,u32,u32
VOP3    0x20a v_mad_i32_i24            i32:i32,i32,i32
VOP3    0x210 v_bfe_u32                u32:u32,u32,u32
VOP3    0x211 v_bfe_i32                i32:i32,u32,u32
VOP3    0x212 v_bfi_b32                b32:b32,b32,b32
VOP3    0x216 v_alignbit_b32           b32:b32,b32,b32
VOP3    0x219 v_min3_f32               f32:f32,f32,f32
VOP3    0x21c v_max3_f32               f32:f32,f32,f32
VOP3    0x21a v_min3_i32               i32:i32,i32,i32
VOP3    0x21d v_max3_i32               i32:i32,i32,i32
VOP3    0x21b v_min3_u32               u32:u32,u32,u32
VOP3    0x21e v_max3_u32               u32:u32,u32,u32
VOP3    0x21f v_med3_f32               f32:f32,f32,f32
VOP3    0x220 v_med3_i32               i32:i32,i32,i32
VOP3    0x221 v_med3_u32               u32:u32,u32,u32
VOP3    0x227 v_div_fixup_f32          f32:f32,f32,f32
VOP3    0x228 v_div_fixup_f64          f64:f64,f64,f64
VOP3    0x254 v_div_fixup_f16          f16:f16,f16,f16
VOP3    0x237 v_div_fmas_f32           f32:f32,f32,f32
VOP3    0x238 v_div_fmas_f64           f64:f64,f64,f64
VOP3    0x327 v_add_f64                f64:f64,f64
VOP3    0x328 v_mul_f64                f64:f64,f64
VOP3    0x329 v_min_f64                f64:f64,f64
VOP3    0x32a v_max_f64                f64:f64,f64
VOP3    0x32b v_ldexp_f64              f64:f64,i32
VOP3    0x31c v_ldexp_f32              f32:f32,i32
VOP3    0x32c v_mul_lo_u32             u32:u32,u32
VOP3    0x32d v_mul_hi_u32             u32:u32,u32
VOP3    0x32e v_mul_hi_i32             i32:i32,i32
VOP3    0x33c v_lshlrev_b64            b64:b32,b64
VOP3    0x33d v_lshrrev_b64            b64:b32,b64
VOP3    0x33e v_ashrrev_i64            i64:b32,i64
VOP3    0x246 v_lshl_add_u32           u32:u32,u32,u32
VOP3    0x255 v_add3_u32               u32:u32,u32,u32
VOP3    0x256 v_lshl_or_b32            b32:b32,b32,b32
VOP3    0x257 v_and_or_b32             b32:b32,b32,b32
VOP3    0x258 v_or3_b32                b32:b32,b32,b32
VOP3    0x247 v_add_lshl_u32           u32:u32,u32,u32
VOP3    0x241 v_mad_u16                u16:u16,u16,u16
VOP3    0x311 v_pack_b32_f16           b32:f16,f16
VOP3    0x245 v_xad_u32                u32:u32,u32,u32
VOP3    0x360 v_readlane_b32           s32:b32,sb32
VOP3    0x361 v_writelane_b32          b32:sb32,sb32
VOP3    0x31e v_bcnt_u32_b32           u32:b32,u32
VOP3    0x31f v_mbcnt_lo_u32_b32       u32:b32,u32
VOP3    0x320 v_mbcnt_hi_u32_b32       u32:b32,u32
VOP3    0x244 v_perm_b32               b32:b32,b32,b32
VOP3    0x32f v_trig_preop_f64         f64:f64,i32
VOP3    0x303 v_add_nc_u16             u16:u16,u16
VOP3    0x304 v_sub_nc_u16             u16:u16,u16
VOP3    0x305 v_mul_lo_u16             u16:u16,u16
VOP3    0x338 v_lshlrev_b16            b16:b16,b16
VOP3    0x339 v_lshrrev_b16            b16:b16,b16
VOP3    0x33a v_ashrrev_i16            i16:b16,i16
VOP3    0x309 v_max_u16                u16:u16,u16
VOP3    0x30a v_max_i16                i16:i16,i16
VOP3    0x30b v_min_u16                u16:u16,u16
VOP3    0x30c v_min_i16                i16:i16,i16
VOP3    0x326 v_add_nc_i32             i32:i32,i32
VOP3    0x325 v_sub_nc_i32             i32:i32,i32
VOP3P   0x040 v_wmma_f32_16x16x16_f16   v256:v256,v256,c256
VOP3P   0x041 v_wmma_f32_16x16x16_bf16  v256:v256,v256,c256
VOP3P   0x042 v_wmma_f16_16x16x16_f16   v256:v256,v256,c256
VOP3P   0x044 v_wmma_i32_16x16x16_iu8   v256:v128,v128,c256
VOP3SD  0x2fe v_mad_u64_u32            u64,lane:u32,u32,u64
VOP3SD  0x2ff v_mad_i64_i32            i64,lane:i32,i32,i64
VOP3SD  0x2fc v_div_scale_f32          f32,lane:f32,f32,f32
VOP3SD  0x2fd v_div_scale_f64          f64,lane:f64,f64,f64
VOP3SD  0x300 v_add_co_u32             u32,lane:u32,u32
VOP3SD  0x301 v_sub_co_u32             u32,lane:u32,u32
VOP3SD  0x302 v_subrev_co_u32          u32,lane:u32,u32
GLOBAL  0x010 global_load_u8           v32:vaddr,saddr
GLOBAL  0x011 global_load_i8           v32:vaddr,saddr
GLOBAL  0x012 global_load_u16          v32:vaddr,saddr
GLOBAL  0x013 global_load_i16          v32:vaddr,saddr
GLOBAL  0x014 global_load_b32          v32:vaddr,saddr
GLOBAL  0x015 global_load_b64          v64:vaddr,saddr
GLOBAL  0x016 global_load_b96          v96:vaddr,saddr
GLOBAL  0x017 global_load_b128         v128:vaddr,saddr
GLOBAL  0x018 global_store_b8          :vaddr,v32,saddr
GLOBAL  0x019 global_store_b16         :vaddr,v32,saddr
GLOBAL  0x01a global_store_b32         :vaddr,v32,saddr
GLOBAL  0x01b global_store_b64         :vaddr,v64,saddr
GLOBAL  0x01c global_store_b96         :vaddr,v96,saddr
GLOBAL  0x01d global_store_b128        :vaddr,v128,saddr
FLAT    0x010 flat_load_u8             v32:v64
FLAT    0x011 flat_load_i8             v32:v64
FLAT    0x012 flat_load_u16            v32:v64
FLAT    0x013 flat_load_i16            v32:v64
FLAT    0x014 flat_load_b32            v32:v64
FLAT    0x015 flat_load_b64            v64:v64
FLAT    0x016 flat_load_b96            v96:v64
FLAT    0x017 flat_load_b128           v128:v64
FLAT    0x018 flat_store_b8            :v64,v32
FLAT    0x019 flat_store_b16           :v64,v32
FLAT    0x01a flat_store_b32           :v64,v32
FLAT    0x01b flat_store_b64           :v64,v64
FLAT    0x01c flat_store_b96           :v64,v96
FLAT    0x01d flat_store_b128          :v64,v128
SCRATCH 0x010 scratch_load_u8          v32:vaddr,saddr32
SCRATCH 0x011 scratch_load_i8          v32:vaddr,saddr32
SCRATCH 0x012 scratch_load_u16         v32:vaddr,saddr32
SCRATCH 0x013 scratch_load_i16         v32:vaddr,saddr32
SCRATCH 0x014 scratch_load_b32         v32:vaddr,saddr32
SCRATCH 0x015 scratch_load_b64         v64:vaddr,saddr32
SCRATCH 0x016 scratch_load_b96         v96:vaddr,saddr32
SCRATCH 0x017 scratch_load_b128        v128:vaddr,saddr32
SCRATCH 0x018 scratch_store_b8         :vaddr,v32,saddr32
SCRATCH 0x019 scratch_store_b16        :vaddr,v32,saddr32
SCRATCH 0x01a scratch_store_b32        :vaddr,v32,saddr32
SCRATCH 0x01b scratch_store_b64        :vaddr,v64,saddr32
SCRATCH 0x01c scratch_store_b96        :vaddr,v96,saddr32
SCRATCH 0x01d scratch_store_b128       :vaddr,v128,saddr32
GLOBAL  0x035 global_atomic_add_u32    :vaddr,v32,saddr
GLOBAL  0x056 global_atomic_add_f32    :vaddr,v32,saddr
DS      0x036 ds_load_b32              v32:v32
DS      0x076 ds_load_b64              v64:v32
DS      0x0fe ds_load_b96              v96:v32
DS      0x0ff ds_load_b128             v128:v32
DS      0x03a ds_load_u8               v32:v32
DS      0x039 ds_load_i8               v32:v32
DS      0x03c ds_load_u16              v32:v32
DS      0x03b ds_load_i16              v32:v32
DS      0x00d ds_store_b32             :v32,v32
DS      0x04d ds_store_b64             :v32,v64
DS      0x0de ds_store_b96             :v32,v96
DS      0x0df ds_store_b128            :v32,v128
DS      0x01e ds_store_b8              :v32,v32
DS      0x01f ds_store_b16             :v32,v32
DS      0x037 ds_load_2addr_b32        v64:v32 off2
DS      0x00e ds_store_2addr_b32       :v32,v32,v32 off2
DS      0x077 ds_load_2addr_b64        v128:v32 off2
DS      0x04e ds_store_2addr_b64       :v32,v64,v64 off2
DS      0x000 ds_add_u32               :v32,v32
DS      0x020 ds_add_rtn_u32           v32:v32,v32
DS      0x015 ds_add_f32               :v32,v32
DS      0x079 ds_add_rtn_f32           v32:v32,v32
DS      0x028 ds_max_rtn_u32           v32:v32,v32
DS      0x0b3 ds_bpermute_b32          v32:v32,v32
"""

ROWS: tuple[Row, ...] = parse_rows("gfx1100", TABLE)
