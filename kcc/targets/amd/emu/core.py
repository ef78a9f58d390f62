"""A functional emulator of gfx1100 (RDNA3, wave32) and gfx942 (CDNA3, wave64) code objects.

It loads an HSACO the way the packet processor would (:mod:`kcc.targets.amd.hsaco_read`: the
kernel descriptor's entry, user/system SGPR enables and LDS size, the metadata's argument
layout), decodes ``.text`` with kcc's decoder (:mod:`kcc.encode.amd`) and executes each
workgroup's waves: SGPRs, VGPRs, EXEC/VCC/SCC, LDS shared by the waves of a workgroup,
``s_barrier`` across them, global memory as numpy buffers and, for a kernel whose descriptor
enables the private segment, each work-item's own scratch memory of PRIVATE_SEGMENT_FIXED_SIZE
bytes (scratch instructions address it from 0). Timing is not modelled;
``s_waitcnt`` is checked instead: reading or overwriting a register a load has not yet
written back (no ``s_waitcnt`` covering it) is an error, as it would be a race on hardware.
So is, on gfx942, a VALU instruction writing a data VGPR of the VMEM store of more than
8 bytes just before it (CDNA3's software wait state: the store may not have read its data
yet; the one data hazard kcc's code could hit, kcc/isel/amd/lower.py ``store_hazards``).

Instruction meanings live in :mod:`kcc.targets.amd.emu.ops` (scalar, memory, control) and
:mod:`kcc.targets.amd.emu.valu` (vector ALU; its 16-bit ops in
:mod:`kcc.targets.amd.emu.valu16`, division helpers in :mod:`kcc.targets.amd.emu.valu_div`,
frexp and a few more in :mod:`kcc.targets.amd.emu.valu_more`;
LDS atomics in :mod:`kcc.targets.amd.emu.lds_atomics`; the matrix ops v_wmma_* / v_mfma_* in
:mod:`kcc.targets.amd.emu.matrix`), from the RDNA3 and CDNA3 ISA manuals. An
instruction they do not know is an :class:`EmuError` naming it and its address.

Initial state (AMDGPUUsage "Initial Kernel Execution State"): user SGPRs from s0 in the
descriptor's order (dispatch ptr, queue ptr, kernarg segment ptr, dispatch id), then from
``s[USER_SGPR_COUNT]`` the enabled workgroup ids x, y, z; work-item ids packed in v0
(x bits 9:0, y 19:10, z 29:20) on both processors (GFX11, and gfx90a+ "packed work-item
IDs"); EXEC holds the lanes that are work-items.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from kcc.encode.amd.operands import SGPR, VGPR, FloatImm, Imm, Inst, Operand, Special
from kcc.targets.amd.hsaco_read import Hsaco, HsacoKernel, read_hsaco

MAX_STEPS = 20_000_000

# Special scalar operands (RDNA3 ISA §3.3/§7.3 and CDNA3 ISA §3.4/§4.4 "Scalar operands").
SPECIAL: dict[str, dict[str, int]] = {
    "gfx11": {"vcc_lo": 106, "vcc_hi": 107, "null": 124, "m0": 125, "exec_lo": 126,
              "exec_hi": 127},
    "gfx9": {"flat_scratch_lo": 102, "flat_scratch_hi": 103, "xnack_mask_lo": 104,
             "xnack_mask_hi": 105, "vcc_lo": 106, "vcc_hi": 107, "m0": 124, "exec_lo": 126,
             "exec_hi": 127},
}
PAIRS = {"vcc": "vcc_lo", "exec": "exec_lo", "flat_scratch": "flat_scratch_lo",
         "xnack_mask": "xnack_mask_lo"}
FAMILY = {"gfx1100": "gfx11", "gfx942": "gfx9"}
WAVE = {"gfx1100": 32, "gfx942": 64}


class EmuError(RuntimeError):
    """The program did something the emulator refuses: an unknown instruction, a memory
    fault, a use of a loaded register before its s_waitcnt, an endless loop."""


def float_bits(value: float, width: int) -> int:
    """The bit pattern of an inline float constant as a ``width``-bit operand."""
    if width == 16:
        return int(np.array(value, np.float16).view(np.uint16))
    if width == 64:
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    return struct.unpack("<I", struct.pack("<f", value))[0]


class Memory:
    """Global memory: buffers at distinct addresses (each 256-byte aligned, with a gap)."""

    def __init__(self) -> None:
        self.bases: list[int] = []
        self.bufs: list[np.ndarray] = []
        self._next = 0x1_0000_0000

    def alloc(self, data: bytes | np.ndarray | int) -> int:
        """Place a copy of ``data`` (or that many zero bytes) in memory; its address."""
        if isinstance(data, int):
            buf = np.zeros(data, np.uint8)
        else:
            buf = np.frombuffer(bytes(data) if isinstance(data, (bytes, bytearray))
                                else np.ascontiguousarray(data).tobytes(), np.uint8).copy()
        addr = self._next
        self._next = (addr + max(len(buf), 1) + 0x1FF) // 256 * 256
        self.bases.append(addr)
        self.bufs.append(buf)
        return addr

    def view(self, addr: int) -> np.ndarray:
        """The bytes of the buffer that starts at ``addr``."""
        return self.bufs[self.bases.index(addr)]

    def _locate(self, addrs: np.ndarray, size: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        bases = np.asarray(self.bases, np.uint64)
        idx = np.searchsorted(bases, addrs, side="right").astype(np.int64) - 1
        ok = idx >= 0
        off = np.where(ok, addrs - bases[np.maximum(idx, 0)], 0).astype(np.int64)
        lens = np.asarray([len(b) for b in self.bufs], np.int64)[np.maximum(idx, 0)]
        ok &= off + size <= lens
        if not ok.all():
            bad = int(addrs[~ok][0])
            raise EmuError(f"{what}: {size}-byte access at {bad:#x} is outside every buffer")
        return idx, off

    def read(self, addrs: np.ndarray, size: int, what: str) -> np.ndarray:
        """Bytes ``[n, size]`` at each address."""
        addrs = np.asarray(addrs, np.uint64)
        idx, off = self._locate(addrs, size, what)
        out = np.empty((len(addrs), size), np.uint8)
        for i in np.unique(idx):
            sel = idx == i
            out[sel] = self.bufs[i][off[sel, None] + np.arange(size)]
        return out

    def write(self, addrs: np.ndarray, data: np.ndarray, what: str) -> None:
        """Store rows of ``data`` ``[n, size]`` at each address, in lane order."""
        addrs = np.asarray(addrs, np.uint64)
        size = data.shape[1]
        idx, off = self._locate(addrs, size, what)
        for i in np.unique(idx):
            sel = idx == i
            self.bufs[i][off[sel, None] + np.arange(size)] = data[sel]


@dataclass(eq=False)
class Pending:
    """A load whose destination registers are not written back until an s_waitcnt."""

    counter: str  # "vm" or "lgkm"
    pc: int
    smem: bool
    regs: frozenset = field(default_factory=frozenset)


class Wave:
    """One wave's architectural state."""

    def __init__(self, arch: str, nvgpr: int, lanes: int) -> None:
        self.arch, self.fam, self.lanes = arch, FAMILY[arch], lanes
        self.s = np.zeros(128, np.uint32)
        self.v = np.zeros((max(nvgpr, 1), lanes), np.uint32)
        self.scc = 0
        self.pc = 0
        self.next_pc = 0
        self.done = False
        self.at_barrier = False
        self.pending: list[Pending] = []
        self.inst: Inst | None = None
        self.ieee = True  # COMPUTE_PGM_RSRC1.ENABLE_IEEE_MODE
        self.scratch: np.ndarray | None = None  # [lane, byte]: each work-item's private segment
        self.store_data: VGPR | None = None     # gfx942: the data of a >8-byte store just run

    # --- scalar registers ---------------------------------------------------------------
    def sindex(self, op: Operand) -> int:
        """The register-file index of a scalar operand."""
        if isinstance(op, SGPR):
            return op.index
        if isinstance(op, Special):
            name = PAIRS.get(op.name, op.name)
            if name in SPECIAL[self.fam]:
                return SPECIAL[self.fam][name]
        raise self.error(f"operand {op} is not a scalar register")

    def sread(self, op: Operand, dwords: int = 1, width: int = 32) -> int:
        """A scalar operand's value as an unsigned integer of ``dwords`` dwords."""
        bits = 32 * dwords
        if isinstance(op, Imm):
            return op.value & ((1 << bits) - 1)
        if isinstance(op, FloatImm):
            return float_bits(op.value, 64 if dwords == 2 else width)
        if isinstance(op, Special) and op.name in ("scc", "vccz", "execz"):
            if op.name == "scc":
                return self.scc
            return int(self.mask_value("vcc" if op.name == "vccz" else "exec") == 0)
        if isinstance(op, Special) and op.name == "null":
            return 0
        i = self.sindex(op)
        self.check_pending(("s", i, dwords))
        val = 0
        for k in range(dwords):
            val |= int(self.s[i + k]) << (32 * k)
        return val

    def swrite(self, op: Operand, value: int, dwords: int = 1) -> None:
        """Write a scalar destination (``null`` discards)."""
        if isinstance(op, Special) and op.name == "null":
            return
        i = self.sindex(op)
        self.check_pending(("s", i, dwords))
        for k in range(dwords):
            self.s[i + k] = (value >> (32 * k)) & 0xFFFFFFFF

    # --- lane masks ---------------------------------------------------------------------
    def mask_value(self, name: str) -> int:
        """EXEC or VCC as an integer (wave32: the low dword only)."""
        lo = SPECIAL[self.fam][name + "_lo"]
        v = int(self.s[lo])
        if self.lanes == 64:
            v |= int(self.s[lo + 1]) << 32
        return v

    def bits(self, value: int) -> np.ndarray:
        """A lane mask integer as a bool array over the lanes."""
        raw = np.frombuffer(value.to_bytes(8, "little"), np.uint8)
        return np.unpackbits(raw, bitorder="little")[:self.lanes].astype(bool)

    @staticmethod
    def mask_int(lanes: np.ndarray) -> int:
        """A bool array over the lanes as a lane-mask integer."""
        return int.from_bytes(np.packbits(lanes, bitorder="little").tobytes(), "little")

    @property
    def exec(self) -> np.ndarray:
        """The active lanes."""
        return self.bits(self.mask_value("exec"))

    def set_exec(self, value: int) -> None:
        self.swrite(Special("exec" if self.lanes == 64 else "exec_lo"), value,
                    2 if self.lanes == 64 else 1)

    def mask_operand_read(self, op: Operand) -> np.ndarray:
        """A lane-mask source (VCC, an SGPR or SGPR pair) as bools."""
        return self.bits(self.sread(op, 2 if self.lanes == 64 else 1))

    def mask_operand_write(self, op: Operand, lanes: np.ndarray) -> None:
        """Write a lane mask: active lanes get ``lanes``, inactive ones 0 (RDNA3 §6.1 /
        CDNA3 §6.3: VOPC and carry-out results of disabled lanes are zero)."""
        self.swrite(op, self.mask_int(lanes & self.exec), 2 if self.lanes == 64 else 1)

    # --- vector registers ---------------------------------------------------------------
    def vread(self, op: Operand, width: int = 32, is_float: bool = False) -> np.ndarray:
        """A VALU source per lane: uint32 (``width`` 16/32) or uint64 (``width`` 64);
        scalars and constants are broadcast. Inline ints sign-extend to 64 bits; a float
        inline constant is the operand type's encoding; a 32-bit literal of a 64-bit float
        operand is its high dword."""
        if isinstance(op, VGPR):
            n = 2 if width == 64 else 1
            if op.index + n > self.v.shape[0]:
                raise self.error(f"{op} is past the {self.v.shape[0]} VGPRs the kernel has")
            self.check_pending(("v", op.index, n))
            if width == 64:
                return (self.v[op.index].astype(np.uint64)
                        | self.v[op.index + 1].astype(np.uint64) << np.uint64(32))
            return self.v[op.index].copy()
        if width == 64:
            if isinstance(op, Imm):
                v = op.value
                if v > 64 and is_float:
                    v <<= 32  # 32-bit literal of an f64 operand: the high dword
                val = v & (2 ** 64 - 1)
            elif isinstance(op, FloatImm):
                val = float_bits(op.value, 64)
            else:
                val = self.sread(op, 2)
            return np.full(self.lanes, val, np.uint64)
        return np.full(self.lanes, self.sread(op, 1, width), np.uint32)

    def vwrite(self, op: Operand, values: np.ndarray, width: int = 32,
               lanes: np.ndarray | None = None) -> None:
        """Write a VGPR (pair, for ``width`` 64) in the active lanes (or ``lanes``)."""
        if not isinstance(op, VGPR):
            raise self.error(f"destination {op} is not a VGPR")
        n = max(1, width // 32)
        if op.index + n > self.v.shape[0]:
            raise self.error(f"{op} is past the {self.v.shape[0]} VGPRs the kernel has")
        self.check_pending(("v", op.index, n))
        m = self.exec if lanes is None else lanes
        vals = np.asarray(values)
        if width == 64:
            vals = vals.astype(np.uint64)
            self.v[op.index, m] = (vals & np.uint64(0xFFFFFFFF)).astype(np.uint32)[m]
            self.v[op.index + 1, m] = (vals >> np.uint64(32)).astype(np.uint32)[m]
        else:
            self.v[op.index, m] = vals.astype(np.uint32)[m]

    # --- s_waitcnt checking -------------------------------------------------------------
    def check_pending(self, reg: tuple[str, int, int]) -> None:
        kind, index, n = reg
        if not self.pending:
            return
        want = {(kind, index + k) for k in range(n)}
        for p in self.pending:
            if want & p.regs:
                name = f"{kind}{index}" if n == 1 else f"{kind}[{index}:{index + n - 1}]"
                raise self.error(f"{name} is used before an s_waitcnt for the load at "
                                 f"{p.pc:#x} that writes it")

    def issue_load(self, counter: str, regs: set[tuple[str, int]], smem: bool = False) -> None:
        """Record a load whose destinations stay pending until s_waitcnt."""
        self.pending.append(Pending(counter, self.pc, smem, frozenset(regs)))

    def issue_other(self, counter: str) -> None:
        """A memory operation that counts on ``counter`` but writes no register (a store):
        it matters only while an older load of the same counter is outstanding."""
        if any(p.counter == counter for p in self.pending):
            self.pending.append(Pending(counter, self.pc, False))

    def _trim(self) -> None:
        # Register-less entries older than every load of their counter change no later
        # s_waitcnt's outcome (waits retire the oldest first), so they go.
        keep, seen = [], set()
        for p in self.pending:
            if p.regs:
                seen.add(p.counter)
            if p.regs or p.counter in seen:
                keep.append(p)
        self.pending = keep

    def wait(self, counter: str, n: int) -> None:
        """s_waitcnt COUNTER(n): at most ``n`` operations of the counter stay outstanding.
        VM operations return in order; scalar loads may return out of order, so a
        nonzero lgkmcnt retires none of them (RDNA3 §4.5, CDNA3 §4.4)."""
        mine = [p for p in self.pending if p.counter == counter]
        done = mine[:max(0, len(mine) - n)]
        if counter == "lgkm" and n > 0:
            done = [p for p in done if not p.smem]
        self.pending = [p for p in self.pending if p not in done]
        self._trim()

    def error(self, msg: str) -> EmuError:
        what = f" ({self.inst.name})" if self.inst is not None else ""
        return EmuError(f"at {self.pc:#x}{what}: {msg}")


Semantic = Callable[[Wave, Inst, "Workgroup"], None]


@dataclass
class Workgroup:
    """What the waves of one workgroup share."""

    lds: np.ndarray
    memory: Memory


def _semantics() -> dict[str, Semantic]:
    from kcc.targets.amd.emu.ops import SCALAR_OPS
    from kcc.targets.amd.emu.valu import VECTOR_OPS
    # these register their ops in SCALAR_OPS / VECTOR_OPS
    import kcc.targets.amd.emu.lds_atomics  # noqa: F401
    import kcc.targets.amd.emu.matrix  # noqa: F401
    import kcc.targets.amd.emu.valu16  # noqa: F401
    import kcc.targets.amd.emu.valu_div  # noqa: F401
    import kcc.targets.amd.emu.valu_more  # noqa: F401
    import kcc.targets.amd.emu.valu_pk  # noqa: F401
    return {**SCALAR_OPS, **VECTOR_OPS}


_SEM: dict[str, Semantic] | None = None

# Rows of the AMD tables (kcc/encode/amd/gfx11.py, gfx9.py) the emulator has no semantics for
# (none: every row is emulated). tests/targets/amd/emu/test_row_coverage.py keeps this set
# exact, so a row added without semantics fails there.
UNEMULATED: frozenset[str] = frozenset()


def base_name(name: str) -> str:
    """The mnemonic without LLVM's ``_e32``/``_e64`` encoding suffix."""
    for suf in ("_e32", "_e64"):
        if name.endswith(suf):
            return name[:-len(suf)]
    return name


def execute(wave: Wave, inst: Inst, wg: Workgroup) -> None:
    """Execute one instruction (the caller has set ``wave.pc`` and ``wave.next_pc``)."""
    global _SEM
    if _SEM is None:
        _SEM = _semantics()
    if wave.store_data is not None:
        _store_hazard(wave, inst)
    wave.inst = inst
    sem = _SEM.get(base_name(inst.name))
    if sem is None:
        raise EmuError(f"at {wave.pc:#x}: instruction {inst.name} is not supported by the "
                       "emulator")
    sem(wave, inst, wg)
    if wave.fam == "gfx9" and inst.name.startswith(_WIDE_STORES):
        wave.store_data = inst.ops[1]             # (vaddr, data, saddr)


#: VMEM stores with more than 8 bytes of data (gfx9 spellings)
_WIDE_STORES = tuple(f"{seg}_store_dwordx{n}" for seg in ("global", "scratch", "flat", "buffer")
                     for n in (3, 4))


def _store_hazard(wave: Wave, inst: Inst) -> None:
    """The instruction right after a >8-byte VMEM store on gfx942: a VALU write of the store's
    data VGPRs is an error (the CDNA3 ISA's manually inserted wait states: 1; LLVM's
    has12DWordStoreHazard)."""
    data, wave.store_data = wave.store_data, None
    d = inst.ops[0] if inst.ops else None
    if inst.name.startswith("v_") and isinstance(d, VGPR) and isinstance(data, VGPR) and \
            d.index < data.index + data.count and data.index < d.index + d.count:
        raise EmuError(f"at {wave.pc:#x} ({inst.name}): writes {d}, data of the store of more "
                       "than 8 bytes just before it, with no wait state between (gfx942 "
                       "hazard)")


@dataclass
class Launch:
    """One kernel launch: its grid (workgroups per dimension) and workgroup size."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def _dims(v: int | tuple[int, ...], what: str) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3 or any(not isinstance(x, (int, np.integer)) or x < 0 for x in t):
        raise ValueError(f"{what} must be 1 to 3 integers >= 0, got {v!r}")
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))  # type: ignore


def _kernarg_segment(k: HsacoKernel, args: list, mem: Memory, launch: Launch,
                     buffers: list[tuple[np.ndarray, int]]) -> bytes:
    """Lay out the kernarg segment from the metadata's ``.args``: explicit arguments from
    ``args`` in order, hidden ones the loader provides (AMDGPUUsage "Code Object V5
    Metadata", hidden_block_count_*, hidden_group_size_*, hidden_remainder_*,
    hidden_grid_dims; any other hidden argument is zero)."""
    size = int(k.metadata.get(".kernarg_segment_size", k.descriptor.kernarg_size))
    seg = bytearray(max(size, k.descriptor.kernarg_size))
    explicit = [a for a in k.metadata.get(".args", [])
                if not str(a.get(".value_kind", "")).startswith("hidden_")]
    if len(args) != len(explicit):
        raise ValueError(f"kernel {k.name!r} takes {len(explicit)} arguments, got {len(args)}")
    for meta, val in zip(explicit, args):
        off, sz, kind = meta[".offset"], meta[".size"], meta[".value_kind"]
        if kind == "global_buffer":
            if not isinstance(val, np.ndarray) or not val.flags.c_contiguous:
                raise ValueError(f"argument {meta.get('.name', off)!r} is a buffer; pass a "
                                 "C-contiguous numpy array")
            addr = mem.alloc(val)
            buffers.append((val, addr))
            seg[off:off + 8] = struct.pack("<Q", addr)
        elif kind == "by_value":
            raw = np.asarray(val).tobytes() if isinstance(val, (np.ndarray, np.generic)) \
                else (struct.pack("<d" if sz == 8 else "<f", val) if isinstance(val, float)
                      else int(val).to_bytes(sz, "little", signed=int(val) < 0))
            if len(raw) != sz:
                raise ValueError(f"argument {meta.get('.name', off)!r} is {sz} bytes, got "
                                 f"{len(raw)}")
            seg[off:off + sz] = raw
        else:
            raise ValueError(f"argument kind {kind!r} is not supported by the emulator")
    for meta in k.metadata.get(".args", []):
        kind, off = str(meta.get(".value_kind", "")), meta[".offset"]
        for axis, c in enumerate("xyz"):
            if kind == f"hidden_block_count_{c}":
                seg[off:off + 4] = struct.pack("<I", launch.grid[axis])
            elif kind == f"hidden_group_size_{c}":
                seg[off:off + 2] = struct.pack("<H", launch.block[axis])
        if kind == "hidden_grid_dims":
            dims = 3 if launch.grid[2] * launch.block[2] > 1 else \
                2 if launch.grid[1] * launch.block[1] > 1 else 1
            seg[off:off + 2] = struct.pack("<H", dims)
    return bytes(seg)


def _dispatch_packet(launch: Launch, k: HsacoKernel, kernarg: int) -> bytes:
    """An hsa_kernel_dispatch_packet_t (HSA runtime spec §2.9.6): sizes and kernarg."""
    g = [launch.grid[i] * launch.block[i] for i in range(3)]
    dims = 3 if g[2] > 1 else 2 if g[1] > 1 else 1
    return struct.pack("<HHHHHHIIIIIQQQQ", 0, dims, *launch.block, 0, *g,
                       k.descriptor.private_segment_size, k.descriptor.group_segment_size,
                       0, kernarg, 0, 0)


def run_hsaco(hsaco: str | os.PathLike | bytes, kernel: str, args: list, grid, block) -> None:
    """Run ``kernel`` of an HSACO (a path or its bytes) on ``grid`` workgroups (1-3 counts)
    of ``block`` work-items (a dimension of 0 launches nothing). Buffer arguments are numpy
    arrays, updated in place with what the kernel stored; scalars are Python or numpy
    numbers, written with the size the metadata gives."""
    data = hsaco if isinstance(hsaco, (bytes, bytearray)) else open(hsaco, "rb").read()
    obj = read_hsaco(data)
    if kernel not in obj.kernels:
        raise ValueError(f"no kernel {kernel!r} in the code object (has "
                         f"{', '.join(obj.kernels) or 'none'})")
    launch = Launch(_dims(grid, "grid"), _dims(block, "block"))
    if 0 in launch.grid or 0 in launch.block:
        return
    run_kernel(obj, obj.kernels[kernel], args, launch)


def _start_wave(obj: Hsaco, k: HsacoKernel, nvgpr: int, user: dict[str, int],
                group: tuple[int, int, int], first: int, launch: Launch) -> Wave:
    """A wave's initial state (AMDGPUUsage "Initial Kernel Execution State")."""
    d = k.descriptor
    lanes = WAVE[obj.arch]
    wave = Wave(obj.arch, nvgpr, lanes)
    wave.ieee = bool(d.rsrc1 >> 23 & 1)
    sgpr = 0
    for name in d.user_sgprs():
        if name not in user:
            raise EmuError(f"kernel {k.name!r}: user SGPR input {name} is not emulated")
        wave.s[sgpr], wave.s[sgpr + 1] = user[name] & 0xFFFFFFFF, user[name] >> 32
        sgpr += 2
    sgpr = d.user_sgpr_count  # system SGPRs follow USER_SGPR_COUNT, not the enables
    for on, gid in zip(d.workgroup_ids, group):
        if on:
            wave.s[sgpr] = gid
            sgpr += 1
    if d.workgroup_info:
        wave.s[sgpr] = 0
    bx, by, _ = launch.block
    nthreads = bx * by * launch.block[2]
    t = np.arange(first, first + lanes)
    packed = (t % bx).astype(np.uint32)
    if d.workitem_ids >= 1:
        packed |= ((t // bx) % by).astype(np.uint32) << 10
    if d.workitem_ids >= 2:
        packed |= (t // (bx * by)).astype(np.uint32) << 20
    wave.v[0] = np.where(t < nthreads, packed, 0)
    wave.set_exec((1 << min(lanes, nthreads - first)) - 1)
    wave.pc = k.code_addr
    return wave


class _Fetch:
    """Decodes .text on demand, once per address."""

    def __init__(self, obj: Hsaco, kernel: str) -> None:
        self.obj, self.kernel = obj, kernel
        self.cache: dict[int, tuple[Inst, int]] = {}

    def __call__(self, pc: int) -> tuple[Inst, int]:
        from kcc.encode.amd import decode
        hit = self.cache.get(pc)
        if hit is None:
            obj = self.obj
            if not obj.text_addr <= pc < obj.text_addr + len(obj.text):
                raise EmuError(f"kernel {self.kernel!r}: jumped to {pc:#x}, outside .text")
            try:
                hit = decode(obj.arch, obj.text, pc - obj.text_addr, obj.text_addr)
            except ValueError as e:
                raise EmuError(f"at {pc:#x}: cannot decode: {e}") from None
            self.cache[pc] = hit
        return hit


def _run_workgroup(waves: list[Wave], wg: Workgroup, fetch: _Fetch, budget: list[int]) -> None:
    """Run each wave until it ends or waits at s_barrier; release the barrier when every
    wave that has not ended waits there."""
    from kcc.targets.amd.emu import counters
    if counters.active is not None:
        _run_counted(waves, wg, fetch, budget, counters.active)
        return
    while True:
        live = [w for w in waves if not w.done]
        if not live:
            return
        for wave in live:
            while not wave.done and not wave.at_barrier:
                inst, size = fetch(wave.pc)
                wave.next_pc = wave.pc + size
                execute(wave, inst, wg)
                wave.pc = wave.next_pc
                budget[0] -= 1
                if budget[0] < 0:
                    raise EmuError(f"kernel {fetch.kernel!r}: more than {MAX_STEPS} "
                                   "instructions; an endless loop?")
        for w in waves:
            w.at_barrier = False


def _run_counted(waves: list[Wave], wg: Workgroup, fetch: _Fetch, budget: list[int],
                 counts: dict[str, int]) -> None:
    """_run_workgroup's loop with each executed instruction counted by class (a separate
    loop so the uncounted one pays nothing; kcc.targets.amd.emu.counters)."""
    from kcc.targets.amd.emu.counters import classify
    kinds: dict[int, str] = {}
    while True:
        live = [w for w in waves if not w.done]
        if not live:
            return
        for wave in live:
            while not wave.done and not wave.at_barrier:
                inst, size = fetch(wave.pc)
                kind = kinds.get(wave.pc)
                if kind is None:
                    kind = kinds[wave.pc] = classify(inst.name)
                counts[kind] += 1
                wave.next_pc = wave.pc + size
                execute(wave, inst, wg)
                wave.pc = wave.next_pc
                budget[0] -= 1
                if budget[0] < 0:
                    raise EmuError(f"kernel {fetch.kernel!r}: more than {MAX_STEPS} "
                                   "instructions; an endless loop?")
        for w in waves:
            w.at_barrier = False


def run_kernel(obj: Hsaco, k: HsacoKernel, args: list, launch: Launch) -> None:
    """Launch ``k`` of ``obj``; see :func:`run_hsaco`."""
    d = k.descriptor
    lanes = WAVE[obj.arch]
    if (lanes == 32) != d.wave32:
        raise EmuError(f"kernel {k.name!r}: descriptor wave size does not match {obj.arch}")
    if d.private_segment_size and not d.private_segment:
        raise EmuError(f"kernel {k.name!r}: a private segment of {d.private_segment_size} "
                       "bytes, but ENABLE_PRIVATE_SEGMENT is off")
    nthreads = launch.block[0] * launch.block[1] * launch.block[2]
    limit = int(k.metadata.get(".max_flat_workgroup_size", 1024))
    if nthreads > limit:
        raise ValueError(f"block of {nthreads} work-items exceeds the kernel's "
                         f"max_flat_workgroup_size {limit}")
    mem = Memory()
    buffers: list[tuple[np.ndarray, int]] = []
    kernarg = mem.alloc(_kernarg_segment(k, args, mem, launch, buffers))
    user = {"dispatch_ptr": mem.alloc(_dispatch_packet(launch, k, kernarg)),
            "queue_ptr": mem.alloc(256), "kernarg_segment_ptr": kernarg, "dispatch_id": 0}
    nvgpr = int(k.metadata.get(".vgpr_count", 256))
    fetch = _Fetch(obj, k.name)
    budget = [MAX_STEPS]
    for gz in range(launch.grid[2]):
        for gy in range(launch.grid[1]):
            for gx in range(launch.grid[0]):
                wg = Workgroup(np.zeros(d.group_segment_size, np.uint8), mem)
                waves = [_start_wave(obj, k, nvgpr, user, (gx, gy, gz), first, launch)
                         for first in range(0, nthreads, lanes)]
                if d.private_segment:
                    for w in waves:
                        # a fresh segment per work-item; its bytes start as a pattern, not
                        # zeros, so a read of a never-written slot shows
                        w.scratch = np.full((lanes, d.private_segment_size), 0xA5, np.uint8)
                _run_workgroup(waves, wg, fetch, budget)
    for arr, addr in buffers:
        arr.reshape(-1).view(np.uint8)[:] = mem.view(addr)[:arr.nbytes]
