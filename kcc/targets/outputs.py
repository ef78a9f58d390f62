"""Writing a command's output files all or nothing, and never over its inputs.

    outs = [Output("k.o", obj, "object"), Output("k.json", text, "manifest")]
    check_paths(inputs, outs)      # OutputError: an output is an input, or two outputs coincide
    write_all(outs)                # every regular file, or none of them

    outs, mpath = compile_outputs(spec, compiled, "k.uop", output=None)   # kcc compile's files

`compile_outputs` is `kcc compile`'s output policy: the object's default name, the manifest
beside it (never silently over another output's manifest or a user's JSON) and the C header.

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

from kcc.record import record
from kcc.targets import jsontext   # json.loads without importing json (start-up)
from kcc.targets import pathtext   # pathlib's answers without importing it (start-up)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, BinaryIO, Callable, Union


class OutputError(Exception):
    """An output that cannot or must not be written; the message names the path."""


# an output's contents: its bytes, or a function writing them to a binary file (a large
# array is streamed to the temporary file instead of being copied into bytes first)
if TYPE_CHECKING:
    Contents = Union[bytes, Callable[[BinaryIO], None]]


@record(frozen=True)
class Output:
    """One file a command writes: where ("-" for stdout), its contents, and what it is."""

    path: str
    data: Contents
    what: str


def _put(f: BinaryIO, data: Contents) -> None:
    if callable(data):
        data(f)
    else:
        f.write(data)


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


# what tempfile.mkstemp opens with (that module, with shutil and random behind it, was a tenth
# of a small compile's imports)
_TEMP_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_BINARY", 0))


def _temporary(folder: str, name: str) -> tuple[int, str]:
    """A new file `.NAME.XXXXXXXX.tmp` in folder, created exclusively with mode 0600 (as
    tempfile.mkstemp): its descriptor and path."""
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")


def write_all(outputs: list[Output]) -> None:
    """Write every output, or leave every destination as it was (OutputError)."""
    regular = [o for o in outputs if not is_special(o.path)]
    special = [o for o in outputs if is_special(o.path)]
    temps: list[tuple[str, Output]] = []
    try:
        for o in regular:
            folder = os.path.dirname(o.path) or "."
            try:
                fd, tmp = _temporary(folder, pathtext.name(o.path))
            except OSError as e:
                raise OutputError(_message(o, e)) from None
            temps.append((tmp, o))
            try:
                with os.fdopen(fd, "wb") as f:
                    _put(f, o.data)
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
                _put(sys.stdout.buffer, o.data)
                sys.stdout.buffer.flush()
            else:
                with open(o.path, "wb") as f:
                    _put(f, o.data)
        except OSError as e:
            raise OutputError(_message(o, e)) from None


# -- kcc compile's outputs ------------------------------------------------------------------------

def header_guard(path: str) -> str:
    """The include guard of a header, from its file name: kernels-v2.h → KERNELS_V2_H."""
    import re                   # (only for a header: no re at a compile's start-up)
    name = re.sub(r"[^A-Za-z0-9]", "_", pathtext.name(path)).upper() if path != "-" else ""
    if not name or not (name[0].isalpha()):
        name = "KCC_" + (name.lstrip("_") or "KERNELS_H")
    return name


def compile_outputs(spec: Any, compiled: Any, first_input: str, output: str | None = None,
                    manifest: str | None = None, no_manifest: bool = False,
                    header: str | None = None) -> tuple[list[Output], str | None]:
    """The files `kcc compile` writes for compiled (a registry.Compiled of target spec): the
    object (default: first_input's stem with the emit kind's suffix), the manifest (default:
    beside the object, .json; none for standard output or a device) and the C header, none
    written yet; and the manifest's path (None without one). OutputError for a request that
    cannot be met."""
    from kcc.targets.manifest import manifest_doc, manifest_text
    kind = spec.emit(compiled.emit)
    out = output or pathtext.stem(first_input) + kind.suffix
    outputs = [Output(out, compiled.data,
                      "object" if kind.loadable else f"{compiled.emit} output")]
    mpath = None
    if manifest:
        if kind.loadable and is_special(out):
            raise OutputError(f"a manifest names the object's file and hash, and "
                              f"{'standard output' if out == '-' else out} is not a file; "
                              "write the object to a file, or leave out --manifest")
        mpath = manifest
    elif not no_manifest and not is_special(out):
        mpath = pathtext.with_suffix(out, ".json")
        refuse_foreign_manifest(mpath, out)
    if mpath:
        doc = manifest_doc(mpath, spec.name, compiled.arch, compiled.descs,
                           out if kind.loadable else None, compiled.data)
        outputs.append(Output(mpath, manifest_text(doc).encode(), "manifest"))
    if header:
        text = spec.header(compiled.descs, header_guard(header))
        if text is None:
            raise OutputError(f"--header: -t {spec.name} has no C header (C prototypes of the "
                              "object's functions); nothing was written")
        outputs.append(Output(header, text.encode(), "header"))
    return outputs, mpath


def refuse_foreign_manifest(mpath: str, out: str) -> None:
    """OutputError unless the default-named manifest mpath is absent or the manifest of this
    same output: it must not silently replace another target's k.json beside k.o and k.cubin,
    or a user's JSON."""
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_MANIFEST_BYTES
    if not os.path.lexists(mpath):
        return
    try:
        old = jsontext.loads(read_regular(mpath, MAX_MANIFEST_BYTES).decode("utf-8"))
    except (FileError, UnicodeDecodeError, ValueError, RecursionError):
        old = None
    hint = "name the manifest with --manifest, or --no-manifest"
    if not isinstance(old, dict) or old.get("format") != "kcc-manifest":
        raise OutputError(f"the manifest would be {mpath} (named after {out}), which exists "
                          f"and is not a kcc manifest; {hint}")
    obj = old.get("object")
    other = obj.get("file") if isinstance(obj, dict) else None
    mine = os.path.relpath(os.path.abspath(out), os.path.dirname(os.path.abspath(mpath)))
    if other is not None and other != mine:
        raise OutputError(f"the manifest would be {mpath} (named after {out}), which is the "
                          f"manifest of {other} (target {old.get('target')}); {hint}")


