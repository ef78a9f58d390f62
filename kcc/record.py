"""Records: classes whose `__init__`, `__repr__`, `__eq__`, `__hash__` (and, frozen, their
`__setattr__`/`__delattr__`) are generated from their field annotations, as
`dataclasses.dataclass` generates them, for the classes a `kcc compile` imports.

Why not dataclasses there: a `kcc compile saxpy.uop` process created 50 dataclasses, and
dataclasses' per-class work (Field objects, string annotations matched against ClassVar and
InitVar patterns, abc and signature checks, ~20 attribute writes) took 4–10 ms of a 35–60 ms
process, with the dataclasses module itself (and copy, re, inspect's stand-in) on top
(issue 24, item 4). A record does only what kcc's classes use; the methods' source text
depends only on the field names and flags, so its compiled code comes from the start-up code
cache (kcc/startup.py) and each class costs one `exec` of cached code (`__init__`, `__eq__`,
`__hash__`: generated code, as hot as dataclasses'; `__repr__` and the frozen `__setattr__`
and `__delattr__` are closures).

What a record is, field for field as dataclasses makes it (CPython 3.11, `@dataclass` with
`init`, `repr`, `eq`, `frozen`; `order`, `unsafe_hash`, `slots`, `kw_only`, `match_args=False`,
ClassVar, InitVar and KW_ONLY fields are not supported and raise TypeError):

- fields: the class's own annotations in order after its record bases' fields (a field
  declared again keeps its place); a default is the class attribute's value or `field()`'s;
  a mutable default (an unhashable type) is a ValueError, a non-default field after a default
  one a TypeError; `field(default_factory=…)` calls the factory per instance;
- a method the class body defines is kept (`__init__`, `__repr__`, `__eq__`; a frozen class
  defining `__setattr__` or `__delattr__` is a TypeError); `__post_init__` is called last by
  the generated `__init__`;
- `__eq__` compares the tuples of the compared fields of two instances of the same class
  (else NotImplemented); `__hash__` is the hash of that tuple for an `eq` and `frozen`
  record, None for an `eq` record that is not frozen (unless the body defines `__hash__`),
  inherited otherwise;
- `__repr__` is `Name(a=…, b=…)` with the class's `__qualname__`, "..." for a recursive
  repr; frozen assignment or deletion raises `dataclasses.FrozenInstanceError` (dataclasses
  is imported then); a frozen `__init__` sets each field with `object.__setattr__`;
- `__match_args__`; `__dataclass_fields__` is made when first read (it imports dataclasses),
  so `dataclasses.fields`, `replace`, `asdict` and `is_dataclass` answer for a record as for
  a dataclass. kcc's own code calls this module's `fields` and `replace`.
"""

from __future__ import annotations

from _thread import get_ident

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class _Missing:
    """The type of MISSING (no default, no factory)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_HAS_FACTORY: Any = _Missing()      # an __init__ default: "call the field's factory"


class Field:
    """One field of a record (what `field()` returns and `fields()` lists)."""

    __slots__ = ("name", "type", "default", "default_factory", "repr", "compare")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING,
                 repr: bool = True, compare: bool = True) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name: str = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r}, default={self.default!r}, "
                f"default_factory={self.default_factory!r}, repr={self.repr}, "
                f"compare={self.compare})")


def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,
          compare: bool = True) -> Any:
    """A field's options in a record's body, as `dataclasses.field`."""
    return Field(default, default_factory, repr, compare)


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order (a dataclass's are converted)."""
    got = getattr(class_or_instance, "__record_fields__", None)
    if got is not None:
        return got
    import dataclasses
    out = []
    for f in dataclasses.fields(class_or_instance):
        r = Field(MISSING if f.default is dataclasses.MISSING else f.default,
                  MISSING if f.default_factory is dataclasses.MISSING else f.default_factory,
                  f.repr, f.compare)
        r.name, r.type = f.name, f.type
        out.append(r)
    return tuple(out)


def replace(obj: Any, /, **changes: Any) -> Any:
    """A new instance of obj's class with changes applied to obj's fields, as
    `dataclasses.replace` (a dataclass instance is handed to it)."""
    fs = getattr(obj, "__record_fields__", None)
    if fs is None:
        import dataclasses
        return dataclasses.replace(obj, **changes)
    for f in fs:
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def _frozen(name: str) -> Exception:
    import dataclasses
    return dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


