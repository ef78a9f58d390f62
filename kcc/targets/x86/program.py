"""A whole program as one x86-64 object: every kernel, the weights in .rodata and a runtime in
machine code — the entry point `int NAME(inputs…, outputs…)` and its helpers — encoded by
kcc's own x86 encoder (kcc/encode/x86/encoder.py), so that `cc main.c NAME.o -lpthread -lm` links it
and no C compiler ever sees kcc's output. docs/export.md describes the design.

The runtime (System V AMD64 ABI, psABI 3.2; every call below is to libc):

    NAME(in…, out…)                   aligned_alloc(64, workspace), run, free
    NAME_with_workspace(ws, in…, out…) run on the caller's 64-byte aligned workspace
    run:  threads T = NAME_set_threads value, or sysconf(_SC_NPROCESSORS_ONLN), at most the
          largest worker count and MAX_THREADS. With T > 1 a pool of T-1 threads serves
          every call: it is started on the first call (under a locked start mutex,
          pthread_create until T-1 run or one fails, pthread_barrier_init for those and this
          thread, unlock) and kept, waiting at the pool barrier, until NAME_release() or a
          call with another T replaces it. A call publishes its context, meets the workers
          at the barrier, runs the body as thread 0 and meets them again when all are done.
    body(ctx, tid): for each launch in order: a kernel with W workers calls
          kernel(buffers…, gidx0 = i) for i = tid, tid+T, … < W (a static split: no atomics);
          one without workers runs on tid 0; a pthread_barrier_wait separates two launches
          unless both run on tid 0 alone.

The context (on the entry's stack, 64-byte aligned) holds the input/output pointers, the
workspace pointer and T; the pool (its size, the context of the call it serves, a quit flag,
the start mutex, the barrier and one record per thread) lives in the object's .bss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kcc.encode.x86.encoder import Imm, Label, Mem, Reg
from kcc.targets.elf import (
    R_X86_64_PC32, R_X86_64_PLT32, SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, Reloc, Symbol,
    write_relocatable)
from kcc.targets.facts import NOTE_SECTION, elf_note
from kcc.targets.manifest import KernelDesc, worker_names
from kcc.targets.program import Program, ProgramError, align_up, program_note, worker_count
from kcc.targets.x86.code import EncodedKernel, assemble_items
from kcc.targets.x86.object import rodata

MAX_THREADS = 64
_SC_NPROCESSORS_ONLN = 84            # glibc's <bits/confname.h> value
ARG_REGS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")      # psABI 3.2.3, INTEGER class
ARG_REGS32 = ("edi", "esi", "edx", "ecx", "r8d", "r9d")
WEIGHTS_LABEL = "__kcc_weights"
STATE_LABEL = "__kcc_state"
STR_LABEL = "__kcc_strings"
# .bss state: the thread count NAME_set_threads stored, the error message pointer, the
# external weights' base (NAME_load_weights), and the thread pool: its size T (0: none), the
# context of the call it serves, the quit flag, the threads created, whether the mutex is
# initialized, the start mutex (pthread_mutex_t: 40 bytes on x86-64 glibc), the barrier
# (pthread_barrier_t: 32 bytes) and per thread a record (tid, pthread_t)
ST_THREADS, ST_ERROR, ST_WEIGHTS = 0, 8, 16
ST_POOL, ST_CTX, ST_QUIT, ST_CREATED, ST_LIVE = 24, 32, 40, 48, 56
ST_MUTEX, ST_BARRIER, ST_RECORDS = 64, 128, 192
STATE_BYTES = ST_RECORDS + 32 * 64
MESSAGES = {
    "none": "",
    "oom": "out of memory for the workspace",
    "align": "the workspace is NULL or not 64-byte aligned",
    "noweights": "no weights loaded: call NAME_load_weights(path) first",
    "badweights": "cannot read the weights file (missing, or not this program's NAME.weights)",
}
# the libc functions the runtime calls (all of them: the object's only undefined symbols)
LIBC = ("aligned_alloc", "free", "sysconf", "pthread_create", "pthread_join",
        "pthread_mutex_init", "pthread_mutex_lock", "pthread_mutex_unlock",
        "pthread_mutex_destroy", "pthread_barrier_init", "pthread_barrier_wait",
        "pthread_barrier_destroy", "fopen", "fread", "fseek", "fclose")


@dataclass
class _Ctx:
    """Byte offsets in the run context."""

    nio: int

    @property
    def ws(self) -> int:
        return 8 * self.nio

    @property
    def nthreads(self) -> int:
        return self.ws + 8

    @property
    def size(self) -> int:
        return align_up(self.nthreads + 8)


class _Code:
    """Instructions for kcc's assembler, with the few helpers the runtime needs."""

    def __init__(self, name: str):
        self.name = name
        self.items: list[tuple] = []
        self._n = 0

    def __call__(self, form: str, *ops: Any) -> None:
        self.items.append((form, *ops))

    def label(self, name: str) -> None:
        self.items.append(("label", name))

    def fresh(self, stem: str) -> str:
        self._n += 1
        return f".L{stem}{self._n}"

    def call(self, fn: str) -> None:
        self("call_rel32", Label(fn))

    def mov(self, dst: str, src: str) -> None:
        self("mov_r64_rm64", Reg(dst), Reg(src))

    def load(self, dst: str, base: str, disp: int) -> None:
        self("mov_r64_rm64", Reg(dst), Mem(8, base, None, 1, disp))

    def store(self, base: str, disp: int, src: str) -> None:
        self("mov_rm64_r64", Mem(8, base, None, 1, disp), Reg(src))

    def lea(self, dst: str, base: str | None, disp: int, label: str | None = None) -> None:
        self("lea_r64_m", Reg(dst), Mem(0, base, None, 1, disp, label))

    def imm(self, dst: str, value: int) -> None:
        if 0 <= value < 2**31:
            self("mov_r32_imm32", Reg(_r32(dst)), Imm(value))
        else:
            self("movabs_r64_imm64", Reg(dst), Imm(value))

    def state(self, dst: str, disp: int) -> None:
        """dst = the address of the .bss state's byte disp."""
        self.lea(dst, None, disp, STATE_LABEL)

    def set_error(self, msg: str, offsets: dict[str, int]) -> None:
        self.lea("rax", None, offsets[msg], STR_LABEL)
        self("mov_rm64_r64", Mem(8, None, None, 1, ST_ERROR, STATE_LABEL), Reg("rax"))

    def prologue(self, frame: int = 0) -> None:
        """push rbp and rbx, r12-r15; rsp 64-byte aligned below frame bytes."""
        self("push_r64", Reg("rbp"))
        self.mov("rbp", "rsp")
        for r in ("rbx", "r12", "r13", "r14", "r15"):
            self("push_r64", Reg(r))
        self("sub_rm64_imm32", Reg("rsp"), Imm(align_up(frame + 8, 16)))
        self("and_rm64_imm8", Reg("rsp"), Imm(-64))

    def epilogue(self) -> None:
        self.lea("rsp", "rbp", -40)
        for r in ("r15", "r14", "r13", "r12", "rbx"):
            self("pop_r64", Reg(r))
        self("pop_r64", Reg("rbp"))
        self("ret")

    def assemble(self) -> EncodedKernel:
        return assemble_items(self.name, self.items, 0, [])


