"""x86 selection of an AND/OR/XOR of vector compares read as integer counts or sums
(kcc/isel/x86/kmask.py compare_tree): rule `add_bool_tree` makes ADD(acc, CAST(tree)) acc -
the tree's lane mask (VPSUB), rule `where_tree_and` makes WHERE(tree, y, 0) (what
passes/decompose.py bool_mulacc makes of MULACC(CAST(tree), y, acc)) VPAND of the mask and y.
Both are the lane-mask form on x86-64-v4 too, not the opmask form (compares into k on port 5,
KANDB on port 0): tinygrad's sort counts `(j < i+1) & (x[j] == x[i])` and sums
`j * ((x[j] == v) & (idx[j] == w))` (sort_rows r_4_256_2_4_256_4). Values: the object vs the
reference interpreter, many lanes equal so every arm is taken."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import V4_FLAGS, X86Target, cpu_flags

ARCHS = ["x86-64-v3", pytest.param("x86-64-v4", marks=pytest.mark.skipif(
    not all(f in cpu_flags() for f in V4_FLAGS),
    reason="this CPU has no AVX-512 (x86-64-v4 objects cannot run here)"))]

# y[0:4] = sum over j of READ, READ built of c = (a[4j+l] == 0.5) LOGIC (b[4j+l] < lim[l])
TEXT = """# kcc-uop 1
%y = PARAM ParamArg(0, int32, 4)
%a = PARAM ParamArg(1, float32, 64)
%b = PARAM ParamArg(2, int32, 64)
%acc = BUFFER ParamArg(0, int32, 4, addrspace=REG)
%z = STACK(0, 0, 0, 0)
%w = SHRINK(%acc, 0, 4)
%init = STORE(%w, %z)
%h = STACK(0.5, 0.5, 0.5, 0.5)
%lim = STACK(1, 2, 3, 4)
%j = RANGE(16, %init) (0, REDUCE)
%aa = AFTER(%acc, %init, %j)
%wa = SHRINK(%aa, 0, 4)
%old = LOAD(%wa)
%j4 = MUL(%j, 4)
%pa = SHRINK(%a, %j4, 4)
%va = LOAD(%pa)
%pb = SHRINK(%b, %j4, 4)
%vb = LOAD(%pb)
%c1 = CMPEQ(%va, %h)
%c2 = CMPLT(%vb, %lim)
%c = LOGIC(%c1, %c2)
%ci = CAST(%c) int32
%s = READ
%st = STORE(%wa, %s)
%e = END(%st, %j)
%af = AFTER(%acc, %e)
%wf = SHRINK(%af, 0, 4)
%fin = LOAD(%wf)
%py = SHRINK(%y, 0, 4)
%out = STORE(%py, %fin)
SINK(%out) KernelInfo(name="tree")
"""
COUNT = "ADD(%old, %ci)"
INDEX_SUM = "MULACC(%ci, %jv, %old)"


def _text(read: str, logic: str = "AND") -> str:
    text = TEXT.replace("READ", read).replace("LOGIC", logic)
    if "%jv" in read:
        text = text.replace("%s = ", "%jv = STACK(%j, %j, %j, %j)\n%s = ")
    return text


def _mir(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


@pytest.mark.parametrize("logic", ["AND", "OR", "XOR"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_count_of_a_compare_tree_subtracts_its_lane_mask(arch: str, logic: str) -> None:
    mir = _mir(_text(COUNT, logic), arch)
    assert "vpsubd_x_x_xm" in mir and "vpaddd" not in mir, mir
    assert "kand" not in mir and "kor" not in mir and "{z}" not in mir, mir


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_an_index_sum_of_a_compare_tree_ands_the_index(arch: str) -> None:
    mir = _mir(_text(INDEX_SUM), arch)
    assert "vpand_x_x_xm" in mir and "vpmulld" not in mir, mir
    assert "kand" not in mir, mir


def test_a_compare_tree_of_another_lane_width_keeps_the_opmask() -> None:
    # int64 lanes' compare beside float32's would be resized: the rules leave it
    text = _text(COUNT).replace("int32, 64)", "int64, 64)").replace(
        "STACK(1, 2, 3, 4)", "STACK(%one, 2, 3, 4)").replace(
        "%lim =", "%one = CAST(1) int64\n%lim =")
    mir = _mir(text, "x86-64-v4")
    assert "kand" in mir, mir


@pytest.mark.parametrize("read", [COUNT, INDEX_SUM])
@pytest.mark.parametrize("logic", ["AND", "OR", "XOR"])
@pytest.mark.parametrize("arch", ARCHS)
def test_matches_the_interpreter(arch: str, logic: str, read: str) -> None:
    sink = parse(_text(read, logic))
    rng = np.random.default_rng(3)
    a = rng.choice(np.array([0.25, 0.5, np.nan], np.float32), 64)
    b = rng.integers(-1, 6, 64).astype(np.int32)
    args = [np.zeros(4, np.int32), a, b]
    want = reference(sink, args)
    assert want[0].any()
    assert_same(sink, compile_and_run(sink, args, arch), want)
