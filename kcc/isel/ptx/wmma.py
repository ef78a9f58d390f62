"""PTX instruction selection, part 3: WMMA → `mma.sync.aligned` (PTX ISA 9.7.14.5.14, "Warp-level
matrix multiply-and-accumulate: mma"), a mixin of `kcc.isel.ptx.select.PtxSelector`.

A WMMA of tinygrad's CUDA tensor cores computes D = A·B + C for one warp: A is M×K, B is K×N,
C and D are M×N, and each of the 32 lanes holds a *fragment* of every matrix as a vector
(`elements` per lane below). tinygrad numbers a lane's vector elements exactly as PTX numbers
the fragment elements a0, a1, … / b0, … / c0, … ("Elements (low to high)" in the ISA's fragment
tables, 9.7.14.5.7/9.7.14.5.8); tests/isel/ptx/test_ptx_wmma_layout.py checks that against the
ISA's row/column formulas for every form here. So the selection is only the packing PTX requires:

- 16-bit elements (f16, bf16) go two to a `.b32` register (`.f16x2` for f16), element 2j in the
  low half and 2j+1 in the high half: `mov.b32 %r, {%rs_lo, %rs_hi}` (9.7.9.1 mov, pack: the
  first element of the vector is the least significant: d = a.x | (a.y << 16));
- 32-bit inputs (tf32) are the float32 registers' bits moved to `.b32` registers;
- an f32 accumulator is four `.f32` registers as they are; an f16 accumulator is two `.f16x2`
  registers, packed before and unpacked (`mov.b32 {%rs, %rs}, %r`) after the mma.

The forms are those tinygrad 0.14 lowers to for CUDA sm_80+ (tinygrad/codegen/opt/tc.py:
`cuda_81616`, `cuda_8168_f16`, and `cuda_8168_tf32` when ALLOW_TF32=1). The IR (kcc/ir/wmma.py)
has no tf32 form (a float32 input rounded to tf32 is not a kcc dtype), so that row is reached
only by tests of the PTX itself; the fp8 forms (sm_89) have no kcc dtype. All use `.row.col`
(A row-major, B column-major: the only layout m16n8k8/k16 allow, 9.7.14.5.14).

Semantics: the mma computes the IR's D = A·B + C (docs/semantics.md, WMMA) element for element,
but the order of its K-sum and the precision of its partial sums are the hardware's (the PTX
ISA leaves them open), not the IR's sequential float32 fmas. So D equals the interpreter's when
every partial sum is exact (e.g. small integers: tests/targets/cuda/test_cuda_wmma_gpu.py) and
may differ in the last bits otherwise, as tinygrad's own CUDA kernels do.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcc.encode.ptx import Reg, Vec
from kcc.ir.dtype import DType, dtypes
from kcc.ir.uop import UOp
from kcc.isel.common import SelectError


@dataclass(frozen=True)
class MmaForm:
    """One mma.sync form: shape, PTX types, and the elements of A, B, C per lane."""

    m: int
    n: int
    k: int
    atype: str                   # .atype = .btype: "f16", "bf16" or "tf32"
    ctype: str                   # .ctype = .dtype: "f32" or "f16"
    elements: tuple[int, int, int]   # per lane: A, B, C (= D)
    min_sm: int

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def opcode(self) -> str:
        """The full mnemonic: mma.sync.aligned.SHAPE.row.col.dtype.atype.btype.ctype."""
        return (f"mma.sync.aligned.{self.shape}.row.col."
                f"{self.ctype}.{self.atype}.{self.atype}.{self.ctype}")

    def per_reg(self, operand: int) -> int:
        """Elements of operand 0 (A), 1 (B) or 2 (C/D) in one 32-bit register."""
        t = self.ctype if operand == 2 else self.atype
        return 2 if t in ("f16", "bf16") else 1

    def regs(self, operand: int) -> int:
        """32-bit registers operand 0 (A), 1 (B) or 2 (C/D) takes."""
        return self.elements[operand] // self.per_reg(operand)

    def packing(self, operand: int) -> list[tuple[int, int]]:
        """(register, half) of each vector element of an operand: element i is in register
        i // per_reg, in its low (0) or high (1) half; half 0 for a 32-bit element."""
        p = self.per_reg(operand)
        return [(i // p, i % p) for i in range(self.elements[operand])]


# (N, M, K) as tinygrad's arg writes them, dtype in, dtype out → the form
MMA_FORMS: dict[tuple[tuple[int, int, int], DType, DType], MmaForm] = {
    ((8, 16, 16), dtypes.float16, dtypes.float32): MmaForm(16, 8, 16, "f16", "f32", (8, 4, 4), 80),
    ((8, 16, 16), dtypes.float16, dtypes.float16): MmaForm(16, 8, 16, "f16", "f16", (8, 4, 4), 80),
    ((8, 16, 16), dtypes.bfloat16, dtypes.float32):
        MmaForm(16, 8, 16, "bf16", "f32", (8, 4, 4), 80),
    ((8, 16, 8), dtypes.float16, dtypes.float32): MmaForm(16, 8, 8, "f16", "f32", (4, 2, 4), 80),
    ((8, 16, 8), dtypes.float16, dtypes.float16): MmaForm(16, 8, 8, "f16", "f16", (4, 2, 4), 80),
    ((8, 16, 8), dtypes.float32, dtypes.float32): MmaForm(16, 8, 8, "tf32", "f32", (4, 2, 4), 80),
}


def mma_form(dims: tuple[int, int, int], dtype_in: DType, dtype_out: DType) -> MmaForm:
    """The mma.sync form of a WMMA; SelectError for a shape/dtype PTX has no form for here."""
    f = MMA_FORMS.get((tuple(dims), dtype_in, dtype_out))   # type: ignore[arg-type]
    if f is None:
        forms = ", ".join(f"{d} {i.name}→{o.name}" for d, i, o in MMA_FORMS)
        raise SelectError(f"WMMA {tuple(dims)} {dtype_in.name}→{dtype_out.name} has no PTX mma "
                          f"form in kcc (forms: {forms})")
    return f


class PtxWmma:
    """The WMMA rule: needs the selector's `new`, `emit`, `reg`, `const`, `val` and `sm`."""

    def sel_WMMA(self, u: UOp) -> None:
        """WMMA → pack A, B (and an f16 C) into .b32 registers, mma.sync.aligned, unpack D."""
        a, b, c = u.src
        dims, device, threads = wmma_arg(u)
        if device != "CUDA" or threads != 32:
            raise SelectError(f"a WMMA of {device} with {threads} lanes cannot compile for "
                              "CUDA (a CUDA WMMA is one warp of 32 lanes)")
        form = mma_form(dims, a.dtype, u.dtype)
        if self.sm < form.min_sm:
            raise SelectError(f"{form.opcode} needs sm_{form.min_sm} or newer; this kernel "
                              f"targets sm_{self.sm}")
        for op, (x, name) in enumerate(((a, "A"), (b, "B"), (c, "C"))):
            n = x.shape[0] if x.shape else 1
            if n != form.elements[op]:
                raise SelectError(f"WMMA {form.shape}: {name} has {n} elements per lane; the "
                                  f"PTX fragment has {form.elements[op]}")
        self.val[u] = self.mma(form, self.lanes(a), self.lanes(b), self.lanes(c))

    def mma(self, form: MmaForm, a: list[Reg], b: list[Reg], c: list[Reg]) -> tuple[Reg, ...]:
        """D = A·B + C on the lanes' element registers; returns D's element registers."""
        ra, rb = self.pack(a, form, 0), self.pack(b, form, 1)
        if form.ctype == "f32":
            rc = tuple(c)
            rd = tuple(self.new("f32") for _ in range(form.elements[2]))
        else:
            rc = self.pack(c, form, 2)
            rd = tuple(self.new("b32") for _ in range(form.regs(2)))
        self.emit(form.opcode, Vec(rd), Vec(ra), Vec(rb), Vec(rc))
        if form.ctype == "f32":
            return rd
        out: list[Reg] = []
        for r in rd:                           # each .f16x2 register: low half, high half
            lo, hi = self.new("b16"), self.new("b16")
            self.emit("mov.b32", Vec((lo, hi)), r)
            out += [lo, hi]
        return tuple(out)

    def lanes(self, x: UOp) -> list[Reg]:
        """The registers of a vector operand's elements (a STACK, a vector LOAD, a WMMA)."""
        r = self.reg(x)
        if not isinstance(r, tuple):
            raise SelectError(f"a WMMA operand ({x.op.name}) is a scalar, not a vector")
        return list(r)

    def pack(self, regs: list[Reg], form: MmaForm, operand: int) -> tuple[Reg, ...]:
        """The operand's .b32 registers, filled as `form.packing(operand)` says."""
        out = [self.new("b32") for _ in range(form.regs(operand))]
        if form.per_reg(operand) == 1:
            for r, x in zip(out, regs):
                self.emit("mov.b32", r, x)
            return tuple(out)
        halves: list[list[Reg]] = [[] for _ in out]
        for x, (i, _half) in zip(regs, form.packing(operand)):
            halves[i].append(x)
        for r, (lo, hi) in zip(out, halves):
            self.emit("mov.b32", r, Vec((lo, hi)))
        return tuple(out)


def wmma_arg(u: UOp) -> tuple[tuple[int, int, int], str, int]:
    """(N, M, K), device and lanes of a WMMA: tinygrad 0.14's arg `((N, M, K), dtype_in,
    device, threads, None)` (kcc.ir.wmma; the IR's rule has checked it)."""
    dims, _din, device, threads, _ = u.arg
    return tuple(dims), device, threads
