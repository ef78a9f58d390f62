"""The `kcc` command line: small click commands that call the layers.

    kcc check FILE...        parse and verify; `path: ok` per good file, errors on stderr
    kcc fmt FILE [-i]        the canonical text, to stdout or in place
    kcc compile FILE... -t T one object (+ manifest) for target T (kcc.targets.registry)
    kcc run SOURCE ARG...    run a .uop (--interp or -t T) or a manifest; save the buffers
    kcc disasm FILE          the instructions of an object (the target that claims it lists it)
    kcc targets              the targets, their arches and emit kinds
    kcc tinygrad-capture S   run a tinygrad script, write every kernel it runs as .uop

A bad input file is reported as `path:line:col: error: message` with the line and a caret, and
the command exits with status 1; it never shows a Python traceback.

Start-up is kept small: this module imports click, the registry's names and the error type;
the parser, the passes, a target and numpy are imported by the commands that use them
(`kcc --version` imports none of them: tests/cli/test_startup.py).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kcc.frontend.errors import SourceError
from kcc.targets import registry

if TYPE_CHECKING:
    from kcc.frontend.parser import ParseResult


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--version: kcc.__version__ (which pyproject.toml's version is read from)."""
    if not value or ctx.resilient_parsing:
        return
    from kcc import __version__
    click.echo(f"kcc, version {__version__}")
    ctx.exit()


def load(path: str) -> tuple[ParseResult, str]:
    """Read, parse and verify a `.uop` file (`-` is stdin); returns the result and the text."""
    from kcc.frontend.lexer import decode_source
    from kcc.frontend.parser import parse_result, read_source
    if path == "-":
        data, name = sys.stdin.buffer.read(), "<stdin>"
    else:
        data, name = read_source(path), path
    text = decode_source(data, name)
    return parse_result(text, name), text


def _fail(err: SourceError) -> None:
    click.echo(err.render(), err=True)


@click.group()
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
def main() -> None:
    """kcc: an ahead-of-time kernel compiler for .uop graphs."""


@main.command()
@click.argument("files", nargs=-1, required=True)
def check(files: tuple[str, ...]) -> None:
    """Parse and verify each FILE; exit 1 if any is refused."""
    failed = False
    for path in files:
        try:
            res, _ = load(path)
        except SourceError as e:
            _fail(e)
            failed = True
            continue
        click.echo(f"{res.path}: ok (kernel {res.sink.arg.name}, {len(res.sink.toposort())} "
                   "nodes)")
    sys.exit(1 if failed else 0)


@main.command()
@click.argument("file")
@click.option("-i", "--in-place", is_flag=True, help="Rewrite FILE instead of printing.")
def fmt(file: str, in_place: bool) -> None:
    """Print FILE in canonical form (renumbered, typed, leading comments kept)."""
    if in_place and file == "-":
        raise click.UsageError("-i needs a file, not stdin")
    try:
        res, text = load(file)
    except SourceError as e:
        _fail(e)
        sys.exit(1)
    from kcc.frontend.printer import format_uop, leading_comments
    out = format_uop(res.sink, leading_comments(text))
    if not in_place:
        click.echo(out, nl=False)
        return
    try:
        with open(file, "w", encoding="utf-8", newline="\n") as f:
            f.write(out)
    except OSError as e:
        _fail(SourceError(file, 0, 0, f"cannot write the file: {e.strerror or e}"))
        sys.exit(1)


# -- compile, run, disasm ------------------------------------------------------------------------

class TargetName(click.ParamType):
    """A target name from kcc.targets.registry (checked when parsed, so a target registered
    at run time is accepted too)."""

    name = "target"

    def get_metavar(self, param: click.Parameter, *args: object, **kwargs: object) -> str:
        # click 8.2 passes ctx by keyword, earlier versions pass nothing more
        return "[" + "|".join(registry.names()) + "]"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None):
        if value in registry.names():
            return value
        self.fail(f"{value!r} is not a target (choose from {', '.join(registry.names())}; "
                  "`kcc targets` lists them)", param, ctx)


TARGET = TargetName()


