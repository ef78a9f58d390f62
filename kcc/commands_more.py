"""The command bodies of `kcc check`, `fmt`, `run`, `disasm` and `targets` (kcc/commands.py
holds `compile` and `--version`, and what every command shares: echo, die, fail, UsageProblem).

Split from kcc/commands.py so that a `kcc compile` process does not load these functions'
code: it never calls them, and code objects cost a process page faults (issue 24 item 4).
kcc/commands.py gives each by its name (its module `__getattr__`), so both front ends call
`commands.run(...)` as before.
"""

from __future__ import annotations

import os
import sys

from kcc.commands import UsageProblem, die, echo, fail
from kcc.frontend.errors import SourceError

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import NoReturn


def check(files: tuple[str, ...]) -> NoReturn:
    """Parse and verify each file; exit 1 if any is refused."""
    failed = False
    from kcc.targets.driver import load
    for path in files:
        try:
            res, _ = load(path)
        except SourceError as e:
            fail(e)
            failed = True
            continue
        echo(f"{res.path}: ok (kernel {res.sink.arg.name}, {len(res.sink.toposort())} nodes)")
    sys.exit(1 if failed else 0)



def fmt(file: str, in_place: bool) -> None:
    """Print file in canonical form, or rewrite it (in_place)."""
    if in_place and file == "-":
        raise UsageProblem("-i needs a file, not stdin")
    from kcc.targets.driver import load
    try:
        res, text = load(file)
    except SourceError as e:
        fail(e)
        sys.exit(1)
    from kcc.frontend.printer import format_uop, leading_comments
    out = format_uop(res.sink, leading_comments(text))
    if not in_place:
        echo(out, nl=False)
        return
    # all or nothing (a temporary beside the file, renamed over it): a full disk must not
    # leave the user's source truncated; through a symlink, the file it names is replaced
    from kcc.targets.outputs import Output, OutputError, write_all
    try:
        write_all([Output(os.path.realpath(file), out.encode(), "file")])
    except OutputError as e:
        why = str(e).split(": ")[-1]
        fail(SourceError(file, 0, 0, f"cannot write the file: {why}"))
        sys.exit(1)



def run(source: str, args: tuple[str, ...], interp: bool, target: str | None,
        arch: str | None, kernel: str | None, outdir: str, random_fill: bool, seed: int,
        check: bool, emulate: bool) -> None:
    """`kcc run`: run a .uop or a manifest on its arguments and save the buffers."""
    from kcc.targets.driver import UserError
    from kcc.targets.runner import RunOptions
    from kcc.targets.runner import run as drive
    try:
        drive(RunOptions(source, args, interp, target, arch, kernel, outdir, random_fill, seed,
                         check, emulate))
    except SourceError as e:
        fail(e)
        sys.exit(1)
    except UserError as e:
        die(str(e))



def disasm(file: str, att: bool) -> None:
    """`kcc disasm`: the instructions of a compiled object, listed by the target that
    recognizes it."""
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_OBJECT_BYTES
    from kcc.targets import registry
    if not file:
        die("disasm needs a file name, not an empty string")
    try:
        data = read_regular(file, MAX_OBJECT_BYTES)
    except FileError as e:
        die(f"cannot read {file}: {e}")
    # an ELF too short for its 64-byte header is refused here, before any target guesses
    if data[:4] == b"\x7fELF" and len(data) < 64:
        die(f"{file}: truncated ELF file ({len(data)} bytes, the header alone is 64)")
    targets = registry.all_targets()
    spec = next((t for t in targets if t.claims(data, file)), None)
    if spec is None:
        kinds = ", ".join(t.lists for t in targets if t.lists)
        if data[:4] == b"\x7fELF":
            machine = int.from_bytes(data[18:20], "little")
            die(f"{file}: an ELF file for machine {machine}, not {kinds}")
        die(f"{file} is not {kinds}")
    try:
        echo(spec.disasm(data, att), nl=False)
    except registry.DisasmError as e:
        die(f"{file}: {e}")



def targets() -> None:
    """`kcc targets`: name, arches (default first), emit kinds and compile options."""
    from kcc.targets import registry
    for t in registry.all_targets():
        arches = [t.default_arch] + [a for a in t.arches if a != t.default_arch]
        opts = "".join(f"\n  {o.flag} {', '.join((o.values[0], *t.options[o.keyword]))}"
                       for o in registry.OPTIONS if t.options.get(o.keyword))
        echo(f"{t.name}: {t.summary}\n  --arch {', '.join(arches)}\n"
             f"  --emit {', '.join(e.name for e in t.emits)}{opts}")
