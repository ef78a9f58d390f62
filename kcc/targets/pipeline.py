"""The pass pipeline, in one place, the same for every target.

    PIPELINE = (verify, lower_weak_dtypes, simplify, unroll, stage, div_const, slp, lane_trees,
                widen,
                contract, devectorize, decompose, legalize_gates, simplify, hoist_sums,
                linearize, select, allocate, encode)

(`contract` changes nothing unless the target was built with fp_contract on, nor `div_const`
unless its TargetDesc.mul_high lists widths (x86). `hoist_sums`
regroups integer sums so their loop-invariant part is a node linearize hoists; the x86
target's select also moves invariant machine code out of loops, kcc/isel/licm.py.)

Graph passes take (sink, TargetDesc) and return a sink; the verifier runs after each of them
(Cranelift's `verify_if`, on by default). `linearize` turns the graph into the schedule; the
last three steps are the target's (`Target.select/allocate/encode`). `dump_after` prints the
graph (in the .uop text form) or the machine listing after the named pass.
"""

from __future__ import annotations

import time

from kcc import collector
from kcc.ir import UOp
from kcc.passes.contract import contract
from kcc.passes.decompose import decompose
from kcc.passes.devectorize import devectorize
from kcc.passes.divconst import div_const
from kcc.passes.lane_trees import lane_trees
from kcc.passes.gates import legalize_gates
from kcc.passes.licm import hoist_sums
from kcc.passes.linearize import linearize
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.stage import stage_loads
from kcc.passes.target import TargetDesc
from kcc.passes.threads import fold_threads
from kcc.passes.unit_loops import fold_unit_loops
from kcc.passes.unroll import unroll
from kcc.ir.verify import verify
from kcc.passes.unroll_widened import widen_and_unroll
from kcc.passes.wmma import decompose_wmma
from kcc.record import record

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol, TextIO


if TYPE_CHECKING:   # the interface, for type checkers (a target is any such object)
    class Target(Protocol):
        """What a target supplies to the pipeline."""

        name: str
        desc: TargetDesc

        def select(self, lin: list[UOp], sink: UOp) -> Any:
            """Instruction selection of the schedule; sink is the kernel as written."""
        def allocate(self, selected: Any) -> Any: ...
        def encode(self, allocated: Any) -> Any: ...
        def listing(self, stage: str, state: Any) -> str: ...


@record(frozen=True)
class Step:
    """One pipeline step: its name and what kind of value it takes ("graph", "linear", "mir")."""

    name: str
    kind: str
    run: Callable[..., Any]


def _widen(sink: UOp, desc: TargetDesc) -> UOp:
    """passes/unroll_widened.py's widen step, then loops of one trip folded
    (passes/unit_loops.py: unroll's and widening's remainders; after widening, whose choices
    the fold would change: conv1d's r_2_16_12_8_3, folded after unroll, 316 -> 703 ns). The
    folded counter's 0 is simplified away by the simplify step after legalize_gates, not by
    a simplify of its own here (which also dropped a widened load's gate before contract,
    tail20; the bounds check then refused the dump for the hull of a lane vector's range,
    since mended in kcc/ir/ranges.py)."""
    return fold_unit_loops(widen_and_unroll(sink, desc))


def _verify(sink: UOp, desc: TargetDesc) -> UOp:
    verify(sink)
    return sink


PIPELINE: tuple[Step, ...] = (
    Step("verify", "graph", _verify),
    Step("decompose_wmma", "graph", decompose_wmma),
    Step("fold_threads", "graph", fold_threads),
    Step("lower_weak_dtypes", "graph", lower_weak_dtypes),
    Step("simplify", "graph", simplify),
    Step("unroll", "graph", unroll),
    Step("stage", "graph", stage_loads),
    Step("div_const", "graph", div_const),
    Step("slp", "graph", slp),
    Step("lane_trees", "graph", lane_trees),
    Step("widen", "graph", _widen),              # (+ short loops unrolled, 1-trip folded)
    Step("contract", "graph", contract),
    Step("devectorize", "graph", devectorize),
    Step("decompose", "graph", decompose),
    Step("legalize_gates", "graph", legalize_gates),
    Step("simplify", "graph", simplify),
    Step("hoist_sums", "graph", hoist_sums),
    Step("linearize", "linear", lambda sink, desc: linearize(sink, desc.sched)),
    Step("select", "target", None),
    Step("allocate", "target", None),
    Step("encode", "target", None),
)
PASS_NAMES: tuple[str, ...] = tuple(dict.fromkeys(s.name for s in PIPELINE))


def format_schedule(lin: list[UOp]) -> str:
    """The linear schedule, one node a line, indented by loop depth."""
    from kcc.frontend.printer import format_arg
    from kcc.ir import Ops, fmt_utype
    num = {u: i for i, u in enumerate(lin)}
    lines, depth = [], 0
    for i, u in enumerate(lin):
        if u.op is Ops.END:
            depth -= 1
        srcs = f"({', '.join(f'%{num[s]}' for s in u.src)})" if u.src else ""
        arg = "" if u.arg is None else " " + format_arg(u.arg)
        typ = "" if u.dtype is None else f" : {fmt_utype(u.utype)}"
        lines.append(f"{'  ' * depth}%{i} = {u.op.name}{srcs}{arg}{typ}")
        if u.op is Ops.RANGE:
            depth += 1
    return "\n".join(lines) + "\n"


