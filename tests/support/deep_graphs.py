"""Kernels whose graphs are deep (a chain: each node reads the one before) or shared (a
diamond: each level reads both values of the level before, so a walk that re-expands a node
per use takes 2^levels steps), in the places each pass and back end looks: plain values,
indices, vector lanes, whole vectors, reduce loops, decomposed ops, gates, selects. Used by
tests/e2e/test_graph_walks.py (every walk visits each node once) and bench/compile_scale.py
(compile time and memory linear in the nodes).

Each kernel is `.uop` text, so the parser and printer walk it too: `kernel(template, shape,
n)` with shape "chain" (n nodes deep) or "diamond" (n levels).
"""

from __future__ import annotations

from typing import Callable

def _shape(shape: str, n: int, ops: tuple[str, str], wrap: Callable[[str], str] | None = None,
           prefix: str = "") -> tuple[list[str], str]:
    """Lines computing a chain or diamond over %{prefix}a and %{prefix}b; the result's name.

    An op is a name (`ADD`: `ADD(a, b)`) or a format of {a} and {b} (`EXP2(ADD({a}, {b}))`).
    chain: x = OP0(x, b) n times. diamond: (a, b) = (OP0(a, b), OP1(a, b)) n times, then
    OP0(a, b). wrap(expr) names an op applied to every new value (index arithmetic kept in
    bounds: CMOD by a constant), as a line of its own."""
    fmts = [o if "{" in o else o + "({a}, {b})" for o in ops]
    lines: list[str] = []
    p = prefix

    def val(name: str, expr: str) -> str:
        if wrap is None:
            lines.append(f"%{name} = {expr}")
        else:
            lines.append(f"%{name}_ = {expr}")
            lines.append(f"%{name} = {wrap(f'%{name}_')}")
        return f"%{name}"

    a, b = f"%{p}a", f"%{p}b"
    if shape == "chain":
        for k in range(n):
            a = val(f"{p}c{k}", fmts[0].format(a=a, b=b))
        return lines, a
    if shape != "diamond":
        raise ValueError(f"unknown shape {shape!r}")
    for k in range(n):
        a, b = (val(f"{p}x{k}", fmts[0].format(a=a, b=b)),
                val(f"{p}y{k}", fmts[1].format(a=a, b=b)))
    return lines, val(f"{p}r", fmts[0].format(a=a, b=b))


def _flat(line: str, out: list[str]) -> None:
    """`%n = OP(args)[ rest]` with calls nested in args (`LOAD(INDEX(%x, %i))`) as lines of
    one op each (the format names every operand), appended to out."""
    name, expr = line.split(" = ", 1)
    depth = 0
    for k, ch in enumerate(expr):          # the end of the top-level call
        depth += (ch == "(") - (ch == ")")
        if ch == ")" and depth == 0:
            break
    head, rest = expr[:k + 1], expr[k + 1:]
    op, inner = head.split("(", 1)
    args, depth, cur = [], 0, ""
    for ch in inner[:-1]:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    names = []
    for j, a in enumerate(args):
        if "(" in a:
            _flat(f"{name}_{j} = {a}", out)
            a = f"{name}_{j}"
        names.append(a)
    out.append(f"{name} = {op}({', '.join(names)}){rest}")


def _kernel(name: str, params: list[str], head: list[str], body: list[str], tail: list[str],
            loop: int = 64) -> str:
    lines = ["# kcc-uop 1"] + params + [f"%i = RANGE({loop}) (0, LOOP)"]
    for line in head + body + tail:
        _flat(line, lines)
    return "\n".join(lines + ["%e = END(%st, %i)", f'SINK(%e) KernelInfo(name="deep_{name}")', ""])


def _io(dt: str, n: int = 64) -> list[str]:
    return [f"%out = PARAM ParamArg(0, {dt}, {n})", f"%x = PARAM ParamArg(1, {dt}, {n})",
            f"%y = PARAM ParamArg(2, {dt}, {n})"]


def _elementwise(shape: str, n: int, dt: str = "float32", ops=("ADD", "MUL")) -> str:
    head = ["%a = LOAD(INDEX(%x, %i))", "%b = LOAD(INDEX(%y, %i))"]
    body, r = _shape(shape, n, ops)
    return _kernel("elementwise", _io(dt), head, body, [f"%st = STORE(INDEX(%out, %i), {r})"])


def _index(shape: str, n: int) -> str:
    """Index arithmetic: a diamond of sums and products kept in 0..15 by CMOD; a chain of
    ADDs of i % 2 (a sum as deep as the chain: unroll, widen, the x86 streaming-store check
    and the GPU selectors decompose such sums)."""
    head = ["%a = CMOD(%i, 16)", "%b = CMOD(ADD(%i, 5), 16)"]
    if shape == "chain":
        head[1] = "%b = CMOD(%i, 2)"
        body, r = _shape(shape, n, ("ADD", "MUL"))
    else:
        body, r = _shape(shape, n, ("ADD", "MUL"), lambda e: f"CMOD({e}, 16)")
    size = 16 + n + 64
    return _kernel("index", _io("float32", size), head, body,
                   [f"%st = STORE(INDEX(%out, %i), LOAD(INDEX(%x, {r})))"])


