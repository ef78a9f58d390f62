"""The verifier on graphs built directly with UOp (no parser): each rule accepts and refuses."""

from __future__ import annotations

import pytest

from kcc.ir import AddrSpace, AxisType, KernelInfo, Ops, ParamArg, UOp, dtypes
from kcc.ir.verify import VerifyError, verify


def c(v: int | float | bool) -> UOp:
    return UOp(Ops.CONST, (), v)


def param(slot: int, dt=dtypes.float32, size: int | None = 16, **kw) -> UOp:
    return UOp(Ops.PARAM, (), ParamArg(slot, dt, size, **kw))


def rng(bound: UOp | int, axis: int = 0, *order: UOp) -> UOp:
    b = c(bound) if isinstance(bound, int) else bound
    return UOp(Ops.RANGE, (b, *order), (axis, AxisType.LOOP))


def store(buf: UOp, idx: UOp, val: UOp) -> UOp:
    return UOp(Ops.STORE, (UOp(Ops.INDEX, (buf, idx)), val))


def end(body: UOp, *ranges: UOp) -> UOp:
    return UOp(Ops.END, (body, *ranges))


def sink(*src: UOp) -> UOp:
    return UOp(Ops.SINK, src, KernelInfo("k"))


def refused(root: UOp, fragment: str) -> VerifyError:
    with pytest.raises(VerifyError) as info:
        verify(root)
    assert fragment in info.value.msg
    return info.value


def test_simple_loop_is_accepted() -> None:
    out, i = param(0), rng(16)
    verify(sink(end(store(out, i, c(1.0)), i)))


def test_root_must_be_sink() -> None:
    out, i = param(0), rng(16)
    e = refused(end(store(out, i, c(1.0)), i), "root of a kernel graph is a SINK")
    assert e.node.op is Ops.END


def test_second_sink_refused() -> None:
    out = param(0)
    inner = sink(store(out, c(0), c(1.0)))
    e = refused(UOp(Ops.SINK, (inner,), KernelInfo("k2")), "second SINK")
    assert e.node is inner


def test_rule_table_error_carries_node_and_operand() -> None:
    a, b = param(0, dtypes.int32), param(1, dtypes.float32)
    x = UOp(Ops.ADD, (UOp(Ops.LOAD, (UOp(Ops.INDEX, (a, c(0))),)),
                      UOp(Ops.LOAD, (UOp(Ops.INDEX, (b, c(0))),))))
    e = refused(sink(store(b, c(0), x)), "differ")
    assert e.node is x and e.src_index == 1


def test_wmma_with_a_wrong_arity_is_refused() -> None:
    refused(sink(UOp(Ops.WMMA, (c(1.0),))), "WMMA takes exactly 3 src")


def test_param_slots() -> None:
    out, i = param(0), rng(16)
    body = store(out, i, c(1.0))
    # an unused PARAM keeps its slot as a SINK src
    verify(sink(end(body, i), param(1, dtypes.int32, None, addrspace=AddrSpace.ALU)))
    e = refused(sink(end(body, i), param(2)), "slot 1 is missing")
    assert e.node.arg.slot == 2
    dup = param(0, dtypes.int8)
    e = refused(sink(end(body, i), dup), "PARAM slot 0 is used by two PARAMs")
    assert {e.node, e.related} == {dup, out}


def test_buffer_slots_are_separate_from_param_slots() -> None:
    out, i = param(0), rng(4)
    b0 = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, 4, addrspace=AddrSpace.REG))
    b0b = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, 8, addrspace=AddrSpace.REG))
    b0l = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, 8, addrspace=AddrSpace.LOCAL))
    verify(sink(end(store(out, i, c(1.0)), i), store(b0, c(0), c(2.0))))
    refused(sink(store(b0, c(0), c(2.0)), store(b0b, c(0), c(2.0)), store(out, c(0), c(1.0))),
            "BUFFER slot 0 is used by two BUFFERs (in REG)")
    # slots are unique per address space: a REG 0 and a LOCAL 0 may share a kernel
    verify(sink(store(b0, c(0), c(2.0)), store(b0l, c(0), c(2.0)), store(out, c(0), c(1.0))))


def test_values_thrown_away_are_refused() -> None:
    out, i = param(0), rng(4)
    refused(sink(end(store(out, i, c(1.0)), i), UOp(Ops.ADD, (c(1), c(2)))), "SINK's srcs")
    refused(sink(UOp(Ops.GROUP, (store(out, c(0), c(1.0)), c(3)))), "GROUP's srcs")
    refused(sink(end(UOp(Ops.ADD, (i, c(1))), i)), "END's body is an effect")


def test_range_pairing() -> None:
    out, i = param(0), rng(4)
    st = store(out, i, c(1.0))
    e = refused(sink(st), "never closed by an END")
    assert e.node is i
    e = refused(sink(end(end(st, i), i)), "closed by more than one END")
    assert e.related is i
    refused(sink(end(st, i, i)), "closed by more than one END")


def test_loop_scoping() -> None:
    out, i = param(0), rng(4)
    closed = end(store(out, i, c(1.0)), i)
    after = store(out, i, c(2.0))           # uses %i outside its loop, beside its END
    e = refused(sink(UOp(Ops.GROUP, (closed, after))), "both inside its loop and after")
    assert e.related is i and e.node.op is Ops.GROUP
    # nested loops: the outer counter is still open after the inner END
    j = rng(4, 1, i)
    inner = end(store(out, UOp(Ops.ADD, (i, j)), c(1.0)), j)
    verify(sink(end(inner, i)))
    refused(sink(inner), "never closed")


