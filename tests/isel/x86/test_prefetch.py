"""Software prefetches ahead of a row reduction's streams (kcc/isel/x86/prefetch.py, `--prefetch`).

What is checked: which LOADs the rule picks and refuses (8 or more forward streams in an
innermost loop that stores to no GLOBAL buffer; the footprint against PREFETCH_MIN_BYTES under
`auto`), and how far ahead (512 bytes in rows over a page, the next group of rows otherwise);
that the object holds one PREFETCHT0 per picked load at the load's own address plus
PREFETCH_AHEAD (read back by capstone: kcc disasm); results against the reference interpreter
with prefetches on (they change no value, and one past a buffer's end does not fault). The
encoding is llvm-mc's (golden/x86/gpr.s; tests/encode/x86 decodes it with capstone).
"""

from __future__ import annotations

import re

import pytest

from kcc.frontend.parser import parse
from kcc.isel.x86.prefetch import (PREFETCH_AHEAD, PREFETCH_MIN_BYTES, PREFETCH_MIN_STREAMS,
                                   prefetched_loads)
from kcc.targets.x86.target import compile_x86, disasm_object
from test_streaming import schedule, vadd
from x86_util import assert_same, compile_and_run, random_inputs, reference

PREFETCH = re.compile(r"prefetcht0 byte ptr \[(\w+) \+ (\w+)\*4(?: \+ (0x[0-9a-f]+))?\]")
LOAD = re.compile(r"vmovups xmm\d+, xmmword ptr \[(\w+) \+ (\w+)\*4(?: \+ (0x[0-9a-f]+))?\]")


def rowsum(rows: int, steps: int, cols: int) -> str:
    """out[r] = sum of row r of an (rows·steps) × cols float32 matrix, `rows` rows a step of
    the outer loop (each row's 4-lane loads its own stream), as tinygrad writes a row sum: a
    REG accumulator per row, added to in k order, four lanes at a time."""
    n_rows = rows * steps
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {n_rows})",
             f"%x = PARAM ParamArg(1, float32, {n_rows * cols})",
             f"%acc = BUFFER ParamArg(0, float32, {rows}, addrspace=REG)",
             "%zero = CAST(0.0) float32",
             f"%r = RANGE({steps}) (1, LOOP)", "%a0 = AFTER(%acc, %r)"]
    for j in range(rows):
        lines += [f"%i{j} = INDEX(%a0, {j})", f"%s{j} = STORE(%i{j}, %zero)"]
    inits = ", ".join(f"%s{j}" for j in range(rows))
    lines += [f"%k = RANGE({cols // 4}, %r) (0, REDUCE)", f"%a1 = AFTER(%acc, {inits}, %k)",
              f"%rb = MUL(%r, {rows * cols})", "%kk = MUL(%k, 4)", "%base = ADD(%rb, %kk)"]
    for j in range(rows):
        lines += [f"%o{j} = ADD(%base, {j * cols})", f"%p{j} = SHRINK(%x, %o{j}, 4)",
                  f"%v{j} = LOAD(%p{j})"]
        lines += [f"%e{j}_{q} = INDEX(%v{j}, {q})" for q in range(4)]
        lines += [f"%t{j}a = ADD(%e{j}_0, %e{j}_1)", f"%t{j}b = ADD(%t{j}a, %e{j}_2)",
                  f"%t{j} = ADD(%t{j}b, %e{j}_3)", f"%c{j} = INDEX(%a1, {j})",
                  f"%l{j} = LOAD(%c{j})", f"%n{j} = ADD(%l{j}, %t{j})",
                  f"%w{j} = STORE(%c{j}, %n{j})"]
    stores = ", ".join(f"%w{j}" for j in range(rows))
    lines += [f"%g = GROUP({stores})", "%end = END(%g, %k)", "%a2 = AFTER(%acc, %end)",
              f"%rr = MUL(%r, {rows})"]
    for j in range(rows):
        lines += [f"%f{j} = INDEX(%a2, {j})", f"%fv{j} = LOAD(%f{j})",
                  f"%oi{j} = ADD(%rr, {j})", f"%op{j} = INDEX(%out, %oi{j})",
                  f"%os{j} = STORE(%op{j}, %fv{j})"]
    outs = ", ".join(f"%os{j}" for j in range(rows))
    lines += [f"%g2 = GROUP({outs})", "%fin = END(%g2, %r)", 'SINK(%fin) KernelInfo(name="rowsum")']
    return "\n".join(lines) + "\n"


