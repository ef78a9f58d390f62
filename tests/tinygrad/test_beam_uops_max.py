"""BEAM candidates over BEAM_UOPS_MAX are refused by KCCRenderer.render before kcc compiles them,
and the search keeps exactly the candidates it keeps without that refusal.

Oracle: tinygrad 0.14's own `search._try_compile`, run on every candidate of a matmul's first
BEAM round twice in one process -- with kcc's early refusal and with it switched off (then
tinygrad renders, compiles and discards the candidate itself) -- comparing which candidates
come back and the object bytes of those that do; a counter around KCCCompiler.compile shows the
refused ones are never compiled."""

from __future__ import annotations

import os
import subprocess
import sys

from paths import REPO as ROOT
from tinygrad_util import needs_tinygrad

pytestmark = needs_tinygrad

PROGRAM = r"""
import os, statistics
import kcc.tinygrad
import kcc.tinygrad.renderer as R
import tinygrad.codegen.opt.search as search
from tinygrad import Device, Tensor
from tinygrad.codegen import to_program_cache
from tinygrad.helpers import getenv

compiled = []
compile_ = R.KCCCompiler.compile
def counting(self, src):
    compiled.append(src)
    return compile_(self, src)
R.KCCCompiler.compile = counting
discards = R._beam_discards

def outcomes(cands, early):
    R._beam_discards = discards if early else (lambda uops: False)
    del compiled[:]
    to_program_cache.clear()        # tinygrad keeps every lowered program: lower afresh
    out = []
    for i, c in enumerate(cands):
        _, ret = search._try_compile((i, c))
        out.append(None if ret is None else (len(ret[0].src[1].src), ret[0].src[3].arg))
    return out, len(compiled)

def check(s, rawbufs, var_vals, amt, *args, **kwargs):
    cands = list(search.get_kernel_actions(s, include_0=False).values())
    os.environ["BEAM_UOPS_MAX"] = "0"           # off: every candidate's size
    getenv.cache_clear()
    sizes = [len(search._try_compile((i, c))[1][0].src[1].src) for i, c in enumerate(cands)]
    limit = int(statistics.median(sizes))
    to_program_cache.clear()
    os.environ["BEAM_UOPS_MAX"] = str(limit)
    getenv.cache_clear()
    late, n_late = outcomes(cands, early=False)
    early, n_early = outcomes(cands, early=True)
    over = sum(n >= limit for n in sizes)
    print("sizes", min(sizes), max(sizes), "limit", limit, "over", over, "of", len(cands))
    print("kept", sum(o is not None for o in late), sum(o is not None for o in early))
    print("same", early == late)
    print("compiles", n_late, n_early)
    # the same program rendered outside the search is not refused
    big = next(c for c, n in zip(cands, sizes) if n >= limit)
    from tinygrad.codegen import to_program
    to_program_cache.clear()
    ast = big.copy().get_optimized_ast(name_override="test")
    prg = to_program(ast, Device["CPU"].renderer)
    print("outside", len(prg.src[1].src) >= limit, type(prg.src[3].arg).__name__)
    raise SystemExit(0)

search.beam_search = check
a = Tensor.empty(32, 32)
b = Tensor.empty(32, 32)
(a @ b).realize()
"""


def test_early_refusal_keeps_the_search_identical() -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
           "HOME": os.environ.get("HOME", "/tmp"), "DEV": "CPU:KCC", "PARALLEL": "0",
           "BEAM": "1", "IGNORE_BEAM_CACHE": "1", "CCACHE": "0"}
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = dict(line.split(" ", 1) for line in r.stdout.strip().splitlines())
    over, _, total = got["sizes"].split()[-3:]
    assert 0 < int(over) < int(total), got          # both kinds of candidate are present
    late, early = map(int, got["kept"].split())
    assert late == early == int(total) - int(over), got
    assert got["same"] == "True", got
    # tinygrad compiled every candidate before discarding; kcc compiles only the kept ones
    n_late, n_early = map(int, got["compiles"].split())
    assert n_late == int(total) and n_early == late, got
    assert got["outside"] == "True bytes", got