def _lanes(shape: str, n: int, mixed: bool = False) -> str:
    """A 4-lane load taken apart, the same work per lane, the lanes STACKed back (slp);
    mixed: lane j's second operand is lane j+1 of the other vector."""
    head = ["%s = MUL(%i, 4)", "%va = LOAD(SHRINK(%x, %s, 4))", "%vb = LOAD(SHRINK(%y, %s, 4))"]
    body: list[str] = []
    res = []
    for j in range(4):
        body += [f"%l{j}a = INDEX(%va, {j})",
                 f"%l{j}b = INDEX(%vb, {(j + 1) % 4 if mixed else j})"]
        lines, r = _shape(shape, n, ("ADD", "MUL"), prefix=f"l{j}")
        body += lines
        res.append(r)
    tail = [f"%v = STACK({', '.join(res)})", "%st = STORE(SHRINK(%out, %s, 4), %v)"]
    return _kernel("lanes", _io("float32", 256), head, body, tail)


def _vector(shape: str, n: int) -> str:
    """Whole 4-lane vectors (widen runs several iterations as one; devectorize)."""
    head = ["%s = MUL(%i, 4)", "%a = LOAD(SHRINK(%x, %s, 4))", "%b = LOAD(SHRINK(%y, %s, 4))"]
    body, r = _shape(shape, n, ("ADD", "MUL"))
    return _kernel("vector", _io("float32", 256), head, body,
                   [f"%st = STORE(SHRINK(%out, %s, 4), {r})"])


def _reduce(shape: str, n: int) -> str:
    """out[i] = sum over r of f(x[16i + r], y[r]) in a REG accumulator (unroll, licm)."""
    params = _io("float32", 1024)
    head = ["%acc = BUFFER ParamArg(0, float32, 1, addrspace=REG)",
            "%init = STORE(INDEX(%acc, 0), 0.0)", "%rr = RANGE(16, %init) (1, REDUCE)",
            "%a = LOAD(INDEX(%x, ADD(MUL(%i, 16), %rr)))", "%b = LOAD(INDEX(%y, %rr))"]
    body, t = _shape(shape, n, ("ADD", "MUL"))
    tail = ["%accI = AFTER(%acc, %init, %rr)", "%cur = LOAD(INDEX(%accI, 0))",
            f"%st1 = STORE(INDEX(%accI, 0), ADD(%cur, {t}))", "%er = END(%st1, %rr)",
            "%accE = AFTER(%acc, %er)", "%st = STORE(INDEX(%out, %i), LOAD(INDEX(%accE, 0)))"]
    return _kernel("reduce", params, head, body, tail)