class CliError(Exception):
    """A user-facing error: printed as `error: …`, exit status 1."""


def _die(msg: str) -> None:
    click.echo(f"error: {msg}", err=True)
    sys.exit(1)


def _load_all(files: tuple[str, ...]) -> list:
    sinks = []
    for path in files:
        try:
            res, _ = load(path)
        except SourceError as e:
            _fail(e)
            sys.exit(1)
        sinks.append(res.sink)
    return sinks


def _compile(sinks: list, target: str, arch: str | None, emit: str | None,
             dump_after: str | None, files: tuple[str, ...] = (),
             options: dict[str, str] | None = None) -> tuple[bytes, list, str, str]:
    """Run the pipeline for target; returns (output bytes, kernel descs, arch, emit). options:
    the compile options (registry.OPTIONS, by keyword). A refusal naming a kernel is prefixed
    with the file it came from."""
    from kcc.targets.pipeline import PASS_NAMES
    if dump_after is not None and dump_after not in PASS_NAMES:
        raise CliError(f"unknown pass {dump_after!r} for --dump-after (choose from "
                       f"{', '.join(PASS_NAMES)})")
    spec = registry.get(target)
    arch = arch or spec.default_arch
    emit = emit or spec.default_emit
    out = sys.stdout if dump_after else None
    try:
        spec.check_arch(arch)
        spec.emit(emit)
        kw = spec.compile_options(options or {})
        c = spec.compile(sinks, arch, emit, dump_after, out, **kw)
    except Exception as e:                   # noqa: BLE001 — never a traceback for a user
        msg = _compile_message(e)
        for sink, path in zip(sinks, files):
            if msg.startswith(f"kernel {sink.arg.name}: "):
                msg = f"{'<stdin>' if path == '-' else path}: {msg}"
                break
        raise CliError(msg) from None
    return c.data, c.descs, c.arch, c.emit


def _compile_message(e: Exception) -> str:
    """A compile failure as one line: the message of an error kcc reports on purpose (a
    construct the target cannot compile), else an internal error to report, with its type
    (KCC_TRACEBACK=1 re-raises it with the traceback, for kcc developers)."""
    if isinstance(e, registry.CompileError):
        return str(e)
    if os.environ.get("KCC_TRACEBACK"):
        raise e
    return f"internal compiler error ({type(e).__name__}: {e}); please report it with the input"


def _compile_option_flags(f):
    """One flag per compile option of the registry (`--fp-contract [off|fast]`); a target that
    does not compile the value given refuses it (TargetSpec.compile_options)."""
    for opt in reversed(registry.OPTIONS):
        f = click.option(opt.flag, opt.keyword, type=click.Choice(opt.values),
                         default=opt.values[0], show_default=True, help=opt.help)(f)
    return f


@main.command("compile")
@click.argument("files", nargs=-1, required=True)
@click.option("-t", "--target", type=TARGET, required=True,
              help="Target (`kcc targets` lists each with its arches and emit kinds).")
@click.option("--arch", help="The target's architecture (default: the target's default; "
              "`kcc targets` lists them).")
@click.option("-o", "--output", help="Output file, - for standard output (default: the first "
              "input with the emit kind's suffix: .o, .cubin, …).")
@click.option("--manifest", help="Manifest path (default: the output with .json, e.g. k.o → "
              "k.json; none for -o - or a device such as /dev/null).")
@click.option("--no-manifest", is_flag=True, help="Write no manifest.")
@click.option("--header", help="Also write a C header with the kernels' prototypes "
              "(targets whose objects C links, e.g. x86).")
@click.option("--emit", help="Output kind (default: the target's first; `kcc targets` lists "
              "them).")
