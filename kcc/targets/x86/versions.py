"""A kernel with non-temporal stores in two versions, and the entry that chooses one.

kcc/isel/x86/stream.py picks the stores; VMOVNTPS/VMOVNTPD/VMOVNTDQ fault (#GP) on an address
that is not aligned to the stored vector, and nothing guarantees the pointers a kernel is
called with are. Such a kernel is selected and allocated once, with the non-temporal stores;
`ordinary_version` is that same allocated code with each of them replaced by its ordinary
twin (VMOVUPS/VMOVUPD/VMOVDQU: the same operands, so the same registers and frame) and no
SFENCE; `assemble_versions` writes one function of both: a test of the streamed buffers' base
pointers, the streaming body, then the ordinary body. Every streamed address is the base
plus a multiple of its vector's bytes (the selector proved that), so an aligned base is all
the streaming body needs.
"""

from __future__ import annotations

from kcc.encode.x86.encoder import Imm as XImm
from kcc.encode.x86.encoder import Label as XLabel
from kcc.encode.x86.encoder import Mem as XMem
from kcc.encode.x86.encoder import Reg as XReg
from kcc.ir.mir import MFunction
from kcc.isel.x86.stream import ORDINARY
from kcc.record import replace
from kcc.targets.x86.code import LOOP_ALIGN, EncodedKernel, assemble_items, machine_code

PLAIN_ENTRY = ".Lkcc_plain_entry"


def ordinary_version(fn: MFunction) -> MFunction:
    """Allocated fn with ordinary stores for its non-temporal ones and without its SFENCE."""
    # copy.copy(fn), without importing copy (and dataclasses for replace: ~1 ms of a process's
    # first compile of such a kernel): a new instance holding the same attributes
    out = fn.__class__.__new__(fn.__class__)
    out.__dict__.update(fn.__dict__)
    out.insts = [replace(i, op=ORDINARY[i.op]) if i.op in ORDINARY else i
                 for i in fn.insts if i.op != "sfence"]
    return out


def _plain_label(name: str) -> str:
    """The ordinary body's name for a label of its own (.Lk_3 → .Lplaink_3: still local to
    the assembler, and no name of the streaming body looks like it)."""
    return ".Lplain" + name.removeprefix(".L")


def assemble_versions(fn: MFunction, locals_bytes: int,
                      checks: list[tuple[tuple, int]]) -> EncodedKernel:
    """One function: the entry ORs the base pointers of the buffers fn streams into (where
    the ABI passes them: a register, or [rsp + offset - 8] before the prologue pushes rbp)
    and tests the low bits of the widest streamed vector's alignment: all aligned → fn's
    body, else its ordinary version's. rax is free at entry (SysV §3.2.3 passes no argument
    in it but a varargs count)."""
    plain_fn = ordinary_version(fn)
    memo: dict[int, tuple] = {}         # (both functions alive: their Insts' ids stay theirs)
    items_s, saved, frame = machine_code(fn, locals_bytes, memo)
    items_p, _, _ = machine_code(plain_fn, locals_bytes, memo)
    mask = max(n for _, n in checks) - 1
    entry: list[tuple] = []
    for k, ((where, at), _) in enumerate(checks):
        src = XReg(at) if where == "reg" else XMem(8, "rsp", None, 1, at - 8)
        entry.append(("mov_r64_rm64" if k == 0 else "or_r64_rm64", XReg("rax"), src))
    entry += [("test_rm8_imm8", XReg("al"), XImm(mask)), ("jne_rel32", XLabel(PLAIN_ENTRY))]
    own = {it[1] for it in items_p if it[0] == "label"}
    plain = [("label", _plain_label(it[1])) if it[0] == "label" else
             tuple(XLabel(_plain_label(o.name)) if isinstance(o, XLabel) and o.name in own
                   else o for o in it)
             for it in items_p]
    # the ordinary body starts where a function would (its loop heads then get the padding
    # they get in a kernel of its own: the same bytes as --streaming-stores=never)
    items = entry + items_s + [("align", LOOP_ALIGN), ("label", PLAIN_ENTRY)] + plain
    return assemble_items(fn.name, items, frame, saved)
