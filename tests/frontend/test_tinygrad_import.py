"""The importer of tinygrad's linearized programs (kcc/frontend/tinygrad_import.py), on node
lists written by hand: it needs no tinygrad. Oracle: kcc's verifier accepts the text and the
reference interpreter computes what the program means."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.frontend.tinygrad_import import TgNode, TgParam, TinygradImportError, import_program
from kcc.ir.interp import run


class Prog:
    """Builds a node list; add() returns a node's position."""

    def __init__(self) -> None:
        self.nodes: list[TgNode] = []

    def add(self, op: str, dtype: str | None, arg=None, *src: int) -> int:
        self.nodes.append(TgNode(op, dtype, arg, tuple(src)))
        return len(self.nodes) - 1

    def const(self, v, dt: str = "int32") -> int:
        c = self.add("CONST", "weakfloat" if isinstance(v, float) else "weakint", v)
        return self.add("CAST", dt, dt, c)


def gated_scale() -> Prog:
    """out[i] = 2*x[i] for i < n (gated by IF/ENDIF), split over core_id; n a Variable;
    the SINK lists its source twice, as tinygrad does."""
    p = Prog()
    eight = p.const(8)
    out = p.add("PARAM", "float32", TgParam(0, "float32", 8), eight)
    x = p.add("PARAM", "float32", TgParam(1, "float32", 8), eight)
    n = p.add("PARAM", "int32", TgParam(2, "int32", None, "ALU", (0, 8), "n"))
    core = p.add("PARAM", "int32", TgParam(3, "int32", None, "ALU", (0, 1), "core_id"))
    four = p.const(4)
    r = p.add("RANGE", "int32", (0, "LOOP"), four)
    base = p.add("MUL", "int32", None, core, four)
    i = p.add("ADD", "int32", None, base, r)
    v = p.add("LOAD", "float32", None, p.add("INDEX", "float32", None, x, i))
    two = p.const(2.0, "float32")
    y = p.add("MUL", "float32", None, v, two)
    place = p.add("INDEX", "float32", None, out, i)
    gate = p.add("CMPLT", "bool", None, i, n)
    iff = p.add("IF", None, None, gate, place)
    st = p.add("STORE", None, None, place, y)
    p.add("ENDIF", None, None, iff)
    e = p.add("END", None, None, st, r)
    p.add("SINK", None, None, e, e)
    return p


def test_gated_store_threads_variable_and_repeated_sink() -> None:
    k = import_program(gated_scale().nodes, "E_gated")
    assert k.workers == 2 and k.worker_slot == 3 and k.slots == [0, 1, 2]
    assert "IF" not in k.text and "ENDIF" not in k.text
    assert 'SPECIAL(%' in k.text and '"gidx0"' in k.text
    assert "CAST(2.0) float32" in k.text and "CAST(4) int32" in k.text
    sink = parse(k.text, "E_gated.uop")
    x = np.arange(8, dtype=np.float32)
    out = np.full(8, -1.0, np.float32)
    res = run(sink, [out, x, np.int32(5)])
    np.testing.assert_array_equal(res[0], [0, 2, 4, 6, 8, -1, -1, -1])


def test_uint8_load_of_a_bool_buffer_reads_its_byte() -> None:
    """tinygrad's PTX renderer loads a bool buffer as uint8 and compares with 0 (its any()
    lowering in a LOCAL reduction); `.uop`'s LOAD has the place's dtype, so the importer
    loads the bool and CASTs it (before: 'operand dtypes bool and uint8 differ')."""
    p = Prog()
    four = p.const(4)
    out = p.add("PARAM", "bool", TgParam(0, "bool", 4), four)
    x = p.add("PARAM", "bool", TgParam(1, "bool", 4), four)
    r = p.add("RANGE", "int32", (0, "LOOP"), four)
    v = p.add("LOAD", "uint8", None, p.add("INDEX", "bool", None, x, r))
    nz = p.add("CMPNE", "bool", None, v, p.const(0, "uint8"))
    st = p.add("STORE", None, None, p.add("INDEX", "bool", None, out, r), nz)
    p.add("SINK", None, None, p.add("END", None, None, st, r))
    k = import_program(p.nodes, "E_any")
    x_in = np.array([True, False, True, False])
    res = run(parse(k.text, "E_any.uop"), [np.zeros(4, bool), x_in])
    np.testing.assert_array_equal(res[0], x_in)


