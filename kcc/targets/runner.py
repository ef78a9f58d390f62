"""What `kcc run` does between the command line and the output: read a manifest or compile a
`.uop`, fill and check the arguments, run the kernel, compare with the interpreter, save.

    run(RunOptions("k.uop", target="x86", check=True))        # UserError for a refusal

Split from kcc/targets/driver.py (which keeps reading and compiling) so that a `kcc compile`
process does not load these functions' code: it never calls them, and their code objects
were ~25 KB of its page faults (docs/performance.md, issue 24 item 4).
"""

from __future__ import annotations

import sys

from kcc.record import record
from kcc.targets import registry
from kcc.targets.driver import UserError, compile_sinks, load_all, plural

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable
    from pathlib import Path


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- kcc run --------------------------------------------------------------------------------------

@record
class RunOptions:
    """What `kcc run` was asked to do (its flags, one field each)."""

    source: str                          # a .uop, or a manifest .json
    args: tuple[str, ...] = ()           # .npy paths for buffers, numbers for scalars
    interp: bool = False                 # run the .uop in the reference interpreter
    target: str | None = None            # compile the .uop for this target
    arch: str | None = None
    kernel: str | None = None            # which kernel of a manifest
    outdir: str = "kcc-out"              # where arg{slot}.npy go
    random_fill: bool = False            # fill missing inputs randomly
    seed: int = 0
    check: bool = False                  # compare with the interpreter (implies random_fill)
    emulate: bool = False                # run the code object in kcc's emulator
    say: Callable[[str], None] = _stderr  # progress and report lines


def run_program(o: RunOptions) -> bool:
    """Run o.source if it is a program manifest (docs/export.md), saying each file written;
    False if it is not one. The options that run single kernels are refused for a program."""
    from kcc.targets.manifest import LaunchError
    from kcc.targets.program import ProgramError, is_program_manifest, run_program_files
    if not o.source.endswith(".json") or not is_program_manifest(o.source):
        return False
    flags = [f for f, on in (("--interp", o.interp), ("-t", o.target), ("--kernel", o.kernel),
                             ("--random", o.random_fill), ("--check", o.check)) if on]
    if flags:
        raise UserError(f"{o.source} is a program manifest: {', '.join(flags)} apply to single "
                        "kernels (a program takes its inputs in order, -o, --emulate and --arch)")
    try:
        for path in run_program_files(o.source, o.args, o.outdir, o.emulate, o.arch):
            o.say(f"wrote {path}")
    except (ProgramError, LaunchError) as e:
        raise UserError(str(e)) from None
    return True


def run(o: RunOptions) -> None:
    """`kcc run`: load or compile the kernel, fill and check its arguments, run it, save every
    buffer to o.outdir; with o.check compare with the interpreter (UserError on a mismatch).
    A program manifest runs the whole program (run_program)."""
    if run_program(o):
        return
    import numpy as np
    from kcc.targets.check import check_inputs
    from kcc.targets.manifest import LaunchError, describe_kernel
    from kcc.targets.manifest_check import check_launch
    if o.check and o.interp:
        raise UserError("--check compares a compiled kernel with the interpreter: give "
                        "-t TARGET, not --interp")
    sink = None
    target = o.target
    if o.source.endswith(".json"):
        if o.interp:
            raise UserError("--interp runs a .uop, not a manifest")
        if o.check:
            raise UserError("--check needs a .uop source (the interpreter runs the graph), "
                            "not a manifest")
        desc, data, target = from_manifest(o.source, target, o.kernel)
    else:
        refuse_object_source(o.source)
        if (target is None) == (not o.interp):
            raise UserError("choose one of --interp or -t TARGET to run a .uop")
        sink = load_all((o.source,))[0]
        if o.kernel is not None and o.kernel != sink.arg.name:
            raise UserError(f"{o.source} holds kernel {sink.arg.name!r}, not {o.kernel!r}")
        desc = describe_kernel(sink)
        data = None
        if target is not None:
            c = compile_sinks([sink], (o.source,), target, o.arch)
            data, desc = c.data, c.descs[0]
    if o.emulate and data is None:
        raise UserError("--emulate runs a compiled kernel: give -t TARGET or a manifest")
    given = parse_args(desc, o.args, o.random_fill or o.check)
    try:
        values = check_inputs(sink, desc, np.random.default_rng(o.seed), given)
    except MemoryError:
        raise UserError(f"kernel {desc.name}: not enough memory for random buffers of "
                        f"{', '.join(str(a.size) for a in desc.args if a.kind == 'buffer')} "
                        "elements") from None
    try:
        values = check_launch(desc, values)
    except LaunchError as e:
        raise UserError(str(e)) from None
    o.say(report_inputs(desc, values, len(given)))
    big = launch_size(desc, values)
    if big:
        o.say(big)
    if o.check:
        from kcc.targets.check import check_ulp
        want, defined = _reference(sink, values)
        # the inputs again for check_compiled_graph, only where it can be asked (a target's
        # run of a kernel with approximated ops): a copy of every buffer otherwise wasted
        inputs = [x.copy() if hasattr(x, "copy") else x for x in values] \
            if target is not None and check_ulp(sink) else []
    if data is None:
        _interpret(sink, values)
    else:
        _launch(target, data, desc, values, o.emulate)
    from pathlib import Path
    out = Path(o.outdir)
    _save(out, desc, values, "")
    n = sum(a.kind == "buffer" for a in desc.args)
    o.say(f"saved {plural(n, 'buffer')} to {out}/ (arg{{slot}}.npy)")
    if o.check:
        from kcc.targets.check import check_compiled_graph, check_report
        rep = check_report(desc, target, sink, values, want, defined)
        if not rep.ok and inputs:
            rep = check_compiled_graph(desc, target, o.arch, sink, inputs, values, rep)
        if rep.ok:
            o.say("\n".join(rep.lines))
            return
        _save(out, desc, want, ".interp")      # the interpreter's buffers beside the target's
        raise UserError("\n".join(rep.lines + [
            f"  {target}'s buffers are {out}/arg{{slot}}.npy, the interpreter's "
            f"{out}/arg{{slot}}.interp.npy"]))


