"""kcc/targets/jsontext.py writes and reads JSON text as the json module does (json is the
oracle): manifests (indent=2) and launch facts (compact, sorted keys), byte for byte."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcc.targets import jsontext

_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
_KEYS = st.text(max_size=8) | st.integers(-5, 5) | st.floats(allow_nan=False) | st.booleans() \
    | st.none()
_VALUES = st.recursive(_SCALARS, lambda kids: st.lists(kids, max_size=4)
                       | st.tuples(kids, kids) | st.dictionaries(_KEYS, kids, max_size=4),
                       max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_dumps_is_json_dumps(value: object) -> None:
    assert jsontext.dumps(value, indent=2) == json.dumps(value, indent=2)
    assert jsontext.dumps(value, indent=4) == json.dumps(value, indent=4)
    assert jsontext.dumps(value) == json.dumps(value, separators=(",", ":"))
    try:
        want = json.dumps(value, separators=(",", ":"), sort_keys=True)
    except TypeError:                   # keys of mixed types cannot be sorted
        with pytest.raises(TypeError):
            jsontext.dumps(value, sort_keys=True)
    else:
        assert jsontext.dumps(value, sort_keys=True) == want


def test_dumps_of_a_manifest_like_document() -> None:
    doc = {"format": "kcc-manifest", "version": 1, "kernels": [
        {"name": "k\u00e9\n\"", "args": [{"slot": 0, "range": None, "dtype": "float32"}],
         "global": [1, 1, 1], "local": [], "target": {}, "f": -0.0, "big": 1 << 64,
         "t": True, "inf": math.inf}]}
    assert jsontext.dumps(doc, indent=2) + "\n" == json.dumps(doc, indent=2) + "\n"
    assert jsontext.dumps([doc], sort_keys=True) == json.dumps(
        [doc], separators=(",", ":"), sort_keys=True)


def test_dumps_refuses_what_json_refuses() -> None:
    for bad in ({1, 2}, object(), {(1, 2): 3}, b"x"):
        with pytest.raises(TypeError):
            json.dumps(bad)
        with pytest.raises(TypeError):
            jsontext.dumps(bad, indent=2)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.sampled_from(["", " ", "\n\t\r "]))
def test_loads_is_json_loads(value: object, space: str) -> None:
    text = space + json.dumps(value, indent=2) + space
    want = json.loads(text)
    got = jsontext.loads(text)
    assert json.dumps(got) == json.dumps(want)      # (NaN != NaN: compare the texts)


@pytest.mark.parametrize("text", ["", " ", "{", "[1,]", "1 2", "\ufeff{}", "{'a': 1}", "nul",
                                  "[1] x", "\"\\x\"", "[" * 10 + "]" * 9])
def test_loads_refuses_what_json_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        jsontext.loads(text)


@pytest.mark.parametrize("text", ["NaN", "[-Infinity, Infinity]", "{\"a\": [1, 2.5e3, true]}",
                                  " \"\\u00e9\" ", "{\"a\": 1, \"a\": 2}", "1e400"])
def test_loads_odd_but_valid_text(text: str) -> None:
    assert json.dumps(jsontext.loads(text)) == json.dumps(json.loads(text))
