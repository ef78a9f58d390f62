"""What each `kcc` command does once its arguments are parsed, shared by both front ends.

kcc/cli.py parses the common command lines itself (a small table, no click) and calls these;
kcc/cli_click.py is the click group, which parses everything else (--help, bad input) and calls
the same functions. A usage problem found here (two options that exclude each other) is raised
as UsageProblem, which click reports as a usage error and the fast front end hands to click;
any other refusal is one `error: …` line on stderr and exit status 1 (die).

This module imports nothing heavy at import time: the parser, the passes, a target and numpy
are imported by the function that uses them (tests/cli/test_startup.py).
"""

from __future__ import annotations

import gc
import sys

from kcc.frontend.errors import SourceError

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, NoReturn


class UsageProblem(Exception):
    """A command line the parser accepted but the command refuses as a usage error (click's
    UsageError: `error: MESSAGE (`kcc CMD --help` shows the usage)`, exit status 1)."""


def echo(message: str, err: bool = False, nl: bool = True) -> None:
    """Write message (and a newline) to stdout or stderr and flush, as click.echo does for
    kcc's messages. A message holding an escape character, or a stream whose encoding is not
    UTF-8, goes through click.echo itself (it strips ANSI codes when the stream is not a
    terminal and re-encodes for an ASCII stream), so both front ends print the same bytes."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    enc = (getattr(stream, "encoding", None) or "ascii").lower().replace("-", "")
    if "\x1b" in message or enc != "utf8":
        import click
        click.echo(message, err=err, nl=nl)
        return
    if nl:
        message += "\n"
    if message:
        stream.write(message)
    stream.flush()


def die(msg: str) -> NoReturn:
    """Refuse: `error: msg` on stderr, exit status 1."""
    echo(f"error: {msg}", err=True)
    sys.exit(1)


def fail(err: SourceError) -> None:
    """Report a bad input file (`path:line:col: error: …`, the line and a caret)."""
    echo(err.render(), err=True)


own_process = False         # whether this process is a kcc command's own (the console script)


def freeze_at_exit() -> None:
    """In kcc's own process, freeze every object at exit, before the interpreter's final full
    collection, so that collection has nothing to rescan: it walked all ~100,000 objects of
    the compiler's modules, 8% of the instructions of `kcc compile saxpy.uop` (callgrind),
    to find no garbage in a process that is ending (files are closed by then: outputs are
    written and renamed before the command returns). Not for commands that run a user's
    program (tinygrad-capture), whose objects' finalizers may matter at exit."""
    if own_process:
        import atexit
        atexit.register(gc.freeze)


def version() -> None:
    """--version: kcc.__version__ (which pyproject.toml's version is read from)."""
    from kcc import __version__
    echo(f"kcc, version {__version__}")


def compile_files(files: tuple[str, ...], target: str, arch: str | None, output: str | None,
                  manifest: str | None, no_manifest: bool, header: str | None,
                  emit: str | None, dump_after: str | None, time_passes: bool,
                  prefix: str | None, options: dict[str, str]) -> None:
    """`kcc compile`: the usage checks, then the compile with the collector paused."""
    for flag, value in (("-o", output), ("--manifest", manifest), ("--header", header),
                        ("--arch", arch), ("--emit", emit), ("--dump-after", dump_after)):
        if value == "":
            raise UsageProblem(f"{flag} needs a value, not an empty string")
    if manifest and no_manifest:
        raise UsageProblem("--manifest and --no-manifest exclude each other")
    if files.count("-") > 1:
        raise UsageProblem("standard input (-) can be read once")
    if "-" in files and output is None:
        die("the kernel comes from standard input: name the output with -o (- for "
            "standard output)")
    if dump_after and output == "-":
        die("--dump-after prints to standard output, so the output cannot go there too "
            "(-o FILE)")
    freeze_at_exit()
    from kcc import collector
    with collector.paused():   # importing the compiler and compiling (kcc/collector.py)
        _compile(files, target, arch, output, manifest, no_manifest, header, emit, dump_after,
                 time_passes, prefix, options)
        if own_process:
            # the objects the imports and the compile left are the exit's (freeze_at_exit), and
            # frozen now the first allocation after the pause does not start a collection of
            # the ~14,000 of them made while it was paused (youngest generation: 3% of a
            # `kcc compile saxpy.uop` process, callgrind)
            gc.freeze()


def _compile(files: tuple[str, ...], target: str, arch: str | None, output: str | None,
             manifest: str | None, no_manifest: bool, header: str | None, emit: str | None,
             dump_after: str | None, time_passes: bool, prefix: str | None,
             options: dict[str, str]) -> None:
    """`kcc compile` after its arguments are checked."""
    from kcc.targets import registry
    from kcc.targets.driver import UserError, compile_sinks, load_all, plural, unique_kernels
    from kcc.targets.outputs import OutputError, check_paths, compile_outputs, write_all
    try:
        sinks = load_all(files)
    except SourceError as e:
        fail(e)
        sys.exit(1)
    try:
        sinks = unique_kernels(sinks, files, prefix)
        from kcc.targets.pipeline import format_pass_times
        from kcc.targets.pipeline import time_passes as timer
        with timer() as times:
            c = compile_sinks(sinks, files, target, arch, emit, dump_after, options)
        if time_passes:
            echo(format_pass_times(times), err=True, nl=False)
        outputs, mpath = compile_outputs(registry.get(target), c, files[0], output, manifest,
                                         no_manifest, header)
        check_paths(list(files), outputs)
        write_all(outputs)
    except (UserError, OutputError) as e:
        die(str(e))
    out = outputs[0].path
    what = "standard output" if out == "-" else out
    also = f" and manifest {mpath}" if mpath else " (no manifest)"
    also += f" and header {header}" if header else ""
    echo(f"wrote {what}{also} ({plural(len(c.descs), 'kernel')})", err=True)


# `kcc check`, `fmt`, `run`, `disasm` and `targets` are in kcc/commands_more.py: a compile
# never calls them, and their code objects cost its process page faults (issue 24 item 4)
_MORE = frozenset({"check", "fmt", "run", "disasm", "targets"})


def __getattr__(name: str) -> Any:
    """The command bodies of kcc/commands_more.py, by name."""
    if name in _MORE:
        from kcc import commands_more
        return getattr(commands_more, name)
    raise AttributeError(name)
