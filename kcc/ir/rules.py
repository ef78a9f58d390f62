"""The ONE rule table: the derived dtype, shape and kind of a node from (op, src, arg).

This is the only place in kcc where a node's type is decided (UOP_FORMAT.md, "Derived types").
A rule that does not hold raises `IRError`; `src_index` names the operand at fault so the
frontend can put its caret under it.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.dtype import DType, PromotionError, dtypes, promote
from kcc.ir.ops import BITWISE, FLOAT_ONLY, INT_ONLY, ROW, Ops, arity_ok, arity_text
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp, UType
from kcc.ir.limits import MAX_BUFFER_ELEMENTS

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable

VOID = UType(None, (), "void")
# The UTypes the rules return, shared: (id of the dtype, shape, kind) → the one UType. A frozen
# dataclass costs ~630 ns to build and a node's type is computed for every node a pass makes;
# a lookup is ~150 ns. UTypes are immutable and compare by value (the rules already return a
# src's own UType where it fits), and the entry keeps its dtype alive, so its id names it.
_UTYPES: dict[tuple[int, tuple[int, ...], str], UType] = {}
_UTYPES_MAX = 1 << 14          # (distinct buffer sizes add entries: a bound, then start over)


def _utype(dtype: DType | None, shape: tuple[int, ...], kind: str) -> UType:
    """UType(dtype, shape, kind), one object per distinct value."""
    key = (id(dtype), shape, kind)
    t = _UTYPES.get(key)
    if t is None:
        if len(_UTYPES) >= _UTYPES_MAX:
            _UTYPES.clear()
        t = _UTYPES[key] = UType(dtype, shape, kind)
    return t
SPECIAL_NAMES = ("gidx0", "gidx1", "gidx2", "lidx0", "lidx1", "lidx2")


class IRError(Exception):
    """A graph that breaks a rule of the IR. `src_index` is the operand at fault, if one is."""

    def __init__(self, msg: str, src_index: int | None = None):
        super().__init__(msg)
        self.msg = msg
        self.src_index = src_index


def _value(src: tuple[UOp, ...], i: int, what: str) -> UType:
    t = src[i].utype
    if t.kind != "value":
        raise IRError(f"{what} must be a value, not a {t.kind}", i)
    return t


def _scalar_int(src: tuple[UOp, ...], i: int, what: str) -> UType:
    t = _value(src, i, what)
    if t.shape != () or not t.dtype.is_int:
        raise IRError(f"{what} must be a scalar integer, not {fmt_utype(t)}", i)
    return t


def _gate(src: tuple[UOp, ...], i: int, lanes: tuple[int, ...] = ()) -> None:
    """A gate is a scalar bool (for every element of the access); a LOAD's may also be a bool
    vector of the place's shape (`lanes`): lane j gates element j alone (docs/semantics.md)."""
    t = _value(src, i, "a gate")
    if not t.dtype.is_bool or (t.shape != () and t.shape != lanes):
        what = "a scalar bool" if not lanes else \
            f"a scalar bool or a bool vector of the place's shape {_shape(lanes)}"
        raise IRError(f"a gate must be {what}, not {fmt_utype(t)}", i)


def _const_int(src: tuple[UOp, ...], i: int, what: str) -> int:
    """The value of an integer constant operand: a literal or a strong constant CAST(4) int32
    (kcc.ir.consts)."""
    v = const_int(src[i])
    if v is None:
        raise IRError(f"{what} must be an integer constant (a literal or e.g. CAST(4) int32)", i)
    return v


def _promote_all(src: tuple[UOp, ...], idx: range | list[int], what: str) -> UType:
    """Promote the operands at idx: equal shapes, one common dtype."""
    first = _value(src, idx[0], what)
    dt, shape = first.dtype, first.shape
    for i in idx[1:]:
        t = _value(src, i, what)
        if t.shape != shape:
            raise IRError(f"{what} operands have shapes {_shape(shape)} and {_shape(t.shape)}; "
                          "ALU ops are elementwise over equal shapes", i)
        try:
            dt = promote(dt, t.dtype)
        except PromotionError as e:
            raise IRError(str(e), i) from None
    # the first operand's type when the common dtype is its own (UTypes compare by value)
    return first if dt is first.dtype else _utype(dt, shape, "value")


