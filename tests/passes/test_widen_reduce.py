"""Tests of the widening of integer and bool reductions across iterations
(kcc/passes/widen_reduce.py, run by kcc/passes/widen.py): which reduce loops get k-lane
accumulators and which are left alone, and that every variant computes what the graph as
written computes. The oracle is the reference interpreter, on the graph before and after the
pass and on the x86 object compiled with the pass in the pipeline (bit for bit), on random
full-range inputs whose sums wrap around, on x86-64-v3 and, where this CPU has AVX-512,
x86-64-v4."""

from __future__ import annotations

import pytest
from widen_util import range_bounds as _bounds
from widen_util import widen_check as _check
from widen_util import widen_prep as _prep

from kcc.ir import Ops, dtypes
from kcc.ir.ops import ALU
from kcc.passes.widen_reduce import identity
from x86_util import ARCHS


# tinygrad's row reduction: a one-element REG accumulator per row of {n} elements
REDUCE = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, {rows})
%a = PARAM ParamArg(1, {src}, {size})
%acc = BUFFER ParamArg(0, {dt}, 1, addrspace=REG)
%z = CAST(0) int32
%i = RANGE({rows}) (1, WEAK)
%ai = AFTER(%acc, %i)
%ap = INDEX(%ai, %z)
%init = STORE(%ap, {init})
%j = RANGE({n}, %i) (0, REDUCE)
%aj = AFTER(%acc, %init, %j)
%pj = INDEX(%aj, %z)
%old = LOAD(%pj)
%q = MULACC(%i, {n}, %j)
%xp = INDEX(%a, %q)
%x = LOAD(%xp)
{pre}%t = {term}
%new = {op}({first}, {second})
%st = STORE(%pj, %new)
%e = END(%st, %j)
%af = AFTER(%acc, %e)
%pf = INDEX(%af, %z)
%v = LOAD(%pf)
%op = INDEX(%out, %i)
%so = STORE(%op, %v)
%e2 = END(%so, %i)
SINK(%e2) KernelInfo(name="red")
"""

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _text(dt: str = "int32", op: str = "ADD", n: int = 77, rows: int = 5,
          term: str = "", src: str = "", init: str = "", swap: bool = False,
          pre: str = "") -> str:
    src = src or ("int8" if dt == "bool" else dt)
    init = init or ("false" if dt == "bool" else "3")
    bits = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int64": 64, "uint64": 64}.get(dt, 32)
    term = term or ("CMPLT(%x, 1)" if dt == "bool" else f"ADD(%x, {2 ** (bits - 2) + 1})")
    first, second = ("%t", "%old") if swap else ("%old", "%t")
    return REDUCE.format(dt=dt, src=src, rows=rows, n=n, size=rows * n, init=init, term=term,
                         op=op, first=first, second=second, pre=pre)


def _vector_regs(g) -> set[int]:
    """The element counts of g's REG buffers (the widened accumulators are vectors)."""
    return {u.arg.size for u in g.toposort() if u.op is Ops.BUFFER}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", ["ADD", "MAX", "OR", "AND", "XOR", "MUL"])
def test_int_reductions_match_interpreter(arch: str, dt: str, op: str) -> None:
    """Every integer width and reduce op: the terms (x + 2^(bits-2) + 1: sums and products
    wrap) of 77 a row, through the widened loop and its tail, agree bit for bit with the graph
    as written; the accumulator is a vector (the op is one the target has on the lanes)."""
    w = _check(_text(dt, op), arch)
    if op != "MUL" or dt in ("int16", "uint16", "int32", "uint32"):
        assert max(_vector_regs(w)) > 1


@pytest.mark.parametrize("arch", ARCHS)
def test_wrapping_products_of_terms(arch: str) -> None:
    """An int32 sum of x * 101 terms (a lane-wise MUL before the reduction)."""
    w = _check(_text("int32", "ADD", term="MUL(%x, 101)"), arch)
    assert 8 in _vector_regs(w)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", ["OR", "AND", "XOR", "MAX"])
def test_bool_reductions_match_interpreter(arch: str, op: str) -> None:
    """any/all-style reductions of bool lanes, kept as 0/1 integer lanes (bools have no vector
    memory form on x86), each lane compared with 0 when the lanes are combined."""
    w = _check(_text("bool", op, n=37), arch)
    assert max(_vector_regs(w)) > 1


