"""`kcc run --check`: a compiled kernel against the reference interpreter, on random inputs
inside the defined domain of every op of the kernel (docs/semantics.md).

    values = check_inputs(sink, desc, rng)         # random, domain-respecting
    want, defined = reference(sink, values)        # the interpreter; where results are defined
    bad = compare(desc, got, want, defined, ulp)   # the arguments that differ, with details

Domains: a buffer or scalar whose values reach a divisor (CDIV/CMOD) gets integers in
[-9, 9] without 0 (negative divisors, -1 included, take their own code paths: a divisor of -1
once had its test hoisted out of a loop without its SETcc, issue 20; MIN / -1 is found as
unspecified, below); one reaching a shift amount gets [0, bits); one reaching an index, a
RANGE or SPECIAL bound stays small ([0, 16)) so every access is in bounds. Other integers are
drawn over the dtype's whole range with its edges (MIN, MAX, 0, ±1); other floats are normal
values with NaN, ±inf, ±0, subnormals and the largest finite mixed in — every float op defines
them. A scalar with no declared range is drawn the same way (one element of a buffer), but
never NaN (a NaN scalar often makes every output NaN, which compares equal to anything NaN);
one with a range stays in it. What the domain cannot rule out (a divisor computed as `b - 1`) is
found by running the interpreter twice with different choices for every unspecified result
(numerics.UNSPECIFIED): the elements that differ depend on an unspecified value and are left
out of the comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kcc.ir import AddrSpace, Ops, UOp, dtypes
from kcc.ir.uop import buffer_of, toposort

SMALL = (0, 15)
DIVISOR = (-9, 9)         # a domain that spans 0 from below is a divisor's: 0 is never drawn


@dataclass(frozen=True)
class Mismatch:
    """One buffer argument where the target and the interpreter disagree."""

    slot: int
    name: str | None
    count: int          # differing elements
    index: int          # the first of them (flat index)
    got: Any
    want: Any
    excluded: int       # elements left out as unspecified

    def describe(self, target: str) -> str:
        """One line: the argument, the count, the first index and both values."""
        label = f"argument {self.slot}" + (f" ({self.name})" if self.name else "")
        skip = f"; {self.excluded} unspecified elements not compared" if self.excluded else ""
        return (f"{label}: {self.count} element{'s' * (self.count != 1)} differ, the first at "
                f"index {self.index}: {target} gave {self.got}, the interpreter {self.want}"
                f"{skip}")


def _buffer_param(place: UOp) -> UOp | None:
    b = buffer_of(place)
    return b if b.op is Ops.PARAM else None


def _sources(order: list[UOp]) -> dict[UOp, list[int]]:
    """For every node of a toposorted list, the argument slots whose values reach it (through
    LOADs of PARAM buffers and scalar PARAMs), itself included; each node once, from its
    srcs' sets (a walk per divisor, shift or index was quadratic in a chain of them)."""
    reach: dict[UOp, int] = {}              # node → bit set of slots
    for n in order:
        m = 0
        for s in n.src:
            m |= reach[s]
        if n.op is Ops.LOAD:
            p = _buffer_param(n.src[0])
            if p is not None:
                m |= 1 << p.arg.slot
        elif n.op is Ops.PARAM and n.arg.addrspace is AddrSpace.ALU:
            m |= 1 << n.arg.slot
        reach[n] = m
    return {n: [k for k in range(m.bit_length()) if m >> k & 1] for n, m in reach.items()}


def _bits(n: UOp) -> int:
    dt = n.dtype
    return 64 if dt is None or dt.is_weak else dt.bits


