"""Named regressions of the AMD back end (issue 20, section 1), each on gfx1100 and gfx942.

Each kernel compiles (the allocation re-verified by the checker), llvm-mc-19 assembles its
listing where present, and it runs in kcc's emulator against the reference interpreter
(fuzz.harness.check_amd). The emulator reads a GLOBAL access's VGPR offset as the unsigned
32-bit number the hardware does and reports an access outside every buffer (or outside the
LDS allocation), so a wrong address fails here instead of reading 4 GiB past a buffer.
"""

from __future__ import annotations

import pytest

from fuzz.harness import check_amd
from kcc.frontend.parser import parse

ARCHS = ("gfx1100", "gfx942")
HEAD = "# kcc-uop 1\n"


def _check(text: str, arch: str, seeds: range = range(2)) -> None:
    sink = parse(HEAD + text)
    for seed in seeds:
        assert check_amd([sink], arch, seed) == 1


def _asm(text: str, arch: str) -> list[str]:
    from kcc.targets.amd.target import compile_amd_code
    (code,) = compile_amd_code([parse(HEAD + text)], arch)
    return code.asm


# The reflect/reverse pattern of tinygrad's topk/sort and reflect-pad graphs: index
# (s - lidx) + 3, with (s - lidx) negative in some lanes while the sum is in bounds.
REVERSE_GLOBAL = """%out = PARAM ParamArg(0, float32, 16)
%x   = PARAM ParamArg(1, float32, 16)
%l   = SPECIAL(16) "lidx0"                  : weakint
%m   = SUB(12, %l)                          : weakint
%j   = ADD(%m, 3)                           : weakint
%xi  = INDEX(%x, %j)
%xv  = LOAD(%xi)                            : float32
%oi  = INDEX(%out, %l)
%st  = STORE(%oi, %xv)
SINK(%st) KernelInfo(name="reverse")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_global_offset_not_folded_over_a_negative_index(arch: str) -> None:
    """x[(12 - lidx) + 3] was selected as VGPR (12 - lidx)·4 with offset:12: for lidx > 12
    the VGPR offset is negative, which GLOBAL addressing reads as unsigned 32 bits, 4 GiB
    past the buffer (the emulator: "outside every buffer")."""
    _check(REVERSE_GLOBAL, arch)
    assert not any("offset:12" in line for line in _asm(REVERSE_GLOBAL, arch))


@pytest.mark.parametrize("arch", ARCHS)
def test_global_offset_still_folded_over_a_non_negative_index(arch: str) -> None:
    """x[lidx + 3]: lidx ≥ 0 by its value range, so the 3 stays in the immediate."""
    text = REVERSE_GLOBAL.replace("SUB(12, %l)", "ADD(%l, 0)").replace(
        "float32, 16)\n%l", "float32, 19)\n%l")
    _check(text, arch)
    assert any("offset:12" in line for line in _asm(text, arch))


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_lds_offset_not_folded_over_a_negative_index(arch: str) -> None:
    """The same split for LDS: lds[(12 - lidx) + 3] read at VGPR (12 - lidx)·4 + offset:12,
    an LDS address past the allocation for lidx > 12."""
    _check("""%out  = PARAM ParamArg(0, float32, 16)
%x    = PARAM ParamArg(1, float32, 16)
%lds  = BUFFER ParamArg(0, float32, 16, addrspace=LOCAL)
%l    = SPECIAL(16) "lidx0"                 : weakint
%xi   = INDEX(%x, %l)
%xv   = LOAD(%xi)                           : float32
%pl   = INDEX(%lds, %l)
%st0  = STORE(%pl, %xv)
%bar  = BARRIER
%ldsA = AFTER(%lds, %st0, %bar)
%m    = SUB(12, %l)                         : weakint
%j    = ADD(%m, 3)                          : weakint
%pr   = INDEX(%ldsA, %j)
%v    = LOAD(%pr)                           : float32
%oi   = INDEX(%out, %l)
%st   = STORE(%oi, %v)
SINK(%st) KernelInfo(name="lds_reverse")
""", arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_folded_offset_fits_every_lane_of_a_vector_access(arch: str) -> None:
    """x[2·lidx + 1023 .. +1]: offset 4092 fits the 13-bit signed field, but the second
    element's 4096 does not (AmdEncodeError: offset 4096 is outside [-4096, 4095])."""
    _check("""%out = PARAM ParamArg(0, float32, 32)
%x   = PARAM ParamArg(1, float32, 1100)
%l   = SPECIAL(16) "lidx0"                  : weakint
%m   = MUL(%l, 2)                           : weakint
%j   = ADD(%m, 1023)                        : weakint
%src = SHRINK(%x, %j, 2)
%v   = LOAD(%src)
%dst = SHRINK(%out, %m, 2)
%st  = STORE(%dst, %v)
SINK(%st) KernelInfo(name="far_pair")
""", arch)
