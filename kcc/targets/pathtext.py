"""What `pathlib.PurePosixPath` answers about a path, computed on its text (POSIX).

`kcc compile` names its outputs from its inputs (the object's default name, the manifest
beside it, the object relative to the manifest), and importing pathlib for that costs a
small compile's process about as much as compiling the kernel (pathlib imports fnmatch,
urllib.parse and ipaddress: 16 M of ~240 M instructions, issue 24 item 4). These functions
give the same strings pathlib gives (tests/targets/test_pathtext.py checks them against
pathlib itself), following its parsing: repeated slashes and `.` components are dropped,
exactly two leading slashes are kept (POSIX leaves `//` to the implementation), an empty path
is `.` (Python's pathlib module, PurePath).
"""

from __future__ import annotations

import os


def _split(path: str) -> tuple[str, list[str]]:
    """(root, components) as PurePosixPath parses path."""
    root = "//" if path.startswith("//") and not path.startswith("///") else \
        "/" if path.startswith("/") else ""
    return root, [c for c in path.split("/") if c and c != "."]


def norm(path: str) -> str:
    """str(PurePosixPath(path))."""
    root, parts = _split(path)
    return root + "/".join(parts) or "."


def name(path: str) -> str:
    """PurePosixPath(path).name: the last component ('' for a root or `.`)."""
    parts = _split(path)[1]
    return parts[-1] if parts else ""


def _stem_suffix(last: str) -> tuple[str, str]:
    i = last.rfind(".")
    return (last[:i], last[i:]) if 0 < i < len(last) - 1 else (last, "")


def stem(path: str) -> str:
    """PurePosixPath(path).stem: the last component without its suffix."""
    return _stem_suffix(name(path))[0]


def with_suffix(path: str, suffix: str) -> str:
    """str(PurePosixPath(path).with_suffix(suffix)) for a suffix that starts with `.`;
    ValueError, as pathlib's, for a path with an empty name."""
    root, parts = _split(path)
    if not parts:
        # pathlib: "%r has an empty name" (its repr is PurePosixPath('…'))
        raise ValueError(f"PurePosixPath({norm(path)!r}) has an empty name")
    parts[-1] = _stem_suffix(parts[-1])[0] + suffix
    return root + "/".join(parts)


def resolve(path: str) -> str:
    """str(Path(path).resolve()): the absolute path, symbolic links followed."""
    return os.path.realpath(path)


def relative_to(path: str, folder: str) -> str | None:
    """str(PurePosixPath(path).relative_to(folder)) for two paths as resolve() gives them, or
    None where pathlib raises ValueError (path is not inside folder)."""
    if path == folder:
        return "."
    if folder == "/":
        return path[1:] if path.startswith("/") else None
    return path[len(folder) + 1:] if path.startswith(folder + "/") else None