def input_domains(sink: UOp) -> dict[int, tuple[int, int]]:
    """Per argument slot, the integer interval its values must stay in (absent: any value)."""
    dom: dict[int, tuple[int, int]] = {}

    def narrow(slots: list[int], lo: int, hi: int) -> None:
        for s in slots:
            a, b = dom.get(s, (lo, hi))
            dom[s] = (max(a, lo), max(max(a, lo), min(b, hi)))

    order = toposort([sink])
    src = _sources(order)
    for n in order:
        if n.op in (Ops.CDIV, Ops.CMOD) and len(n.src) == 2:
            narrow(src[n.src[1]], *DIVISOR)
        elif n.op in (Ops.SHL, Ops.SHR) and len(n.src) == 2:
            narrow(src[n.src[1]], 0, _bits(n) - 1)
        elif n.op in (Ops.INDEX, Ops.SHRINK):
            for s in n.src[1:]:
                narrow(src[s], *SMALL)
        elif n.op in (Ops.RANGE, Ops.SPECIAL) and n.src:
            narrow(src[n.src[0]], *SMALL)
    return dom


def _specials(npdt: np.dtype) -> np.ndarray:
    f = np.finfo(npdt)
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, f.smallest_subnormal,
                     -f.smallest_subnormal, f.tiny / 4, f.max, -f.max], dtype=npdt)


def random_buffer(rng: np.random.Generator, dtype: str, n: int,
                  domain: tuple[int, int] | None, specials: bool = True) -> np.ndarray:
    """n random elements of dtype (bfloat16: uint16 bit patterns) inside domain; without
    specials, floats are normal values only and integers small (when nothing is known of the
    kernel, e.g. a run from a manifest)."""
    if not specials and domain is None and not dtypes.by_name(dtype).is_float:
        domain = SMALL
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    dt = dtypes.by_name(dtype)
    if dt.is_float:
        work = np.float32 if dtype == "bfloat16" else dt.np
        if domain is not None:
            vals = _nonzero(rng.integers(domain[0], domain[1] + 1, n), domain).astype(work)
        else:
            vals = rng.standard_normal(n).astype(work)
            pick = rng.random(n) < (0.125 if specials else 0.0)
            vals[pick] = rng.choice(_specials(work), int(pick.sum()))
        if dtype == "bfloat16":     # the top half of float32 (a quiet NaN stays a NaN)
            return (vals.view(np.uint32) >> 16).astype(np.uint16)
        return vals
    info = np.iinfo(dt.np)
    if domain is not None:
        lo, hi = max(domain[0], info.min), min(domain[1], info.max)
        return _nonzero(rng.integers(lo, hi + 1, n, dtype=np.int64), domain).astype(dt.np)
    vals = rng.integers(info.min, info.max, n, dtype=dt.np, endpoint=True)
    pick = rng.random(n) < 0.125
    edges = np.array(sorted({info.min, info.max, 0, 1, info.max - 1}
                            | ({-1} if info.min < 0 else set())), dtype=dt.np)
    vals[pick] = rng.choice(edges, int(pick.sum()))
    return vals


def _nonzero(vals: np.ndarray, domain: tuple[int, int]) -> np.ndarray:
    """vals with 0 replaced by 1 when domain is a divisor's (it spans 0 from below)."""
    if domain[0] < 0 < domain[1]:
        vals[vals == 0] = 1
    return vals


def random_scalar(rng: np.random.Generator, arg: Any, domain: tuple[int, int] | None,
                  specials: bool = True) -> Any:
    """A scalar inside its declared range and its domain; with no declared range, drawn as
    one element of a buffer (without specials, i.e. with nothing known of the kernel: an
    integer or float in [1, 8])."""
    npdt = dtypes.by_name(arg.dtype).np
    if not arg.range and specials:
        v = random_buffer(rng, arg.dtype, 1, domain)
        if arg.dtype == "bfloat16":        # a bfloat16 scalar is given as its value
            v = (v.astype(np.uint32) << 16).view(np.float32)
        if v.dtype.kind == "f" and np.isnan(v[0]):
            # never a NaN scalar: it would make every output NaN, and NaN = NaN compares equal
            v = rng.standard_normal(1).astype(v.dtype)
        return v[0]
    lo, hi = arg.range if arg.range else (1, 8)
    if domain is not None:
        lo, hi = max(lo, domain[0]), min(hi, domain[1])
        hi = max(lo, hi)
    if npdt.kind in "iub":
        lo, hi = math.ceil(lo), math.floor(hi)
        # an integer range past int64 (uint64's) is drawn as an offset from lo
        v = lo + int(rng.integers(0, hi - lo, endpoint=True, dtype=np.uint64))
        if domain is not None and domain[0] < 0 < domain[1] and v == 0 and lo <= 1 <= hi:
            v = 1
        return npdt.type(v)
    return npdt.type(rng.uniform(float(lo), float(hi)))