@click.option("--dump-after", help="Print the graph or machine listing after this pass.")
@click.option("--time-passes", is_flag=True, help="Print the time of each pass (stderr).")
@_compile_option_flags
def compile_cmd(files: tuple[str, ...], target: str, arch: str | None, output: str | None,
                manifest: str | None, no_manifest: bool, header: str | None, emit: str | None,
                dump_after: str | None, time_passes: bool, **options: str) -> None:
    """Compile FILE… (one kernel each, - is standard input) into one object and a JSON launch
    manifest. Every output is written completely or not at all, and never over an input."""
    for flag, value in (("-o", output), ("--manifest", manifest), ("--header", header),
                        ("--arch", arch), ("--emit", emit), ("--dump-after", dump_after)):
        if value == "":
            raise click.UsageError(f"{flag} needs a value, not an empty string")
    if manifest and no_manifest:
        raise click.UsageError("--manifest and --no-manifest exclude each other")
    if files.count("-") > 1:
        raise click.UsageError("standard input (-) can be read once")
    if "-" in files and output is None:
        _die("the kernel comes from standard input: name the output with -o (- for "
             "standard output)")
    if dump_after and output == "-":
        _die("--dump-after prints to standard output, so the output cannot go there too "
             "(-o FILE)")
    sinks = _load_all(files)
    try:
        from kcc.targets.pipeline import format_pass_times
        from kcc.targets.pipeline import time_passes as timer
        with timer() as times:
            data, descs, arch, emit = _compile(sinks, target, arch, emit, dump_after, files,
                                               options)
        if time_passes:
            click.echo(format_pass_times(times), err=True, nl=False)
        outputs, mpath = _compile_outputs(files, target, arch, emit, data, descs, output,
                                          manifest, no_manifest, header)
        from kcc.targets.outputs import OutputError, check_paths, write_all
        try:
            check_paths(list(files), outputs)
            write_all(outputs)
        except OutputError as e:
            raise CliError(str(e)) from None
    except CliError as e:
        _die(str(e))
    out = outputs[0].path
    what = "standard output" if out == "-" else out
    also = f" and manifest {mpath}" if mpath else " (no manifest)"
    also += f" and header {header}" if header else ""
    click.echo(f"wrote {what}{also} ({_plural(len(descs), 'kernel')})", err=True)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def header_guard(path: str) -> str:
    """The include guard of a header, from its file name: kernels-v2.h → KERNELS_V2_H."""
    name = re.sub(r"[^A-Za-z0-9]", "_", Path(path).name).upper() if path != "-" else ""
    if not name or not (name[0].isalpha()):
        name = "KCC_" + (name.lstrip("_") or "KERNELS_H")
    return name


def _compile_outputs(files, target, arch, emit, data, descs, output, manifest, no_manifest,
                     header):
    """The files `kcc compile` writes (object, manifest, header), none written yet, and the
    manifest's path (None without one)."""
    from kcc.targets.manifest import manifest_doc, manifest_text
    from kcc.targets.outputs import Output, is_special
    spec = registry.get(target)
    kind = spec.emit(emit)
    out = output or Path(files[0]).stem + kind.suffix
    outputs = [Output(out, data, "object" if kind.loadable else f"{emit} output")]
    mpath = None
    if manifest:
        if kind.loadable and is_special(out):
            raise CliError(f"a manifest names the object's file and hash, and "
                           f"{'standard output' if out == '-' else out} is not a file; write "
                           "the object to a file, or leave out --manifest")
        mpath = manifest
    elif not no_manifest and not is_special(out):
        mpath = str(Path(out).with_suffix(".json"))
        _refuse_foreign_manifest(mpath, out)
    if mpath:
        doc = manifest_doc(Path(mpath), target, arch, descs, Path(out) if kind.loadable
                           else None, data)
        outputs.append(Output(mpath, manifest_text(doc).encode(), "manifest"))
    if header:
        text = spec.header(descs, header_guard(header))
        if text is None:
            raise CliError(f"--header: -t {target} has no C header (C prototypes of the "
                           "object's functions); nothing was written")
        outputs.append(Output(header, text.encode(), "header"))
    return outputs, mpath


