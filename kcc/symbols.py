"""Enumerations without the `enum` module: `Symbols` and `FlagSymbols` classes, what kcc's five
enumerations (Ops, AddrSpace, AxisType, the MIR's Kind and Role) ask of `enum.Enum` and
`enum.Flag`.

Why not enum: a `kcc compile saxpy.uop` process spent ~15 M of its 157 M instructions on
`import enum` (with functools and collections, which only enum imported) and on EnumType
building the five classes (issue 24, item 4); and on CPython 3.11 reading a member as a class
attribute (`Ops.ADD`) goes through EnumType's `__getattr__` hook, ~4x a plain class's dict
read (kcc.ir.ops once had a second, plain class of the same members for that alone).

What a member is, as an Enum member is (CPython 3.11): an instance of its class, made once when
the class is (`type(Ops.ADD) is Ops`, `isinstance`), with `name` and `value` (and `_name_`,
`_value_`); equal only to itself, hashed by identity (kcc's enumerations all set that, a C
call); truthy; `repr` `<Cls.NAME: value>`, `str` and `format` `Cls.NAME`; copied and
deep-copied as itself; pickled as `Cls(value)`. The class: members in definition order by
iteration, `len`, `Cls[name]`, `Cls(value)` (a member gives itself; ValueError otherwise),
`x in Cls` for a member, `__members__` (a read-only name → member mapping); `auto()` numbers
1, 2, … as Enum's does. A name starting with `_`, a descriptor or a function in the body is
not a member. A flag class (`FlagSymbols`) also makes a member of each combination its
values' `|`, `&`, `^` and `~` give (made once, then the same object: `is` compares them; name
`DEF|USE`, the canonical names in definition order; 0 is falsy).
"""

from __future__ import annotations

MappingProxyType = type(type.__dict__)  # types.MappingProxyType (no types module: start-up)
TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Iterator


class auto:
    """A member's value: the one after the member before it (the first: 1), as `enum.auto`."""

    __slots__ = ()


# the values that are members without asking whether they are methods or descriptors (kcc's)
_PLAIN = frozenset({int, str, auto})


class SymbolsType(type):
    """The metaclass of Symbols: turns the body's plain values into members, and answers the
    class-level questions (iteration, length, `Cls[name]`, `Cls(value)`, `__members__`)."""

    def __new__(mcls, name: str, bases: tuple, ns: dict[str, Any]) -> SymbolsType:
        values: list[tuple[str, Any]] = []
        last = 0
        for k, v in list(ns.items()):
            if k[:1] == "_" or (type(v) not in _PLAIN and (callable(v) or hasattr(v, "__get__"))):
                continue
            if isinstance(v, auto):
                v = last + 1
            if isinstance(v, int):
                last = v
            values.append((k, v))
            del ns[k]
        ns.setdefault("__slots__", ())
        if "__hash__" not in ns:
            ns["__hash__"] = object.__hash__
        cls = super().__new__(mcls, name, bases, ns)
        cls._member_map_ = {}                   # name → member
        cls._value2member_map_ = {}             # value → member (canonical ones)
        cls._member_names_ = []
        for k, v in values:
            m = cls._value2member_map_.get(v)
            if m is None:                       # a repeated value names the same member
                m = object.__new__(cls)
                _set_name(m, k)                 # (the slots' own setters: members are
                _set_value(m, v)                # immutable through __setattr__)
                cls._value2member_map_[v] = m
                cls._member_names_.append(k)
            cls._member_map_[k] = m
            type.__setattr__(cls, k, m)
        return cls

    def __iter__(cls) -> Iterator[Any]:
        return (cls._member_map_[k] for k in cls._member_names_)

    def __reversed__(cls) -> Iterator[Any]:
        return (cls._member_map_[k] for k in reversed(cls._member_names_))

    def __len__(cls) -> int:
        return len(cls._member_names_)

    def __contains__(cls, x: object) -> bool:
        return isinstance(x, cls) and x.name in cls._member_map_

    def __getitem__(cls, name: str) -> Any:
        return cls._member_map_[name]

    def __call__(cls, value: Any) -> Any:
        if isinstance(value, cls):
            return value
        try:
            return cls._value2member_map_[value]
        except (KeyError, TypeError):
            got = cls._missing_(value)
            if got is None:
                raise ValueError(f"{value!r} is not a valid {cls.__qualname__}") from None
            return got

    def __setattr__(cls, name: str, value: Any) -> None:
        if name in cls.__dict__.get("_member_map_", ()):
            raise AttributeError(f"cannot reassign member {name!r}")
        super().__setattr__(name, value)

    def __delattr__(cls, name: str) -> None:
        if name in cls.__dict__.get("_member_map_", ()):
            raise AttributeError(f"cannot delete member {name!r}")
        super().__delattr__(name)

    def __repr__(cls) -> str:
        kind = "flag" if "__invert__" in dir(cls) else "enum"
        return f"<{kind} {cls.__name__!r}>"

    def __bool__(cls) -> bool:
        return True

    @property
    def __members__(cls) -> MappingProxyType:
        return MappingProxyType(cls._member_map_)