@pytest.mark.parametrize("arch", ARCHS)
def test_bool_any_of_float_compares(arch: str) -> None:
    """tinygrad's any(x > c) over float rows: OR of float32 compares, the lanes in uint32."""
    text = _text("bool", "OR", term="CMPLT(0.5, %x)", src="float32")
    w = _check(text, arch)
    assert 8 in _vector_regs(w)


@pytest.mark.parametrize("arch", ARCHS)
def test_bool_count_is_widened(arch: str) -> None:
    """tinygrad's bool sum: CAST(x < c) int32 added up (a bool vector cast to int lanes); the
    loop runs 77 // 8 widened iterations and a 5-iteration tail, the result exact."""
    text = _text("int32", "ADD", term="CAST(%c) int32", src="float32",
                 pre="%c = CMPLT(%x, 0.0)\n")
    w = _check(text, arch)
    assert 8 in _vector_regs(w)
    assert sorted(_bounds(w)) == [5, 9]      # the last 8 elements as one more 8-lane block


@pytest.mark.parametrize("arch", ARCHS)
def test_argmax_shape_is_widened(arch: str) -> None:
    """argmax's reduction: MAX of (x == m) * (n - j), a term linear in the counter."""
    text = _text("int32", "MAX", term="MUL(%c, %k)",
                 pre="%b = CMPEQ(%x, 3)\n%c = CAST(%b) int32\n%k = SUB(77, %j)\n")
    w = _check(text, arch)
    assert 8 in _vector_regs(w)


@pytest.mark.parametrize("arch", ARCHS)
def test_operand_order_and_exact_multiple(arch: str) -> None:
    """OP(x, acc) as well as OP(acc, x), and a bound k divides (no tail loop)."""
    w = _check(_text("int32", "ADD", n=64, swap=True), arch)
    assert _bounds(w) == [5, 8]


def test_float_reduction_left_alone() -> None:
    """A float sum is not regrouped (float ADD is not associative)."""
    _, g, w = _prep(_text("float32", "ADD", term="ADD(%x, 1.0)", init="0.0"))
    assert w is g


def test_running_value_left_alone() -> None:
    """An accumulator whose running value is stored every iteration (a prefix sum) keeps its
    scalar loop: its lanes' partial values would be observed."""
    text = _text("int32", "ADD").replace(
        "%st = STORE(%pj, %new)", "%st0 = STORE(%pj, %new)\n%cp = INDEX(%out, %i)\n"
        "%st1 = STORE(%cp, %new)\n%st = GROUP(%st0, %st1)")
    _, g, w = _prep(text)
    assert w is g


@pytest.mark.parametrize("op,dt,want", [
    (Ops.ADD, dtypes.int8, 0), (Ops.MUL, dtypes.uint16, 1), (Ops.MAX, dtypes.int32, -2**31),
    (Ops.MAX, dtypes.uint64, 0), (Ops.AND, dtypes.uint8, 255), (Ops.AND, dtypes.int64, -1),
    (Ops.AND, dtypes.bool, True), (Ops.OR, dtypes.bool, False)])
def test_identity(op: Ops, dt, want) -> None:
    """Each reduce op's identity in its dtype (module docstring)."""
    from kcc.ir.consts import const_value
    got = identity(op, dt)
    cv = const_value(got)
    assert cv is not None and cv[0] == want and cv[1] == dt


@pytest.mark.parametrize("arch", ARCHS)
def test_bool_equality_term(arch: str) -> None:
    """argmax of a bool tensor: (x > c) == b per lane, b a loop-invariant bool (bools' == is
    the complement of their XOR, widen_lanes.py), cast to int32 and MAXed."""
    text = _text("int32", "MAX", term="MUL(%c, %k)", src="float32",
                 pre="%g = CMPLT(0.5, %x)\n%bb = CMPLT(%i, 3)\n%b = CMPEQ(%g, %bb)\n"
                     "%c = CAST(%b) int32\n%k = SUB(77, %j)\n")
    w = _check(text, arch)
    assert 8 in _vector_regs(w)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("lo, hi, seed", [(-3, 70, 3), (0, 12, 4), (1, 7, 5)])
