"""Reading a launch manifest and the launch check every loader runs (kcc/targets/manifest.py
holds the manifest's records and writing it).

`load_manifest` reads and checks a manifest and the object it names (docs/manifest.md's schema,
version 1); `check_launch` refuses a launch that does not match before any target code touches
memory. Split from kcc/targets/manifest.py so that a `kcc compile` process, which writes a
manifest but never reads one, does not load this code (issue 24 item 4); the names stay
importable from kcc.targets.manifest.
"""

from __future__ import annotations

from kcc.ir import dtypes
from kcc.targets.manifest import (MANIFEST_FORMAT, MANIFEST_VERSION, MAX_ELEMENTS, ArgDesc,
                                  KernelDesc, LaunchError, sha256_hex)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:   # numpy is imported by the launch checks only
    from pathlib import Path
    from typing import Any

    import numpy as np


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and check a manifest; LaunchError with a clear message if it is not one."""
    return load_manifest(path)[0]


def load_manifest(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """Read and check a manifest and the object it names (None for a manifest of no object,
    e.g. --emit asm): the bytes whose sha256 was checked, so a caller never reads the object
    a second time. LaunchError with a clear message if either cannot be used. Only regular
    files are read, up to kcc.ir.limits' sizes; a JSON nested too deeply is refused."""
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_MANIFEST_BYTES, MAX_OBJECT_BYTES
    import json                 # (not at a compile's start-up: kcc/targets/jsontext.py)
    try:
        doc = json.loads(read_regular(path, MAX_MANIFEST_BYTES).decode("utf-8"))
    except FileError as e:
        raise LaunchError(f"{path}: cannot read manifest: {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LaunchError(f"{path}: cannot read manifest: {e}") from None
    except RecursionError:       # the json module recurses once per nesting level
        raise LaunchError(f"{path}: cannot read manifest: JSON nested too deeply") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise LaunchError(f"{path}: not a kcc manifest")
    if doc.get("version") != MANIFEST_VERSION:
        raise LaunchError(f"{path}: manifest version {doc.get('version')} is not supported "
                          f"(this kcc reads version {MANIFEST_VERSION})")
    # a hand-edited or truncated manifest must fail here with a message, not later with a
    # KeyError/TypeError deep in the loader
    _check_schema(doc, str(path))
    obj = doc.get("object")
    data = None
    if obj is not None:
        from pathlib import Path
        opath = Path(path).parent / obj["file"]
        try:
            data = read_regular(opath, MAX_OBJECT_BYTES)
        except FileError as e:
            raise LaunchError(f"{path}: object {opath}: {e}") from None
        if sha256_hex(data) != obj["sha256"]:
            raise LaunchError(f"{path}: object {opath} does not match the manifest's sha256 "
                              "(recompile, or the object was changed)")
    return doc, data


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise LaunchError(f"{where}: {what}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_schema(doc: dict[str, Any], path: str) -> None:
    """The version-1 fields a loader relies on (docs/manifest.md), with their types."""
    from kcc.targets.dims import check_dim      # (reading a manifest: not a compile's path)
    _need(isinstance(doc.get("target"), str) and isinstance(doc.get("arch"), str), path,
          "manifest needs string fields 'target' and 'arch'")
    obj = doc.get("object")
    _need(obj is None or (isinstance(obj, dict) and isinstance(obj.get("file"), str)
                          and isinstance(obj.get("sha256"), str)), path,
          "manifest 'object' needs string fields 'file' and 'sha256'")
    kernels = doc.get("kernels")
    _need(isinstance(kernels, list) and len(kernels) > 0
          and all(isinstance(k, dict) for k in kernels), path,
          "manifest 'kernels' must be a non-empty list of objects")
    for i, k in enumerate(kernels):
        where = f"{path}: kernels[{i}]"
        _need(isinstance(k.get("name"), str) and isinstance(k.get("args"), list), where,
              "needs a string 'name' and a list 'args'")
        _need(k["name"].isidentifier(), where, f"'name' {k['name']!r} is not a symbol name")
        _need(k.get("symbol", k["name"]) == k["name"], where,
              f"'symbol' {k.get('symbol')!r} must be the kernel's name {k['name']!r}")
        for key in ("global", "local"):
            dims = k.get(key)
            _need(isinstance(dims, list) and len(dims) == 3, where,
                  f"{key!r} must be a list of three launch dimensions")
            for d in dims:       # an int, or an expression of scalar arguments
                why = check_dim(d, len(k["args"]))
                _need(why is None, where, f"{key!r}: {why}")
        _need(isinstance(k.get("specials", []), list) and all(
            isinstance(s, str) for s in k.get("specials", [])), where,
            "'specials' must be a list of names")
        tgt = k.get("target", {})
        _need(isinstance(tgt, dict) and all(isinstance(v, dict) for v in tgt.values()), where,
              "'target' must be an object of per-target objects")
        for j, a in enumerate(k["args"]):
            _check_arg(a, j, f"{where} ({k['name']}): argument {j}")


def _check_arg(a: Any, j: int, where: str) -> None:
    _need(isinstance(a, dict) and a.get("slot") == j, where, f"needs 'slot': {j}")
    _need(a.get("kind") in ("buffer", "scalar"), where, "'kind' must be buffer or scalar")
    _need(a.get("name") is None or isinstance(a["name"], str), where, "'name' must be a string")
    _need(isinstance(a.get("dtype"), str) and dtypes.by_name(a["dtype"]) is not None, where,
          f"unknown dtype {a.get('dtype')!r}")
    if a["kind"] == "buffer":
        _need(_is_int(a.get("size")) and 0 <= a["size"] <= MAX_ELEMENTS, where,
              f"'size' must be an integer in [0, {MAX_ELEMENTS}]")
        _need(a.get("access", "") in ("", "r", "w", "rw"), where,
              "'access' must be r, w, rw or empty")
    else:
        rng = a.get("range")
        _need(rng is None or (isinstance(rng, list) and len(rng) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in rng)), where,
            "'range' must be null or [vmin, vmax]")


# -- the launch check -------------------------------------------------------------------------

def _np_dtype(name: str) -> np.dtype:
    return dtypes.by_name(name).np


def check_launch(desc: KernelDesc, args: list[Any]) -> list[Any]:
    """Check args against the kernel's manifest entry; return them normalized.

    Buffers become C-contiguous flat numpy views of the caller's arrays (the kernel writes
    into them); scalars become numpy scalars of the declared dtype. Nothing is launched here.
    """
    import numpy as np
    if len(args) != len(desc.args):
        raise LaunchError(f"kernel {desc.name} takes {len(desc.args)} arguments, got {len(args)}")
    out: list[Any] = []
    for a, v in zip(desc.args, args):
        label = f"argument {a.slot}" + (f" ({a.name})" if a.name else "")
        want = _np_dtype(a.dtype)
        if a.kind == "buffer":
            if not isinstance(v, np.ndarray):
                raise LaunchError(f"{label}: expected a {a.dtype} buffer of {a.size} elements, "
                                  f"got {type(v).__name__}")
            if v.dtype != want:
                raise LaunchError(f"{label}: expected dtype {a.dtype}, got {v.dtype}")
            if v.size != a.size:
                raise LaunchError(f"{label}: expected {a.size} elements, got {v.size}")
            if not v.flags.c_contiguous:
                raise LaunchError(f"{label}: the buffer must be C-contiguous")
            if "w" in a.access and not v.flags.writeable:
                raise LaunchError(f"{label}: the kernel writes this buffer but it is read-only")
            out.append(v.reshape(-1))
        else:
            out.append(_check_scalar(a, v, label, want))
    return out


def _check_scalar(a: ArgDesc, v: Any, label: str, want: np.dtype) -> Any:
    import numpy as np
    if isinstance(v, np.ndarray):
        if v.size != 1:
            raise LaunchError(f"{label}: expected a {a.dtype} scalar, got an array")
        v = v.reshape(-1)[0]
    if isinstance(v, (bool, np.bool_)) and a.dtype != "bool":
        raise LaunchError(f"{label}: expected a {a.dtype} scalar, got bool")
    dt = dtypes.by_name(a.dtype)
    if dt.is_int or dt.is_bool:
        if isinstance(v, (float, np.floating)) and not float(v).is_integer():
            raise LaunchError(f"{label}: expected an integer ({a.dtype}), got {v}")
        try:
            iv = int(v)
        except (TypeError, ValueError):
            raise LaunchError(f"{label}: expected a {a.dtype} scalar, got {v!r}") from None
        if not dt.min() <= iv <= dt.max():
            raise LaunchError(f"{label}: {iv} is out of range for {a.dtype}")
        if a.range is not None and not a.range[0] <= iv <= a.range[1]:
            raise LaunchError(f"{label}: {iv} is outside the declared range {a.range}")
        return want.type(iv)
    try:
        fv = float(v)
    except (TypeError, ValueError):
        raise LaunchError(f"{label}: expected a {a.dtype} scalar, got {v!r}") from None
    if a.range is not None and not a.range[0] <= fv <= a.range[1]:
        raise LaunchError(f"{label}: {fv} is outside the declared range {a.range}")
    if a.dtype == "bfloat16":
        # a number is rounded once to bfloat16 (nearest even) and passed as its bit pattern
        from kcc.ir.numerics import bf16_from_f64
        bits = bf16_from_f64(np.array([fv]))[0]
        if not np.isinf(fv) and (int(bits) & 0x7FFF) == 0x7F80:
            raise LaunchError(f"{label}: {fv} is out of range for bfloat16")
        return np.uint16(bits)
    with np.errstate(over="ignore"):
        cv = want.type(fv)
    if np.isinf(cv) and not np.isinf(fv):     # a finite value the dtype cannot hold
        raise LaunchError(f"{label}: {fv} is out of range for {a.dtype}")
    return cv