class Symbols(metaclass=SymbolsType):
    """The base of an enumeration: each plain value of a subclass's body is a member."""

    __slots__ = ("name", "value")

    @classmethod
    def _missing_(cls, value: Any) -> Any:
        return None

    @property
    def _name_(self) -> str:
        return self.name

    @property
    def _value_(self) -> Any:
        return self.value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot set {name!r} of {self!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete {name!r} of {self!r}")

    def __repr__(self) -> str:
        if self.name is None:                   # a flag's 0
            return f"<{type(self).__name__}: {self.value!r}>"
        return f"<{type(self).__name__}.{self.name}: {self.value!r}>"

    def __str__(self) -> str:
        if self.name is None:
            return f"{type(self).__name__}({self.value!r})"
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __reduce_ex__(self, protocol: int) -> tuple:
        return type(self), (self.value,)

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self


_set_name = Symbols.__dict__["name"].__set__
_set_value = Symbols.__dict__["value"].__set__


class FlagSymbols(Symbols):
    """The base of a flag enumeration (int values): `|`, `&`, `^`, `~` of members give the
    member of the result (made on first use for a combination), `a in b` asks whether b has
    every bit of a, and the member of 0 is falsy."""

    __slots__ = ()

    @classmethod
    def _missing_(cls, value: Any) -> Any:
        if not isinstance(value, int) or value < 0 or value & ~cls._all_bits():
            return None
        names = [m.name for m in cls if m.value and m.value & value == m.value
                 and m.value & (m.value - 1) == 0]
        m = object.__new__(cls)
        _set_name(m, "|".join(names) if names else None)
        _set_value(m, value)
        return cls._value2member_map_.setdefault(value, m)

    @classmethod
    def _all_bits(cls) -> int:
        bits = 0
        for m in cls:
            bits |= m.value
        return bits

    def __or__(self, other: Any) -> Any:
        if type(other) is not type(self):
            return NotImplemented
        return type(self)(self.value | other.value)

    def __and__(self, other: Any) -> Any:
        if type(other) is not type(self):
            return NotImplemented
        return type(self)(self.value & other.value)

    def __xor__(self, other: Any) -> Any:
        if type(other) is not type(self):
            return NotImplemented
        return type(self)(self.value ^ other.value)

    __ror__, __rand__, __rxor__ = __or__, __and__, __xor__

    def __invert__(self) -> Any:
        return type(self)(self._all_bits() & ~self.value)

    def __contains__(self, other: Any) -> bool:
        if type(other) is not type(self):
            raise TypeError(f"unsupported operand type(s) for 'in': "
                            f"{type(other).__qualname__!r} and {type(self).__qualname__!r}")
        return other.value & self.value == other.value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __iter__(self) -> Iterator[Any]:
        return (m for m in type(self) if m.value & (m.value - 1) == 0 and m.value
                and m.value & self.value == m.value)

    def __len__(self) -> int:
        return bin(self.value).count("1")