def test_symbolic_bound(arch: str, lo: int, hi: int, seed: int) -> None:
    """A reduce loop over n elements, n a scalar PARAM: the widened loop runs max(n, 0) >> 3
    iterations and the tail the rest, for drawn values of n and for n = lo and 0 where the
    range allows (no iteration: each row reads back the accumulator's initial value, 3)."""
    text = _text("int32", "ADD", n=70).replace(
        '%acc = BUFFER', f'%n = PARAM ParamArg(2, int32, vmin_vmax=({lo}, {hi}), name="n", '
        'addrspace=ALU)\n%acc = BUFFER').replace("%j = RANGE(70, %i)", "%j = RANGE(%n, %i)")
    _, _, w = _prep(text, arch)
    assert 8 in _vector_regs(w)
    for s in range(seed, seed + 3):
        _check(text, arch, seed=s)
    for n in sorted({lo, 0} if lo <= 0 else set()):
        _check(text, arch, seed=seed, scalars={2: n})


TWO = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 10)
%a = PARAM ParamArg(1, int16, 385)
%cp = PARAM ParamArg(2, int16, 385)
%s = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%m = BUFFER ParamArg(1, int16, 1, addrspace=REG)
%z = CAST(0) int32
%i = RANGE(5) (1, WEAK)
%si = AFTER(%s, %i)
%sp = INDEX(%si, %z)
%s0 = STORE(%sp, 7)
%mi = AFTER(%m, %i)
%mp = INDEX(%mi, %z)
%m0 = STORE(%mp, -32768)
%j = RANGE(77, %i) (0, REDUCE)
%sj = AFTER(%s, %s0, %j)
%spj = INDEX(%sj, %z)
%sold = LOAD(%spj)
%mj = AFTER(%m, %m0, %j)
%mpj = INDEX(%mj, %z)
%mold = LOAD(%mpj)
%q = MULACC(%i, 77, %j)
%xp = INDEX(%a, %q)
%x = LOAD(%xp)
%xw = CAST(%x) int32
%t = MUL(%xw, %xw)
%snew = ADD(%t, %sold)
%sst = STORE(%spj, %snew)
%mnew = MAX(%mold, %x)
%mst = STORE(%mpj, %mnew)
%y = XOR(%x, 21845)
%cpp = INDEX(%cp, %q)
%cst = STORE(%cpp, %y)
%g = GROUP(%sst, %mst, %cst)
%e = END(%g, %j)
%sf = AFTER(%s, %e)
%sfp = INDEX(%sf, %z)
%sv = LOAD(%sfp)
%mf = AFTER(%m, %e)
%mfp = INDEX(%mf, %z)
%mv = LOAD(%mfp)
%mw = CAST(%mv) int32
%o1 = INDEX(%out, %i)
%st1 = STORE(%o1, %sv)
%i5 = ADD(%i, 5)
%o2 = INDEX(%out, %i5)
%st2 = STORE(%o2, %mw)
%g2 = GROUP(%st1, %st2)
%e2 = END(%g2, %i)
SINK(%e2) KernelInfo(name="two")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_two_accumulators_and_a_store(arch: str) -> None:
    """A sum of squares (int16 → int32, wrapping) and a MAX over the same row, and each
    element's XOR stored as it goes: two vector accumulators (int32 and int16 lanes, widened
    int16 → int32 with VPMOVSXWD) beside an elementwise store, exact."""
    w = _check(TWO, arch)
    vbufs = [u.arg for u in w.toposort() if u.op is Ops.BUFFER and u.arg.size == 8]
    assert sorted(str(a.dtype) for a in vbufs) == ["int16", "int32"]
    slots = [u.arg.slot for u in w.toposort() if u.op is Ops.BUFFER]
    assert len(slots) == len(set(slots)) == 4             # fresh slots for the new buffers