def _refuse_foreign_manifest(mpath: str, out: str) -> None:
    """A default-named manifest must not silently replace a file that is not the manifest of
    this same output (another target's k.json beside k.o and k.cubin, or a user's JSON)."""
    import json
    try:
        old = json.loads(Path(mpath).read_text())
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError, ValueError):
        old = None
    hint = "name the manifest with --manifest, or --no-manifest"
    if not isinstance(old, dict) or old.get("format") != "kcc-manifest":
        raise CliError(f"the manifest would be {mpath} (named after {out}), which exists and "
                       f"is not a kcc manifest; {hint}")
    obj = old.get("object")
    other = obj.get("file") if isinstance(obj, dict) else None
    mine = os.path.relpath(os.path.abspath(out), os.path.dirname(os.path.abspath(mpath)))
    if other is not None and other != mine:
        raise CliError(f"the manifest would be {mpath} (named after {out}), which is the "
                       f"manifest of {other} (target {old.get('target')}); {hint}")


def _parse_args(desc, raw: tuple[str, ...], random_fill: bool) -> list:
    """Kernel arguments given on the command line (a prefix of the kernel's): .npy paths for
    buffers, numbers for scalars."""
    import numpy as np
    from kcc.ir import dtypes
    if len(raw) > len(desc.args):
        raise CliError(f"kernel {desc.name} takes {_plural(len(desc.args), 'argument')}, got "
                       f"{len(raw)}")
    if len(raw) < len(desc.args) and not random_fill:
        missing = desc.args[len(raw)]
        raise CliError(f"kernel {desc.name} takes {_plural(len(desc.args), 'argument')}, got "
                       f"{len(raw)} "
                       f"(argument {missing.slot} is missing; --random fills missing inputs)")
    out = []
    for a, text in zip(desc.args, raw):
        label = f"argument {a.slot}" + (f" ({a.name})" if a.name else "")
        if a.kind == "buffer":
            out.append(_load_npy(text, label))
            continue
        try:
            out.append(float(text) if dtypes.by_name(a.dtype).is_float else int(text, 0))
        except ValueError:
            raise CliError(f"{label}: {text!r} is not a {a.dtype} number") from None
    return out


def _load_npy(path: str, label: str):
    """A .npy file as a contiguous array; never unpickles (object arrays are refused)."""
    import numpy as np
    # np.load falls back to unpickling a file without the .npy magic, which allow_pickle=False
    # refuses with a misleading message: check the magic first
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as e:
        raise CliError(f"{label}: cannot read {path!r}: {e.strerror}") from None
    if magic != b"\x93NUMPY":
        raise CliError(f"{label}: {path!r} is not a .npy file")
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as e:          # noqa: BLE001 — a garbled header raises from ast/tokenize
        raise CliError(f"{label}: cannot read {path!r} as .npy: {e}") from None
    if not isinstance(arr, np.ndarray):
        raise CliError(f"{label}: {path!r} holds no array")
    return np.ascontiguousarray(arr)


@main.command("run")
@click.argument("source")
@click.argument("args", nargs=-1)
@click.option("--interp", is_flag=True, help="Run the .uop in the reference interpreter.")
@click.option("-t", "--target", type=TARGET, help="Compile the .uop for TARGET.")
@click.option("--arch", help="Target architecture (as for compile).")
@click.option("--kernel", help="Kernel name, when a manifest holds several.")
@click.option("-o", "--outdir", default="kcc-out", show_default=True,
              help="Folder for arg{slot}.npy after the run.")