def _r32(r: str) -> str:
    return {"rax": "eax", "rcx": "ecx", "rdx": "edx", "rbx": "ebx", "rsi": "esi",
            "rdi": "edi"}.get(r, r + "d")


# -- the runtime -----------------------------------------------------------------------------

class Runtime:
    """The runtime functions of program p (module docstring); weights "rodata" or
    "external"."""

    def __init__(self, p: Program, weights: str, strings: dict[str, int]):
        self.p = p
        self.weights = weights
        self.strings = strings
        self.ctx = _Ctx(len(p.inputs) + len(p.outputs))
        self.pos = {b: k for k, b in enumerate(p.inputs + p.outputs)}
        self.workers = [worker_count(p.kernel(ln.kernel)) for ln in p.launches]
        self.max_workers = min(max(self.workers + [1]), MAX_THREADS)
        if max(p.workspace_bytes, p.weights_bytes) >= 2**31:
            # buffers are reached by a 32-bit displacement from the workspace or weights base
            raise ProgramError(f"program {p.name}: {p.workspace_bytes} bytes of intermediates "
                               f"and {p.weights_bytes} of weights; the x86 runtime reaches "
                               "at most 2 GiB of each")

    def functions(self) -> list[tuple[EncodedKernel, str]]:
        """(code, binding) of every runtime function."""
        n = self.p.name
        out = [(self.entry(n, own_workspace=True), "global"),
               (self.entry(f"{n}_with_workspace", own_workspace=False), "global"),
               (self.small(f"{n}_workspace_bytes", self.p.workspace_bytes), "global"),
               (self.set_threads(), "global"), (self.error(), "global"),
               (self.release(), "global"), (self.body(), "local"), (self.worker(), "local")]
        if self.weights == "external":
            out.append((self.load_weights(), "global"))
        return out

    def load_weights(self) -> EncodedKernel:
        """NAME_load_weights(path): fopen, skip the safetensors header (its 8-byte length
        first), fread the weights into a 64-byte aligned block, which replaces the last one.
        rbx FILE *, r12 the block, r13 the path; [rsp] the header length."""
        c = _Code(f"{self.p.name}_load_weights")
        size = self.p.weights_bytes
        c.prologue(16)
        c.mov("r13", "rdi")
        c("xor_r32_rm32", Reg("r12d"), Reg("r12d"))
        c.lea("rsi", None, self.strings["rb"], STR_LABEL)
        c.call("fopen")
        c.mov("rbx", "rax")
        c("test_rm64_r64", Reg("rbx"), Reg("rbx"))
        c("je_rel32", Label(".Lfail"))
        c.mov("rdi", "rsp")                                   # fread(&len, 1, 8, f)
        c("mov_r32_imm32", Reg("esi"), Imm(1))
        c("mov_r32_imm32", Reg("edx"), Imm(8))
        c.mov("rcx", "rbx")
        c.call("fread")
        c("cmp_rm64_imm8", Reg("rax"), Imm(8))
        c("jne_rel32", Label(".Lclose"))
        c.mov("rdi", "rbx")                                   # fseek(f, len, SEEK_CUR)
        c.load("rsi", "rsp", 0)
        c("mov_r32_imm32", Reg("edx"), Imm(1))
        c.call("fseek")
        c("test_rm32_r32", Reg("eax"), Reg("eax"))
        c("jne_rel32", Label(".Lclose"))
        c("mov_r32_imm32", Reg("edi"), Imm(64))
        c.imm("rsi", align_up(max(size, 1)))
        c.call("aligned_alloc")
        c.mov("r12", "rax")
        c("test_rm64_r64", Reg("r12"), Reg("r12"))
        c("je_rel32", Label(".Lclose"))
        c.mov("rdi", "r12")                                   # fread(block, 1, size, f)
        c("mov_r32_imm32", Reg("esi"), Imm(1))
        c.imm("rdx", size)
        c.mov("rcx", "rbx")
        c.call("fread")
        c.imm("rcx", size)
        c("cmp_rm64_r64", Reg("rax"), Reg("rcx"))
        c("jne_rel32", Label(".Lclose"))
        c.mov("rdi", "rbx")
        c.call("fclose")
        c("mov_r64_rm64", Reg("rdi"), Mem(8, None, None, 1, ST_WEIGHTS, STATE_LABEL))
        c.call("free")                                        # the last block, if any
        c("mov_rm64_r64", Mem(8, None, None, 1, ST_WEIGHTS, STATE_LABEL), Reg("r12"))
        c("xor_r32_rm32", Reg("eax"), Reg("eax"))
        c.epilogue()
        c.label(".Lclose")
        c.mov("rdi", "rbx")
        c.call("fclose")
        c.mov("rdi", "r12")
        c.call("free")
        c.label(".Lfail")
        c.set_error("badweights", self.strings)
        c("mov_r32_imm32", Reg("eax"), Imm(1))
        c.epilogue()
        return c.assemble()

    # the small helpers
    def small(self, name: str, value: int) -> EncodedKernel:
        c = _Code(name)
        c.imm("rax", value)
        c("ret")
        return c.assemble()

    def set_threads(self) -> EncodedKernel:
        c = _Code(f"{self.p.name}_set_threads")
        c("mov_rm32_r32", Mem(4, None, None, 1, ST_THREADS, STATE_LABEL), Reg("edi"))
        c("ret")
        return c.assemble()

    def error(self) -> EncodedKernel:
        c = _Code(f"{self.p.name}_error")
        c("mov_r64_rm64", Reg("rax"), Mem(8, None, None, 1, ST_ERROR, STATE_LABEL))
        c("test_rm64_r64", Reg("rax"), Reg("rax"))
        c("jne_rel8", Label(".Ldone"))
        c.lea("rax", None, self.strings["none"], STR_LABEL)
        c.label(".Ldone")
        c("ret")
        return c.assemble()

    # the entry points
    def entry(self, name: str, own_workspace: bool) -> EncodedKernel:
        """NAME / NAME_with_workspace: rbx ctx, r13 T, r14 threads created, r15 the workspace
        to free (own_workspace)."""
        c, cx = _Code(name), self.ctx
        c.prologue(cx.size)
        c.mov("rbx", "rsp")
        first = 0 if own_workspace else 1
        for j in range(cx.nio + first):             # the arguments into the context
            slot = cx.ws if j < first else 8 * (j - first)
            if j < 6:
                c.store("rbx", slot, ARG_REGS[j])
            else:
                c.load("rax", "rbp", 16 + 8 * (j - 6))
                c.store("rbx", slot, "rax")
        c("xor_r32_rm32", Reg("r15d"), Reg("r15d"))
        ws = self.p.workspace_bytes
        if own_workspace:
            c("mov_rm64_imm32", Mem(8, "rbx", None, 1, cx.ws), Imm(0))
            if ws:
                c("mov_r32_imm32", Reg("edi"), Imm(64))
                c.imm("rsi", align_up(ws))
                c.call("aligned_alloc")
                c("test_rm64_r64", Reg("rax"), Reg("rax"))
                c("je_rel32", Label(".Loom"))
                c.store("rbx", cx.ws, "rax")
                c.mov("r15", "rax")
        elif ws:
            c.load("rax", "rbx", cx.ws)
            c("test_rm64_r64", Reg("rax"), Reg("rax"))
            c("je_rel32", Label(".Lalign"))
            c("test_rm64_imm32", Reg("rax"), Imm(63))
            c("jne_rel32", Label(".Lalign"))
        if self.weights == "external" and any(b.role == "weight" for b in self.p.buffers):
            c("mov_r64_rm64", Reg("rax"), Mem(8, None, None, 1, ST_WEIGHTS, STATE_LABEL))
            c("test_rm64_r64", Reg("rax"), Reg("rax"))
            c("je_rel32", Label(".Lnoweights"))
        self._threads(c)
        c.mov("rdi", "rbx")
        c("xor_r32_rm32", Reg("esi"), Reg("esi"))
        c.call(f"{self.p.name}__body")
        if self.max_workers > 1:                 # the workers are done with this call too
            c("cmp_rm64_imm8", Reg("r13"), Imm(1))
            c("jle_rel8", Label(".Lalone"))
            c.state("rdi", ST_BARRIER)
            c.call("pthread_barrier_wait")
            c.label(".Lalone")
        c("xor_r32_rm32", Reg("r12d"), Reg("r12d"))        # the result: 0
        c.label(".Lfree")
        c.mov("rdi", "r15")
        c.call("free")                                        # free(NULL) does nothing
        c("mov_r32_rm32", Reg("eax"), Reg("r12d"))
        c.epilogue()
        for lab, msg in ((".Loom", "oom"), (".Lalign", "align"), (".Lnoweights", "noweights")):
            c.label(lab)
            c.set_error(msg, self.strings)
            c("mov_r32_imm32", Reg("r12d"), Imm(1))
            c("jmp_rel32", Label(".Lfree"))
        return c.assemble()

    def _threads(self, c: _Code) -> None:
        """T into r13 and ctx; with T > 1 the pool (started or replaced when its size is not
        T), this call's context published and the workers released into the body."""
        cx = self.ctx
        c("mov_r32_imm32", Reg("r13d"), Imm(1))
        c.store("rbx", cx.nthreads, "r13")
        if self.max_workers <= 1:
            return
        c("movsxd_r64_rm32", Reg("rax"), Mem(4, None, None, 1, ST_THREADS, STATE_LABEL))
        c("test_rm64_r64", Reg("rax"), Reg("rax"))
        c("jg_rel8", Label(".Lhave"))
        c("mov_r32_imm32", Reg("edi"), Imm(_SC_NPROCESSORS_ONLN))
        c.call("sysconf")
        c.label(".Lhave")
        c("mov_r32_imm32", Reg("ecx"), Imm(self.max_workers))
        c("cmp_rm64_r64", Reg("rax"), Reg("rcx"))
        c("cmovg_r64_rm64", Reg("rax"), Reg("rcx"))
        c("mov_r32_imm32", Reg("ecx"), Imm(1))
        c("cmp_rm64_r64", Reg("rax"), Reg("rcx"))
        c("cmovl_r64_rm64", Reg("rax"), Reg("rcx"))
        c("cmp_r64_rm64", Reg("rax"), Mem(8, None, None, 1, ST_POOL, STATE_LABEL))
        c("je_rel32", Label(".Lready"))                      # the pool has T threads
        c.mov("r12", "rax")
        c.call(f"{self.p.name}_release")                       # the last pool, if any
        c("cmp_rm64_imm8", Reg("r12"), Imm(1))
        c("jle_rel32", Label(".Lsolo"))
        c.state("rdi", ST_MUTEX)
        c("xor_r32_rm32", Reg("esi"), Reg("esi"))
        c.call("pthread_mutex_init")
        c("mov_rm64_imm32", Mem(8, None, None, 1, ST_LIVE, STATE_LABEL), Imm(1))
        c.state("rdi", ST_MUTEX)
        c.call("pthread_mutex_lock")
        c("mov_r32_imm32", Reg("r14d"), Imm(1))                # t = 1
        c.label(".Lcreate")
        c("cmp_rm64_r64", Reg("r14"), Reg("r12"))
        c("jge_rel8", Label(".Lcreated"))
        c.mov("rcx", "r14")                                     # rec = records + 32 t
        c("shl_rm64_imm8", Reg("rcx"), Imm(5))
        c.state("rax", ST_RECORDS)
        c("add_rm64_r64", Reg("rcx"), Reg("rax"))
        c.store("rcx", 0, "r14")
        c.lea("rdi", "rcx", 8)
        c("xor_r32_rm32", Reg("esi"), Reg("esi"))
        c.lea("rdx", None, 0, f"{self.p.name}__worker")
        c.call("pthread_create")
        c("test_rm32_r32", Reg("eax"), Reg("eax"))
        c("jne_rel8", Label(".Lcreated"))
        c("add_rm64_imm8", Reg("r14"), Imm(1))
        c("jmp_rel8", Label(".Lcreate"))
        c.label(".Lcreated")
        c("lea_r64_m", Reg("rax"), Mem(0, "r14", None, 1, -1))  # workers started
        c("mov_rm64_r64", Mem(8, None, None, 1, ST_CREATED, STATE_LABEL), Reg("rax"))
        c("cmp_rm64_imm8", Reg("r14"), Imm(1))
        c("jle_rel8", Label(".Lnobar"))
        c.state("rdi", ST_BARRIER)
        c("xor_r32_rm32", Reg("esi"), Reg("esi"))
        c("mov_r32_rm32", Reg("edx"), Reg("r14d"))
        c.call("pthread_barrier_init")
        c("test_rm32_r32", Reg("eax"), Reg("eax"))
        c("je_rel8", Label(".Lbar"))
        c.label(".Lnobar")
        c("mov_r32_imm32", Reg("r14d"), Imm(1))                # no pool: the workers leave
        c.label(".Lbar")
        c("mov_rm64_r64", Mem(8, None, None, 1, ST_POOL, STATE_LABEL), Reg("r14"))
        c.state("rdi", ST_MUTEX)
        c.call("pthread_mutex_unlock")
        c("cmp_rm64_imm8", Reg("r14"), Imm(1))
        c("jg_rel8", Label(".Lready"))
        c.call(f"{self.p.name}_release")                       # join those that left
        c("jmp_rel32", Label(".Lsolo"))
        c.label(".Lready")
        c("mov_r64_rm64", Reg("r13"), Mem(8, None, None, 1, ST_POOL, STATE_LABEL))
        c.store("rbx", cx.nthreads, "r13")
        c("mov_rm64_r64", Mem(8, None, None, 1, ST_CTX, STATE_LABEL), Reg("rbx"))
        c.state("rdi", ST_BARRIER)                              # the workers start
        c.call("pthread_barrier_wait")
        c.label(".Lsolo")

    def release(self) -> EncodedKernel:
        """NAME_release(): stop the pool (the quit flag, one barrier round for the waiting
        workers), join every thread created, destroy the barrier and the mutex. Nothing
        without a pool; the next call starts a new one."""
        c = _Code(f"{self.p.name}_release")
        c.prologue()
        c("cmp_rm64_imm8", Mem(8, None, None, 1, ST_LIVE, STATE_LABEL), Imm(0))
        c("je_rel32", Label(".Lnone"))
        c("mov_r64_rm64", Reg("r13"), Mem(8, None, None, 1, ST_POOL, STATE_LABEL))
        c("cmp_rm64_imm8", Reg("r13"), Imm(1))
        c("jle_rel8", Label(".Ljoin0"))
        c("mov_rm64_imm32", Mem(8, None, None, 1, ST_QUIT, STATE_LABEL), Imm(1))
        c.state("rdi", ST_BARRIER)
        c.call("pthread_barrier_wait")
        c.label(".Ljoin0")
        c("mov_r32_imm32", Reg("r12d"), Imm(1))
        c.label(".Ljoin")
        c("cmp_r64_rm64", Reg("r12"), Mem(8, None, None, 1, ST_CREATED, STATE_LABEL))
        c("jg_rel8", Label(".Ljoined"))
        c.mov("rcx", "r12")
        c("shl_rm64_imm8", Reg("rcx"), Imm(5))
        c.state("rax", ST_RECORDS + 8)
        c("mov_r64_rm64", Reg("rdi"), Mem(8, "rax", "rcx", 1, 0))
        c("xor_r32_rm32", Reg("esi"), Reg("esi"))
        c.call("pthread_join")
        c("add_rm64_imm8", Reg("r12"), Imm(1))
        c("jmp_rel8", Label(".Ljoin"))
        c.label(".Ljoined")
        c("cmp_rm64_imm8", Reg("r13"), Imm(1))
        c("jle_rel8", Label(".Lnobar"))
        c.state("rdi", ST_BARRIER)
        c.call("pthread_barrier_destroy")
        c.label(".Lnobar")
        c.state("rdi", ST_MUTEX)
        c.call("pthread_mutex_destroy")
        for slot in (ST_POOL, ST_QUIT, ST_CREATED, ST_LIVE):
            c("mov_rm64_imm32", Mem(8, None, None, 1, slot, STATE_LABEL), Imm(0))
        c.label(".Lnone")
        c.epilogue()
        return c.assemble()

    def worker(self) -> EncodedKernel:
        """A pool thread (its record in rdi): wait for the start mutex, leave when the pool
        is smaller than its tid; then per call: the barrier, the quit flag, the body for
        its tid with the published context, the barrier."""
        c = _Code(f"{self.p.name}__worker")
        c.prologue()
        c.load("r12", "rdi", 0)               # tid
        c.state("rdi", ST_MUTEX)
        c.call("pthread_mutex_lock")
        c.state("rdi", ST_MUTEX)
        c.call("pthread_mutex_unlock")
        c("cmp_r64_rm64", Reg("r12"), Mem(8, None, None, 1, ST_POOL, STATE_LABEL))
        c("jge_rel8", Label(".Lout"))
        c.label(".Lloop")
        c.state("rdi", ST_BARRIER)
        c.call("pthread_barrier_wait")
        c("cmp_rm64_imm8", Mem(8, None, None, 1, ST_QUIT, STATE_LABEL), Imm(0))
        c("jne_rel8", Label(".Lout"))
        c("mov_r64_rm64", Reg("rdi"), Mem(8, None, None, 1, ST_CTX, STATE_LABEL))
        c.mov("rsi", "r12")
        c.call(f"{self.p.name}__body")
        c.state("rdi", ST_BARRIER)
        c.call("pthread_barrier_wait")
        c("jmp_rel8", Label(".Lloop"))
        c.label(".Lout")
        c("xor_r32_rm32", Reg("eax"), Reg("eax"))
        c.epilogue()
        return c.assemble()

    def body(self) -> EncodedKernel:
        """Every launch for thread tid: rbx ctx, r12 tid, r13 T, r14 the worker index."""
        p, cx = self.p, self.ctx
        nstack = max([len(p.kernel(ln.kernel).args) + 1 - 6 for ln in p.launches] + [0])
        c = _Code(f"{p.name}__body")
        c.prologue(8 * nstack)
        c.mov("rbx", "rdi")
        c.mov("r12", "rsi")
        c.load("r13", "rbx", cx.nthreads)
        for k, ln in enumerate(p.launches):
            desc = p.kernel(ln.kernel)
            w = self.workers[k]
            has_gidx = bool(worker_names(desc))
            if len(worker_names(desc)) > 1:
                raise ProgramError(f"kernel {desc.name}: {len(worker_names(desc))} worker "
                                   "indices; the x86 program runtime runs gidx0 only")
            skip, loop = c.fresh("skip"), c.fresh("loop")
            if w <= 1:
                c("test_rm64_r64", Reg("r12"), Reg("r12"))
                c("jne_rel32", Label(skip))
                c("xor_r32_rm32", Reg("r14d"), Reg("r14d"))
                self._call_kernel(c, desc, ln, has_gidx)
            else:
                c.mov("r14", "r12")
                c.label(loop)
                c("cmp_rm64_imm32", Reg("r14"), Imm(w))
                c("jge_rel32", Label(skip))
                self._call_kernel(c, desc, ln, has_gidx)
                c("add_rm64_r64", Reg("r14"), Reg("r13"))
                c("jmp_rel32", Label(loop))
            c.label(skip)
            last = k == len(p.launches) - 1
            if not last and (w > 1 or self.workers[k + 1] > 1):
                nob = c.fresh("nobar")
                c("cmp_rm64_imm8", Reg("r13"), Imm(1))
                c("jle_rel32", Label(nob))
                c.state("rdi", ST_BARRIER)
                c.call("pthread_barrier_wait")
                c.label(nob)
        c("xor_r32_rm32", Reg("eax"), Reg("eax"))
        c.epilogue()
        return c.assemble()

    def _address(self, c: _Code, reg: str, bid: int, off: int) -> None:
        """The address of byte off of buffer bid into reg."""
        b = self.p.buffer(bid)
        if b.role in ("input", "output"):
            c.load(reg, "rbx", 8 * self.pos[bid])
            if off:
                c.lea(reg, reg, off)
        elif b.role == "intermediate":
            c.load(reg, "rbx", self.ctx.ws)
            if b.offset + off:
                c.lea(reg, reg, b.offset + off)
        elif self.weights == "external":
            c("mov_r64_rm64", Reg(reg), Mem(8, None, None, 1, ST_WEIGHTS, STATE_LABEL))
            if b.offset + off:
                c.lea(reg, reg, b.offset + off)
        else:
            c.lea(reg, None, b.offset + off, WEIGHTS_LABEL)

    def _call_kernel(self, c: _Code, desc: KernelDesc, ln: Any, gidx: bool) -> None:
        args, offs = ln.args, ln.offsets
        n = len(args) + gidx
        for j in range(6, n):                    # stack arguments first (rax as scratch)
            if j < len(args):
                self._address(c, "rax", args[j], offs[j])
                c.store("rsp", 8 * (j - 6), "rax")
            else:
                c("mov_rm32_r32", Mem(4, "rsp", None, 1, 8 * (j - 6)), Reg("r14d"))
        for j in range(min(n, 6)):
            if j < len(args):
                self._address(c, ARG_REGS[j], args[j], offs[j])
            else:
                c("mov_r32_rm32", Reg(ARG_REGS32[j]), Reg("r14d"))
        c.call(desc.name)