class _DataclassFields:
    """`__dataclass_fields__` of a record, made (dataclasses' Field objects) when first read."""

    def __init__(self, owner: type) -> None:
        self.owner = owner

    def __get__(self, obj: Any, cls: Any = None) -> dict[str, Any]:
        import dataclasses
        out = {}
        for f in self.owner.__record_fields__:         # type: ignore[attr-defined]
            d = dataclasses.field(default=f.default if f.default is not MISSING
                                  else dataclasses.MISSING,
                                  default_factory=f.default_factory
                                  if f.default_factory is not MISSING else dataclasses.MISSING,
                                  repr=f.repr, compare=f.compare)
            d.name, d.type = f.name, f.type
            d._field_type = dataclasses._FIELD          # type: ignore[attr-defined]
            out[f.name] = d
        type.__setattr__(self.owner, "__dataclass_fields__", out)
        return out


_UNSUPPORTED = ("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar", "KW_ONLY",
                "dataclasses.KW_ONLY")


def record(cls: type | None = None, /, *, init: bool = True, repr: bool = True,
           eq: bool = True, frozen: bool = False) -> Any:
    """Make cls a record (module docstring); used as `@record` or `@record(frozen=True)`."""
    def wrap(c: type) -> type:
        return _process(c, init, repr, eq, frozen)
    return wrap if cls is None else wrap(cls)


def _collect(cls: type) -> list[Field]:
    """cls's fields: its record bases' first, then its own annotations."""
    got: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        if "__record_fields__" in base.__dict__:
            for f in base.__dict__["__record_fields__"]:
                got[f.name] = f
        elif "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"record {cls.__name__}: a dataclass base is not supported")
    d = cls.__dict__
    ann = d.get("__annotations__", {})
    for name, typ in ann.items():
        if isinstance(typ, str) and typ.startswith(_UNSUPPORTED):
            raise TypeError(f"record {cls.__name__}.{name}: {typ} is not supported")
        v = d.get(name, MISSING)
        if isinstance(v, Field):
            f = v
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            f = Field(v)
        if f.default is not MISSING and type(f.default).__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not "
                             "allowed: use default_factory")
        f.name, f.type = name, typ
        got[name] = f
    for name, v in d.items():
        if isinstance(v, Field) and name not in ann:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return list(got.values())


def _qualify(cls: type, fn: Any) -> Any:
    fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
    return fn


def _make_repr(cls: type, names: tuple[str, ...]) -> Any:
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in running:
            return "..."                    # a record reached again inside its own repr
        running.add(key)
        try:
            shown = ", ".join([f"{n}={getattr(self, n)!r}" for n in names])
            return f"{self.__class__.__qualname__}({shown})"
        finally:
            running.discard(key)
    return _qualify(cls, __repr__)


def _make_frozen(cls: type, names: frozenset[str]) -> None:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise _frozen(name)
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise _frozen(name)
        super(cls, self).__delattr__(name)
    cls.__setattr__ = _qualify(cls, __setattr__)          # type: ignore[method-assign]
    cls.__delattr__ = _qualify(cls, __delattr__)          # type: ignore[method-assign]


def _methods_text(fs: list[Field], made: list[str], frozen: bool, post: bool) -> str:
    """The source of a record's generated methods (those in made) for its fields fs."""
    lines: list[str] = []
    if "__init__" in made:
        lines.append(f"def __init__(self{''.join(f', {f.name}' for f in fs)}):")
        for f in fs:
            value = f"_f_{f.name}() if {f.name} is _MISS else {f.name}" \
                if f.default_factory is not MISSING else f.name
            # frozen: object.__setattr__, as dataclasses does. Writing the instance dict is
            # faster here but makes every later read of the record a slower, dict-hinted
            # one (CPython 3.11 keeps a new object's values inline until its __dict__ is
            # asked for): +4% instructions over a compile of the tinygrad kernels
            lines.append(f" _setattr(self, {f.name!r}, {value})" if frozen
                         else f" self.{f.name} = {value}")
        if post:
            lines.append(" self.__post_init__()")
        elif not fs:
            lines.append(" pass")
    # __eq__ and __hash__ are generated code too: the hot records (registers, operands, types)
    # are compared and hashed in the compile's inner loops, where `self.a` is a specialized
    # attribute read and a generic getattr (operator.attrgetter) was 4% of a compile's time
    mine = "".join(f"self.{f.name}," for f in fs if f.compare)
    if "__eq__" in made:
        theirs = mine.replace("self.", "other.")
        lines += ["def __eq__(self, other):",
                  " if other.__class__ is self.__class__:",
                  f"  return ({mine})==({theirs})",
                  " return NotImplemented"]
    if "__hash__" in made:
        lines += ["def __hash__(self):", f" return hash(({mine}))"]
    return "\n".join(lines) + "\n"