def parse_args(desc: Any, raw: tuple[str, ...], random_fill: bool) -> list[Any]:
    """Kernel arguments given on the command line (a prefix of the kernel's): .npy paths for
    buffers, numbers for scalars."""
    from kcc.ir import dtypes
    if len(raw) > len(desc.args):
        raise UserError(f"kernel {desc.name} takes {plural(len(desc.args), 'argument')}, got "
                        f"{len(raw)}")
    if len(raw) < len(desc.args) and not random_fill:
        missing = desc.args[len(raw)]
        raise UserError(f"kernel {desc.name} takes {plural(len(desc.args), 'argument')}, got "
                        f"{len(raw)} "
                        f"(argument {missing.slot} is missing; --random fills missing inputs)")
    out = []
    for a, text in zip(desc.args, raw):
        label = f"argument {a.slot}" + (f" ({a.name})" if a.name else "")
        if a.kind == "buffer":
            out.append(load_npy(text, label))
            continue
        try:
            out.append(float(text) if dtypes.by_name(a.dtype).is_float else int(text, 0))
        except ValueError:
            raise UserError(f"{label}: {text!r} is not a {a.dtype} number") from None
    return out


def _read_head(path: str, n: int, where: str) -> bytes:
    """A regular file's first n bytes (never a FIFO, which would wait for a writer, or a
    device); a file that cannot be read is a UserError `{where}cannot read 'path': why`."""
    from kcc.frontend.files import FileError, check_regular
    try:
        check_regular(path)
        with open(path, "rb") as f:
            return f.read(n)
    except FileError as e:
        raise UserError(f"{where}cannot read {path!r}: {e}") from None
    except OSError as e:
        raise UserError(f"{where}cannot read {path!r}: {e.strerror or e}") from None


def load_npy(path: str, label: str) -> Any:
    """A .npy file as a contiguous array; never unpickles (object arrays are refused)."""
    import numpy as np
    # np.load falls back to unpickling a file without the .npy magic, which allow_pickle=False
    # refuses with a misleading message: check the magic first
    magic = _read_head(path, 6, f"{label}: ")
    if magic != b"\x93NUMPY":
        raise UserError(f"{label}: {path!r} is not a .npy file")
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as e:          # noqa: BLE001 — a garbled header raises from ast/tokenize
        raise UserError(f"{label}: cannot read {path!r} as .npy: {e}") from None
    if not isinstance(arr, np.ndarray):
        raise UserError(f"{label}: {path!r} holds no array")
    return np.ascontiguousarray(arr)


def from_manifest(source: str, target: str | None, kernel: str | None
                  ) -> tuple[Any, bytes, str]:
    """The kernel a manifest describes, its object's bytes, and its target."""
    from pathlib import Path

    from kcc.targets.manifest import KernelDesc, LaunchError
    from kcc.targets.manifest_check import load_manifest
    try:
        doc, data = load_manifest(Path(source))
    except LaunchError as e:
        raise UserError(str(e)) from None
    descs = [KernelDesc.from_json(k) for k in doc["kernels"]]
    names = [d.name for d in descs]
    if kernel is None and len(descs) > 1:
        raise UserError(f"{source} holds {len(descs)} kernels ({', '.join(names)}); "
                        "choose one with --kernel")
    if kernel is not None and kernel not in names:
        raise UserError(f"{source} has no kernel {kernel!r} (it has {', '.join(names)})")
    desc = descs[names.index(kernel)] if kernel else descs[0]
    if doc["target"] not in registry.names():     # from a newer kcc, or edited
        raise UserError(f"{source} is for target {doc['target']!r}, which this kcc cannot "
                        f"run (it runs {', '.join(registry.names())})")
    if target is not None and target != doc["target"]:
        raise UserError(f"{source} was compiled for {doc['target']}, not {target}")
    spec = registry.get(doc["target"])
    if data is None:      # written for an emit kind that is not loadable (--emit asm)
        loadable = [e.name for e in spec.emits if e.loadable]
        how = (f"compile with --emit {' or '.join(loadable)} to run it" if loadable else
               f"this kcc writes no loadable {spec.name} object")
        raise UserError(f"{source} describes no object (its kernels were written as text, "
                        f"e.g. --emit asm, which kcc cannot load); {how}")
    if spec.arches and doc["arch"] not in spec.arches:
        raise UserError(f"{source}: arch {doc['arch']!r} is not a {spec.name} arch (it has "
                        f"{', '.join(spec.arches)})")
    _check_facts(spec, data, doc["kernels"], source)
    return desc, data, doc["target"]