def check_inputs(sink: UOp | None, desc: Any, rng: np.random.Generator,
                 given: list[Any] | None = None) -> list[Any]:
    """Every argument: the given ones (a prefix) as they are, the rest random in the domain
    the graph sink gives (None: no graph, so small integers and normal floats)."""
    dom = input_domains(sink) if sink is not None else {}
    given = given or []
    out = list(given)
    for a in desc.args[len(given):]:
        if a.kind == "buffer":
            out.append(random_buffer(rng, a.dtype, a.size, dom.get(a.slot), sink is not None))
        else:
            out.append(random_scalar(rng, a, dom.get(a.slot), sink is not None))
    return out


def _is_nan(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (x & 0x7FFF) > 0x7F80
    if x.dtype.kind == "f":
        return np.isnan(x)
    return np.zeros(x.shape, bool)


def same_elements(got: np.ndarray, want: np.ndarray, dtype: str, ulp: int = 0) -> np.ndarray:
    """Per element: equal bits, both NaN (a NaN's payload is unspecified), or, for floats with
    ulp > 0, within ulp units in the last place."""
    g, w = got.reshape(-1), want.reshape(-1)
    same = g.view(f"u{g.itemsize}") == w.view(f"u{w.itemsize}")
    same |= _is_nan(g, dtype) & _is_nan(w, dtype)
    if ulp and g.dtype.kind == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            same |= np.isclose(g, w, rtol=ulp * np.finfo(g.dtype).eps, atol=0)
    return same


def reference(sink: UOp, values: list[Any]) -> tuple[list[Any], list[np.ndarray | None]]:
    """The interpreter's results on copies of values (values are not changed) and, per
    argument (None for scalars), the elements whose result the semantics define for these
    inputs: equal when the interpreter runs with either choice of every unspecified result."""
    from kcc.ir.interp import run
    from kcc.ir.numerics import unspecified_variant
    runs = []
    for v in (0, 1):
        copy = [x.copy() if isinstance(x, np.ndarray) else x for x in values]
        with unspecified_variant(v):
            run(sink, copy)
        runs.append(copy)
    defined: list[np.ndarray | None] = []
    for a, x, y in zip(_params(sink), *runs):
        defined.append(same_elements(x, y, a) if isinstance(x, np.ndarray) else None)
    return runs[0], defined


def _params(sink: UOp) -> list[str]:
    ps = sorted((n for n in toposort([sink]) if n.op is Ops.PARAM), key=lambda n: n.arg.slot)
    return [p.arg.dtype.name for p in ps]


def _show(x: np.ndarray, i: int, dtype: str) -> str:
    v = x.reshape(-1)[i]
    if dtype == "bfloat16":
        return f"0x{int(v):04x} (bfloat16 bits)"
    if x.dtype.kind == "f":
        return f"{v!r} (0x{int(np.asarray(v).view(f'u{x.itemsize}')):0{2 * x.itemsize}x})"
    return str(v)


def compare(desc: Any, got: list[Any], want: list[Any], defined: list[np.ndarray | None],
            ulp: int) -> list[Mismatch]:
    """The buffer arguments where got and want differ on a defined element."""
    out = []
    for a, g, w, d in zip(desc.args, got, want, defined):
        if not isinstance(g, np.ndarray):
            continue
        diff = ~same_elements(g, w, a.dtype, ulp)
        excluded = 0
        if d is not None:
            excluded = int((~d).sum())
            diff &= d
        if diff.any():
            i = int(np.argmax(diff))
            out.append(Mismatch(a.slot, a.name, int(diff.sum()), i, _show(g, i, a.dtype),
                                _show(w, i, a.dtype), excluded))
    return out


# docs/transcendentals.md: EXP2/LOG2/SIN are within 2 ulp of the exact value and the
# interpreter rounds its float64 result once more; a kernel using them is compared within this
# many ulp (floats only), every other kernel bit for bit (docs/semantics.md: exact ops).
TRANSCENDENTAL_ULP = 4


def check_ulp(sink: UOp) -> int:
    """The ulp tolerance `kcc run --check` compares sink's float results with: 0 (bit for
    bit) unless the kernel uses an approximated op (TRANSCENDENTAL_ULP)."""
    approx = {Ops.EXP2, Ops.LOG2, Ops.SIN}
    return TRANSCENDENTAL_ULP if any(n.op in approx for n in toposort([sink])) else 0


@dataclass(frozen=True)
class CheckReport:
    """The verdict of one `--check`: the mismatches (none: a match) and the report lines."""

    mismatches: list[Mismatch]
    lines: list[str]

    @property
    def ok(self) -> bool:
        """True when every defined element matches."""
        return not self.mismatches


def check_report(desc: Any, target: str, sink: UOp, got: list[Any], want: list[Any],
                 defined: list[np.ndarray | None]) -> CheckReport:
    """Compare a target's buffers with the interpreter's under the kernel's ulp policy; the
    report's lines say what matched or, per argument, what differs."""
    ulp = check_ulp(sink)
    bad = compare(desc, got, want, defined, ulp)
    if not bad:
        skipped = sum(int((~d).sum()) for d in defined if d is not None)
        note = f" ({skipped} unspecified elements not compared)" if skipped else ""
        return CheckReport([], [f"{desc.name}: {target} matches the interpreter{note}"])
    how = f"by more than {ulp} ulp" if ulp else "(bit-exact comparison, NaN = NaN)"
    lines = [f"{desc.name}: {target} differs from the interpreter {how}:"]
    lines += [f"  {m.describe(target)}" for m in bad]
    return CheckReport(bad, lines)


def compiled_graph(target: str, arch: str | None, sink: UOp) -> UOp:
    """The graph target's back end selects from for sink: the kernel after the pipeline's last
    graph pass, as `kcc compile --dump-after` prints it, read back."""
    import io

    from kcc.frontend.parser import parse
    from kcc.targets import registry
    from kcc.targets.pipeline import PIPELINE
    last = [s.name for s in PIPELINE if s.kind == "graph"][-1]
    spec = registry.get(target)
    buf = io.StringIO()
    spec.compile([sink], arch or spec.default_arch, spec.default_emit, last, buf)
    return parse(buf.getvalue().split(f"; after {last}\n")[-1])


def check_compiled_graph(desc: Any, target: str, arch: str | None, sink: UOp,
                         inputs: list[Any], got: list[Any], rep: CheckReport) -> CheckReport:
    """rep, a kernel with approximated ops that differs from the interpreter by more than
    TRANSCENDENTAL_ULP: a match when target's buffers equal, bit for bit, the interpreter's run
    of the graph target compiled (its EXP2/LOG2/SIN decomposed into exact ops, each result
    within 2 ulp: docs/transcendentals.md) on the same inputs. Then every step after the
    decomposition is exact and the difference from the kernel as written is the approximations'
    error grown by the kernel's own arithmetic (a difference of nearly equal values, a large
    factor), not a fault of the back end. rep unchanged otherwise, or when that graph cannot be
    made or run."""
    from kcc.ir.interp import InterpError
    try:
        want, defined = reference(compiled_graph(target, arch, sink), inputs)
    except (InterpError, MemoryError, ValueError, RuntimeError):
        return rep
    if compare(desc, got, want, defined, 0):
        return rep
    lines = [f"{desc.name}: {target} matches, bit for bit, the interpreter's run of the graph "
             f"it compiled (EXP2/LOG2/SIN decomposed, each within 2 ulp: "
             f"docs/transcendentals.md); the kernel as written differs by more than "
             f"{check_ulp(sink)} ulp where the kernel's arithmetic grows that error:"]
    lines += [f"  {m.describe(target)}" for m in rep.mismatches]
    return CheckReport([], lines)