def _process(cls: type, init: bool, repr: bool, eq: bool, frozen: bool) -> type:
    fs = _collect(cls)
    d = cls.__dict__
    names = [f.name for f in fs]
    class_hash = d.get("__hash__", MISSING)     # (read before __eq__ is added)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in d))
    ns: dict[str, Any] = {"_MISS": _HAS_FACTORY, "_setattr": object.__setattr__}
    made: list[str] = []
    defaults: list[Any] = []
    post = False
    if init and "__init__" not in d:
        seen_default = False
        for f in fs:
            if f.default is not MISSING or f.default_factory is not MISSING:
                seen_default = True
                if f.default_factory is not MISSING:
                    ns[f"_f_{f.name}"] = f.default_factory
                    defaults.append(_HAS_FACTORY)
                else:
                    defaults.append(f.default)
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        post = hasattr(cls, "__post_init__")
        made.append("__init__")
    if repr and "__repr__" not in d:
        cls.__repr__ = _make_repr(cls, tuple(f.name for f in fs if f.repr))  # type: ignore
    if eq and "__eq__" not in d:
        made.append("__eq__")
    if eq and frozen and not explicit_hash:
        made.append("__hash__")
    if frozen:
        for m in ("__setattr__", "__delattr__"):
            if m in d:
                raise TypeError(f"Cannot overwrite attribute {m} in class {cls.__name__}")
        _make_frozen(cls, frozenset(names))
    if made:
        # the methods' text depends only on this key: its code is looked up by the key (the
        # start-up code cache), the text made only when the key is new (~40% of a record's
        # processing was building it; issue 24, item 4)
        key = ("record", tuple(names), tuple(f.default_factory is not MISSING for f in fs),
               tuple(f.compare for f in fs), tuple(made), frozen, post)
        from kcc.startup import cached_keyed_code
        text = cached_keyed_code(key, lambda: _methods_text(fs, made, frozen, post))
        exec(text, ns)  # noqa: S102
        for m in made:
            fn = ns[m]
            fn.__qualname__ = f"{cls.__qualname__}.{m}"
            if m == "__init__":
                fn.__defaults__ = tuple(defaults) or None
            setattr(cls, m, fn)
    if eq and not frozen and not explicit_hash:
        cls.__hash__ = None                                 # type: ignore[assignment]
    cls.__record_fields__ = tuple(fs)                       # type: ignore[attr-defined]
    cls.__dataclass_fields__ = _DataclassFields(cls)        # type: ignore[attr-defined]
    if "__match_args__" not in d:
        cls.__match_args__ = tuple(names)                   # type: ignore[attr-defined]
    if cls.__doc__ is None:
        cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
    return cls


# -- named tuples and counts without the collections package ----------------------------------
#
# `collections` (with keyword, operator, reprlib: 7.3 M instructions, ~4% of a small compile's
# process; issue 24, item 4) was imported for three named tuples, Counter and defaultdict. Its
# C parts need no import of it: `_collections` is built into the interpreter.

from _collections import _count_elements, _tuplegetter  # noqa: E402
from _collections import defaultdict as defaultdict  # noqa: E402,F401  (collections' own)


class FieldTuple(tuple):
    """The base of a tuple class with named fields, what `collections.namedtuple` makes for
    the uses kcc has (field reads, repr, equality and hash as tuples, pickling, `_fields`,
    `_replace`, `_asdict`). A subclass sets `_fields`, a `__new__` taking the fields (with
    their defaults) and each field as `name = field_at(i)`; `__slots__ = ()` keeps it a
    plain tuple in memory."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(
            f"{n}={v!r}" for n, v in zip(self._fields, self)) + ")"

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    def _replace(self, **changes: Any) -> Any:
        new = type(self)(*map(changes.pop, self._fields, self))
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return new

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self))


def field_at(index: int, doc: str | None = None) -> Any:
    """The read-only attribute of a FieldTuple's field `index` (namedtuple's C getter)."""
    return _tuplegetter(index, doc or f"Alias for field number {index}")


class Counts(dict):
    """collections.Counter for what kcc asks of one: counts of an iterable's items in
    first-seen order (the same C counting loop), 0 for an item never seen (not stored), and
    `update(iterable)` adds more."""

    __slots__ = ()

    def __init__(self, iterable: Any = ()) -> None:
        _count_elements(self, iterable)

    def __missing__(self, key: Any) -> int:
        return 0

    def update(self, iterable: Any = (), /) -> None:  # type: ignore[override]
        _count_elements(self, iterable)
