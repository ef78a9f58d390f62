"""The `kcc` command line: a small table-driven parser for the common commands, click for the
rest.

    kcc compile FILE... -t T one object (+ manifest) for target T (kcc.targets.registry)
    kcc check FILE... | fmt FILE [-i] | run SOURCE ARG... | disasm FILE | targets | --version

Importing click costs a `kcc compile` process about as much as compiling a small kernel
(issue 24, item 4), so `main()` parses the command lines it understands completely here,
from the table below (the same options, defaults and value checks as the click commands in
kcc/cli_click.py), and calls the command bodies in kcc/commands.py. Anything else — --help,
an unknown or malformed option, a missing argument, a value a choice refuses, a usage problem
a command raises, the tinygrad commands — goes to the click group unchanged, which parses it
again and prints its own help or `error: …` line: both front ends print the same bytes and
exit with the same status (tests/cli/test_fast_cli.py).

`from kcc.cli import main` is still the click group for a caller that drives it as one
(`CliRunner().invoke(main, args)`, `main.commands`): `main` forwards every attribute to it.
"""

from __future__ import annotations

import gc
import os
import sys

# the names of the targets and the compile options, imported with the collector paused (as
# kcc/__init__.py imports: start-up makes no garbage)
_gc_was_enabled = gc.isenabled()
gc.disable()
try:
    from kcc.targets import registry
finally:
    if _gc_was_enabled:
        gc.enable()


class _Fallback(Exception):
    """A command line the fast parser leaves to click."""


# one option: its flags, the keyword the command takes it as, its kind and its default.
# Kinds: "flag" (True when given), "str", "int0" (an integer >= 0, click.IntRange(min=0)),
# "target" (a name in kcc.targets.registry), or a tuple of choices (click.Choice).
TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, NoReturn

    _Opt = tuple[tuple[str, ...], str, Any, Any]

_COMPILE: list[_Opt] = [
    (("-t", "--target"), "target", "target", None),
    (("--arch",), "arch", "str", None),
    (("-o", "--output"), "output", "str", None),
    (("--manifest",), "manifest", "str", None),
    (("--no-manifest",), "no_manifest", "flag", False),
    (("--header",), "header", "str", None),
    (("--emit",), "emit", "str", None),
    (("--dump-after",), "dump_after", "str", None),
    (("--time-passes",), "time_passes", "flag", False),
    (("--prefix",), "prefix", "str", None),
]
_RUN: list[_Opt] = [
    (("--interp",), "interp", "flag", False),
    (("-t", "--target"), "target", "target", None),
    (("--arch",), "arch", "str", None),
    (("--kernel",), "kernel", "str", None),
    (("-o", "--outdir"), "outdir", "str", "kcc-out"),
    (("--random",), "random_fill", "flag", False),
    (("--seed",), "seed", "int0", 0),
    (("--check",), "check", "flag", False),
    (("--emulate",), "emulate", "flag", False),
]
# command → (positional arguments: (keyword, variadic) in order, options)
_COMMANDS: dict[str, tuple[tuple[tuple[str, bool], ...], list[_Opt]]] = {
    "compile": ((("files", True),), _COMPILE),
    "check": ((("files", True),), []),
    "fmt": ((("file", False),), [(("-i", "--in-place"), "in_place", "flag", False)]),
    "run": ((("source", False), ("args", True)), _RUN),
    "disasm": ((("file", False),), [(("--att",), "att", "flag", False)]),
    "targets": ((), []),
}


def _value(kind: Any, value: str) -> Any:
    """value converted as the click option's type converts it; _Fallback where click would
    refuse it (or where this parser is not sure it would not)."""
    if kind == "str":
        return value
    if kind == "int0":
        if not value or not all("0" <= c <= "9" for c in value):
            raise _Fallback
        return int(value)
    if kind == "target":
        if value not in registry.names():
            raise _Fallback
        return value
    if value not in kind:
        raise _Fallback
    return value


def parse(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """(command, its keyword arguments) for a command line the fast front end runs, as click
    would parse it; _Fallback for any other."""
    if not argv or argv[0] not in _COMMANDS:
        raise _Fallback
    name, rest = argv[0], argv[1:]
    positional, table = _COMMANDS[name]
    if name == "compile":
        table = table + [((o.flag,), o.keyword, o.values, o.values[0])
                         for o in registry.OPTIONS]
    by_flag = {f: opt for opt in table for f in opt[0]}
    kw: dict[str, Any] = {opt[1]: opt[3] for opt in table}
    args: list[str] = []
    i = 0
    while i < len(rest):
        tok = rest[i]
        i += 1
        if tok[:1] != "-" or tok == "-":
            args.append(tok)
            continue
        if tok.startswith("--"):            # --name, --name=value
            flag, eq, inline = tok.partition("=")
            opt = by_flag.get(flag)
            if opt is None or (eq and opt[2] == "flag"):
                raise _Fallback             # unknown (or --help, --), or a flag given a value
            value = inline if eq else None
        else:                               # -x, -xVALUE (a short option)
            opt = by_flag.get(tok[:2])
            if opt is None or (opt[2] == "flag" and len(tok) > 2):
                raise _Fallback             # unknown, or a cluster of flags
            value = tok[2:] or None
        if opt[2] == "flag":
            kw[opt[1]] = True
            continue
        if value is None:                   # the value is the next word, whatever it is
            if i == len(rest):
                raise _Fallback
            value = rest[i]
            i += 1
        kw[opt[1]] = _value(opt[2], value)
    for key, variadic in positional:
        if variadic:
            if not args and key == "files":
                raise _Fallback             # compile and check need at least one file
            kw[key], args = tuple(args), []
        elif not args:
            raise _Fallback
        else:
            kw[key] = args.pop(0)
    if args or (name == "compile" and kw["target"] is None):
        raise _Fallback                     # extra arguments, or compile without -t
    return name, kw


def _run(name: str, kw: dict[str, Any]) -> None:
    """Call the body of command name with its parsed keyword arguments."""
    from kcc import commands
    if name == "compile":
        options = {o: kw.pop(o) for o in list(kw) if o not in
                   {opt[1] for opt in _COMPILE} and o != "files"}
        commands.compile_files(options=options, **kw)
    elif name == "run":
        commands.run(**kw)
    elif name == "check":
        commands.check(**kw)
    elif name == "fmt":
        commands.fmt(**kw)
    elif name == "disasm":
        commands.disasm(**kw)
    else:
        commands.targets()


def _click(args: list[str] | None, **extra: Any) -> Any:
    from kcc.cli_click import main as group
    return group.main(args, **extra)


def _completing() -> bool:
    """Whether the shell asks for completions (click's `_KCC_COMPLETE`-style variable)."""
    return any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)