def test_a_load_of_another_width_than_its_buffer_is_refused() -> None:
    p = Prog()
    four = p.const(4)
    out = p.add("PARAM", "int32", TgParam(0, "int32", 4), four)
    x = p.add("PARAM", "float32", TgParam(1, "float32", 4), four)
    v = p.add("LOAD", "float16", None, p.add("INDEX", "float32", None, x, p.const(0)))
    st = p.add("STORE", None, None, p.add("INDEX", "int32", None, out, p.const(0)),
               p.add("CAST", "int32", "int32", v))
    p.add("SINK", None, None, st)
    with pytest.raises(TinygradImportError, match="float16 LOAD of a float32 buffer"):
        import_program(p.nodes, "E_bad")


def test_unused_shape_constants_are_not_written() -> None:
    p = gated_scale()
    p.nodes.insert(len(p.nodes) - 1, TgNode("STACK", None, None, ()))   # a PARAM's shape
    k = import_program(p.nodes, "E_gated")
    parse(k.text)
    assert "STACK" not in k.text


def test_slots_are_dense_buffers_first() -> None:
    p = Prog()
    four = p.const(4)
    n = p.add("PARAM", "int32", TgParam(0, "int32", None, "ALU", (1, 4), "n"))
    out = p.add("PARAM", "int32", TgParam(5, "int32", 4), four)
    st = p.add("STORE", None, None, p.add("INDEX", "int32", None, out, p.const(0)), n)
    p.add("SINK", None, None, st)
    k = import_program(p.nodes, "E_slots")
    assert k.slots == [5, 0]
    assert "ParamArg(0, int32, 4)" in k.text and "ParamArg(1, int32" in k.text


def _replace(op: str, new: TgNode):
    def mutate(ns: list[TgNode]) -> None:
        i = next(i for i, n in enumerate(ns) if n.op == op)
        ns[i] = TgNode(new.op, new.dtype, new.arg, new.src or ns[i].src)
    return mutate


@pytest.mark.parametrize("mutate, message", [
    (_replace("MUL", TgNode("CUSTOM", "float32", "x")),
     r"node \d+ \(CUSTOM\).*CUSTOM \(inline C source.*'x'\) has no"),
    (_replace("ENDIF", TgNode("NOOP", None, None)), "END inside an IF block"),
    (_replace("END", TgNode("ENDIF", None, None)), "ENDIF without its IF"),
    (lambda ns: ns.append(TgNode("SINK", None, None, ())), "one SINK"),
])
def test_unimportable_programs_name_the_construct(mutate, message: str) -> None:
    p = gated_scale()
    mutate(p.nodes)
    with pytest.raises(TinygradImportError, match=message):
        import_program(p.nodes, "E_gated")


def test_kernel_name_must_be_a_c_identifier() -> None:
    with pytest.raises(TinygradImportError, match="not a C identifier"):
        import_program(gated_scale().nodes, "E\x1b[90m_2")


def test_pytest_plugin_is_harmless_without_tinygrad(tmp_path) -> None:
    """The pytest11 entry point loads in every session of an environment with kcc: without
    tinygrad (here: a stand-in package that fails to import) it must import cleanly."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    fake = tmp_path / "tinygrad"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('tinygrad is not installed')\n")
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", "import kcc.pytest_plugin; print('loaded')"],
                       capture_output=True, text=True,
                       env={"PATH": os.environ.get("PATH", ""), "DEV": "CPU:KCC",
                            "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}"})
    assert r.returncode == 0 and r.stdout.strip() == "loaded", r.stderr