def _decompose(shape: str, n: int, kinds: tuple[str, ...] = (
        "FDIV({a}, {b})", "EXP2(MUL({a}, {b}))", "SQRT(MUL({a}, {b}))", "SIN(MUL({a}, {b}))",
        "LOG2(MUL({a}, {b}))"), dt: str = "float32", every: int = 4) -> str:
    """Ops targets decompose (division, square root, transcendentals; integer division), each
    a subgraph of tens of nodes: on every `every`-th level one of kinds in turn, an ADD on the
    others. chain: x = OP(x, b); diamond: (a, b) = (OP(a, b), ADD(a, b))."""
    head = ["%a = LOAD(INDEX(%x, %i))", "%b = LOAD(INDEX(%y, %i))"]
    body, a, b = [], "%a", "%b"
    if shape == "chain":
        every = max(every, n // 8)    # a chain is there for its depth: a few of them will do
    for k in range(n):
        op = kinds[k // every % len(kinds)] if k % every == 0 else "MUL({a}, {b})"
        body.append(f"%k{k} = " + op.format(a=a, b=b))
        if shape == "diamond":
            body.append(f"%j{k} = ADD({a}, {b})")
            b = f"%j{k}"
        a = f"%k{k}"
    tail = [f"%st = STORE(INDEX(%out, %i), ADD({a}, {b}))"]
    return _kernel("decompose", _io(dt), head, body, tail)


def _gates(shape: str, n: int) -> str:
    """A boolean DAG gating a load and a store (legalize_gates)."""
    head = ["%a = CMPLT(%i, 40)", "%b = CMPLT(3, %i)"]
    body, g = _shape(shape, n, ("AND", "OR"))
    tail = ["%m1 = CAST(-1.0) float32", f"%v = LOAD(INDEX(%x, %i), %m1, {g})",
            f"%st = STORE(INDEX(%out, %i), %v, {g})"]
    return _kernel("gates", _io("float32"), head, body, tail)


def _select(shape: str, n: int) -> str:
    """WHERE over compares of the values it selects between (blends, cmov)."""
    head = ["%a = LOAD(INDEX(%x, %i))", "%b = LOAD(INDEX(%y, %i))"]
    body, r = _shape(shape, n, ("WHERE(CMPLT({a}, {b}), {a}, {b})",
                                "WHERE(CMPLT({b}, {a}), {b}, ADD({a}, {b}))"))
    return _kernel("select", _io("float32"), head, body,
                   [f"%st = STORE(INDEX(%out, %i), {r})"])


def _vbool(shape: str, n: int) -> str:
    """A DAG of AND/OR over 8-lane compares selecting between two vectors (x86 lane masks
    and opmasks, GPU predicates per lane)."""
    head = ["%s = MUL(%i, 8)", "%va = LOAD(SHRINK(%x, %s, 8))", "%vb = LOAD(SHRINK(%y, %s, 8))",
            "%a = CMPLT(%va, %vb)", "%b = CMPNE(%va, %vb)"]
    body, g = _shape(shape, n, ("AND", "OR"))
    return _kernel("vbool", _io("float32", 512), head, body,
                   [f"%st = STORE(SHRINK(%out, %s, 8), WHERE({g}, %va, %vb))"])


TEMPLATES: dict[str, Callable[[str, int], str]] = {
    "elementwise": _elementwise,
    "int": lambda s, n: _elementwise(s, n, "int32", ("ADD", "XOR")),
    "float64": lambda s, n: _elementwise(s, n, "float64", ("ADD", "MUL")),
    "index": _index,
    "lanes": _lanes,
    "lanes_mixed": lambda s, n: _lanes(s, n, mixed=True),
    "vector": _vector,
    "reduce": _reduce,
    "decompose": _decompose,
    "intdiv": lambda s, n: _decompose(s, n, ("CDIV({a}, {b})", "CMOD({a}, {b})"), "int32"),
    "int64div": lambda s, n: _decompose(s, n, ("CDIV({a}, {b})", "CMOD({a}, {b})"), "int64",
                                        every=16),
    "gates": _gates,
    "select": _select,
    "vbool": _vbool,
}


def kernel(template: str, shape: str, n: int) -> str:
    """The `.uop` text of template's kernel with a chain of n nodes or a diamond n levels deep."""
    return TEMPLATES[template](shape, n)


def prefix_lanes() -> str:
    """Lane j of a STACK is lane j-1 plus lane j of a vector (a prefix sum over lanes, as
    tinygrad writes cumsum and a padded conv's overlapping windows): packing the lanes as
    one vector op reads lanes 0..2 of that very vector (issue 20)."""
    head = ["%s = MUL(%i, 4)", "%v = LOAD(SHRINK(%x, %s, 4))", "%p = LOAD(INDEX(%y, %i))"]
    body, prev = [], "%p"
    for j in range(4):
        body.append(f"%c{j} = ADD({prev}, INDEX(%v, {j}))")
        prev = f"%c{j}"
    tail = ["%st = STORE(SHRINK(%out, %s, 4), STACK(%c0, %c1, %c2, %c3))"]
    params = ["%out = PARAM ParamArg(0, float32, 64)", "%x = PARAM ParamArg(1, float32, 64)",
              "%y = PARAM ParamArg(2, float32, 16)"]
    return _kernel("prefix", params, head, body, tail, loop=16)


def gathers(n: int) -> str:
    """n loads along a chain of index sums (x[i%2], x[i%2 + i%2], …), added up: every load's
    index is as deep as its place in the chain, so a check that walks each index (the
    verifier's bounds check did) costs n^2."""
    head = ["%b = CMOD(%i, 2)", "%c0 = ADD(%b, 0)", "%s0 = LOAD(INDEX(%x, %c0))"]
    body = []
    for k in range(1, n):
        body += [f"%c{k} = ADD(%c{k - 1}, %b)",
                 f"%s{k} = ADD(%s{k - 1}, LOAD(INDEX(%x, %c{k})))"]
    return _kernel("gathers", _io("float32", n + 64), head, body,
                   [f"%st = STORE(INDEX(%out, %i), %s{n - 1})"])


def divisor_chain(n: int) -> str:
    """x[i] divided n times, each time by the quotient before (`kcc run --check` narrows the
    inputs every divisor reads: one walk per divisor was n^2)."""
    head = ["%a = LOAD(INDEX(%x, %i))", "%q0 = CDIV(%a, LOAD(INDEX(%y, %i)))"]
    body = [f"%q{k} = CDIV(%a, %q{k - 1})" for k in range(1, n)]
    return _kernel("divisors", _io("int32"), head, body,
                   [f"%st = STORE(INDEX(%out, %i), %q{n - 1})"])
