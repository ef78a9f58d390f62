"""The click front end of `kcc`: every command with its options, help and usage errors.

    kcc check FILE...        parse and verify; `path: ok` per good file, errors on stderr
    kcc fmt FILE [-i]        the canonical text, to stdout or in place
    kcc compile FILE... -t T one object (+ manifest) for target T (kcc.targets.registry)
    kcc run SOURCE ARG...    run a .uop (--interp or -t T) or a manifest; save the buffers
    kcc disasm FILE          the instructions of an object (the target that claims it lists it)
    kcc targets              the targets, their arches and emit kinds
    kcc tinygrad-capture S   run a tinygrad script, write every kernel it runs as .uop

A bad input file is reported as `path:line:col: error: message` with the line and a caret, and
the command exits with status 1; it never shows a Python traceback.

The `kcc` process parses its common command lines without click (kcc/cli.py) and comes here
for the rest: --help, a usage error, the tinygrad commands, a caller's `main.main(args)`
(click's CliRunner). Both call the same command bodies (kcc/commands.py), so a command line
gives the same output either way (tests/cli/test_fast_cli.py). What a command does lives
below: reading, compiling and running in kcc.targets.driver, the output files' policy in
kcc.targets.outputs, `--check`'s in kcc.targets.check.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from kcc import commands
from kcc.targets import registry


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--version: kcc.__version__ (which pyproject.toml's version is read from)."""
    if not value or ctx.resilient_parsing:
        return
    commands.version()
    ctx.exit()


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


def _usage(body: Any, *args: Any) -> Any:
    """Call a command body; its UsageProblem becomes click's usage error."""
    try:
        return body(*args)
    except commands.UsageProblem as e:
        raise click.UsageError(str(e)) from None


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
        # no args: kcc as a process of its own (the console script); a caller such as click's
        # CliRunner passes them
        commands.own_process = args is None
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
    commands.check(files)


@main.command()
@click.argument("file")
@click.option("-i", "--in-place", is_flag=True, help="Rewrite FILE instead of printing.")
def fmt(file: str, in_place: bool) -> None:
    """Print FILE in canonical form (renumbered, typed, leading comments kept)."""
    _usage(commands.fmt, file, in_place)


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


_die = commands.die


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
    _usage(commands.compile_files, files, target, arch, output, manifest, no_manifest, header,
           emit, dump_after, time_passes, prefix, options)


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
    commands.run(source, args, interp, target, arch, kernel, outdir, random_fill, seed, check,
                 emulate)


@main.command("disasm")
@click.argument("file")
@click.option("--att", is_flag=True, help="AT&T syntax (x86).")
def disasm_cmd(file: str, att: bool) -> None:
    """Print the instructions of a compiled object (an x86 .o, a cubin, PTX, …: the target
    that recognizes FILE lists it)."""
    commands.disasm(file, att)


@main.command("targets")
def targets_cmd() -> None:
    """List the targets: name, arches (default first) and emit kinds."""
    commands.targets()


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
