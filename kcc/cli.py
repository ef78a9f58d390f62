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

What a command does lives below this module: reading, compiling and running in
kcc.targets.driver, the output files' policy in kcc.targets.outputs, `--check`'s in
kcc.targets.check. A new command is a click function here that calls them.

Start-up is kept small: this module imports click, the registry's names and the error type;
the parser, the passes, a target and numpy are imported by the commands that use them
(`kcc --version` imports none of them: tests/cli/test_startup.py).
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

import click

from kcc import collector
from kcc.frontend.errors import SourceError
from kcc.targets import registry


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--version: kcc.__version__ (which pyproject.toml's version is read from)."""
    if not value or ctx.resilient_parsing:
        return
    from kcc import __version__
    click.echo(f"kcc, version {__version__}")
    ctx.exit()


def _fail(err: SourceError) -> None:
    click.echo(err.render(), err=True)


class _UsageRefusal(click.ClickException):
    """A usage error (unknown option, missing argument, bad value) reported like every other
    refusal: one `error: …` line on stderr, exit status 1 (not click's `Error:` and 2)."""

    exit_code = 1

    def __init__(self, e: click.ClickException):
        msg = e.format_message().rstrip(".")
        ctx = getattr(e, "ctx", None)
        if isinstance(e, click.UsageError) and ctx is not None:
            msg += f" (`{ctx.command_path} --help` shows the usage)"
        super().__init__(msg)

    def show(self, file: object = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class _Interrupted(click.ClickException):
    """Ctrl-C: one `error: interrupted` line and exit status 1 (not click's `Aborted!`)."""

    exit_code = 1

    def show(self, file: object = None) -> None:
        click.echo("\nerror: interrupted", err=True)


_own_process = False        # whether this process is a kcc command's own (_Kcc.main)


def _freeze_at_exit() -> None:
    """In kcc's own process, freeze every object at exit, before the interpreter's final full
    collection, so that collection has nothing to rescan: it walked all ~100,000 objects of
    the compiler's modules, 8% of the instructions of `kcc compile saxpy.uop` (callgrind),
    to find no garbage in a process that is ending (files are closed by then: outputs are
    written and renamed before the command returns). Not for commands that run a user's
    program (tinygrad-capture), whose objects' finalizers may matter at exit."""
    if _own_process:
        import atexit
        atexit.register(gc.freeze)


class _Kcc(click.Group):
    """The kcc group: click's own usage errors become _UsageRefusal (see there)."""

    @staticmethod
    def _convert(e: click.ClickException) -> click.ClickException:
        no_args = getattr(click.exceptions, "NoArgsIsHelpError", ())
        if no_args and isinstance(e, no_args):
            e.exit_code = 0           # `kcc` alone is `kcc --help`
            return e
        if isinstance(e, _UsageRefusal):
            return e
        return _UsageRefusal(e)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.ClickException as e:
            raise self._convert(e) from None

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        global _own_process
        # no args: kcc as a process of its own (the console script); a caller such as click's
        # CliRunner passes them
        _own_process = args is None
        return super().main(args, *rest, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as e:
            raise self._convert(e) from None
        except KeyboardInterrupt:
            raise _Interrupted("interrupted") from None


@click.group(cls=_Kcc)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
def main() -> None:
    """kcc: an ahead-of-time kernel compiler for .uop graphs."""


@main.command()
@click.argument("files", nargs=-1, required=True)
def check(files: tuple[str, ...]) -> None:
    """Parse and verify each FILE; exit 1 if any is refused."""
    failed = False
    from kcc.targets.driver import load
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
    from kcc.targets.driver import load
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
    # all or nothing (a temporary beside the file, renamed over it): a full disk must not
    # leave the user's source truncated; through a symlink, the file it names is replaced
    from kcc.targets.outputs import Output, OutputError, write_all
    try:
        write_all([Output(os.path.realpath(file), out.encode(), "file")])
    except OutputError as e:
        why = str(e).split(": ")[-1]
        _fail(SourceError(file, 0, 0, f"cannot write the file: {why}"))
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


def _die(msg: str) -> None:
    click.echo(f"error: {msg}", err=True)
    sys.exit(1)


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
@click.option("--prefix", help="Name every kernel PREFIX_name (symbols of one object are "
              "unique; two inputs' kernels may share a name).")
@_compile_option_flags
def compile_cmd(files: tuple[str, ...], target: str, arch: str | None, output: str | None,
                manifest: str | None, no_manifest: bool, header: str | None, emit: str | None,
                dump_after: str | None, time_passes: bool, prefix: str | None = None,
                **options: str) -> None:
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
    _freeze_at_exit()
    with collector.paused():   # importing the compiler and compiling (kcc/collector.py)
        _compile(files, target, arch, output, manifest, no_manifest, header, emit, dump_after,
                 time_passes, prefix, options)


def _compile(files: tuple[str, ...], target: str, arch: str | None, output: str | None,
             manifest: str | None, no_manifest: bool, header: str | None, emit: str | None,
             dump_after: str | None, time_passes: bool, prefix: str | None,
             options: dict[str, str]) -> None:
    """`kcc compile` after its arguments are checked."""
    from kcc.targets.driver import UserError, compile_sinks, load_all, plural, unique_kernels
    from kcc.targets.outputs import OutputError, check_paths, compile_outputs, write_all
    try:
        sinks = load_all(files)
    except SourceError as e:
        _fail(e)
        sys.exit(1)
    try:
        sinks = unique_kernels(sinks, files, prefix)
        from kcc.targets.pipeline import format_pass_times
        from kcc.targets.pipeline import time_passes as timer
        with timer() as times:
            c = compile_sinks(sinks, files, target, arch, emit, dump_after, options)
        if time_passes:
            click.echo(format_pass_times(times), err=True, nl=False)
        outputs, mpath = compile_outputs(registry.get(target), c, files[0], output, manifest,
                                         no_manifest, header)
        check_paths(list(files), outputs)
        write_all(outputs)
    except (UserError, OutputError) as e:
        _die(str(e))
    out = outputs[0].path
    what = "standard output" if out == "-" else out
    also = f" and manifest {mpath}" if mpath else " (no manifest)"
    also += f" and header {header}" if header else ""
    click.echo(f"wrote {what}{also} ({plural(len(c.descs), 'kernel')})", err=True)


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
    from kcc.targets.driver import RunOptions, UserError, run
    try:
        run(RunOptions(source, args, interp, target, arch, kernel, outdir, random_fill, seed,
                       check, emulate))
    except SourceError as e:
        _fail(e)
        sys.exit(1)
    except UserError as e:
        _die(str(e))


@main.command("disasm")
@click.argument("file")
@click.option("--att", is_flag=True, help="AT&T syntax (x86).")
def disasm_cmd(file: str, att: bool) -> None:
    """Print the instructions of a compiled object (an x86 .o, a cubin, PTX, …: the target
    that recognizes FILE lists it)."""
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_OBJECT_BYTES
    if not file:
        _die("disasm needs a file name, not an empty string")
    try:
        data = read_regular(file, MAX_OBJECT_BYTES)
    except FileError as e:
        _die(f"cannot read {file}: {e}")
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


@main.command("tinygrad-export")
@click.argument("function")
@click.option("--input", "inputs", multiple=True, metavar="SHAPE:DTYPE",
              help="An example input, e.g. 4x32:float32 (repeat, in argument order).")
@click.option("-t", "--target", default="x86", show_default=True,
              type=click.Choice(["x86", "amd", "cuda"]))
@click.option("--arch", help="The target's architecture (default: the target's default).")
@click.option("-o", "--outdir", required=True, help="The folder to write (new or empty).")
@click.option("--name", default="net", show_default=True, help="The program's C name.")
@click.option("--weights", default="rodata", show_default=True,
              type=click.Choice(["rodata", "external"]))
@click.option("--force", is_flag=True, help="Write into a folder that is not empty.")
def tinygrad_export_cmd(function: str, inputs: tuple[str, ...], target: str, arch: str | None,
                        outdir: str, name: str, weights: str, force: bool) -> None:
    """Export FUNCTION (script.py:fn, a tinygrad computation) run once on example inputs as one
    ahead-of-time program: NAME.h, NAME.json and the target's files (docs/export.md)."""
    try:
        from kcc.tinygrad.exporting import ExportError, example_input, export, load_function
    except ImportError as e:
        _die(f"tinygrad is not importable ({e}); install it with pip install 'kcc[tinygrad]'")
    try:
        fn = load_function(function)
        arrays = [example_input(s, k) for k, s in enumerate(inputs)]
        ex = export(fn, *arrays, out=outdir, name=name, target=target, arch=arch,
                    weights=weights, force=force)
    except ExportError as e:
        _die(str(e))
    for kind, f in ex.files.items():
        click.echo(f"wrote {Path(outdir) / f} ({kind})")


@main.command("tinygrad-capture", context_settings={"ignore_unknown_options": True})
@click.argument("script")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--outdir", default="kcc-capture", show_default=True,
              help="Where the .uop files, values and capture.json go (a new or empty "
              "folder).")
@click.option("--force", is_flag=True, help="Empty OUTDIR first when it holds an earlier "
              "capture (a capture.json).")
@click.option("--no-gpu", is_flag=True, help="Skip the PTX- and HIP-style lowerings.")
def tinygrad_capture_cmd(script: str, script_args: tuple[str, ...], outdir: str, force: bool,
                         no_gpu: bool) -> None:
    """Run the tinygrad SCRIPT and capture every kernel it runs (docs/tinygrad.md)."""
    import runpy

    from kcc.frontend.files import FileError, check_regular
    from kcc.targets.outputs import OutputError, fresh_folder
    try:
        import kcc.tinygrad as ktg
    except ImportError as e:
        _die(f"tinygrad is not importable ({e}); install it with pip install 'kcc[tinygrad]'")
    try:
        check_regular(script)
    except FileError as e:
        _die(f"cannot run {script}: {e}")
    try:
        fresh_folder(outdir, force, "capture.json")
    except OutputError as e:
        _die(str(e))
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
                _print_script_traceback(e, script)
                failure = f"{script} raised {type(e).__name__}: {e}"
    finally:
        sys.argv = argv
    n = len(cap.kernels)
    bad = sum(1 for k in cap.kernels if k.error)
    click.echo(f"captured {n} kernel run{'s' if n != 1 else ''} to {outdir}/capture.json"
               + (f" ({bad} not importable, see their 'error')" if bad else ""))
    if failure:
        _die(f"{failure} (the kernels it ran before are captured)")


def _print_script_traceback(e: BaseException, script: str) -> None:
    """The traceback of an exception a captured script raised, from the script's first frame
    on (kcc's and runpy's frames above it are not the user's)."""
    import traceback
    tb = e.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != \
            os.path.abspath(script):
        tb = tb.tb_next
    lines = traceback.format_exception(type(e), e, tb if tb is not None else e.__traceback__)
    click.echo("".join(lines), err=True, nl=False)


if __name__ == "__main__":
    main()