def picked(text: str, mode: str) -> list[int]:
    return sorted(prefetched_loads(schedule(text), mode).values())


# -- the rule ------------------------------------------------------------------------------

def test_picks_every_stream_of_a_row_reduction():
    # rows of 2048 float32 (8 KiB, over a page): 512 bytes ahead within the row
    assert picked(rowsum(8, 4, 2048), "always") == [PREFETCH_AHEAD] * 8
    assert picked(rowsum(12, 2, 2048), "always") == [PREFETCH_AHEAD] * 12


@pytest.mark.parametrize("rows, cols", [(8, 64), (8, 1024), (12, 256)])
def test_rows_of_a_page_or_less_prefetch_the_next_group_of_rows(rows, cols):
    # the same place in the outer loop's next iteration: rows × cols float32 further
    assert picked(rowsum(rows, 4, cols), "always") == [rows * cols * 4] * rows


@pytest.mark.parametrize("why, text", [
    ("fewer streams than PREFETCH_MIN_STREAMS", rowsum(PREFETCH_MIN_STREAMS - 1, 4, 2048)),
    ("a loop that stores to a GLOBAL buffer (elementwise)", vadd(1 << 20, 8, inputs=8)),
])
def test_refuses(why, text):
    assert picked(text, "always") == [], why


def test_refuses_a_loop_bound_by_its_arithmetic(monkeypatch):
    import kcc.isel.x86.prefetch as pf
    from kcc.frontend.printer import format_uop
    from tests.passes.test_pack import _matmul
    # tinygrad's matmul on x86-64-v4 (passes/pack.py's 8-row x 32-column tile: 8 rows of a
    # streamed, 128 vector MULs and ADDs per 128 bytes of a: 16 lane operations a byte)
    lin = schedule(format_uop(_matmul(64, 1024, 1024)), "x86-64-v4")
    assert prefetched_loads(lin, "always") == {}
    monkeypatch.setattr(pf, "MAX_LANE_OPS_PER_BYTE", 64)
    assert len(prefetched_loads(lin, "always")) == 8
    # a row sum does about a third of a lane operation a byte: prefetched, unless the limit
    # is under that
    text = rowsum(8, 4, 2048)
    assert picked(text, "always") == [PREFETCH_AHEAD] * 8
    monkeypatch.setattr(pf, "MAX_LANE_OPS_PER_BYTE", 0.2)
    assert picked(text, "always") == []


def test_auto_asks_for_the_footprint_and_never_turns_it_off():
    cols = 2048
    small = rowsum(8, PREFETCH_MIN_BYTES // (4 * 8 * cols) - 1, cols)
    big = rowsum(8, PREFETCH_MIN_BYTES // (4 * 8 * cols) + 1, cols)
    assert picked(small, "auto") == []
    assert picked(big, "auto") == [PREFETCH_AHEAD] * 8
    assert picked(small, "always") == [PREFETCH_AHEAD] * 8
    assert picked(big, "never") == []
    with pytest.raises(ValueError, match="prefetch is auto, never, always"):
        picked(big, "sometimes")


# -- the object ----------------------------------------------------------------------------

def _addrs(pattern: re.Pattern, text: str) -> list[tuple[str, str, int]]:
    return [(b, i, int(d or "0", 16)) for b, i, d in pattern.findall(text)]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_each_load_has_its_prefetch_ahead(arch):
    sink = parse(rowsum(8, 4, 2048), "k.uop")
    obj, _ = compile_x86([sink], arch, prefetch="always")
    text = disasm_object(obj)
    fetched, loaded = _addrs(PREFETCH, text), _addrs(LOAD, text)
    assert len(fetched) == 8 and len(loaded) >= 8
    assert sorted((b, i, d - PREFETCH_AHEAD) for b, i, d in fetched) == sorted(loaded[:8])
    obj, _ = compile_x86([sink], arch, prefetch="never")
    assert "prefetch" not in disasm_object(obj)


@pytest.mark.parametrize("rows, steps, cols", [(8, 4, 64), (8, 3, 256), (16, 2, 32), (8, 2, 2048)])
def test_results_match_the_interpreter(rows, steps, cols):
    sink = parse(rowsum(rows, steps, cols), "k.uop")
    args = random_inputs(sink, seed=rows + cols)
    got = compile_and_run(sink, args, prefetch="always")
    assert_same(sink, got, reference(sink, args))
