"""The gidx worker loop of an x86 launch, in machine code: one native call per thread runs a
range of workers, instead of one Python call (~50 µs) per worker.

    loop = WorkerLoop(fn_address, arg_kinds, arg_values, dims)    # per launch
    loop.run(start, end)          # calls the kernel for flat worker indices start..end-1
    launch(obj, desc, args)       # a whole launch: the workers split over threads

The loop is a small stub assembled with kcc's own x86 encoder (kcc.encode.x86.encoder's
Assembler) into an executable page of its own; the kernel object's bytes are not changed. The
launch's arguments are constants of the stub (`movabs`), placed where the System V AMD64 ABI
(§3.2.3) puts them: INTEGER-class arguments (pointers, integers, bool, float16/bfloat16 bits)
in rdi, rsi, rdx, rcx, r8, r9, SSE-class ones (float32, float64) in xmm0-xmm7, the rest on
the stack in order, 8 bytes each, the first at [rsp+8] on entry. The worker indices are the
kernel's last int arguments (gidx0, gidx1, gidx2 in name order:
kcc.targets.manifest.worker_names); a flat index i is split as itertools.product orders them
(the last varies fastest): w[k] = (i / prod(dims[k+1:])) % dims[k].

The encoder's table has no indirect call (kcc's kernels call nothing), so the stub calls the
kernel by pushing the return address and the kernel's address and executing `ret` (the
kernel's own `ret` comes back): stack depth and alignment are exactly those of a `call`
(rsp + 8 aligned to 16 on entry); the cost is a return-predictor miss per worker.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from typing import Any

from kcc.encode.x86.encoder import Assembler, Imm, Label, Mem, Reg

INT_REGS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")
INT_REGS32 = ("edi", "esi", "edx", "ecx", "r8d", "r9d")
SSE_REGS = 8
# callee-saved registers the stub keeps its state in: the flat index, the end, the workers
_I, _END, _W = "rbx", "r12", ("r14", "r15", "rbp")
_SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")


def _bits(kind: str, value: Any) -> int:
    """An argument's 64-bit register image: a float's IEEE bits, an integer sign- or zero-
    extended as C's promotion does (two's complement in 64 bits)."""
    if kind == "float32":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if kind == "float64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    return int(value) & (2**64 - 1)


def assemble_loop(fn: int, kinds: list[str], values: list[Any], dims: list[int]) -> bytes:
    """The stub `void loop(uint64_t start, uint64_t end)` calling fn(values..., workers...)
    for every flat worker index in [start, end). kinds: per value "int", "float32" or
    "float64"; dims: the extent of each worker argument (at most 3)."""
    if len(dims) > len(_W):
        raise ValueError(f"at most {len(_W)} worker indices, not {len(dims)}")
    ints, sses, stack = [], [], []          # (register or stack slot, how to load it)
    places = [(k, _bits(k, v)) for k, v in zip(kinds, values)]
    places += [("worker", w) for w in range(len(dims))]
    for kind, val in places:
        if kind in ("float32", "float64"):
            (sses if len(sses) < SSE_REGS else stack).append((kind, val))
        else:
            (ints if len(ints) < len(INT_REGS) else stack).append((kind, val))
    frame = 8 * len(stack)
    frame += 8 if frame % 16 == 0 else 0    # 6 pushes + return address: rsp % 16 == 8
    a = Assembler()
    for r in _SAVED:
        a.emit("push_r64", Reg(r))
    a.emit("sub_rm64_imm32", Reg("rsp"), Imm(frame))
    a.emit("mov_rm64_r64", Reg(_I), Reg("rdi"))
    a.emit("mov_rm64_r64", Reg(_END), Reg("rsi"))
    a.label("top")
    a.emit("cmp_rm64_r64", Reg(_I), Reg(_END))
    a.emit("jae_rel32", Label("done"))
    # the worker indices from the flat index (div: rdx:rax / r64 -> rax, remainder rdx)
    a.emit("mov_rm64_r64", Reg("rax"), Reg(_I))
    for k in range(len(dims) - 1, 0, -1):
        a.emit("xor_rm32_r32", Reg("edx"), Reg("edx"))
        a.emit("movabs_r64_imm64", Reg("rcx"), Imm(dims[k]))
        a.emit("div_rm64", Reg("rcx"))
        a.emit("mov_rm64_r64", Reg(_W[k]), Reg("rdx"))
    if dims:
        a.emit("mov_rm64_r64", Reg(_W[0]), Reg("rax"))   # the outermost: what is left
    for slot, (kind, val) in enumerate(stack):
        dst = Mem(8, "rsp", disp=8 * slot)
        if kind == "worker":
            a.emit("mov_rm64_r64", dst, Reg(_W[val]))
        else:
            a.emit("movabs_r64_imm64", Reg("rax"), Imm(val))
            a.emit("mov_rm64_r64", dst, Reg("rax"))
    for n, (kind, val) in enumerate(sses):
        a.emit("movabs_r64_imm64", Reg("rax"), Imm(val))
        a.emit("vmovq_x_r64", Reg(f"xmm{n}"), Reg("rax"))
    for n, (kind, val) in enumerate(ints):
        if kind == "worker":
            a.emit("mov_r32_rm32", Reg(INT_REGS32[n]), Reg(_W[val] + "d"
                                                            if _W[val] != "rbp" else "ebp"))
        else:
            a.emit("movabs_r64_imm64", Reg(INT_REGS[n]), Imm(val))
    # call fn: push the return address, then fn, and `ret` into it (no indirect call row)
    a.emit("lea_r64_m", Reg("rax"), Mem(8, None, label="back"))
    a.emit("push_r64", Reg("rax"))
    a.emit("movabs_r64_imm64", Reg("rax"), Imm(fn))
    a.emit("push_r64", Reg("rax"))
    a.emit("ret")
    a.label("back")
    a.emit("add_rm64_imm8", Reg(_I), Imm(1))
    a.emit("jmp_rel32", Label("top"))
    a.label("done")
    a.emit("add_rm64_imm32", Reg("rsp"), Imm(frame))
    for r in reversed(_SAVED):
        a.emit("pop_r64", Reg(r))
    a.emit("ret")
    code, fixups = a.finish()
    if fixups:
        raise ValueError(f"worker loop: unresolved fixups {fixups}")
    return code


class WorkerLoop:
    """A worker-loop stub mapped executable (its own pages, never writable and executable at
    once); call run(start, end) from any thread (ctypes releases the GIL)."""

    def __init__(self, fn: int, kinds: list[str], values: list[Any], dims: list[int]):
        from kcc.targets.x86.objload import (_MAP_FAILED, MAP_ANONYMOUS, MAP_PRIVATE,
                                             PAGE_SIZE, PROT_EXEC, PROT_READ, PROT_WRITE, _mmap,
                                             _mprotect)
        code = assemble_loop(fn, kinds, values, dims)
        self._size = -(-len(code) // PAGE_SIZE) * PAGE_SIZE
        addr = _mmap(None, self._size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap of the worker loop failed")
        self._addr = addr
        ctypes.memmove(addr, code, len(code))
        if _mprotect(addr, self._size, PROT_READ | PROT_EXEC) != 0:
            self.close()
            raise OSError(ctypes.get_errno(), "mprotect of the worker loop failed")
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_uint64)(addr)

    def run(self, start: int, end: int) -> None:
        """Run the workers of flat index start..end-1, in order, on this thread."""
        self._fn(start, end)

    def close(self) -> None:
        """Unmap the stub."""
        from kcc.targets.x86.objload import _munmap
        if self._addr is not None:
            _munmap(self._addr, self._size)
            self._addr = None

    def abandon(self) -> None:
        """Forget the stub without unmapping it (threads that cannot be stopped still run it;
        the process is about to end)."""
        self._addr = None

    def __enter__(self) -> WorkerLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- a launch (kcc/targets/x86/target.py's `launch`, here since a compile never calls it) --------

def launch(obj: Any, desc: Any, args: list[Any], threads: int | None = None) -> None:
    """Call a loaded kernel once per gidx worker, the workers split into one contiguous range
    per thread, each range run by a native loop (kcc.targets.x86.workers: one ctypes call per
    thread, not per worker); args are already checked and normalized by
    manifest.check_launch."""
    # ctypes and the threads only when running (compiling needs neither: start-up)
    import threading

    from kcc.targets.manifest import LaunchError, worker_names
    from kcc.targets.x86.arch import V4_FLAGS, cpu_flags
    arch = desc.target.get("x86", {}).get("arch")
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        raise LaunchError(f"kernel {desc.name} was compiled for x86-64-v4 (AVX-512) and this "
                          "CPU lacks it; recompile with --arch x86-64-v3")
    kinds, values = [], []
    for a, v in zip(desc.args, args):
        if a.kind == "buffer":
            kinds.append("int")
            values.append(v.ctypes.data)
        elif a.dtype == "float16":            # passed as its bit pattern (a uint16_t in C)
            import numpy as np
            kinds.append("int")
            values.append(int(np.float16(v).view(np.uint16)))
        else:
            kinds.append(a.dtype if a.dtype in ("float32", "float64") else "int")
            values.append(v.item())
    glob, _ = desc.launch_dims(args)      # symbolic sizes: evaluated for these arguments
    dims = [glob[int(w[-1])] for w in worker_names(desc)]
    total = 1
    for d in dims:
        total *= d
    if total == 0:
        return
    try:
        loop = WorkerLoop(obj.address(desc.name), kinds, values, dims)
    except OSError as e:
        raise LaunchError(f"kernel {desc.name}: cannot map the worker loop: {e}") from None
    if total == 1:
        try:
            loop.run(0, 1)
        finally:
            loop.close()
        return
    n = max(1, min(threads or os.cpu_count() or 1, total))
    bounds = [total * t // n for t in range(n + 1)]
    # ctypes releases the GIL during each call, so the ranges run in parallel; the threads are
    # daemons and the main thread only joins them, with a timeout: the OS may deliver SIGINT to
    # a worker thread, and then only the main thread's next bytecode sees it (a join without
    # one would wait for the whole launch), so Ctrl-C reaches it within 0.1 s
    ts = [threading.Thread(target=loop.run, args=(bounds[t], bounds[t + 1]), daemon=True)
          for t in range(n)]
    try:
        for t in ts:
            t.start()
        for t in ts:
            while t.is_alive():
                t.join(0.1)
    except KeyboardInterrupt:
        # native code cannot be stopped, and unmapping the stub or the object under it would
        # crash the process: end it now, with the one error line
        loop.abandon()
        sys.stderr.write(f"\nerror: interrupted while kernel {desc.name} ran {total} "
                         "workers\n")
        sys.stderr.flush()
        os._exit(1)
    loop.close()
