"""JSON text as the json module writes and reads it, without importing json at start-up.

`import json` costs a `kcc compile` process its decoder's and scanner's regular expressions
(re's parser and compiler run at import: with re itself ~14 M instructions, ~3% of a small
compile; issue 24, item 4), to write one manifest and the launch facts. The writer here gives
json.dumps's bytes for what kcc writes (dicts, lists, tuples, str, int, float, bool, None):
`dumps(o, indent=2)` is `json.dumps(o, indent=2)` and `dumps(o, sort_keys=True)` is
`json.dumps(o, separators=(",", ":"), sort_keys=True)` (json's C encoder itself, from
`_json`, as json.dumps uses it for compact text); strings go through the same C
escaping json uses (`_json.encode_basestring_ascii`, ensure_ascii), numbers through int's and
float's repr with json's NaN/Infinity. `loads` is json.loads's C scanner with json's default
decoder settings (tests/targets/test_jsontext.py holds both to the json module).
"""

from __future__ import annotations

from _json import encode_basestring_ascii as _quote
from _json import make_encoder as _make_encoder
from _json import make_scanner as _make_scanner

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_INF = float("inf")


def _float(o: float) -> str:
    # json.encoder's floatstr with allow_nan (its default)
    if o != o:
        return "NaN"
    if o == _INF:
        return "Infinity"
    if o == -_INF:
        return "-Infinity"
    return float.__repr__(o)


def _key(k: Any) -> str:
    # json's dict keys: str as is, the other scalars as their JSON text, quoted
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def dumps(o: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    """json.dumps(o, indent=indent) where indent is given (separators "," and ": "), else
    json.dumps(o, separators=(",", ":")); keys sorted with sort_keys."""
    if indent is None:
        # json's own C encoder, as json.dumps builds it for these settings (its markers
        # None: no check for a circular container, which kcc never writes): the launch
        # facts of every compiled object are written this way, ~2.5x faster than _write
        enc = _compact[sort_keys]
        if enc is None:
            enc = _compact[sort_keys] = _make_encoder(None, _default, _quote, None, ":", ",",
                                                      sort_keys, False, True)
        return "".join(enc(o, 0))
    out: list[str] = []
    _write(o, out, " " * indent, "", sort_keys)
    return "".join(out)


_compact: dict[bool, Any] = {False: None, True: None}    # the C encoders, made when first used


def _default(o: Any) -> Any:
    # json.JSONEncoder.default's refusal
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _write(o: Any, out: list[str], step: str, pad: str, sort_keys: bool) -> None:
    """json.dumps's indented text of o (each level indented by step past pad, ": " between
    a key and its value); compact text is json's C encoder's (`dumps`)."""
    # the order of json.encoder's checks: str, None, True, False, int, float, list/tuple, dict
    if isinstance(o, str):
        out.append(_quote(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif isinstance(o, int):
        out.append(int.__repr__(o))
    elif isinstance(o, float):
        out.append(_float(o))
    elif isinstance(o, (list, tuple)):
        if not o:
            out.append("[]")
            return
        inner = pad + step
        out.append("[\n" + inner)
        for i, v in enumerate(o):
            if i:
                out.append(",\n" + inner)
            _write(v, out, step, inner, sort_keys)
        out.append("\n" + pad + "]")
    elif isinstance(o, dict):
        if not o:
            out.append("{}")
            return
        inner = pad + step
        out.append("{\n" + inner)
        items = sorted(o.items()) if sort_keys else o.items()
        for i, (k, v) in enumerate(items):
            if i:
                out.append(",\n" + inner)
            out.append(_quote(_key(k)))
            out.append(": ")
            _write(v, out, step, inner, sort_keys)
        out.append("\n" + pad + "}")
    else:
        _default(o)


class _Decoder:
    """The settings json.loads's default decoder hands its C scanner."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": -_INF, "Infinity": _INF, "NaN": float("nan")}.__getitem__


_scan = None
_SPACE = " \t\n\r"


def loads(text: str) -> Any:
    """json.loads(text) for a str; a ValueError (json's JSONDecodeError is one) where json
    raises one."""
    global _scan
    if _scan is None:
        _scan = _make_scanner(_Decoder())
    if text.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        obj, end = _scan(text, start)
    except StopIteration as e:
        raise ValueError(f"Expecting value: char {e.value}") from None
    if text[end:].lstrip(_SPACE):
        raise ValueError(f"Extra data: char {end}")
    return obj
