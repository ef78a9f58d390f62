"""VGPR tuples built from 32-bit values (a vector store's data, a 64-bit pair, a 64-bit
multiply's result) under spilling, on gfx1100 and gfx942 (kcc/isel/amd/base.py ``Base.pack``).

A regression: these were one multi-register pseudo instruction (``.pack``, ``.mul64``) whose
expansion writes the tuple's first registers before it has read every source, kept apart from
its sources by a ``.keep`` after it. A spilled source is filled into a fresh temporary just
before its use, and that temporary's life ends there, so the allocator could give its register
to the tuple: with few VGPRs, 95 to 379 of the outputs of these kernels were wrong in the
emulator. Now the tuple is written one register at a time by real instructions (``DPart``: the
tuple is DEF | USE, so live together with, and apart from, every source), and the allocation
checker rejects an instruction whose expansion writes before it reads (the target's
``early_clobber``) when a result shares a register with a source.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fuzz.harness import mismatch, run_reference, special_inputs
from kcc.frontend.parser import parse
from kcc.ir.mir import Inst, Kind, MFunction, PReg, RegOp, Role, VReg
from kcc.isel.amd import regs
from kcc.regalloc import CheckError, check_allocation

ARCHS = ("gfx1100", "gfx942")


def vector_kernel(k: int, lanes: int, dt: str) -> str:
    """k vector loads (``lanes`` of dt each) all live across a store of the sum of their first
    lanes, then stored back reversed as vector stores: each stored vector's elements are
    filled from scratch just before it is packed into the store's data tuple."""
    n = k * lanes * 32
    lines = ["# kcc-uop 1", f"%o = PARAM ParamArg(0, {dt}, {n})",
             f"%x = PARAM ParamArg(1, {dt}, {n})", f"%q = PARAM ParamArg(2, {dt}, 32)",
             '%l = SPECIAL(32) "lidx0" : weakint', f"%b = MUL(%l, {k * lanes}) : weakint"]
    for i in range(k):
        lines += [f"%a{i} = ADD(%b, {i * lanes}) : weakint",
                  f"%s{i} = SHRINK(%x, %a{i}, {lanes})", f"%v{i} = LOAD(%s{i})",
                  f"%e{i} = INDEX(%v{i}, 0)"]
    lines.append("%z0 = ADD(%e0, %e1)")
    lines += [f"%z{i - 1} = ADD(%z{i - 2}, %e{i})" for i in range(2, k)]
    # the stores come after this one (AFTER), so every loaded vector is live across it
    lines += ["%qi = INDEX(%q, %l)", f"%qs = STORE(%qi, %z{k - 2})", "%oa = AFTER(%o, %qs)"]
    for i in range(k):
        lines += [f"%d{i} = SHRINK(%oa, %a{i}, {lanes})", f"%t{i} = STORE(%d{i}, %v{k - 1 - i})"]
    lines.append(f"%g = GROUP({', '.join(f'%t{i}' for i in range(k))})")
    lines.append('SINK(%g) KernelInfo(name="vectors")')
    return "\n".join(lines) + "\n"


def wide_kernel(k: int, op: str) -> str:
    """k 32-bit (op "cast": int32, "ucast": uint32) or int64 ("mul") values all live across a
    store of their sum, then each widened to 64 bits (a pair) and combined with a fresh load,
    or multiplied (int64) by one."""
    dt = {"cast": "int32", "ucast": "uint32", "mul": "int64"}[op]
    out = {"cast": "int64", "ucast": "uint64", "mul": "int64"}[op]
    lines = ["# kcc-uop 1", f"%o = PARAM ParamArg(0, {out}, {k * 32})",
             f"%x = PARAM ParamArg(1, {dt}, {k * 32})", f"%q = PARAM ParamArg(2, {dt}, 32)",
             '%l = SPECIAL(32) "lidx0" : weakint', f"%b = MUL(%l, {k}) : weakint"]
    for i in range(k):
        lines += [f"%a{i} = ADD(%b, {i}) : weakint", f"%s{i} = INDEX(%x, %a{i})",
                  f"%v{i} = LOAD(%s{i}) : {dt}"]
    lines.append(f"%z0 = ADD(%v0, %v1) : {dt}")
    lines += [f"%z{i - 1} = ADD(%z{i - 2}, %v{i}) : {dt}" for i in range(2, k)]
    lines += ["%qi = INDEX(%q, %l)", f"%qs = STORE(%qi, %z{k - 2})", "%xa = AFTER(%x, %qs)"]
    for i in range(k):
        lines += [f"%r{i} = INDEX(%xa, %a{i})", f"%w{i} = LOAD(%r{i}) : {dt}"]
        if op == "mul":
            lines.append(f"%y{i} = MUL(%v{k - 1 - i}, %w{i}) : int64")
        else:
            lines += [f"%c{i} = CAST(%v{k - 1 - i}) {out}", f"%cw{i} = CAST(%w{i}) {out}",
                      f"%y{i} = XOR(%c{i}, %cw{i}) : {out}"]
        lines += [f"%d{i} = INDEX(%o, %a{i})", f"%t{i} = STORE(%d{i}, %y{i})"]
    lines.append(f"%g = GROUP({', '.join(f'%t{i}' for i in range(k))})")
    lines.append('SINK(%g) KernelInfo(name="wide")')
    return "\n".join(lines) + "\n"


