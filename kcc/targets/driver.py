"""What `kcc compile` and `kcc run` do between the command line and the output: read the
inputs, drive a target, check and save (kcc/cli.py is only the click wiring around this).

    sinks = load_all(["k.uop"])                               # SourceError for a bad file
    c = compile_sinks(sinks, ["k.uop"], "x86")                # UserError for a refusal

A refusal is a `UserError` whose message is one line (or a `--check` report) for the user;
a `.uop` that does not parse is the frontend's `SourceError` (it renders the line and a
caret). Start-up: importing this module imports only the registry; numpy, the parser, the
pipeline and a target are imported by the function that needs them. `kcc run`'s paths
(RunOptions, run, the manifest and `.npy` reading) are in kcc/targets/runner.py, imported by
`kcc run` only: a compile never calls them, and their code objects cost it page faults.
"""

from __future__ import annotations

import os
import sys

from kcc.targets import registry

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from kcc.frontend.parser import ParseResult


class UserError(Exception):
    """A refusal for the user: printed as `error: message`, exit status 1."""


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def plural(n: int, word: str) -> str:
    """`1 kernel`, `2 kernels`."""
    return f"{n} {word}{'s' * (n != 1)}"


# -- reading and compiling ------------------------------------------------------------------------

def load(path: str) -> tuple[ParseResult, str]:
    """Read, parse and verify a `.uop` file (`-` is stdin); returns the result and the text."""
    from kcc.frontend.files import FileError, read_limited
    from kcc.frontend.errors import SourceError
    from kcc.frontend.lexer import decode_source
    from kcc.frontend.parser import parse_result, read_source
    from kcc.ir.limits import MAX_SOURCE_BYTES
    if path == "-":
        name = "<stdin>"
        try:
            data = read_limited(sys.stdin.buffer, MAX_SOURCE_BYTES)
        except FileError as e:
            raise SourceError(name, 0, 0, f"cannot read the file: {e}") from None
    else:
        data, name = read_source(path), path
    text = decode_source(data, name)
    return parse_result(text, name), text


def load_all(files: list[str] | tuple[str, ...]) -> list[Any]:
    """The kernel graph of each file, in order (SourceError for the first bad one)."""
    return [load(path)[0].sink for path in files]


def unique_kernels(sinks: list[Any], files: list[str] | tuple[str, ...],
                   prefix: str | None = None) -> list[Any]:
    """The kernels, each renamed PREFIX_name when a prefix is given; two of one name are
    refused naming both files (one object holds one symbol per name)."""
    from kcc.ir.uop import KernelInfo
    if prefix is not None:
        import re                   # (only with a prefix: no re at a compile's start-up)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
            raise UserError(f"--prefix {prefix!r} is not a C identifier")
        sinks = [s.replace(arg=KernelInfo(f"{prefix}_{s.arg.name}")) for s in sinks]
    seen: dict[str, str] = {}
    for sink, path in zip(sinks, files):
        name = sink.arg.name
        if name in seen:
            raise UserError(f"{seen[name]} and {path} both define kernel {name!r}; symbols in "
                            "one object must be unique (rename one, --prefix, or compile them "
                            "apart)")
        seen[name] = path
    return sinks


def compile_sinks(sinks: list[Any], files: list[str] | tuple[str, ...], target: str,
                  arch: str | None = None, emit: str | None = None,
                  dump_after: str | None = None,
                  options: dict[str, str] | None = None) -> registry.Compiled:
    """Run the pipeline for target (`--dump-after` listings to stdout). options: the compile
    options by keyword (registry.OPTIONS). A refusal is a UserError; one naming a kernel names
    the file it came from (files[i] holds sinks[i])."""
    from kcc.targets.pipeline import PASS_NAMES
    if dump_after is not None and dump_after not in PASS_NAMES:
        raise UserError(f"unknown pass {dump_after!r} for --dump-after (choose from "
                        f"{', '.join(PASS_NAMES)})")
    spec = registry.get(target)
    arch = arch or spec.default_arch
    emit = emit or spec.default_emit
    out = sys.stdout if dump_after else None
    try:
        spec.check_arch(arch)
        spec.emit(emit)
        kw = spec.compile_options(options or {})
        return spec.compile(sinks, arch, emit, dump_after, out, **kw)
    except registry.CompileError as e:
        if e.kernel is not None and e.source is None:
            e.source = next((("<stdin>" if path == "-" else path)
                             for sink, path in zip(sinks, files) if sink.arg.name == e.kernel),
                            None)
        raise UserError(str(e)) from None
    except Exception as e:                   # noqa: BLE001 — never a traceback for a user
        if os.environ.get("KCC_TRACEBACK"):  # for kcc developers: the traceback
            raise
        raise UserError(f"internal compiler error ({type(e).__name__}: {e}); please report "
                        "it with the input") from None
