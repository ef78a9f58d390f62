"""An 8 x 8 float32 block read as 8 column STACKs of strided scalar loads (kcc/isel/x86/
transpose.py: attention's q·kᵀ operand, cross_entropy's column max) is 8 row loads, 8
VINSERTF128 and 16 shuffles, not a VGATHERDPS (x86-64-v4) or lane inserts (v3) a column; not
where a STORE lies between the columns or a column is missing (a row load would read
elements no load reads). Values: the x86 object vs the reference interpreter."""

from __future__ import annotations

import io

import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference


def _kernel(cols: int = 8, stride: int = 10, store_between: bool = False) -> str:
    """out[8i + j] = sum over columns c of column c of the block at x[80i] (rows stride
    apart) times c + 1, lane j; optionally a store to out2 between columns 3 and 4."""
    lines = ["# kcc-uop 1", "%o = PARAM ParamArg(0, float32, 16)",
             f"%x = PARAM ParamArg(1, float32, {2 * 8 * stride})",
             "%o2 = PARAM ParamArg(2, float32, 2)",
             "%i = RANGE(2) (0, WEAK)", f"%b = MUL(%i, {8 * stride})"]
    acc = None
    effects = []
    for c in range(cols):
        lanes = []
        for j in range(8):
            lines += [f"%a{c}_{j} = ADD(%b, {c + stride * j})",
                      f"%p{c}_{j} = INDEX(%x, %a{c}_{j})", f"%l{c}_{j} = LOAD(%p{c}_{j})"]
            lanes.append(f"%l{c}_{j}")
        lines += [f"%s{c} = STACK({', '.join(lanes)})",
                  f"%k{c} = STACK({', '.join([f'{c + 1}.0'] * 8)})",
                  f"%m{c} = MUL(%s{c}, %k{c})"]
        if acc is None:
            acc = f"%m{c}"
        else:
            lines.append(f"%acc{c} = ADD({acc}, %m{c})")
            acc = f"%acc{c}"
        if store_between and c == 3:
            lines += ["%q = INDEX(%o2, %i)", f"%w = INDEX({acc}, 0)", "%sq = STORE(%q, %w)"]
            effects.append("%sq")
    lines += ["%po = MUL(%i, 8)", "%so = SHRINK(%o, %po, 8)", f"%st = STORE(%so, {acc})"]
    effects.append("%st")
    lines += [f"%g = GROUP({', '.join(effects)})", "%e = END(%g, %i)",
              'SINK(%e) KernelInfo(name="cols")']
    return "\n".join(lines) + "\n"


def _asm(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="allocate", out=out)
    return out.getvalue()


def _check(text: str, arch: str) -> None:
    if arch == "x86-64-v4" and not HAS_V4:
        return
    sink = parse(text)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("stride", [8, 10])
def test_eight_columns_are_one_transpose(arch: str, stride: int) -> None:
    text = _kernel(stride=stride)
    asm = _asm(text, arch)
    assert "vgatherdps" not in asm and "vinsertps" not in asm, asm
    assert asm.count("vinsertf128") == 8 and asm.count("vshufps") == 8, asm
    assert asm.count("vunpcklps") + asm.count("vunpckhps") == 8, asm
    _check(text, arch)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_store_between_or_a_missing_column_keeps_the_columns(arch: str) -> None:
    for text in (_kernel(store_between=True), _kernel(cols=7)):
        asm = _asm(text, arch)
        assert "vunpcklps" not in asm, asm
        _check(text, arch)
