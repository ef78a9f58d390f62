"""Launch facts carried by the compiled object itself, so a loader trusts no manifest.

Every kernel's facts are the manifest entry's launch fields (`name`, `symbol`, `args` with
dtypes, element counts and access, `global`, `local`, `specials`: `LAUNCH_KEYS`; x86 and AMD add
`target`: x86's arch and worker arguments its call depends on, AMD's kernarg layout, which
the HIP launch packs, register counts and dimensions), as JSON. A
target stores them in its object (docs/manifest.md, "The object's own launch facts"):

- x86: an ELF note section `.note.kcc` (SHT_NOTE, not allocated: the C linker keeps it out of
  the loaded image and loaders that map SHT_PROGBITS sections never see it), one note of owner
  "kcc", type NT_KCC_LAUNCH, whose descriptor is the JSON list of every kernel's facts;
- AMD: the same note in the HSACO's last section `.note.kcc` (not allocated, in no segment:
  ROCr never maps it; kcc.targets.amd.hsaco writes it);
- CUDA: a `.visible .global .b8 __kcc_launch[]` array in the module holding the same JSON,
  which ptxas keeps in the cubin's `.nv.global.init` (and the PTX keeps as text); an exported
  program's module holds its program facts the same way, in `__kcc_program`.

Reading them back and `check_manifest` (a manifest's kernel against the object's facts: the
loader, `kcc run`, refuses a launch that differs) are in kcc/targets/facts_read.py.
"""

from __future__ import annotations

import _struct as struct  # struct's own C functions, without struct.py (start-up)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

NOTE_OWNER = b"kcc"
NT_KCC_LAUNCH = 1            # the note type of the launch facts (owner "kcc")
NT_KCC_PROGRAM = 2           # a whole program's buffers and launches (kcc/targets/program.py)
NOTE_SECTION = ".note.kcc"
LAUNCH_KEYS = ("name", "symbol", "args", "global", "local", "specials")


class FactsError(ValueError):
    """An object whose launch facts are missing or unreadable, or a manifest that disagrees."""


def facts_of(kernel_json: dict[str, Any], target: bool = False) -> dict[str, Any]:
    """The launch fields of one manifest kernel entry (KernelDesc.to_json()), with its target
    facts too when target is set (x86: the arch and worker arguments the call depends on)."""
    keys = LAUNCH_KEYS + (("target",) if target else ())
    return {k: kernel_json.get(k) for k in keys}


def facts_json(descs: list[Any], target: bool = False) -> bytes:
    """The facts of kernels (KernelDescs) as compact JSON bytes."""
    # json.dumps(…, separators=(",", ":"), sort_keys=True)
    from kcc.targets import jsontext
    return jsontext.dumps([facts_of(d.to_json(), target) for d in descs],
                          sort_keys=True).encode()


def _pad4(n: int) -> int:
    return -n % 4


def elf_note(descs: list[Any], target: bool = True) -> bytes:
    """The `.note.kcc` contents: one ELF note (namesz, descsz, type, owner, descriptor; each
    padded to 4 bytes, System V gABI "Note Section")."""
    owner = NOTE_OWNER + b"\0"
    desc = facts_json(descs, target)
    return (struct.pack("<III", len(owner), len(desc), NT_KCC_LAUNCH) + owner
            + bytes(_pad4(len(owner))) + desc + bytes(_pad4(len(desc))))


def raw_note(ntype: int, desc: bytes) -> bytes:
    """One kcc ELF note of type ntype (appended to a `.note.kcc` section's contents)."""
    owner = NOTE_OWNER + b"\0"
    return (struct.pack("<III", len(owner), len(desc), ntype) + owner
            + bytes(_pad4(len(owner))) + desc + bytes(_pad4(len(desc))))


PTX_SYMBOL = "__kcc_launch"
PTX_PROGRAM_SYMBOL = "__kcc_program"     # a whole program's facts (NT_KCC_PROGRAM's JSON)


def ptx_global(descs: list[Any]) -> str:
    """A PTX module-scope array holding the facts' JSON bytes (PTX ISA, "Variable
    Declarations": .global with an initializer); ptxas keeps a .visible global in the cubin."""
    return ptx_bytes_global(PTX_SYMBOL, facts_json(descs), "kcc launch facts")


def ptx_bytes_global(symbol: str, blob: bytes, what: str) -> str:
    """`.visible .global .align 1 .b8 symbol[n] = {…}` holding blob (what: the comment)."""
    rows = [", ".join(str(b) for b in blob[i:i + 24]) for i in range(0, len(blob), 24)]
    return (f"\n// {what} (JSON), read by kcc's loader\n.visible .global .align 1 .b8 "
            f"{symbol}[{len(blob)}] = {{\n\t" + ",\n\t".join(rows) + "\n};\n")


# Reading facts and checking a manifest against them are in kcc/targets/facts_read.py: a compile
# never calls them, and their code objects cost a `kcc compile` process page faults (docs/
# performance.md, issue 24 item 4). Their names stay importable from here.
_READERS = frozenset({"parse_facts", "read_elf_note", "read_object_facts", "read_ptx_global",
                      "ptx_bytes", "read_cubin_global", "cubin_bytes", "check_manifest"})


def __getattr__(name: str) -> Any:
    """The readers of kcc/targets/facts_read.py, by their old names."""
    if name in _READERS:
        from kcc.targets import facts_read
        return getattr(facts_read, name)
    raise AttributeError(name)