def _check_facts(spec: Any, data: bytes, kernels: list[Any], source: str) -> None:
    """Refuse a manifest whose kernels disagree with the launch facts the object carries."""
    from kcc.targets.facts import FactsError
    from kcc.targets.facts_read import check_manifest
    try:
        facts = spec.describe(data)
        for k in kernels if facts is not None else ():
            check_manifest(k, facts, source)
    except FactsError as e:
        raise UserError(str(e)) from None


def refuse_object_source(source: str) -> None:
    """`kcc run k.o`: say that objects run through their manifest, not that -t is missing;
    an unreadable source is reported as such first."""
    if source == "-":
        return
    head = _read_head(source, 4, "")
    if head == b"\x7fELF":
        from pathlib import Path
        raise UserError(f"{source} is a compiled object; run its manifest "
                        f"({Path(source).with_suffix('.json')}), or the .uop with -t TARGET")


def report_inputs(desc: Any, values: list[Any], given: int) -> str:
    """Which buffers the kernel writes, and the scalar values (those chosen at random too)."""
    outs = [f"arg{a.slot}" + (f" ({a.name})" if a.name else "") for a in desc.args
            if a.kind == "buffer" and "w" in a.access]
    scal = [f"arg{a.slot}" + (f" ({a.name})" if a.name else "") + f" = {v}"
            + (" (random)" if i >= given else "")
            for i, (a, v) in enumerate(zip(desc.args, values)) if a.kind == "scalar"]
    return (f"{desc.name}: outputs {', '.join(outs) or 'none'}"
            + (f"; scalars {', '.join(scal)}" if scal else ""))


# a launch of at least this many workers (work-items) is announced before it runs, so that a
# long run is not silent (2^31 workers run for minutes even natively)
LARGE_LAUNCH = 2**20


def launch_size(desc: Any, values: list[Any]) -> str | None:
    """A line saying how many workers a large launch runs (None for a small one)."""
    glob, loc = desc.launch_dims(values)
    n = 1
    for d in (*glob, *loc):
        n *= d
    if n < LARGE_LAUNCH:
        return None
    shape = " x ".join(map(str, glob)) + ("" if list(loc) == [1, 1, 1] else
                                           " groups of " + " x ".join(map(str, loc)))
    return f"{desc.name}: runs {n} workers ({shape}); a launch this large takes a while"


def _save(out: Path, desc: Any, values: list[Any], suffix: str) -> None:
    """Every buffer as out/arg{slot}{suffix}.npy, all or nothing (outputs.save_arrays)."""
    from kcc.targets.outputs import OutputError, save_arrays
    try:
        save_arrays(out, {f"arg{a.slot}{suffix}.npy": v for a, v in zip(desc.args, values)
                          if a.kind == "buffer"})
    except OutputError as e:
        raise UserError(str(e)) from None


def _reference(sink: Any, values: list[Any]) -> tuple[list[Any], list[Any]]:
    from kcc.ir.interp import InterpError
    from kcc.targets.check import reference
    try:
        return reference(sink, values)
    except InterpError as e:
        raise UserError(f"the interpreter stopped: {e}") from None
    except MemoryError:
        raise UserError(_no_memory(sink)) from None


def _interpret(sink: Any, values: list[Any]) -> None:
    """Run the reference interpreter; a runtime fault (an out-of-bounds access whose index
    only the data decides) is an error line, not a traceback."""
    from kcc.ir.interp import InterpError
    from kcc.ir.interp import run as interp_run
    try:
        interp_run(sink, values)
    except InterpError as e:
        raise UserError(f"the interpreter stopped: {e}") from None
    except MemoryError:
        raise UserError(_no_memory(sink)) from None


def _no_memory(sink: Any) -> str:
    # the interpreter runs every worker and loop iteration as numpy lanes at once
    return (f"kernel {sink.arg.name}: not enough memory for the interpreter, which runs all "
            "workers and iterations as array lanes at once; run it compiled (-t TARGET)")


def _launch(target: str, data: bytes, desc: Any, values: list[Any], emulate: bool) -> None:
    from kcc.targets.manifest import LaunchError
    spec = registry.get(target)
    try:
        if emulate:
            spec.emulate(data, desc, values)
        else:
            spec.launch(data, desc, values)
    except LaunchError as e:
        raise UserError(str(e)) from None
