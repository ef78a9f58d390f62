"""AMD assembly writer: one LLVM-syntax `.s` file for the kernels of a code object.

The file carries everything `kcc.targets.amd.hsaco` puts in the object, written as the
directives LLVM's AMDGPU assembler reads (AMDGPUUsage "AMDHSA Code Object Target
Identification", "Code Object V5 Metadata", ".amdhsa_kernel"): the instructions, a full
`.amdhsa_kernel` block per kernel and the `.amdgpu_metadata` YAML. Assembled by
`llvm-mc -filetype=obj` and linked by `ld.lld -shared`, it gives a code object built
independently of kcc's own writer, whose `.text` and descriptors the tests compare.
"""

from __future__ import annotations

from kcc.targets.amd.hsaco import AmdArch, AmdKernel, accum_offset, arch_info, code_object_metadata


def _yaml_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    # Tagged, so that a name like `n` or `on` stays a string: LLVM's YAML reader infers a
    # scalar's type from its text (quotes included), and YAML 1.1 reads `n` as a bool.
    text = str(value)
    if not text.isprintable() or text != text.strip() or "'" in text:
        raise ValueError(f"metadata string {text!r} cannot be written in YAML")
    return f"!str '{text}'"


def _yaml(value: object, indent: int) -> list[str]:
    """Block-style YAML for maps of scalars, lists and maps (the metadata's shapes)."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:")
                lines += _yaml(item, indent + 2)
            elif isinstance(item, list):
                lines.append(f"{pad}{key}: []")
            else:
                lines.append(f"{pad}{key}: {_yaml_scalar(item)}")
    else:
        assert isinstance(value, list)
        for item in value:
            if isinstance(item, (dict, list)):
                sub = _yaml(item, indent + 2)
                lines.append(f"{pad}- {sub[0].lstrip()}")
                lines += sub[1:]
            else:
                lines.append(f"{pad}- {_yaml_scalar(item)}")
    return lines


def _kernel_block(k: AmdKernel, arch: AmdArch) -> list[str]:
    """The `.amdhsa_kernel` directives that give the descriptor kcc writes."""
    d: list[tuple[str, int]] = [
        ("group_segment_fixed_size", k.group_segment_size),
        ("private_segment_fixed_size", k.private_segment_size),
        ("kernarg_size", k.kernarg_size),
        ("user_sgpr_count", k.user_sgpr_count),
        ("user_sgpr_dispatch_ptr", int(k.dispatch_ptr)),
        ("user_sgpr_queue_ptr", int(k.queue_ptr)),
        ("user_sgpr_kernarg_segment_ptr", int(k.kernarg_segment_ptr)),
        ("user_sgpr_dispatch_id", int(k.dispatch_id)),
        ("user_sgpr_private_segment_size", 0),
    ]
    if arch.wave_size == 32:
        d.append(("wavefront_size32", 1))
    d += [
        ("uses_dynamic_stack", 0),
        ("enable_private_segment", int(k.private_segment_size > 0)),
        ("system_sgpr_workgroup_id_x", int(k.workgroup_ids[0])),
        ("system_sgpr_workgroup_id_y", int(k.workgroup_ids[1])),
        ("system_sgpr_workgroup_id_z", int(k.workgroup_ids[2])),
        ("system_sgpr_workgroup_info", 0),
        ("system_vgpr_workitem_id", k.workitem_ids),
        ("next_free_vgpr", k.next_free_vgpr),
        ("next_free_sgpr", k.next_free_sgpr),
    ]
    if arch.family == "cdna3":
        d += [("accum_offset", accum_offset(k)), ("reserve_vcc", int(k.uses_vcc)),
              ("reserve_xnack_mask", 1)]
    else:
        d.append(("reserve_vcc", int(k.uses_vcc)))
    d += [("float_round_mode_32", 0), ("float_round_mode_16_64", 0),
          ("float_denorm_mode_32", 3), ("float_denorm_mode_16_64", 3),
          ("dx10_clamp", 1), ("ieee_mode", 1), ("fp16_overflow", 0)]
    if arch.family == "cdna3":
        d.append(("tg_split", 0))
    else:
        d += [("workgroup_processor_mode", 1), ("memory_ordered", 1),
              ("forward_progress", 0), ("shared_vgpr_count", 0)]
    d += [(f"exception_{e}", 0) for e in (
        "fp_ieee_invalid_op", "fp_denorm_src", "fp_ieee_div_zero", "fp_ieee_overflow",
        "fp_ieee_underflow", "fp_ieee_inexact", "int_div_zero")]
    return ([f"\t.amdhsa_kernel {k.name}"] + [f"\t\t.amdhsa_{key} {val}" for key, val in d]
            + ["\t.end_amdhsa_kernel"])


def write_asm(kernels: list[AmdKernel], arch: str) -> str:
    """The assembly text for ``kernels`` on ``arch``; each kernel's ``asm`` holds its
    instruction lines."""
    info = arch_info(arch)
    out = [f'\t.amdgcn_target "{info.target_id}"', "\t.amdhsa_code_object_version 5"]
    for i, k in enumerate(kernels):
        if not k.asm:
            raise ValueError(f"kernel {k.name!r} has no instruction text to write")
        out += ["\t.text", f"\t.globl {k.name}", "\t.p2align 8", f"\t.type {k.name},@function",
                f"{k.name}:"]
        out += [f"\t{line}" for line in k.asm]
        out += [f".Lfunc_end{i}:", f"\t.size {k.name}, .Lfunc_end{i}-{k.name}",
                "\t.section .rodata,\"a\",@progbits", "\t.p2align 6, 0x0"]
        out += _kernel_block(k, info)
    align_log2 = info.text_align.bit_length() - 1
    out += ["\t.text", f"\t.p2alignl {align_log2}, {info.fill}",
            f"\t.fill {info.text_tail // 4}, 4, {info.fill}"]
    out += ["\t.amdgpu_metadata", "---"]
    out += _yaml(code_object_metadata(kernels, info), 0)
    out += ["...", "\t.end_amdgpu_metadata", ""]
    return "\n".join(out)
