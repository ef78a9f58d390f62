"""The op × dtype-pair × width × arch corpus (tests/fuzz/corpus.py) in CI: a fixed slice of
it, at seed 0, checked as `kcc run --check` checks a kernel (the interpreter as the oracle, the
inputs of kcc/targets/check.py, unspecified elements left out). x86-64-v4 cases compile
everywhere and run where the CPU has AVX-512.

`KCC_CORPUS_CASES=N` checks the first N cases instead (the whole corpus is
`len(corpus.cases())`); scripts/op_corpus.py runs any slice, in parallel, and saves what fails.
"""

from __future__ import annotations

import os

import pytest

from fuzz import corpus
from kcc.ir.dtype import STRONG
from kcc.ir.ops import ALU, Ops

CASES = int(os.environ.get("KCC_CORPUS_CASES", 1000))
CHUNK = 50


def test_every_alu_op_and_every_dtype_pair_is_in_the_corpus() -> None:
    assert set(corpus.OPS) == set(ALU) - {Ops.WMMA} | {Ops.CAST, Ops.BITCAST}
    cells = set(corpus.cells())
    for op in corpus.OPS:
        for src in STRONG:
            for dst in STRONG:
                if op in (Ops.CAST, Ops.BITCAST):
                    want = src != dst and corpus.accepts(op, src, dst)
                    assert (corpus.Cell(op, src, dst) in cells) == want, (op, src, dst)
                elif corpus.accepts(op, src) and op not in corpus.APPROX:
                    res = corpus.result_dtype(op, src)
                    assert corpus.Cell(op, src, None if dst == res else dst) in cells
    # a prefix covers every op: the first len(OPS) cases are one of each
    assert {c.cell.op for c in corpus.cases()[:len(corpus.OPS)]} == set(corpus.OPS)
    assert len(corpus.cases()) == len(cells) * len(corpus.WIDTHS) * len(corpus.ARCHES)


def test_the_corpus_is_the_same_on_every_run() -> None:
    a, b = corpus.cases(0)[:40], corpus.cases(0)[:40]
    assert a == b and [corpus.build(c) for c in a] == [corpus.build(c) for c in b]
    assert corpus.cases(1)[:40] != a


@pytest.mark.parametrize("start", range(0, CASES, CHUNK))
def test_corpus_slice_matches_the_interpreter(start: int) -> None:
    todo = corpus.cases(0)[start:min(start + CHUNK, CASES)]
    bad = [o for o in corpus.run_cases(todo) if o.failed]
    assert not bad, "\n\n".join(f"{o.case}: {o.status}: {o.detail}\n{o.text}" for o in bad[:3])