def test_accumulator_pattern_is_accepted() -> None:
    # init inside loop j before loop i, read after loop i through AFTER(acc, END(...))
    out = param(0)
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, 1, addrspace=AddrSpace.REG))
    j = rng(16)
    init = store(UOp(Ops.AFTER, (acc, j)), c(0), c(0.0))
    i = rng(8, 1, j)
    p1 = UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, init, i)), c(0)))
    upd = UOp(Ops.STORE, (p1, UOp(Ops.ADD, (UOp(Ops.LOAD, (p1,)), c(1.0)))))
    res = UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, end(upd, i))), c(0))),))
    verify(sink(end(store(out, j, res), j)))


def test_range_bound_is_static() -> None:
    out = param(0)
    n = param(1, dtypes.int32, None, addrspace=AddrSpace.ALU)
    i = rng(UOp(Ops.MUL, (n, c(2))))
    verify(sink(end(store(out, i, c(1.0)), i)))
    loaded = UOp(Ops.LOAD, (UOp(Ops.INDEX, (param(1, dtypes.int32), c(0))),))
    k = rng(loaded)
    e = refused(sink(end(store(out, k, c(1.0)), k)), "RANGE bound is built only from")
    assert e.node is k and e.src_index == 0
    f = param(1, dtypes.float32, None, addrspace=AddrSpace.ALU)
    m = rng(UOp(Ops.CAST, (f,), dtypes.int32))
    refused(sink(end(store(out, m, c(1.0)), m)), "RANGE bound is built only from")


def test_special_bounds() -> None:
    out = param(0)
    g8 = UOp(Ops.SPECIAL, (c(8),), "gidx0")
    g4 = UOp(Ops.SPECIAL, (c(4),), "gidx0")
    l4 = UOp(Ops.SPECIAL, (c(4),), "lidx0")
    verify(sink(store(out, UOp(Ops.ADD, (g8, l4)), c(1.0))))
    e = refused(sink(store(out, UOp(Ops.ADD, (g8, g4)), c(1.0))), "has bound")
    assert {e.node, e.related} == {g8, g4}
    # a symbolic bound: an integer expression of scalar PARAMs, evaluated at launch
    n = param(1, dtypes.int32, None, addrspace=AddrSpace.ALU)
    verify(sink(store(out, UOp(Ops.SPECIAL, (UOp(Ops.CDIV, (n, c(4))),), "gidx1"), c(1.0))))
    f = param(2, dtypes.float32, None, addrspace=AddrSpace.ALU)
    refused(sink(store(out, UOp(Ops.SPECIAL, (UOp(Ops.CAST, (f,), dtypes.int32),), "gidx1"),
                       c(1.0)), n), "scalar integer PARAMs")


def test_long_chain_is_iterative() -> None:
    # 50,000 nodes deep: far past Python's recursion limit (the parser test does 200,000)
    out, i = param(0), rng(4)
    x = c(0.0)
    for _ in range(50_000):
        x = UOp(Ops.ADD, (x, c(1.0)))
    verify(sink(end(store(out, i, x), i)))


# -- verifying again: what a node's subgraph decided is kept on it (UOp._verified), the rules
# over the whole graph are checked on every call ------------------------------------------------

def test_graph_wide_rules_hold_over_parts_verified_before() -> None:
    a, b, i = param(0), param(0, size=8), rng(16)
    body_a, body_b = end(store(a, i, c(1.0)), i), store(b, c(0), c(2.0))
    verify(sink(body_a))
    verify(sink(body_b))
    e = refused(sink(body_a, body_b), "PARAM slot 0 is used by two PARAMs")
    assert {e.node, e.related} == {a, b}
    # the same RANGE closed in two kernels that were each fine: two ENDs in one graph
    j = rng(4, 1)
    e1, e2 = end(store(a, j, c(1.0)), j), end(store(a, j, c(3.0)), j)
    verify(sink(e1))
    verify(sink(e2))
    refused(sink(e1, e2), "closed by more than one END")


def test_an_open_loop_is_refused_at_a_sink_after_its_nodes_were_verified() -> None:
    out, i = param(0), rng(16)
    st = store(out, i, c(1.0))
    verify(sink(end(st, i)))
    e = refused(sink(st), "never closed by an END")
    assert e.node is i


def test_a_refused_node_is_refused_again() -> None:
    out, i = param(0), rng(16)
    bad = UOp(Ops.GROUP, (UOp(Ops.ADD, (i, c(1))),))
    for _ in range(2):
        refused(sink(end(UOp(Ops.GROUP, (store(out, i, c(1.0)), bad)), i)), "GROUP's srcs")


def test_special_bounds_must_agree_across_verified_parts() -> None:
    out = param(0)
    g4, g8 = UOp(Ops.SPECIAL, (c(4),), "gidx0"), UOp(Ops.SPECIAL, (c(8),), "gidx0")
    s4, s8 = store(out, g4, c(1.0)), store(out, g8, c(1.0))
    verify(sink(s4))
    verify(sink(s8))
    refused(sink(s4, s8), "SPECIAL 'gidx0' has bound")


def test_a_verified_graph_is_remembered_only_for_itself() -> None:
    # verify remembers a SINK that passed (a second verify of it is a lookup); a graph that
    # shares all of it but one broken rule is still refused, and the memory keeps no graph alive
    import gc
    import weakref
    out, i = param(0), rng(16)
    body = end(store(out, i, c(1.0)), i)
    good = sink(body)
    verify(good)
    verify(good)
    refused(sink(body, param(2)), "slot 1 is missing")
    refused(sink(body, c(3.0)), "value is never used")
    dead = weakref.ref(good)
    del good
    gc.collect()
    assert dead() is None