# (times, clock) of each time_passes in force; the functions watch_passes calls after a step
_timers: list[tuple[dict[str, float], Callable[[], float]]] = []
_watchers: list[Callable[[str], None]] = []


class time_passes:
    """Seconds spent in each pipeline step (summed over kernels and repeated steps) by the
    compiles inside the `with`, in pipeline order (as `llc -time-passes`); by the wall clock,
    or e.g. `time.process_time` (on a loaded host the wall clock also counts other jobs).
    (A class, not contextlib's generator: a compile does not import contextlib.)"""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.times: dict[str, float] = dict.fromkeys(PASS_NAMES, 0.0)
        self.entry = (self.times, clock)

    def __enter__(self) -> dict[str, float]:
        _timers.append(self.entry)
        return self.times

    def __exit__(self, *exc: Any) -> None:
        _timers.remove(self.entry)


class watch_passes:
    """fn(step name) is called after every pipeline step of the compiles inside the `with`
    (bench/compile_scale.py reads the memory high-water mark of each step there)."""

    def __init__(self, fn: Callable[[str], None]) -> None:
        self.fn = fn

    def __enter__(self) -> None:
        _watchers.append(self.fn)

    def __exit__(self, *exc: Any) -> None:
        _watchers.remove(self.fn)


def format_pass_times(times: dict[str, float]) -> str:
    """A table of times: one step a line, milliseconds and share of the total."""
    total = sum(times.values()) or 1e-12
    lines = [f"{'pass':<20}{'ms':>10}{'%':>8}"]
    lines += [f"{k:<20}{v * 1e3:>10.2f}{100 * v / total:>8.1f}" for k, v in times.items()]
    lines.append(f"{'total':<20}{total * 1e3:>10.2f}{100.0:>8.1f}")
    return "\n".join(lines) + "\n"


def run_pipeline(sink: UOp, target: Target, dump_after: str | None = None,
                 out: TextIO | None = None, verify_each: bool = True) -> Any:
    """Compile one kernel graph for target; returns what the target's encode returns."""
    with collector.paused():   # a compile makes no cycles (kcc/collector.py)
        return _run_pipeline(sink, target, dump_after, out, verify_each)


def _format_uop(sink: UOp) -> str:
    """The graph as `.uop` text (--dump-after: the printer is imported only then)."""
    from kcc.frontend.printer import format_uop
    return format_uop(sink)


def _run_pipeline(sink: UOp, target: Target, dump_after: str | None,
                  out: TextIO | None, verify_each: bool) -> Any:
    state: Any = sink
    desc = target.desc
    narrowed = desc.narrow is None
    for step in PIPELINE:
        t0 = [clock() for _, clock in _timers]
        if step.kind == "graph":
            state = step.run(state, desc)
            if step.name == "simplify" and not narrowed:
                # the target's description for this kernel (TargetDesc.narrow), asked once
                desc, narrowed = desc.narrow(state, desc) or desc, True
            if verify_each and step.name != "verify":
                verify(state)
            if step.name == "fold_threads":
                # the kernel as launched: workgroup threads folded into workers (same PARAMs)
                sink = state
            text = _format_uop(state) if dump_after == step.name else None
        elif step.kind == "linear":
            state = step.run(state, desc)
            text = format_schedule(state) if dump_after == step.name else None
        else:
            if step.name == "select":
                # the signature (every PARAM slot, launch dims) comes from the kernel as written
                state = target.select(state, sink)
            else:
                state = getattr(target, step.name)(state)
            text = target.listing(step.name, state) if dump_after == step.name else None
        for (times, clock), t in zip(_timers, t0):
            times[step.name] = times.get(step.name, 0.0) + clock() - t
        for fn in _watchers:
            fn(step.name)
        if text is not None and out is not None:
            out.write(f"; after {step.name}\n{text}")
            if not text.endswith("\n"):
                out.write("\n")
    return state


def compile_kernels(sinks: list[UOp], target: Target,
                    refusals: tuple[type[Exception], ...] = (), dump_after: str | None = None,
                    out: TextIO | None = None) -> tuple[list[Any], list[Any]]:
    """The kernels of one object through the pipeline: the encoded kernels and their
    KernelDescs, in input order. Two kernels of one name (one symbol each) raise CompileError;
    a refusal (an exception of a type in refusals) is re-raised as a CompileError whose
    `kernel` field names the kernel."""
    from kcc.targets.manifest import duplicate_name
    from kcc.targets.registry import CompileError
    dup = duplicate_name(sinks)
    if dup:
        raise CompileError(f"two kernels are named {dup!r}; symbols in one object must be "
                           "unique")
    encoded, descs = [], []
    for sink in sinks:
        try:
            k, d = run_pipeline(sink, target, dump_after, out)
        except refusals as e:
            raise CompileError(str(e), kernel=sink.arg.name) from None
        encoded.append(k)
        descs.append(d)
    return encoded, descs