# -- folders a command fills -----------------------------------------------------------------------

def save_arrays(folder: str | Path, arrays: dict[str, Any]) -> None:
    """Save numpy arrays as folder/NAME (.npy files), all or nothing (write_all): a full disk
    leaves no half-written file and no earlier file replaced. The folder is created."""
    import numpy as np
    from pathlib import Path
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot write {e.filename or folder}: {e.strerror}") from None

    def saver(arr: Any) -> Callable[[BinaryIO], None]:
        return lambda f: np.save(f, arr, allow_pickle=False)

    write_all([Output(str(folder / name), saver(arr), "buffer")
               for name, arr in arrays.items()])


def fresh_folder(folder: str | Path, force: bool, marker: str) -> None:
    """Make folder ready for a command that fills it with its own files: create it, or accept
    it empty; a non-empty folder is refused (files of two runs would mix) unless force is set
    and the folder holds marker (the file the command writes last, so it is one of its own
    folders): then its contents are removed. OutputError otherwise."""
    import shutil
    from pathlib import Path
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{folder} exists and is not a folder; choose a folder with -o")
    if folder.is_dir() and any(folder.iterdir()):
        if not force:
            raise OutputError(f"{folder} is not empty (the files of two runs would mix); "
                              "choose a new folder with -o, or --force to empty it")
        if not (folder / marker).is_file():
            raise OutputError(f"{folder} is not empty and holds no {marker}, so it is not "
                              "an earlier output of this command; --force empties only "
                              "those: choose a new folder with -o")
        try:
            for p in folder.iterdir():
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
        except OSError as e:
            raise OutputError(f"cannot empty {folder}: {e.strerror or e}") from None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create {folder}: {e.strerror or e}") from None