def _store_into(place: UType, val: UType, i: int, what: str) -> None:
    """A value stored into (or used as the alt of) a place: a weak value takes its dtype."""
    if val.shape != place.shape:
        raise IRError(f"{what} has shape {_shape(val.shape)} but the place has "
                      f"{_shape(place.shape)}", i)
    try:
        dt = promote(place.dtype, val.dtype)
    except PromotionError:
        dt = None
    if dt != place.dtype:
        raise IRError(f"{what} is {val.dtype} but the place holds {place.dtype}", i)


def _shape(shape: tuple[int, ...]) -> str:
    return "scalar" if shape == () else "[" + ",".join(map(str, shape)) + "]"


def fmt_utype(t: UType) -> str:
    """A type as the .uop text writes it: `float32`, `float32[4]`, `void`."""
    if t.dtype is None:
        return "void"
    return t.dtype.name + ("" if t.shape == () else "[" + ",".join(map(str, t.shape)) + "]")


# -- one rule per op group --------------------------------------------------------------------

def _param(src: tuple[UOp, ...], arg: Any) -> UType:
    if not isinstance(arg, ParamArg):
        raise IRError("PARAM takes a ParamArg(slot, dtype, size, …)")
    _param_common(arg)
    if arg.addrspace is AddrSpace.ALU:
        if arg.size is not None:
            raise IRError("a scalar PARAM (addrspace=ALU) has no size")
        return _utype(arg.dtype, (), "value")
    if arg.addrspace is not AddrSpace.GLOBAL:
        raise IRError("a PARAM lives in GLOBAL (a buffer) or ALU (a scalar); "
                      "LOCAL and REG storage is a BUFFER")
    if arg.size is None:
        raise IRError("a GLOBAL PARAM needs a size (its element count)")
    return _utype(arg.dtype, (arg.size,), "buffer")


def _buffer(src: tuple[UOp, ...], arg: Any) -> UType:
    if not isinstance(arg, ParamArg):
        raise IRError("BUFFER takes a ParamArg(slot, dtype, size, addrspace=LOCAL or REG)")
    _param_common(arg)
    if arg.addrspace not in (AddrSpace.LOCAL, AddrSpace.REG):
        raise IRError("a BUFFER lives in LOCAL or REG")
    if arg.size is None:
        raise IRError("a BUFFER needs a size")
    return _utype(arg.dtype, (arg.size,), "buffer")


def _param_common(arg: ParamArg) -> None:
    if not isinstance(arg.slot, int) or isinstance(arg.slot, bool) or arg.slot < 0:
        raise IRError("a ParamArg slot is a non-negative integer")
    if not isinstance(arg.dtype, DType) or arg.dtype.is_weak:
        raise IRError("a ParamArg dtype is a strong dtype")
    if arg.size is not None and (isinstance(arg.size, bool) or not isinstance(arg.size, int)
                                 or arg.size <= 0):
        raise IRError("a ParamArg size is a positive integer")
    if arg.size is not None and arg.size > MAX_BUFFER_ELEMENTS:
        # the one limit kcc compile, the manifest reader and kcc run share (kcc/ir/limits.py)
        raise IRError(f"a ParamArg size is at most 2^{MAX_BUFFER_ELEMENTS.bit_length() - 1} "
                      f"elements, not {arg.size}")
    if arg.vmin_vmax is not None:
        if (not isinstance(arg.vmin_vmax, tuple) or len(arg.vmin_vmax) != 2
                or arg.vmin_vmax[0] > arg.vmin_vmax[1]):
            raise IRError("vmin_vmax is a pair (vmin, vmax) with vmin <= vmax")


def _const(src: tuple[UOp, ...], arg: Any) -> UType:
    if isinstance(arg, bool):
        return _utype(dtypes.bool, (), "value")
    if isinstance(arg, int):
        return _utype(dtypes.weakint, (), "value")
    if isinstance(arg, float):
        return _utype(dtypes.weakfloat, (), "value")
    raise IRError("CONST takes an integer, float or bool literal")


