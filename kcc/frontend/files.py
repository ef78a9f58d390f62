"""Reading a user's input files: regular files only, with a size limit (kcc/ir/limits.py).

    data = read_regular("k.uop", MAX_SOURCE_BYTES)     # FileError: not a regular file, too big

A device (`/dev/zero`), a FIFO or a directory is refused before anything is read from it: the
file is opened non-blocking (opening a FIFO with no writer would wait forever) and checked
with fstat. A regular file larger than the limit is refused without reading it.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import BinaryIO

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class FileError(Exception):
    """A file that cannot or must not be read; the message says why (without the path)."""


def kind_of(mode: int) -> str:
    """What a file that is not regular is: `a directory`, `a FIFO (named pipe)`, …"""
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file path; FileError if it cannot be read, is not a regular
    file, or holds more than limit bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise FileError(e.strerror or str(e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(f"it is {kind_of(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise FileError(f"it is {_size(st.st_size)}, more than the {_size(limit)} kcc "
                            "reads (kcc/ir/limits.py)")
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            return read_limited(f, limit)
    except OSError as e:
        raise FileError(e.strerror or str(e)) from None
    finally:
        if fd >= 0:
            os.close(fd)


def read_limited(f: BinaryIO, limit: int) -> bytes:
    """At most limit bytes of a stream (a file that grew, standard input); FileError if it
    holds more."""
    data = f.read(limit + 1)
    if len(data) > limit:
        raise FileError(f"it holds more than the {_size(limit)} kcc reads (kcc/ir/limits.py)")
    return data


def check_regular(path: str | os.PathLike[str]) -> None:
    """FileError unless path names a regular file (nothing is read; a FIFO is not opened)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise FileError(e.strerror or str(e)) from None
    if not stat.S_ISREG(st.st_mode):
        raise FileError(f"it is {kind_of(st.st_mode)}, not a regular file")