def _run(text: str, arch: str, vgprs: int, monkeypatch) -> None:
    """Compile with only ``vgprs`` VGPRs (the checker on), assert that it spills, and run it in
    the emulator against the interpreter on two input draws."""
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    monkeypatch.setitem(regs.ARCHES, arch, replace(regs.ARCHES[arch], vgprs=vgprs))
    sink = parse(text)
    (code,) = compile_amd_code([sink], arch)
    assert code.spills.scratch_bytes > 0
    data = hsaco([code])
    for seed in range(2):
        args = special_inputs(sink, seed)
        want = run_reference(sink, args)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        emulate(data, code.desc, check_launch(code.desc, got))
        assert not mismatch(sink, got, want), mismatch(sink, got, want)


# (vgprs, vectors): configurations where the old packing gave wrong outputs on both arches
# (int32 x4: 190 of 768 and 285 of 1280; int32 x2: 95 of 640 and 157 of 1024; int64 x2: 63 of
# 640 and 32 of 1024 elements differed)
VECTORS = [("int32", 4, 16, 6), ("int32", 4, 24, 10), ("int32", 2, 16, 10),
           ("int32", 2, 24, 16), ("int64", 2, 16, 10), ("int64", 2, 16, 16)]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt, lanes, vgprs, k", VECTORS)
def test_vector_store_data_survives_spilling(dt: str, lanes: int, vgprs: int, k: int,
                                             arch: str, monkeypatch) -> None:
    """A b64/b128 store's data tuple is built from spilled elements filled just before."""
    _run(vector_kernel(k, lanes, dt), arch, vgprs, monkeypatch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op, vgprs, k", [("cast", 12, 16), ("ucast", 12, 24),
                                          ("mul", 12, 16), ("mul", 16, 24)])
def test_wide_values_survive_spilling(op: str, vgprs: int, k: int, arch: str,
                                      monkeypatch) -> None:
    """64-bit pairs made from spilled 32-bit values (sign and zero extension) and 64-bit
    multiplies of spilled operands (these did not go wrong before the change: the allocation
    happened to keep the old expansions' results off the filled sources)."""
    _run(wide_kernel(k, op), arch, vgprs, monkeypatch)


def test_selector_writes_no_early_clobber_pseudo() -> None:
    """Every pseudo instruction the AMD selector writes for these kernels reads its sources
    before or as it writes each result register (the target's ``early_clobber`` is False)."""
    from kcc.targets.amd.target import AmdTarget
    from kcc.targets.pipeline import run_pipeline
    seen: list[str] = []

    class _Spy(AmdTarget):
        def allocate(self, state):
            seen.extend(x.op for x in state[0].fn.insts)
            return super().allocate(state)
    for arch in ARCHS:
        for text in (vector_kernel(6, 4, "int64"), wide_kernel(6, "cast"),
                     wide_kernel(6, "ucast"), wide_kernel(6, "mul")):
            run_pipeline(parse(text), _Spy(arch))
    info = regs.AmdRegInfo(regs.ARCHES["gfx1100"], "k")
    assert ".def" in seen and ".pack" not in seen and ".mul64" not in seen
    early = {op for op in seen if info.early_clobber(Inst(op, []))}
    assert not early, early


@pytest.mark.parametrize("arch", ARCHS)
def test_checker_rejects_a_result_over_a_source_of_an_early_clobber(arch: str) -> None:
    """The old packing's failure, by hand: ``.pack`` (an expansion that writes d[0] before it
    reads its second source) with its second source filled into d[0]'s register. The checker
    follows values only, so it saw the right values read; the target's ``early_clobber``
    makes it reject the overlap."""
    a, b, t = VReg(0, "v"), VReg(1, "v"), VReg(2, "v2")
    before = MFunction("k", insts=[
        Inst("v_mov_b32", [RegOp(a, Role.DEF)], arg=((0, 1), ())),
        Inst("v_mov_b32", [RegOp(b, Role.DEF)], arg=((0, 2), ())),
        Inst(".pack", [RegOp(t, Role.DEF), RegOp(a, Role.USE), RegOp(b, Role.USE)],
             arg=((0, 1, 2), ())),
        Inst(".keep", [RegOp(t, Role.USE)], arg=((0,), ()))])
    v = regs.preg("v", 0, 1)
    info = regs.AmdRegInfo(regs.ARCHES[arch], "k")

    def allocated(a_reg: PReg, b_reg: PReg) -> MFunction:
        ts = regs.preg("v", 4, 2)
        return replace(before, insts=[
            Inst("v_mov_b32", [RegOp(a_reg, Role.DEF)], arg=((0, 1), ())),
            Inst("v_mov_b32", [RegOp(b_reg, Role.DEF)], arg=((0, 2), ())),
            Inst(".pack", [RegOp(ts, Role.DEF), RegOp(a_reg, Role.USE),
                           RegOp(b_reg, Role.USE)], arg=((0, 1, 2), ())),
            Inst(".keep", [RegOp(ts, Role.USE)], arg=((0,), ()))])
    check_allocation(before, allocated(v, regs.preg("v", 1, 1)), info)
    with pytest.raises(CheckError, match="reads a source"):
        check_allocation(before, allocated(v, regs.preg("v", 4, 1)), info)
    assert info.early_clobber(Inst(".pack", [])) and not info.early_clobber(
        Inst(".add64", [])) and not info.early_clobber(Inst("v_mov_b32", []))
    assert Kind.OP is before.insts[0].kind