# two reductions, the second loop's RANGE ordered after the first loop's END (unroll's
# remainder loop after its jammed loop, passes/unroll.py), each into its own accumulator
ORDERED = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 2)
%a = PARAM ParamArg(1, int32, 40)
%acc = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%acc2 = BUFFER ParamArg(1, int32, 1, addrspace=REG)
%z = CAST(0) int32
%ap = INDEX(%acc, %z)
%init = STORE(%ap, 3)
%j = RANGE(19) (0, REDUCE)
%aj = AFTER(%acc, %init, %j)
%pj = INDEX(%aj, %z)
%old = LOAD(%pj)
%xp = INDEX(%a, %j)
%x = LOAD(%xp)
%new = ADD(%old, %x)
%st = STORE(%pj, %new)
%e = END(%st, %j)
%af = AFTER(%acc, %e)
%pf = INDEX(%af, %z)
%v = LOAD(%pf)
%op = INDEX(%out, %z)
%so = STORE(%op, %v)
%ap2 = INDEX(%acc2, %z)
%init2 = STORE(%ap2, 5)
%k = RANGE(21, %e) (1, REDUCE)
%ak = AFTER(%acc2, %init2, %k)
%pk = INDEX(%ak, %z)
%old2 = LOAD(%pk)
%k19 = ADD(%k, 19)
%xp2 = INDEX(%a, %k19)
%x2 = LOAD(%xp2)
%new2 = XOR(%old2, %x2)
%st2 = STORE(%pk, %new2)
%e2 = END(%st2, %k)
%af2 = AFTER(%acc2, %e2)
%pf2 = INDEX(%af2, %z)
%v2 = LOAD(%pf2)
%one = CAST(1) int32
%op2 = INDEX(%out, %one)
%so2 = STORE(%op2, %v2)
%g = GROUP(%so, %so2)
SINK(%g) KernelInfo(name="two")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_loop_ordered_after_another_widened_loop(arch: str) -> None:
    """Both loops widened in one pass: the second, rewritten from the graph before the first
    was, reads the first's new END (widen.py rebuilds what it read), and each loop's lane
    accumulator is a REG buffer of its own."""
    w = _check(ORDERED, arch)
    vec = sorted(u.arg.slot for u in w.toposort() if u.op is Ops.BUFFER and u.arg.size > 1)
    assert len(vec) == 2 and vec[0] != vec[1]
    # 19 = 2·8 + 3 and 21 = 5·4 + 1, each remainder an overlapping last block (no loop), and
    # no RANGE(19): the first loop runs once, widened
    assert sorted(_bounds(w)) == [2, 5]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["int32", "uint16", "int64"])
@pytest.mark.parametrize("op", ["ADD", "XOR", "MAX", "OR", "AND"])
@pytest.mark.parametrize("n", [9, 15, 17, 23, 31])
def test_last_block_overlaps_the_widened_loop(arch: str, dt: str, op: str, n: int) -> None:
    """N % k left over: the last k elements as one more k-lane block (no scalar tail loop);
    the lanes it shares with the widened loop's last block are ANDed with 0 for ADD and XOR
    and absorbed by MAX, OR and AND. Exact against the interpreter for every tail size."""
    w = _check(_text(dt, op, n=n), arch)
    assert max(_vector_regs(w)) > 1
    assert len(_bounds(w)) == 2              # the row loop and the widened loop only


@pytest.mark.parametrize("arch", ARCHS)
def test_product_keeps_its_scalar_tail(arch: str) -> None:
    """MUL has no identity a lane could be masked to with an AND: its tail stays a loop."""
    w = _check(_text("int32", "MUL", n=77), arch)
    assert len(_bounds(w)) == 3


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt, op", [("int32", "ADD"), ("int32", "MAX"), ("uint32", "XOR"),
                                    ("int64", "ADD"), ("int32", "AND")])
def test_last_block_of_lanes_combined_by_rotations(arch: str, dt: str, op: str) -> None:
    """The lanes are combined by halves down to one 128-bit block, then OP with the block
    rotated by half and a quarter of its lanes: the scalar accumulator takes lane 0 alone
    (one extraction a row, not one a lane); exact against the interpreter."""
    w = _check(_text(dt, op, n=77), arch)
    assert max(_vector_regs(w)) > 1
    nodes = w.toposort()
    # lanes taken out of a vector by a scalar node other than a STACK (the rotations' lanes
    # are STACKed back into a vector): the combine's extractions
    taken = {s for u in nodes if u.op is not Ops.STACK and not u.shape for s in u.src
             if s.op is Ops.INDEX and s.src[0].shape and s.src[0].op in ALU}
    assert len(taken) == 1


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt,op", [("int8", "MAX"), ("uint8", "MAX"), ("int8", "ADD"),
                                   ("int16", "MAX"), ("uint16", "XOR")])