@click.option("--random", "random_fill", is_flag=True, help="Fill missing inputs randomly.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="Seed for --random and --check.")
@click.option("--check", is_flag=True,
              help="Random inputs; compare the compiled kernel with the interpreter.")
@click.option("--emulate", is_flag=True,
              help="Run the code object in kcc's emulator instead of on a device (-t amd).")
def run_cmd(source: str, args: tuple[str, ...], interp: bool, target: str | None,
            arch: str | None, kernel: str | None, outdir: str, random_fill: bool, seed: int,
            check: bool, emulate: bool) -> None:
    """Run SOURCE (a .uop, or a manifest .json) on ARG… (.npy buffers, numbers for scalars);
    saves every buffer as OUTDIR/arg{slot}.npy."""
    try:
        _run(source, args, interp, target, arch, kernel, outdir, random_fill or check, seed,
             check, emulate)
    except CliError as e:
        _die(str(e))


def _run(source, args, interp, target, arch, kernel, outdir, random_fill, seed, check,
         emulate=False):
    import numpy as np
    from kcc.targets.check import check_inputs
    from kcc.targets.manifest import LaunchError, check_launch, describe_kernel
    if check and interp:
        raise CliError("--check compares a compiled kernel with the interpreter: give "
                       "-t TARGET, not --interp")
    sink = None
    if source.endswith(".json"):
        if interp:
            raise CliError("--interp runs a .uop, not a manifest")
        if check:
            raise CliError("--check needs a .uop source (the interpreter runs the graph), "
                           "not a manifest")
        desc, data, target = _from_manifest(source, target, kernel)
    else:
        _refuse_object_source(source)
        if (target is None) == (not interp):
            raise CliError("choose one of --interp or -t TARGET to run a .uop")
        sink = _load_all((source,))[0]
        if kernel is not None and kernel != sink.arg.name:
            raise CliError(f"{source} holds kernel {sink.arg.name!r}, not {kernel!r}")
        desc = describe_kernel(sink)
        data = None
        if target is not None:
            data, descs, _, _ = _compile([sink], target, arch, None, None, (source,))
            desc = descs[0]
    if emulate and data is None:
        raise CliError("--emulate runs a compiled kernel: give -t TARGET or a manifest")
    given = _parse_args(desc, args, random_fill)
    try:
        values = check_inputs(sink, desc, np.random.default_rng(seed), given)
    except MemoryError:
        raise CliError(f"kernel {desc.name}: not enough memory for random buffers of "
                       f"{', '.join(str(a.size) for a in desc.args if a.kind == 'buffer')} "
                       "elements") from None
    try:
        values = check_launch(desc, values)
    except LaunchError as e:
        raise CliError(str(e)) from None
    _report_inputs(desc, values, len(given))
    if check:
        want, defined = _reference(sink, values)
    if data is None:
        _interpret(sink, values)
    else:
        _launch(target, data, desc, values, emulate)
    out = Path(outdir)
    _save(out, desc, values, "")
    if check:
        _check_report(desc, target, sink, values, want, defined, out)


def _from_manifest(source: str, target: str | None, kernel: str | None):
    """The kernel a manifest describes, its object's bytes, and its target."""
    from kcc.targets.manifest import KernelDesc, LaunchError, read_manifest
    try:
        doc = read_manifest(Path(source))
    except LaunchError as e:
        raise CliError(str(e)) from None
    descs = [KernelDesc.from_json(k) for k in doc["kernels"]]
    names = [d.name for d in descs]
    if kernel is None and len(descs) > 1:
        raise CliError(f"{source} holds {len(descs)} kernels ({', '.join(names)}); "
                       "choose one with --kernel")
    if kernel is not None and kernel not in names:
        raise CliError(f"{source} has no kernel {kernel!r} (it has {', '.join(names)})")
    desc = descs[names.index(kernel)] if kernel else descs[0]
    if doc["target"] not in registry.names():     # from a newer kcc, or edited
        raise CliError(f"{source} is for target {doc['target']!r}, which this kcc cannot "
                       f"run (it runs {', '.join(registry.names())})")
    if target is not None and target != doc["target"]:
        raise CliError(f"{source} was compiled for {doc['target']}, not {target}")
    if doc.get("object") is None:      # written for --emit asm: nothing to load
        raise CliError(f"{source} describes no object (it was written with --emit asm); "
                       "assemble the .s and run it from C, or compile with --emit obj")
    data = (Path(source).parent / doc["object"]["file"]).read_bytes()
    spec = registry.get(doc["target"])
    if spec.arches and doc["arch"] not in spec.arches:
        raise CliError(f"{source}: arch {doc['arch']!r} is not a {spec.name} arch (it has "
                       f"{', '.join(spec.arches)})")
    _check_facts(spec, data, doc["kernels"], source)
    return desc, data, doc["target"]


def _check_facts(spec, data: bytes, kernels: list, source: str) -> None:
    """Refuse a manifest whose kernels disagree with the launch facts the object carries."""
    from kcc.targets.facts import FactsError, check_manifest
    try:
        facts = spec.describe(data)
        for k in kernels if facts is not None else ():
            check_manifest(k, facts, source)
    except FactsError as e:
        raise CliError(str(e)) from None


def _refuse_object_source(source: str) -> None:
    """`kcc run k.o`: say that objects run through their manifest, not that -t is missing;
    an unreadable source is reported as such first."""
    if source == "-":
        return
    try:
        with open(source, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise CliError(f"cannot read {source!r}: {e.strerror or e}") from None
    if head == b"\x7fELF":
        raise CliError(f"{source} is a compiled object; run its manifest "
                       f"({Path(source).with_suffix('.json')}), or the .uop with -t TARGET")


def _report_inputs(desc, values: list, given: int) -> None:
    """Which buffers the kernel writes, and the scalar values (those chosen at random too)."""
    outs = [f"arg{a.slot}" + (f" ({a.name})" if a.name else "") for a in desc.args
            if a.kind == "buffer" and "w" in a.access]
    scal = [f"arg{a.slot}" + (f" ({a.name})" if a.name else "") + f" = {v}"
            + (" (random)" if i >= given else "")
            for i, (a, v) in enumerate(zip(desc.args, values)) if a.kind == "scalar"]
    click.echo(f"{desc.name}: outputs {', '.join(outs) or 'none'}"
               + (f"; scalars {', '.join(scal)}" if scal else ""), err=True)


def _save(out: Path, desc, values: list, suffix: str) -> None:
    import numpy as np
    try:
        out.mkdir(parents=True, exist_ok=True)
        for a, v in zip(desc.args, values):
            if a.kind == "buffer":
                np.save(out / f"arg{a.slot}{suffix}.npy", v)
    except OSError as e:
        raise CliError(f"cannot write {e.filename or out}: {e.strerror}") from None
    if not suffix:
        n = sum(a.kind == "buffer" for a in desc.args)
        click.echo(f"saved {_plural(n, 'buffer')} to {out}/ (arg{{slot}}.npy)", err=True)


def _reference(sink, values: list):
    from kcc.ir.interp import InterpError
    from kcc.targets.check import reference
    try:
        return reference(sink, values)
    except InterpError as e:
        raise CliError(f"the interpreter stopped: {e}") from None


def _check_report(desc, target, sink, got, want, defined, out: Path) -> None:
    """--check: compare; on a mismatch save the interpreter's buffers beside the target's."""
    from kcc.targets.check import compare
    ulp = _check_ulp(sink)
    bad = compare(desc, got, want, defined, ulp)
    skipped = sum(int((~d).sum()) for d in defined if d is not None)
    note = f" ({skipped} unspecified elements not compared)" if skipped else ""
    if not bad:
        click.echo(f"{desc.name}: {target} matches the interpreter{note}", err=True)
        return
    _save(out, desc, want, ".interp")
    how = f"by more than {ulp} ulp" if ulp else "(bit-exact comparison, NaN = NaN)"
    lines = [f"{desc.name}: {target} differs from the interpreter {how}:"]
    lines += [f"  {m.describe(target)}" for m in bad]
    lines.append(f"  {target}'s buffers are {out}/arg{{slot}}.npy, the interpreter's "
                 f"{out}/arg{{slot}}.interp.npy")
    raise CliError("\n".join(lines))


# docs/transcendentals.md: EXP2/LOG2/SIN are within 2 ulp of the exact value and the
# interpreter rounds its float64 result once more; a kernel using them is compared within this
# many ulp (floats only), every other kernel bit for bit (docs/semantics.md: exact ops).
TRANSCENDENTAL_ULP = 4


def _check_ulp(sink) -> int:
    from kcc.ir import Ops
    approx = {Ops.EXP2, Ops.LOG2, Ops.SIN}
    return TRANSCENDENTAL_ULP if any(n.op in approx for n in sink.toposort()) else 0


def _interpret(sink, values: list) -> None:
    """Run the reference interpreter; a runtime fault (an out-of-bounds access whose index
    only the data decides) is an error line, not a traceback."""
    from kcc.ir.interp import InterpError
    from kcc.ir.interp import run as interp_run
    try:
        interp_run(sink, values)
    except InterpError as e:
        raise CliError(f"the interpreter stopped: {e}") from None


def _launch(target: str, data: bytes, desc, values: list, emulate: bool = False) -> None:
    from kcc.targets.manifest import LaunchError
    spec = registry.get(target)
    try:
        if emulate:
            spec.emulate(data, desc, values)
        else:
            spec.launch(data, desc, values)
    except LaunchError as e:
        raise CliError(str(e)) from None


@main.command("disasm")
@click.argument("file")
@click.option("--att", is_flag=True, help="AT&T syntax (x86).")
def disasm_cmd(file: str, att: bool) -> None:
    """Print the instructions of a compiled object (an x86 .o, a cubin, PTX, …: the target
    that recognizes FILE lists it)."""
    try:
        data = Path(file).read_bytes() if file else b""
    except OSError as e:
        _die(f"cannot read {file}: {e.strerror}")
    if not file:
        _die("disasm needs a file name, not an empty string")
    # an ELF too short for its 64-byte header is refused here, before any target guesses
    if data[:4] == b"\x7fELF" and len(data) < 64:
        _die(f"{file}: truncated ELF file ({len(data)} bytes, the header alone is 64)")
    targets = registry.all_targets()
    spec = next((t for t in targets if t.claims(data, file)), None)
    if spec is None:
        kinds = ", ".join(t.lists for t in targets if t.lists)
        if data[:4] == b"\x7fELF":
            machine = int.from_bytes(data[18:20], "little")
            _die(f"{file}: an ELF file for machine {machine}, not {kinds}")
        _die(f"{file} is not {kinds}")
    try:
        click.echo(spec.disasm(data, att), nl=False)
    except registry.DisasmError as e:
        _die(f"{file}: {e}")


@main.command("targets")
def targets_cmd() -> None:
    """List the targets: name, arches (default first) and emit kinds."""
    for t in registry.all_targets():
        arches = [t.default_arch] + [a for a in t.arches if a != t.default_arch]
        opts = "".join(f"\n  {o.flag} {', '.join((o.values[0], *t.options[o.keyword]))}"
                       for o in registry.OPTIONS if t.options.get(o.keyword))
        click.echo(f"{t.name}: {t.summary}\n  --arch {', '.join(arches)}\n"
                   f"  --emit {', '.join(e.name for e in t.emits)}{opts}")


@main.command("tinygrad-capture", context_settings={"ignore_unknown_options": True})
@click.argument("script")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--outdir", default="kcc-capture", show_default=True,
              help="Where the .uop files, values and capture.json go.")
@click.option("--no-gpu", is_flag=True, help="Skip the PTX- and HIP-style lowerings.")
def tinygrad_capture_cmd(script: str, script_args: tuple[str, ...], outdir: str,
                         no_gpu: bool) -> None:
    """Run the tinygrad SCRIPT and capture every kernel it runs (docs/tinygrad.md)."""
    import runpy
    try:
        import kcc.tinygrad as ktg
    except ImportError as e:
        _die(f"tinygrad is not importable ({e}); install it with pip install 'kcc[tinygrad]'")
    if not os.path.isfile(script):
        _die(f"{script}: no such file")
    argv = sys.argv
    sys.argv = [script, *script_args]
    failure = None
    try:
        with ktg.capture(outdir, gpu=not no_gpu) as cap:
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as e:            # the script's own exit: keep its status
                if e.code not in (None, 0):
                    failure = f"{script} exited with status {e.code}"
            except Exception as e:             # the script's error, shown as the script's
                import traceback
                traceback.print_exc()
                failure = f"{script} raised {type(e).__name__}: {e}"
    finally:
        sys.argv = argv
    n = len(cap.kernels)
    bad = sum(1 for k in cap.kernels if k.error)
    click.echo(f"captured {n} kernel run{'s' if n != 1 else ''} to {outdir}/capture.json"
               + (f" ({bad} not importable, see their 'error')" if bad else ""))
    if failure:
        _die(f"{failure} (the kernels it ran before are captured)")


if __name__ == "__main__":
    main()