# -- the object --------------------------------------------------------------------------------

def _strings(name: str) -> tuple[bytes, dict[str, int]]:
    out, offs = bytearray(b"rb\0"), {"rb": 0}
    for key, msg in MESSAGES.items():
        offs[key] = len(out)
        text = f"{name}: {msg.replace('NAME', name)}" if msg else ""
        out += text.encode() + b"\0"
    return bytes(out), offs


def write_program_object(p: Program, kernels: list[EncodedKernel], pool: Any,
                         descs: list[KernelDesc], weights_data: bytes | None,
                         weights: str = "rodata") -> bytes:
    """NAME.o: the kernels (global symbols), the runtime, the constant pool and the weights
    (weights "rodata": weights_data in .rodata.weights) and the kernels' launch facts."""
    strings, str_offs = _strings(p.name)
    rt = Runtime(p, weights, str_offs)
    funcs = [(k, "global") for k in kernels] + rt.functions()
    pool_data, pool_offs, pool_align = rodata(pool)
    data_labels = {WEIGHTS_LABEL: (".rodata.weights", 0), STATE_LABEL: (".bss", 0),
                   STR_LABEL: (".rodata.str", 0)}
    text = bytearray()
    symbols: list[Symbol] = []
    relocs: list[Reloc] = []
    for k, binding in funcs:
        text += b"\xcc" * (-len(text) % k.align)
        base = len(text)
        text += k.code
        symbols.append(Symbol(k.name, ".text", base, len(k.code), "func", binding))
        for f in k.fixups:
            at = base + f.offset
            if f.kind == "rel32":
                relocs.append(Reloc(".text", at, R_X86_64_PLT32, f.target, f.addend))
            elif f.target in pool_offs:
                relocs.append(Reloc(".text", at, R_X86_64_PC32, ".rodata",
                                    pool_offs[f.target] + f.addend))
            elif f.target in data_labels:
                sec, off = data_labels[f.target]
                relocs.append(Reloc(".text", at, R_X86_64_PC32, sec, off + f.addend))
            elif f.kind == "pc32":
                relocs.append(Reloc(".text", at, R_X86_64_PC32, f.target, f.addend))
            else:
                raise AssertionError(f"unresolved fixup {f}")
    sections: dict[str, tuple[bytes, int, int]] = {
        ".text": (bytes(text), max(k.align for k, _ in funcs), SHF_ALLOC | SHF_EXECINSTR)}
    if pool_data:
        sections[".rodata"] = (pool_data, pool_align, SHF_ALLOC)
    sections[".rodata.str"] = (strings, 1, SHF_ALLOC)
    # at least one byte, so that every weight label has a section (an empty program's too)
    sections[".rodata.weights"] = (weights_data or b"\0", 64, SHF_ALLOC)
    sections[".bss"] = (bytes(STATE_BYTES), 64, SHF_ALLOC | SHF_WRITE)
    sections[NOTE_SECTION] = (elf_note(descs) + program_note(p), 4, 0)
    return write_relocatable(sections, symbols, relocs)


def compile_program_x86(p: Program, sinks: list[Any], weights_data: bytes | None,
                        arch: str = "x86-64-v3", weights: str = "rodata"
                        ) -> tuple[bytes, list[KernelDesc], str]:
    """Compile the program's kernels (sinks, named as p.kernels will be) and package them;
    returns the object, the kernels' descriptions and the resolved arch."""
    from kcc.isel.x86.select import SelectError
    from kcc.targets.pipeline import compile_kernels
    from kcc.targets.registry import CompileError
    from kcc.targets.x86.target import X86Target
    target = X86Target(arch)
    try:
        encoded, descs = compile_kernels(sinks, target, SelectError, (SelectError,))
    except SelectError as e:
        raise CompileError(str(e)) from None
    p.kernels = descs
    from kcc.targets.program import check_program
    check_program(p)
    obj = write_program_object(p, encoded, target.pool, descs, weights_data, weights)
    return obj, descs, target.arch
