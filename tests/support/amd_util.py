"""Helpers for the AMD tests: LLVM 19 tools as oracles (never LLVM 14 for AMD)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

LLVM19 = ("llvm-mc-19", "ld.lld-19", "llvm-readelf-19", "llvm-readobj-19", "llvm-objdump-19",
          "llc-19")
HAVE_LLVM19 = all(shutil.which(t) for t in LLVM19)
needs_llvm19 = pytest.mark.skipif(not HAVE_LLVM19,
                                  reason="needs LLVM 19 (apt-get install llvm-19 lld-19)")
ARCHS = ("gfx1100", "gfx942")
# The emulator decodes .text with kcc's AMD decoder (kcc.encode.amd.encoder, issue 9 section 2),
# which lands separately; until it is in the tree the tests that run code objects skip.
try:
    import kcc.encode.amd.encoder  # noqa: F401
    HAVE_DECODER = True
except ImportError:
    HAVE_DECODER = False
needs_decoder = pytest.mark.skipif(not HAVE_DECODER,
                                   reason="kcc's AMD decoder (kcc.encode.amd) is not in this tree")

_ENC = re.compile(r"encoding: \[([^\]]*)\]")


def mc_bytes(arch: str, lines: list[str] | tuple[str, ...]) -> bytes:
    """Machine code for instruction ``lines`` from llvm-mc-19 -show-encoding."""
    out = subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}",
                          "-show-encoding"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True).stdout
    found = _ENC.findall(out)
    assert len(found) == len(lines), out
    return bytes(int(t, 16) for m in found for t in m.split(","))


def llvm_link(tmp: Path, arch: str, asm: str, name: str = "k") -> bytes:
    """Assemble ``asm`` with llvm-mc-19 and link it with ld.lld-19 -shared; the HSACO."""
    src, obj, out = tmp / f"{name}.s", tmp / f"{name}.o", tmp / f"{name}.hsaco"
    src.write_text(asm)
    subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}",
                    "-filetype=obj", str(src), "-o", str(obj)], check=True,
                   capture_output=True, text=True)
    subprocess.run(["ld.lld-19", "-shared", str(obj), "-o", str(out)], check=True,
                   capture_output=True, text=True)
    return out.read_bytes()


def llc_hsaco(tmp: Path, arch: str, ir: str, name: str = "k",
              extra: tuple[str, ...] = ()) -> bytes:
    """Compile LLVM IR with llc-19 for ``arch`` and link it: code kcc did not write. gfx1100
    code is compiled with ``--amdgpu-enable-vopd=0``: kcc's decoder (and so its emulator) has
    no VOPD (dual-issue) rows, and kcc never emits them."""
    ll, s = tmp / f"{name}.ll", tmp / f"{name}.s"
    ll.write_text(ir)
    if arch == "gfx1100":
        extra = ("--amdgpu-enable-vopd=0", *extra)
    subprocess.run(["llc-19", "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-O2", *extra,
                    str(ll), "-o", str(s)], check=True, capture_output=True, text=True)
    return llvm_link(tmp, arch, s.read_text(), name)


def parse_yaml(text: str) -> object:
    """Parse the block-style YAML subset LLVM prints for AMDGPU metadata (maps, lists,
    plain scalars; ints, `true`/`false`, strings, an optional `!str` tag)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and ln.strip() not in ("---", "...")]
    pos = 0

    def scalar(s: str) -> object:
        s = s.strip()
        if s.startswith("!str "):
            return s[5:].strip().strip("'")
        if s in ("true", "false"):
            return s == "true"
        if re.fullmatch(r"-?\d+", s):
            return int(s)
        return s.strip("'\"")

    def block(indent: int) -> object:
        nonlocal pos
        first = lines[pos]
        if first[indent:].startswith("- "):
            items = []
            while pos < len(lines) and lines[pos].startswith(" " * indent + "- "):
                # Rewrite "- key: v" as a map line two columns deeper.
                lines[pos] = " " * (indent + 2) + lines[pos][indent + 2:]
                if ":" in lines[pos] and not lines[pos].strip().startswith("!"):
                    items.append(block(indent + 2))
                else:
                    items.append(scalar(lines[pos]))
                    pos += 1
            return items
        out: dict[str, object] = {}
        while pos < len(lines):
            ln = lines[pos]
            cur = len(ln) - len(ln.lstrip())
            if cur < indent or ln[cur:].startswith("- ") and cur == indent:
                break
            key, _, rest = ln.strip().partition(":")
            pos += 1
            if rest.strip():
                out[key] = scalar(rest)
            else:
                nxt = lines[pos]
                out[key] = block(len(nxt) - len(nxt.lstrip()))
        return out

    return block(0)


def assert_emulated_like_interpreter(sink: Any, code: Any, seeds: tuple[int, ...] = (0, 1)) -> None:
    """Run compiled AMD code (``compile_amd_code``'s result for ``sink``) in kcc's emulator on
    the fuzz harness's special-biased input draws ``seeds`` and assert every output equals the
    reference interpreter's."""
    import numpy as np
    from fuzz.harness import mismatch, run_reference, special_inputs
    from kcc.targets.amd.target import emulate, hsaco
    from kcc.targets.manifest import check_launch
    data = hsaco([code])
    for seed in seeds:
        args = special_inputs(sink, seed)
        want = run_reference(sink, args)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        emulate(data, code.desc, check_launch(code.desc, got))
        assert not mismatch(sink, got, want), mismatch(sink, got, want)