def _special(src: tuple[UOp, ...], arg: Any) -> UType:
    if arg not in SPECIAL_NAMES:
        raise IRError(f"SPECIAL's name is one of {', '.join(SPECIAL_NAMES)}")
    # The bound is an integer constant (a literal or a strong constant), or an integer
    # expression of scalar PARAMs evaluated at launch (the verifier checks what it is built of).
    t = _scalar_int(src, 0, "a SPECIAL bound")
    bound = const_int(src[0])
    if bound is not None and bound <= 0:
        raise IRError("a SPECIAL bound must be positive", 0)
    return _utype(t.dtype, (), "value")


def _range(src: tuple[UOp, ...], arg: Any) -> UType:
    ok = (isinstance(arg, tuple) and len(arg) >= 2 and isinstance(arg[-1], AxisType)
          and all(isinstance(a, int) and not isinstance(a, bool) for a in arg[:-1]))
    if not ok:
        raise IRError("RANGE takes (axis_id, AxisType), with any number of integer axis ids "
                      "before the AxisType")
    t = _scalar_int(src, 0, "a RANGE bound")
    return _utype(t.dtype, (), "value")


def _end(src: tuple[UOp, ...], arg: Any) -> UType:
    for i, r in enumerate(src[1:], 1):
        if r.op is not Ops.RANGE:
            raise IRError("END closes RANGEs: every src after the body is a RANGE", i)
    return VOID


def _index(src: tuple[UOp, ...], arg: Any) -> UType:
    base = src[0].utype
    if base.kind == "buffer":
        _scalar_int(src, 1, "an index")
        return _utype(base.dtype, (), "place")
    if base.kind == "value" and len(base.shape) == 1:
        lane = _const_int(src, 1, "a lane index into a vector")
        if not 0 <= lane < base.shape[0]:
            raise IRError(f"lane {lane} is outside a vector of {base.shape[0]}", 1)
        return _utype(base.dtype, (), "value")
    raise IRError(f"INDEX needs a buffer or a vector value, not {base.kind} "
                  f"{fmt_utype(base)}", 0)


def _shrink(src: tuple[UOp, ...], arg: Any) -> UType:
    base = src[0].utype
    if base.kind != "buffer":
        raise IRError(f"SHRINK needs a buffer, not a {base.kind}", 0)
    _scalar_int(src, 1, "a SHRINK start")
    n = _const_int(src, 2, "a SHRINK length")
    if n <= 0:
        raise IRError("a SHRINK length must be positive", 2)
    return _utype(base.dtype, (n,), "place")


def _place(src: tuple[UOp, ...], i: int) -> UType:
    t = src[i].utype
    if t.kind != "place":
        raise IRError(f"expected a place (an INDEX or SHRINK of a buffer), not a {t.kind}", i)
    return t


def _load(src: tuple[UOp, ...], arg: Any) -> UType:
    place = _place(src, 0)
    if len(src) == 2:
        raise IRError("a gated LOAD takes both an alt value and a gate: LOAD(place, alt, gate)")
    if len(src) == 3:
        _store_into(place, _value(src, 1, "a LOAD's alt"), 1, "the alt value")
        _gate(src, 2, place.shape)
    return _utype(place.dtype, place.shape, "value")


def _store(src: tuple[UOp, ...], arg: Any) -> UType:
    place = _place(src, 0)
    val = _value(src, 1, "a stored value")
    # A uint8 stored into a bool place is the bool v != 0 (GPU-style lowerings store a
    # comparison as CAST(cmp) uint8 into a bool buffer); docs/uop-format.md, "Types".
    if not (place.dtype.is_bool and val.dtype == dtypes.uint8 and val.shape == place.shape):
        _store_into(place, val, 1, "the stored value")
    if len(src) == 3:
        _gate(src, 2)
    return VOID


def _after(src: tuple[UOp, ...], arg: Any) -> UType:
    t = src[0].utype
    if t.kind == "void":
        raise IRError("AFTER's first src is the value or buffer it orders, not an effect", 0)
    return t


def _void(src: tuple[UOp, ...], arg: Any) -> UType:
    return VOID


def _barrier(src: tuple[UOp, ...], arg: Any) -> UType:
    # BARRIER(%st, …): the effects (a workgroup's LOCAL stores) it waits for, ordered before it
    for i, s in enumerate(src):
        if s.utype.kind != "void":
            raise IRError(f"a BARRIER's srcs are the effects it waits for, not a {s.kind}", i)
    return VOID


