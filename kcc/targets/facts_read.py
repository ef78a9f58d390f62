"""Reading the launch facts an object carries, and checking a manifest against them
(kcc/targets/facts.py: what the facts are and writing them).

`read_object_facts` reads an ELF object's `.note.kcc` (x86, AMD), `read_cubin_global` and
`read_ptx_global` a CUDA module's `__kcc_launch` array; `check_manifest` compares a manifest's
kernel with the object's facts and says which field differs. Split from facts.py so that a
`kcc compile` process, which writes facts but never reads them, does not load this code (its
code objects cost page faults; issue 24 item 4); the names stay importable from
kcc.targets.facts.
"""

from __future__ import annotations

import _struct as struct  # struct's own C functions, without struct.py (start-up)

from kcc.targets.facts import (LAUNCH_KEYS, NOTE_OWNER, NOTE_SECTION, NT_KCC_LAUNCH, PTX_SYMBOL,
                               FactsError, _pad4, facts_of)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def parse_facts(blob: bytes) -> list[dict[str, Any]]:
    """The kernels' facts from their JSON bytes; FactsError if they are not that."""
    import json                     # (reading facts: not on the compile path)
    try:
        facts = json.loads(blob.decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise FactsError(f"the object's launch facts are unreadable ({e})") from None
    except RecursionError:      # the json module recurses once per nesting level
        raise FactsError("the object's launch facts are unreadable (JSON nested too "
                         "deeply)") from None
    if not isinstance(facts, list) or not all(isinstance(f, dict) and isinstance(
            f.get("name"), str) for f in facts):
        raise FactsError("the object's launch facts are not a list of kernels")
    return facts



def read_elf_note(data: bytes, want: int = NT_KCC_LAUNCH) -> Any:
    """The facts in the notes of a `.note.kcc` section's bytes (None if it has no kcc note);
    want NT_KCC_PROGRAM: a program's facts (a JSON object)."""
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from("<III", data, pos)
        pos += 12
        name = data[pos:pos + namesz]
        pos += namesz + _pad4(namesz)
        desc = data[pos:pos + descsz]
        pos += descsz + _pad4(descsz)
        if pos > len(data) + 3:
            raise FactsError("the object's .note.kcc section is truncated")
        if name.rstrip(b"\0") == NOTE_OWNER and kind == want:
            if want == NT_KCC_LAUNCH:
                return parse_facts(desc)
            import json
            try:
                return json.loads(desc)
            except ValueError as e:
                raise FactsError(f"the object's program note is not JSON: {e}") from None
    return None



def read_object_facts(data: bytes, what: str, noun: str) -> list[dict[str, Any]]:
    """The launch facts in the .note.kcc of an ELF object (x86 object, AMD code object);
    FactsError, naming `what` the object should be (`noun` for short), when it is unreadable
    or has none."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    try:
        sec = ELFFile(io.BytesIO(data)).get_section_by_name(NOTE_SECTION)
        blob = sec.data() if sec is not None else None
    except (ELFError, ValueError, KeyError, AttributeError, IndexError) as e:
        raise FactsError(f"not a readable {what}: {e}") from None
    facts = read_elf_note(blob) if blob is not None else None
    if facts is None:
        raise FactsError(f"the {noun} carries no kcc launch facts (.note.kcc): it was not "
                         "written by this kcc; recompile it")
    return facts



def read_ptx_global(text: str, symbol: str = PTX_SYMBOL) -> list[dict[str, Any]] | None:
    """The facts of a PTX module's __kcc_launch array (None without one)."""
    blob = ptx_bytes(text, symbol)
    return None if blob is None else parse_facts(blob)



def ptx_bytes(text: str, symbol: str) -> bytes | None:
    """The bytes of a PTX module's `.b8 symbol[]` array (ptx_bytes_global); None without
    one, FactsError when it is malformed."""
    import re
    m = re.search(r"\.global\s+\.align\s+1\s+\.b8\s+" + re.escape(symbol) +
                  r"\[(\d+)\]\s*=\s*\{([0-9,\s]*)\}", text)
    if m is None:
        return None
    try:
        blob = bytes(int(x) for x in m.group(2).split(",") if x.strip())
    except ValueError:
        raise FactsError(f"the module's {symbol} array is not bytes") from None
    if len(blob) != int(m.group(1)):
        raise FactsError(f"the module's {symbol} array is truncated")
    return blob



def read_cubin_global(data: bytes) -> list[dict[str, Any]] | None:
    """The facts in a cubin's __kcc_launch symbol (None without one)."""
    blob = cubin_bytes(data, PTX_SYMBOL)
    return None if blob is None else parse_facts(blob)



def cubin_bytes(data: bytes, symbol: str) -> bytes | None:
    """The initial bytes of a cubin's global symbol (ptxas keeps a PTX .global's initializer
    in `.nv.global.init`); None without the symbol, FactsError when unreadable."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    try:
        elf = ELFFile(io.BytesIO(data))
        symtab = elf.get_section_by_name(".symtab")
        syms = symtab.get_symbol_by_name(symbol) if symtab is not None else None
        if not syms:
            return None
        s = syms[0]
        sec = elf.get_section(s["st_shndx"])
        blob = sec.data()[s["st_value"]:s["st_value"] + s["st_size"]]
    except (ELFError, ValueError, KeyError, AttributeError, IndexError, TypeError) as e:
        raise FactsError(f"not a readable cubin: {e}") from None
    if len(blob) != s["st_size"]:
        raise FactsError(f"the cubin's {symbol} is truncated")
    return blob



def check_manifest(kernel_json: dict[str, Any], facts: list[dict[str, Any]],
                   where: str) -> None:
    """FactsError unless the manifest's kernel entry has exactly the object's launch facts
    for the kernel of its name (where: the manifest, for the message)."""
    name = kernel_json.get("name")
    mine = next((f for f in facts if f.get("name") == name), None)
    if mine is None:
        have = ", ".join(str(f.get("name")) for f in facts) or "none"
        raise FactsError(f"{where}: the object has no kernel {name!r} (it has {have})")
    keys = LAUNCH_KEYS + (("target",) if "target" in mine else ())
    want = facts_of(kernel_json, "target" in mine)
    for key in keys:
        if key == "args" and isinstance(want["args"], list) and isinstance(mine["args"], list):
            _check_args(want["args"], mine["args"], f"{where}: kernel {name}")
        elif want[key] != mine.get(key):
            raise FactsError(f"{where}: kernel {name}: {key!r} is {want[key]!r} in the manifest "
                             f"but {mine.get(key)!r} in the object; the manifest was edited "
                             "or belongs to another object")



def _check_args(want: list[Any], have: list[Any], where: str) -> None:
    if len(want) != len(have):
        raise FactsError(f"{where}: the manifest lists {len(want)} arguments, the object "
                         f"{len(have)}")
    for a, b in zip(want, have):
        if a == b:
            continue
        keys = sorted(set(a) | set(b)) if isinstance(a, dict) and isinstance(b, dict) else []
        key = next((k for k in keys if a.get(k) != b.get(k)), None)
        slot = b.get("slot") if isinstance(b, dict) else "?"
        what = (f"{key!r} is {a.get(key)!r} in the manifest but {b.get(key)!r} in the object"
                if key else "differs from the object")
        raise FactsError(f"{where}: argument {slot}: {what}; the manifest was edited or "
                         "belongs to another object")
