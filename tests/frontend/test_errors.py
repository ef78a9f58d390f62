"""One test per error class of the .uop format (UOP_FORMAT.md, "Errors").

Each case states the line of the error and a marker: the expected column is where the marker
first occurs on that line, so every expectation is read off the source text itself.
"""

from __future__ import annotations

import pytest

from kcc.frontend.errors import SourceError
from kcc.frontend.parser import parse

H = "# kcc-uop 1\n"
# A valid kernel skeleton: out[i] = value, with %oi the place and %i the loop.
P = ("%o = PARAM ParamArg(0, float32, 4)\n"
     "%a = PARAM ParamArg(1, int32, 4)\n"
     "%i = RANGE(4) (0, LOOP)\n"
     "%oi = INDEX(%o, %i)\n")
E = '%e = END(%st, %i)\nSINK(%e) KernelInfo(name="k")\n'
ALOAD = "%ai = INDEX(%a, %i)\n%av = LOAD(%ai)\n"

# name: (text, line, marker on that line (None: column 1; an int: the column), message fragment)
CASES: dict[str, tuple[str | bytes, int, str | int | None, str]] = {
    "empty_file": ("", 1, None, "empty file"),
    "blank_file": ("\n  \n", 1, None, "empty file"),
    "bad_header": ("kcc-uop 1\n", 1, None, "bad header"),
    "bad_version": ("# kcc-uop 2\n", 1, "2", "unsupported .uop version '2'"),
    "unknown_op": (H + P + "%x = FOO(%i)\n", 6, "FOO", "unknown op 'FOO'"),
    "lower_case_op": (H + P + "%x = add(%i, 1)\n", 6, "add", "op names are upper case"),
    "wmma_operands": (H + "%w = WMMA(1, 2)\n", 2, ")", "WMMA takes exactly 3 src, got 2"),
    "unknown_dtype_cast": (H + P + "%x = CAST(%i) flaot32\n", 6, "flaot32",
                           "unknown dtype 'flaot32'"),
    "unknown_dtype_assert": (H + P + "%x = ADD(%i, 1) : flaot\n", 6, "flaot",
                             "unknown dtype 'flaot'"),
    "unknown_dtype_param": (H + "%o = PARAM ParamArg(0, f32, 4)\n", 2, "f32",
                            "unknown dtype 'f32'"),
    "used_before_defined": (H + P + "%st = STORE(%oi, %v)\n%v = CAST(1) float32\n" + E, 6,
                            "%v", "%v is used before it is defined (on line 7)"),
    "never_defined": (H + P + "%st = STORE(%oi, %nope)\n" + E, 6, "%nope",
                      "%nope is never defined"),
    "duplicate_name": (H + P + "%i = RANGE(8) (1, LOOP)\n", 6, "%i",
                       "%i is already defined on line 4"),
    "too_many_src": (H + P + "%st = STORE(%oi, 1.0, true, %i)\n" + E, 6, "%i)",
                     "STORE takes 2 to 3 src, got 4"),
    "too_few_src": (H + P + "%st = STORE(%oi)\n" + E, 6, ")", "STORE takes 2 to 3 src, got 1"),
    "no_src_at_all": (H + P + "%n = NEG\n", 6, "NEG", "NEG takes exactly 1 src, got 0"),
    "arg_wrong_form_cast": (H + P + "%x = CAST(%i) (1, 2)\n", 6, "(1, 2)",
                            "CAST takes a strong dtype"),
    "arg_wrong_form_range": (H + "%i = RANGE(4) 0\n", 2, "0", "RANGE takes (axis_id, AxisType)"),
    "arg_unknown_axis": (H + "%i = RANGE(4) (0, LOOOP)\n", 2, "LOOOP", "unknown axis type"),
    "arg_unknown_field": (H + "%o = PARAM ParamArg(0, float32, 4, sise=3)\n", 2, "sise",
                          "ParamArg has no field 'sise'"),
    "arg_missing_field": (H + "%o = PARAM ParamArg(0)\n", 2, "ParamArg",
                          "ParamArg needs its 'dtype' field"),
    "arg_missing": (H + "%o = PARAM\n", 2, "PARAM", "PARAM needs an arg"),
    "arg_not_taken": (H + P + "%n = NEG(%i) float32\n", 6, "float32", "NEG takes no arg"),
    "arg_positional_after_kw": (H + "%o = PARAM ParamArg(0, dtype=float32, 4)\n", 2, "4)",
                                "positional field after a keyword"),
    "arg_nested_too_deep": (H + "%i = RANGE(4) " + "(" * 100 + "\n", 2, 15 + 32,
                            "nested more than 32 levels"),
    "dtype_rule_mixed_add": (H + P + ALOAD + "%f = CAST(%av) float32\n%x = ADD(%av, %f)\n", 9,
                             "%f)", "operand dtypes int32 and float32 differ"),
    "dtype_rule_index_non_buffer": (H + P + ALOAD + "%q = INDEX(%av, %i)\n", 8, "%av",
                                    "INDEX needs a buffer or a vector value"),
    "dtype_rule_float_literal_int": (H + P + ALOAD + "%x = ADD(%av, 1.5)\n", 8, "1.5",
                                     "float literal cannot combine with int32"),
    "type_assertion_mismatch": (H + P + "%j = ADD(%i, 1)    : int32\n", 6, "int32",
                                "type assertion int32 disagrees with the derived type weakint"),
    "type_assertion_shape": (H + P + "%j = ADD(%i, 1)    : weakint[4]\n", 6, "weakint",
                             "disagrees"),
    "type_assertion_on_void": (H + P + "%st = STORE(%oi, 1.0) : float32\n" + E, 6, "float32",
                               "derived type void"),
    "const_range_beside_uint8": (H + "%o = PARAM ParamArg(0, uint8, 4)\n%z = INDEX(%o, 0)\n"
                                 "%v = LOAD(%z)\n%x = ADD(%v, 300)\n", 5, "300",
                                 "constant 300 is out of range for uint8 [0, 255]"),
    "const_range_beside_strong": (H + P + ALOAD + "%x = ADD(%av, 3000000000)\n", 8,
                                  "3000000000", "out of range for int32"),
    "const_range_store": (H + P + "%st = STORE(%oi, 1e39)\n" + E, 6, "1e39",
                          "out of range for float32"),
    "const_range_vmin_vmax": (H + "%n = PARAM ParamArg(0, uint8, vmin_vmax=(0, 256), "
                              "addrspace=ALU)\n", 2, "(0, 256)",
                              "vmin_vmax: constant 256 is out of range for uint8"),
    "const_range_every_dtype": (H + P + "%c = ADD(%i, 99999999999999999999999)\n", 6,
                                "999", "out of range of every dtype"),
    "range_bound_float": (H + "%i = RANGE(4.0) (0, LOOP)\n", 2, "4.0",
                          "a RANGE bound must be a scalar integer"),
    "range_bound_loaded": (H + "%o = PARAM ParamArg(0, int32, 4)\n%z = INDEX(%o, 0)\n"
                           "%n = LOAD(%z)\n%i = RANGE(%n) (0, LOOP)\n%oi = INDEX(%o, %i)\n"
                           "%st = STORE(%oi, 1)\n" + E, 5, "%n",
                           "a RANGE bound is built only from constants and scalar integer"),
    "special_bound_loaded": (H + "%o = PARAM ParamArg(0, int32, 4)\n%z = INDEX(%o, 0)\n"
                             '%n = LOAD(%z)\n%g = SPECIAL(%n) "gidx0"\n%oi = INDEX(%o, %g)\n'
                             "%st = STORE(%oi, 1)\nSINK(%st) KernelInfo(name=\"k\")\n", 5,
                             "%n", "SPECIAL bound"),
    "sink_missing": (H + P + "%st = STORE(%oi, 1.0)\n%e = END(%st, %i)\n", 7, None, "no SINK"),
    "sink_not_last": (H + P + "%st = STORE(%oi, 1.0)\n" + E + "%z = ADD(%i, 1)\n", 9, None,
                      "statement after the SINK"),
    "unused_node": (H + P + "%z = ADD(%i, 1)\n%st = STORE(%oi, 1.0)\n" + E, 6, None,
                    "%z is never used"),
    "unused_duplicate_line": (H + P + "%oi2 = INDEX(%o, %i)\n%st = STORE(%oi, 1.0)\n" + E, 6,
                              None, "%oi2 is never used (it is the same node as %oi, line 5)"),
    "unused_unnamed_line": (H + P + "ADD(%i, 1)\n%st = STORE(%oi, 1.0)\n" + E, 6, None,
                            "this ADD is never used"),
    "not_utf8": (b"# kcc-uop 1\n%a = \xff\n", 2, "\ufffd", "not UTF-8 text (byte 0xff"),
    "unexpected_char": (H + P + "%x = ADD(%i, @)\n", 6, "@", "unexpected character '@'"),
    # a %name of a non-ASCII letter: the letter is named, not the '%' before it
    "non_ascii_ref_definition": (H + "%äx = PARAM ParamArg(0, float32, 4)\n", 2, "ä",
                                 "character 'ä' cannot be in a %name"),
    "non_ascii_ref_use": (H + P + "%x = ADD(%i, %é)\n", 6, "é",
                          "character 'é' cannot be in a %name"),
    "bare_percent": (H + P + "%x = ADD(%i, % )\n", 6, "% ", "a % needs a name after it"),
    "non_ascii_word": (H + P + "%x = ADD(%i, ñ)\n", 6, "ñ", "character 'ñ' cannot be in a name"),
    "malformed_number": (H + P + "%x = ADD(%i, 12abc)\n", 6, "12abc", "malformed number"),
    "unterminated_string": (H + '%g = SPECIAL(4) "gidx0\n', 2, '"', "unterminated string"),
    "float_overflow_literal": (H + P + "%x = CAST(1e400) float64\n", 6, "1e400",
                               "overflows float64"),
    "param_slot_duplicate": (H + "%o = PARAM ParamArg(0, float32, 4)\n"
                             "%p = PARAM ParamArg(0, int32, 4)\n", 3, "ParamArg",
                             "PARAM slot 0 is already declared by %o on line 2"),
    "param_slot_gap": (H + "%o = PARAM ParamArg(0, float32, 4)\n%p = PARAM ParamArg(2, "
                       "float32, 4)\n%i = RANGE(4) (0, LOOP)\n%oi = INDEX(%o, %i)\n"
                       "%st = STORE(%oi, 1.0)\n" + E, 3, "PARAM", "slot 1 is missing"),
    "buffer_slot_duplicate": (H + "%b = BUFFER ParamArg(0, float32, 4, addrspace=REG)\n"
                              "%c = BUFFER ParamArg(0, int32, 4, addrspace=REG)\n", 3,
                              "ParamArg", "BUFFER slot 0 is already declared by %b"),
    "range_not_closed": (H + P + "%st = STORE(%oi, 1.0)\nSINK(%st) KernelInfo(name=\"k\")\n", 4,
                         "RANGE", "this RANGE is never closed by an END"),
    "range_closed_twice": (H + P + "%st = STORE(%oi, 1.0)\n%e1 = END(%st, %i)\n"
                           "%e2 = END(%e1, %i)\nSINK(%e2) KernelInfo(name=\"k\")\n", 8, "%i",
                           "closed by more than one END (%i, line 4)"),
    "loop_scoping": (H + P + "%st = STORE(%oi, 1.0)\n%e = END(%st, %i)\n"
                     "%st2 = STORE(%oi, 2.0)\n%g = GROUP(%e, %st2)\n"
                     "SINK(%g) KernelInfo(name=\"k\")\n", 9, "GROUP",
                     "both inside its loop and after the END that closes it (%i, line 4)"),
    "special_two_bounds": (H + "%o = PARAM ParamArg(0, float32, 64)\n%g = SPECIAL(8) \"gidx0\"\n"
                           "%h = SPECIAL(4) \"gidx0\"\n%x = ADD(%g, %h)\n%oi = INDEX(%o, %x)\n"
                           "%st = STORE(%oi, 1.0)\nSINK(%st) KernelInfo(name=\"k\")\n", 4, "4",
                           "SPECIAL 'gidx0' has bound 4 here but 8 elsewhere (%g, line 3)"),
    "sink_value_src": (H + P + "%st = STORE(%oi, 1.0)\n%e = END(%st, %i)\n%v = ADD(1, 2)\n"
                       "SINK(%e, %v) KernelInfo(name=\"k\")\n", 9, "%v",
                       "the SINK's srcs are effects; this ADD value is never used"),
    "kernel_name": (H + "%o = PARAM ParamArg(0, float32, 4)\n%z = INDEX(%o, 0)\n"
                    "%st = STORE(%z, 1.0)\nSINK(%st) KernelInfo(name=\"1k\")\n", 5, "KernelInfo",
                    "not a C identifier"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_class(name: str) -> None:
    text, line, marker, fragment = CASES[name]
    with pytest.raises(SourceError) as info:
        parse(text, "t.uop")
    e = info.value
    src_lines = (text.decode("utf-8", "replace") if isinstance(text, bytes) else text).split("\n")
    col = marker if isinstance(marker, int) else 1 if marker is None else \
        src_lines[line - 1].index(marker) + 1
    assert (e.line, e.col) == (line, col), e.render()
    assert fragment in e.message
    rendered = e.render().split("\n")
    assert rendered[0] == f"t.uop:{line}:{col}: error: {e.message}"
    # the caret sits under the column of the shown source line
    assert len(rendered) == 3 and rendered[2] == " " * (col - 1) + "^"


def test_caret_keeps_tabs_and_windows_long_lines() -> None:
    text = H + "%o = PARAM ParamArg(0, float32, 4)\n\t%x =\tFOO(%o)\n"
    e = _err(text)
    assert (e.line, e.col) == (3, 7)
    assert e.render().split("\n")[2] == "\t    \t^"
    long = H + "%o = PARAM ParamArg(0, float32, 4)\n%x = ADD(" + "1, " * 400_000 + "@)\n"
    e = _err(long)
    assert e.line == 3 and "ADD takes exactly 2 src, got 3" in e.message
    shown, caret = e.render().split("\n")[1:]
    assert len(shown) < 200 and shown[caret.index("^")] == "1"


def test_huge_inputs_are_refused_cleanly() -> None:
    # a 1 MB line of garbage, 10**6 nested parentheses, a 1 MB number, a 1 MB name
    assert _err(H + "@" * 1_000_000 + "\n").col == 1
    assert "nested more than" in _err(H + "%i = RANGE(4) " + "(" * 1_000_000 + "\n").message
    assert "out of range of every dtype" in _err(H + "%c = CONST " + "9" * 1_000_000).message
    e = _err(H + "%" + "a" * 1_000_000 + " = CONST 1\n%o = PARAM ParamArg(0, float32, 4)\n"
             "%z = INDEX(%o, 0)\n%st = STORE(%z, 1.0)\nSINK(%st) KernelInfo(name=\"k\")\n")
    assert "never used" in e.message and len(e.render()) < 1000


def _err(text: str | bytes) -> SourceError:
    with pytest.raises(SourceError) as info:
        parse(text, "t.uop")
    return info.value