def _sink(src: tuple[UOp, ...], arg: Any) -> UType:
    if not isinstance(arg, KernelInfo):
        raise IRError('SINK takes KernelInfo(name="…")')
    if not isinstance(arg.name, str) or not arg.name.isidentifier() or not arg.name.isascii():
        raise IRError(f"kernel name {arg.name!r} is not a C identifier")
    return VOID


def _stack(src: tuple[UOp, ...], arg: Any) -> UType:
    t = _promote_all(src, range(len(src)), "STACK")
    if t.shape != ():
        raise IRError("STACK lanes are scalars", 0)
    return _utype(t.dtype, (len(src),), "value")


def _cast(src: tuple[UOp, ...], arg: Any) -> UType:
    if not isinstance(arg, DType) or arg.is_weak:
        raise IRError("CAST/BITCAST takes a strong dtype")
    t = _value(src, 0, "a CAST operand")
    return _utype(arg, t.shape, "value")


def _bitcast(src: tuple[UOp, ...], arg: Any) -> UType:
    res = _cast(src, arg)
    t = src[0].utype
    if t.dtype.is_weak:
        raise IRError("BITCAST needs a strong dtype to reinterpret; CAST the literal first", 0)
    if t.dtype.itemsize != arg.itemsize:
        raise IRError(f"BITCAST from {t.dtype} to {arg} changes the width", 0)
    return res


def _unary(op: Ops) -> Callable[[tuple[UOp, ...], Any], UType]:
    name = op.name                      # (an enum's .name is a slow property: asked once)
    what = f"{name}'s operand"
    floats = op in FLOAT_ONLY or op is Ops.TRUNC

    def rule(src: tuple[UOp, ...], arg: Any) -> UType:
        t = _value(src, 0, what)
        if floats:
            if not t.dtype.is_float:
                raise IRError(f"{name} takes a float, not {t.dtype}", 0)
        elif t.dtype.is_bool:
            raise IRError(f"{name} takes a number, not bool", 0)
        return t
    return rule


def _binary(op: Ops) -> Callable[[tuple[UOp, ...], Any], UType]:
    name = op.name                      # (an enum's .name is a slow property: asked once)
    floats, ints, bitwise = op in FLOAT_ONLY, op in INT_ONLY, op in BITWISE
    numbers = op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MULACC)

    def rule(src: tuple[UOp, ...], arg: Any) -> UType:
        t = src[0].utype
        if t.kind != "value" or t is not src[1].utype:
            # (operands of one shared UType, most nodes, promote to it: _promote_all's answer)
            t = _promote_all(src, [0, 1], name)
        dt = t.dtype
        if floats and not dt.is_float:
            raise IRError(f"{name} takes floats, not {dt}", 0)
        if ints and not dt.is_int:
            raise IRError(f"{name} takes integers, not {dt}", 0)
        if bitwise and not (dt.is_int or dt.is_bool):
            raise IRError(f"{name} takes integers or bools, not {dt}", 0)
        if numbers and dt.is_bool:
            raise IRError(f"{name} takes numbers, not bool", 0)
        return t
    return rule


def _compare(src: tuple[UOp, ...], arg: Any) -> UType:
    t = _promote_all(src, [0, 1], "a comparison")
    return _utype(dtypes.bool, t.shape, "value")


def _shift(src: tuple[UOp, ...], arg: Any) -> UType:
    a = _value(src, 0, "a shifted value")
    b = _value(src, 1, "a shift amount")
    if not a.dtype.is_int:
        raise IRError(f"a shift takes an integer, not {a.dtype}", 0)
    if not b.dtype.is_int or b.shape != a.shape:
        raise IRError(f"a shift amount is an integer of the shifted value's shape, not "
                      f"{fmt_utype(b)}", 1)
    return a


def _threefry(src: tuple[UOp, ...], arg: Any) -> UType:
    t = _promote_all(src, [0, 1], "THREEFRY")
    if t.dtype not in (dtypes.uint64, dtypes.weakint):
        raise IRError(f"THREEFRY takes uint64, not {t.dtype}", 0)
    return _utype(dtypes.uint64, t.shape, "value")


def _where(src: tuple[UOp, ...], arg: Any) -> UType:
    c = _value(src, 0, "WHERE's condition")
    if not c.dtype.is_bool:
        raise IRError(f"WHERE's condition is bool, not {c.dtype}", 0)
    t = _promote_all(src, [1, 2], "WHERE")
    if c.shape != t.shape:
        raise IRError("WHERE's condition and values have different shapes", 0)
    return t