def entry(args: list[str] | None = None, **extra: Any) -> NoReturn:
    """Run kcc on args (default: the process's own arguments, and then kcc owns the process:
    kcc/commands.py freeze_at_exit); exits as click's standalone mode does."""
    if extra or _completing():
        _click(args, **extra)
    argv = sys.argv[1:] if args is None else list(args)
    if argv == ["--version"]:
        from kcc import commands
        commands.version()
        sys.exit(0)
    # click runs outside the except blocks: an exception it lets through (a captured
    # script's own, `kcc capture`) must not read as raised while handling _Fallback
    try:
        name, kw = parse(argv)
    except _Fallback:
        name, kw = None, {}
    if name is None:
        _click(args, **extra)
        raise AssertionError("click's main returned")
    from kcc import commands
    commands.own_process = args is None
    usage_problem = False
    try:
        _run(name, kw)
    except commands.UsageProblem:
        usage_problem = True
    except KeyboardInterrupt:
        commands.echo("\nerror: interrupted", err=True)
        sys.exit(1)
    except OSError as e:                 # a closed pipe: exit 1 quietly, as click does
        import errno
        if e.errno != errno.EPIPE:
            raise
        _pacify()
        sys.exit(1)
    if usage_problem:
        _click(args, **extra)            # which reports it as click reports a usage error
    if commands.own_process and _console_script():
        _exit_now()
    sys.exit(0)


def _console_script() -> bool:
    """Whether this process is kcc's own program, so that _exit_now may end it: `python -m
    kcc.cli`, or the console script (a file named kcc whose `main` is kcc.cli.main, run as
    the program). A program that calls main() itself -- a test, a host script, even one that
    passes no arguments so that main() reads sys.argv -- is not kcc's: main() ends it only
    through SystemExit, which it may catch and run on (tests/cli/test_startup.py)."""
    top = sys.modules.get("__main__")
    spec = getattr(top, "__spec__", None)
    if spec is not None:                     # run with -m: kcc's own module, or a host's
        return spec.name == "kcc.cli"
    path = getattr(top, "__file__", None)
    # (the program's __file__ is absolute, its argv[0] as typed: `./venv/bin/kcc ...`)
    if path is None or path != os.path.abspath(sys.argv[0]):
        return False
    name = os.path.basename(path).lower().removesuffix(".exe").removesuffix("-script.py")
    return name == "kcc" and getattr(top, "main", None) is main


def _exit_now() -> NoReturn:
    """End kcc's own process after a command succeeded: the atexit handlers (kcc's caches,
    the bundle, the freeze), stdout and stderr flushed, then exit without the interpreter's
    finalization, which tears down every module and object of the compiler one by one
    (4.5 M instructions, 3% of `kcc compile saxpy.uop`; callgrind). Outputs are written and
    closed before the command returns. Where a flush fails (a closed pipe) the interpreter's
    own exit reports it, as before."""
    import atexit
    atexit._run_exitfuncs()     # (they run once: the interpreter's exit finds none left)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:       # noqa: BLE001  (reported by the interpreter's exit)
        sys.exit(0)
    os._exit(0)


def _pacify() -> None:
    """After a broken pipe, stdout and stderr whose flush at exit ignores that error (click's
    _PacifyFlushWrapper)."""
    from click import utils
    wrap = getattr(utils, "_PacifyFlushWrapper", None) or getattr(utils, "PacifyFlushWrapper")
    sys.stdout = wrap(sys.stdout)
    sys.stderr = wrap(sys.stderr)


class _Main:
    """kcc's entry point (the console script calls `main()`): the fast front end. Every other
    attribute is the click group's (kcc/cli_click.py), so `main.main(args)` (click's
    CliRunner), `main.commands` and `main.name` behave as before."""

    def __call__(self, args: list[str] | None = None, **extra: Any) -> NoReturn:
        entry(args, **extra)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        from kcc.cli_click import main as group
        return getattr(group, name)


main = _Main()


def __getattr__(name: str) -> Any:
    """The click front end's names (kcc.cli_click) and the process flag (`_own_process`)."""
    if name == "_own_process":
        from kcc import commands
        return commands.own_process
    if name.startswith("__"):       # the import system's questions (`__path__`: a package?)
        raise AttributeError(f"module 'kcc.cli' has no attribute {name!r}")
    import kcc.cli_click
    try:
        return getattr(kcc.cli_click, name)
    except AttributeError:
        raise AttributeError(f"module 'kcc.cli' has no attribute {name!r}") from None


if __name__ == "__main__":
    main()
