"""passes/wmma.py (WMMA → per-lane MULACC chains) and passes/threads.py (lidx folded into gidx
on a target without workgroups): the rewritten graph computes the same bits as the WMMA graph
in the interpreter, for every tensor-core form, special values included; and x86, which has no
workgroups and no tensor cores, runs WMMA kernels bit for bit like the interpreter."""

from __future__ import annotations

from dataclasses import replace

import pytest
from wmma_graphs import fragment_inputs, fragment_kernel
from x86_util import compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.verify import verify
from kcc.ir.wmma import SHAPES, WmmaShape
from kcc.passes.target import SCALAR_ALL_NATIVE
from kcc.passes.threads import fold_threads
from kcc.passes.wmma import WmmaError, decompose_wmma
from kcc.targets.check import same_elements

NAMES = [f"{s.device}-{s.dims}-{s.threads}-{s.dtype_in}-{s.dtype_out}" for s in SHAPES]
# a target without tensor cores, without workgroups (CPU) and with them (GPU)
CPU = replace(SCALAR_ALL_NATIVE, wmma=lambda sh: False)
GPU = replace(CPU, gpu=True)


def assert_same(sh: WmmaShape, got: list, want: list) -> None:
    """D equal bit for bit, a NaN's payload aside (docs/semantics.md: unspecified)."""
    bad = ~same_elements(got[0], want[0], sh.dtype_out)
    assert not bad.any(), (int(bad.sum()), got[0][bad][:4], want[0][bad][:4])


def _ops(sink) -> set[Ops]:
    return {n.op for n in sink.toposort()}


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_the_expansion_computes_the_same_bits(sh: WmmaShape) -> None:
    sink = parse(fragment_kernel(sh))
    out = decompose_wmma(sink, CPU)
    verify(out)
    assert Ops.WMMA not in _ops(out) and Ops.MULACC in _ops(out)
    args = fragment_inputs(sh, specials=True)
    assert_same(sh, reference(out, args), reference(sink, args))


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_x86_runs_wmma_kernels_bit_for_bit(sh: WmmaShape) -> None:
    sink = parse(fragment_kernel(sh))
    args = fragment_inputs(sh, seed=1, specials=True)
    assert_same(sh, compile_and_run(sink, args), reference(sink, args))


def test_a_form_the_target_selects_is_left() -> None:
    sink = parse(fragment_kernel(SHAPES[0]))
    keep = replace(SCALAR_ALL_NATIVE, wmma=lambda sh: sh is SHAPES[0])
    assert decompose_wmma(sink, keep) is sink
    assert decompose_wmma(sink, SCALAR_ALL_NATIVE) is sink     # None: the selector takes all


def test_warps_counted_by_lidx1_expand_and_fold() -> None:
    """tinygrad's bigger tiles: lidx0 is the warp, lidx1 counts warps."""
    sh = SHAPES[0]
    sink = parse(fragment_kernel(sh, split=32))
    out = fold_threads(decompose_wmma(sink, CPU), CPU)
    verify(out)
    args = fragment_inputs(sh, seed=3, specials=True)
    assert_same(sh, reference(out, args), reference(sink, args))
    assert_same(sh, compile_and_run(sink, args), reference(sink, args))


def test_a_warp_split_across_lidx1_is_refused_by_name() -> None:
    sink = parse(fragment_kernel(SHAPES[0], split=8))
    with pytest.raises(WmmaError, match="whole warps of 32 lanes .*, not lidx0 < 8"):
        decompose_wmma(sink, CPU)


def test_an_operand_read_from_a_reg_buffer_is_refused() -> None:
    text = fragment_kernel(SHAPES[0]).replace(
        "%av = LOAD(%ap)",
        "%r = BUFFER ParamArg(0, float16, 8, addrspace=REG)\n%rp = SHRINK(%r, 0, 8)\n"
        "%rs = STORE(%rp, LOAD(%ap))\n%ra = AFTER(%r, %rs)\n%rq = SHRINK(%ra, 0, 8)\n"
        "%av = LOAD(%rq)")
    text = text.replace("STORE(%rp, LOAD(%ap))", "STORE(%rp, %al)").replace(
        "%r = BUFFER", "%al = LOAD(%ap)\n%r = BUFFER")
    with pytest.raises(WmmaError, match="REG BUFFER"):
        decompose_wmma(parse(text), CPU)


def test_threads_fold_into_workers_only_without_workgroups() -> None:
    sh = SHAPES[0]
    sink = decompose_wmma(parse(fragment_kernel(sh)), CPU)
    assert fold_threads(sink, GPU) is sink                       # a GPU target keeps lidx
    folded = fold_threads(sink, CPU)
    verify(folded)
    names = {n.arg for n in folded.toposort() if n.op is Ops.SPECIAL}
    assert names == {"gidx0"}
    (g,) = [n for n in folded.toposort() if n.op is Ops.SPECIAL]
    assert g.src[0].arg == 2 * 64                                 # 2 groups of 64 threads
    args = fragment_inputs(sh, seed=2)
    assert_same(sh, reference(folded, args), reference(sink, args))


def test_threads_that_meet_are_not_folded() -> None:
    text = ("# kcc-uop 1\n%o = PARAM ParamArg(0, float32, 8)\n"
            "%t = BUFFER ParamArg(0, float32, 8, addrspace=LOCAL)\n"
            '%l = SPECIAL(8) "lidx0"\n%ti = INDEX(%t, %l)\n%st = STORE(%ti, 1.0)\n'
            "%b = BARRIER(%st)\n%ta = AFTER(%t, %b)\n%r = SUB(7, %l)\n"
            "%tr = INDEX(%ta, %r)\n%v = LOAD(%tr)\n%oi = INDEX(%o, %l)\n"
            '%so = STORE(%oi, %v)\nSINK(%so) KernelInfo(name="k")\n')
    sink = parse(text)
    assert fold_threads(sink, CPU) is sink


def test_no_wmma_no_change() -> None:
    sink = parse("# kcc-uop 1\n%o = PARAM ParamArg(0, float32, 4)\n%i = INDEX(%o, 0)\n"
                 '%s = STORE(%i, 1.0)\nSINK(%s) KernelInfo(name="k")\n')
    assert decompose_wmma(sink, CPU) is sink
    assert fold_threads(sink, CPU) is sink