def _mulacc(src: tuple[UOp, ...], arg: Any) -> UType:
    t = _promote_all(src, [0, 1, 2], "MULACC")
    if t.dtype.is_bool:
        raise IRError("MULACC takes numbers, not bool", 0)
    return t


def _wmma(src: tuple[UOp, ...], arg: Any) -> UType:
    """WMMA(a, b, c) ((N, M, K), dtype_in, device, threads, None): the result is c's type.

    The form (kcc/ir/wmma.py) must be one kcc knows, and each operand a vector of its dtype
    with the elements per lane the form gives (docs/semantics.md, "WMMA")."""
    from kcc.ir import wmma
    ok = (isinstance(arg, tuple) and len(arg) == 5 and isinstance(arg[0], tuple)
          and len(arg[0]) == 3 and all(isinstance(d, int) and not isinstance(d, bool)
                                       for d in arg[0])
          and isinstance(arg[1], DType) and not arg[1].is_weak and isinstance(arg[2], str)
          and isinstance(arg[3], int) and not isinstance(arg[3], bool) and arg[4] is None)
    if not ok:
        raise IRError("WMMA takes ((N, M, K), dtype_in, device, threads, None), e.g. "
                      '((8, 16, 16), float16, "CUDA", 32, None)')
    dims, din, device, threads, _ = arg
    if device not in wmma.DEVICES:
        raise IRError(f"WMMA device {device!r} is not one of {', '.join(wmma.DEVICES)}")
    c = _value(src, 2, "a WMMA accumulator")
    if c.dtype.is_weak:
        raise IRError("a WMMA accumulator has a strong dtype; CAST the literals", 2)
    sh = wmma.find(device, dims, threads, din.name, c.dtype.name)
    if sh is None:
        raise IRError(f"no tensor-core form {device} {dims} threads={threads} "
                      f"{din.name}->{c.dtype.name}; the forms are: {wmma.supported_text()}")
    for i, (what, dt) in enumerate((("A", din), ("B", din), ("C", c.dtype))):
        t = _value(src, i, f"WMMA's {what}")
        want = sh.per_lane[i]
        if t.dtype != dt or t.shape != (want,):
            raise IRError(f"WMMA's {what} is {dt.name}[{want}] per lane for {sh.name} "
                          f"({threads} lanes), not {fmt_utype(t)}", i)
    return c


RULES: dict[Ops, Callable[[tuple[UOp, ...], Any], UType]] = {
    Ops.PARAM: _param, Ops.BUFFER: _buffer, Ops.CONST: _const, Ops.SPECIAL: _special,
    Ops.RANGE: _range, Ops.END: _end, Ops.INDEX: _index, Ops.SHRINK: _shrink,
    Ops.LOAD: _load, Ops.STORE: _store, Ops.AFTER: _after, Ops.BARRIER: _barrier,
    Ops.GROUP: _void, Ops.SINK: _sink, Ops.STACK: _stack, Ops.CAST: _cast,
    Ops.BITCAST: _bitcast, Ops.CMPLT: _compare, Ops.CMPNE: _compare, Ops.CMPEQ: _compare,
    Ops.SHL: _shift, Ops.SHR: _shift, Ops.THREEFRY: _threefry, Ops.WHERE: _where,
    Ops.MULACC: _mulacc, Ops.WMMA: _wmma,
    **{op: _unary(op) for op in (Ops.NEG, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT,
                                 Ops.RECIPROCAL, Ops.TRUNC)},
    **{op: _binary(op) for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.CDIV, Ops.CMOD,
                                  Ops.MULHI, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR)},
}
assert set(RULES) == set(ROW), "every op has exactly one type rule"


def utype_of(op: Ops, src: tuple[UOp, ...], arg: Any) -> UType:
    """The derived type of (op, src, arg), or IRError if a rule does not hold."""
    if not arity_ok(op, len(src)):
        raise IRError(f"{op.name} takes {arity_text(op)} src, got {len(src)}")
    return RULES[op](src, arg)


def dtype_of(op: Ops, src: tuple[UOp, ...], arg: Any) -> DType | None:
    """The derived dtype (None for void nodes)."""
    return utype_of(op, src, arg).dtype
