"""Running an exported x86 program in this process (`kcc run` of a program manifest): its
object loaded by kcc's own loader (objload.py), its facts checked against the manifest, and its
entry point called on numpy arrays."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from kcc.targets.program import Program, ProgramError
from kcc.targets.x86.program import LIBC


def libc_addresses() -> dict[str, int]:
    """The addresses of the libc functions the runtime calls, in this process."""
    libc = ctypes.CDLL(None)
    return {n: ctypes.cast(getattr(libc, n), ctypes.c_void_p).value for n in LIBC}


def run_x86_program(doc: dict[str, Any], p: Program, folder: Path, ins: list[Any],
                    threads: int = 0) -> list[Any]:
    """Load the program's object (its facts checked against the manifest's kernels) and call
    its entry point on the inputs; returns the outputs (flat)."""
    import numpy as np

    from kcc.targets.facts import FactsError
    from kcc.targets.facts_read import check_manifest, read_object_facts
    from kcc.targets.manifest import LaunchError
    from kcc.targets.x86.objload import LoadedObject, ObjectLoadError
    from kcc.targets.program import artifact, np_dtype, read_safetensors
    from kcc.targets.x86.arch import V4_FLAGS, cpu_flags
    data = artifact(doc, folder, "object")
    try:
        facts = read_object_facts(data, "ELF object", "object")
        for k in p.kernels:
            check_manifest(k.to_json(), facts, "the program manifest")
        if sorted(f.get("name") for f in facts) != sorted(k.name for k in p.kernels):
            raise FactsError("the program manifest's kernels are not the object's: "
                             f"{sorted(k.name for k in p.kernels)} against "
                             f"{sorted(str(f.get('name')) for f in facts)}")
    except (FactsError, LaunchError) as e:
        raise ProgramError(str(e)) from None
    if doc.get("arch") == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        raise ProgramError("the program was compiled for x86-64-v4 (AVX-512), which this CPU "
                           "lacks")
    outs = [np.zeros(p.buffer(i).size, np_dtype(p.buffer(i).dtype)) for i in p.outputs]
    try:
        obj = LoadedObject(data, libc_addresses())
    except ObjectLoadError as e:
        raise ProgramError(str(e)) from None
    try:
        if doc.get("weights") == "external" and any(b.role == "weight" for b in p.buffers):
            # the file as the manifest says (hash, header), then read by the object itself
            read_safetensors(artifact(doc, folder, "weights"), p)
            load = obj.function(f"{p.name}_load_weights", ctypes.c_int, [ctypes.c_char_p])
            wpath = folder / doc["files"]["weights"]["file"]
            if load(str(wpath).encode()) != 0:
                err = obj.function(f"{p.name}_error", ctypes.c_char_p, [])()
                raise ProgramError(f"{wpath}: {err.decode(errors='replace')}")
        obj.function(f"{p.name}_set_threads", None, [ctypes.c_int])(threads)
        n = len(p.inputs) + len(p.outputs)
        fn = obj.function(p.name, ctypes.c_int, [ctypes.c_void_p] * n)
        rc = fn(*[a.ctypes.data for a in ins], *[o.ctypes.data for o in outs])
        obj.function(f"{p.name}_release", None, [])()   # no thread outlives the mapping
        if rc != 0:
            err = obj.function(f"{p.name}_error", ctypes.c_char_p, [])()
            raise ProgramError(f"{p.name} returned {rc}: {err.decode(errors='replace')}")
    except LookupError as e:         # the manifest's name is not the object's program
        raise ProgramError(f"the object has no entry point of program {p.name!r} "
                           f"({str(e).strip(chr(39) + chr(34))})") from None
    finally:
        obj.close()
    return outs