def test_narrow_lanes_combine_by_byte_rotations(arch: str, dt: str, op: str) -> None:
    """An xmm accumulator of 8- or 16-bit lanes is combined by in-block rotations (one
    VPSHUFB each, kcc/isel/x86/shuf.py byte_shuffle) and OP, log2(lanes) steps, instead of
    reading its 16 or 8 lanes one by one (int8_max r_9_37: 578 → 228 instructions); the
    values agree bit for bit with the interpreter (full-range terms, wrapping sums)."""
    import io

    from kcc.frontend.parser import parse
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target

    text = _text(dt, op, n=37, rows=9)
    _check(text, arch)
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    ops = [ln.split(":", 1)[1].split()[0] for ln in out.getvalue().splitlines()
           if ln.split(":", 1)[0].strip().isdigit()]
    shuffles = ops.count("vpshufb_x_x_xm")
    extracts = sum(o.startswith(("vpextrb", "vpextrw")) for o in ops)
    # each accumulator (rows may be jammed): log2(lanes) >= 3 rotations, then lane 0 alone
    assert shuffles >= 3 and 1 <= extracts and 3 * extracts <= shuffles, ops


def _bool_updates(g) -> set:
    """How a widened bool accumulator's update makes its integer lanes: "where" (WHERE(x,
    ~0, 0)) or "cast" (CAST(x), 0/1)."""
    out = set()
    for u in g.toposort():
        if u.op is Ops.WHERE and u.shape and u.src[0].dtype.is_bool and u.dtype.is_int \
                and u.src[1].op is Ops.STACK:
            out.add("where")
        elif u.op is Ops.CAST and u.shape and u.src[0].dtype.is_bool and u.dtype.is_int:
            out.add("cast")
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op,want", [("OR", {"where"}), ("MAX", {"where"}),
                                     ("AND", {"cast"}), ("XOR", {"cast"})])
def test_or_and_max_of_bools_keep_all_ones_lanes(arch: str, op: str, want: set) -> None:
    """OR/MAX of bools keep a true lane as all ones (WHERE(x, ~0, 0): on x86 the compare's
    own lane mask, argmax_bool r_333_77's VPOR of VCMPPS); the lanes are read only as
    `!= 0`, where OR/MAX of {0, ~0} agree with {0, 1}. AND and XOR keep 0/1 (an XOR of two
    ~0 is 0 as of two 1s, but the identity and the tail are 0/1: left alone)."""
    text = _text("bool", op, term="CMPLT(0.5, %x)", src="float32", n=77)
    w = _check(text, arch)
    assert _bool_updates(w) == want


def _combine_loads(g) -> int:
    """Scalar LOADs of a one-element REG accumulator (the combine's read of acc[c])."""
    return sum(1 for u in g.toposort() if u.op is Ops.LOAD and u.shape == ()
               and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.AFTER
               and u.src[0].src[0].src[0].op is Ops.BUFFER
               and u.src[0].src[0].src[0].arg.size == 1)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op,init,reads", [("MAX", "-2147483648", 1),
                                           ("ADD", "0", 1),
                                           ("ADD", "3", 2),
                                           ("MAX", "0", 2)])
def test_identity_initial_value_is_not_read_back(arch: str, op: str, init: str,
                                                 reads: int) -> None:
    """An accumulator stored OP's identity before the loop (argmax's MAX from the int32
    minimum, bool_sum's ADD from 0) and updated by the lanes alone (n = 64: no tail loop)
    is the lanes' OP: the combine does not load acc[c] and OP it in (argmax r_333_77: four
    scalar instructions a row fewer). Any other initial value is still read and combined.
    (The one read left is the graph's own load after the loop.)"""
    w = _check(_text("int32", op, n=64, init=init), arch)
    assert _combine_loads(w) == reads
