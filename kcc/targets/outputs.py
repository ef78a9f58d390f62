"""Writing a command's output files all or nothing, and never over its inputs.

    outs = [Output("k.o", obj, "object"), Output("k.json", text, "manifest")]
    check_paths(inputs, outs)      # OutputError: an output is an input, or two outputs coincide
    write_all(outs)                # every regular file, or none of them

A regular file is written to a temporary file beside it (same folder, so the rename is atomic
on POSIX) and every temporary is renamed into place only once all of them are complete; on any
failure the temporaries are removed and no destination has changed. `-` is standard output;
a path that exists and is not a regular file (`/dev/null`, a FIFO, a terminal) is written in
place, after the regular files.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


class OutputError(Exception):
    """An output that cannot or must not be written; the message names the path."""


@dataclass(frozen=True)
class Output:
    """One file a command writes: where ("-" for stdout), its bytes, and what it is."""

    path: str
    data: bytes
    what: str


def is_special(path: str) -> bool:
    """True for `-` (stdout) and for an existing path that is not a regular file."""
    if path == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _same(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_paths(inputs: list[str], outputs: list[Output]) -> None:
    """OutputError if an output would overwrite an input, or two outputs share a path
    (standard output and special files such as /dev/null may take several)."""
    for o in outputs:
        if o.path == "-":
            continue
        if os.path.isdir(o.path):
            raise OutputError(f"{o.what} {o.path}: is a directory")
        for i in inputs:
            if i != "-" and _same(o.path, i):
                raise OutputError(f"{o.what} {o.path} is also an input; refusing to overwrite "
                                  "it (choose another output with -o)")
    regular = [o for o in outputs if not is_special(o.path)]
    for k, a in enumerate(regular):
        for b in regular[k + 1:]:
            if _same(a.path, b.path):
                raise OutputError(f"the {a.what} and the {b.what} would both be written to "
                                  f"{a.path}")
    if sum(o.path == "-" for o in outputs) > 1:
        raise OutputError(f"only one output can go to standard output (-), not the "
                          f"{' and the '.join(o.what for o in outputs if o.path == '-')}")


def _mode_for(path: str) -> int:
    """The mode a new file gets (what open() would give it), or the existing file's."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _message(o: Output, e: OSError) -> str:
    return f"cannot write the {o.what} {o.path}: {e.strerror or e}"


def write_all(outputs: list[Output]) -> None:
    """Write every output, or leave every destination as it was (OutputError)."""
    regular = [o for o in outputs if not is_special(o.path)]
    special = [o for o in outputs if is_special(o.path)]
    temps: list[tuple[str, Output]] = []
    try:
        for o in regular:
            folder = os.path.dirname(o.path) or "."
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{Path(o.path).name}.", suffix=".tmp",
                                           dir=folder)
            except OSError as e:
                raise OutputError(_message(o, e)) from None
            temps.append((tmp, o))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(o.data)
                os.chmod(tmp, _mode_for(o.path))
            except OSError as e:
                raise OutputError(_message(o, e)) from None
        for tmp, o in temps:
            try:
                os.replace(tmp, o.path)
            except OSError as e:
                raise OutputError(_message(o, e)) from None
        temps.clear()
    finally:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    for o in special:
        try:
            if o.path == "-":
                sys.stdout.buffer.write(o.data)
                sys.stdout.buffer.flush()
            else:
                with open(o.path, "wb") as f:
                    f.write(o.data)
        except OSError as e:
            raise OutputError(_message(o, e)) from None
