"""WMMA's `.uop` spelling: every tensor-core form round-trips through the canonical printer
(graph identity), and a malformed arg is refused at its column with the form spelled out."""

from __future__ import annotations

import pytest
from wmma_graphs import fragment_kernel

from kcc.frontend.errors import SourceError
from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop
from kcc.ir import Ops, dtypes
from kcc.ir.wmma import SHAPES, WmmaShape


@pytest.mark.parametrize("sh", SHAPES, ids=lambda s: f"{s.device}-{s.dims}-{s.threads}-"
                                                    f"{s.dtype_in}-{s.dtype_out}")
def test_round_trip(sh: WmmaShape) -> None:
    sink = parse(fragment_kernel(sh))
    text = format_uop(sink)
    assert parse(text) is sink
    assert format_uop(parse(text)) == text
    (w,) = [n for n in sink.toposort() if n.op is Ops.WMMA]
    assert w.arg == (sh.dims, dtypes.by_name(sh.dtype_in), sh.device, sh.threads, None)
    assert 'WMMA(' in text and f'"{sh.device}", {sh.threads}, None)' in text


def _with_arg(arg: str) -> str:
    sh = SHAPES[0]
    text = fragment_kernel(sh)
    line = next(ln for ln in text.splitlines() if "WMMA" in ln)
    return text.replace(line, f"%w = WMMA(%av, %bv, %cv) {arg}")


@pytest.mark.parametrize("arg, at, fragment", [
    ('((8, 16, 16), float16, "CUDA", 32)', "(", "WMMA takes ((N, M, K), dtype_in"),
    ('((8, 16, 16), float16, "CUDA", 32, 0)', "0)", "WMMA takes ((N, M, K)"),
    ('((8, 16), float16, "CUDA", 32, None)', "(8", "WMMA takes ((N, M, K)"),
    ('((8, 16, 16), half, "CUDA", 32, None)', "half", "unknown dtype 'half'"),
    ('((8, 16, 16), float16, CUDA, 32, None)', "CUDA", "WMMA takes"),
    ('((8, 16, 16), float16, "CUDA", 64, None)', "(",
     "no tensor-core form CUDA (8, 16, 16) threads=64"),
])
def test_bad_args_are_refused_at_their_column(arg: str, at: str, fragment: str) -> None:
    text = _with_arg(arg)
    with pytest.raises(SourceError) as e:
        parse(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("%w = WMMA"))
    src = text.splitlines()[line - 1]
    assert e.value.line == line and fragment in e.value.message
    assert e.value.col == src.index(at, src.index(")") + 1) + 1, e.value.render()
