"""Run the op × dtype-pair × width × arch corpus (tests/fuzz/corpus.py) on x86: every ALU op,
CAST and BITCAST crossed with every dtype pair, at widths 1-16, for x86-64-v3 and x86-64-v4,
each kernel compiled, run and compared with the interpreter as `kcc run --check` does.

    python scripts/op_corpus.py                       # the whole corpus (tens of thousands)
    python scripts/op_corpus.py --count 2000 -j 2     # its first 2000 cases, on 2 processes
    python scripts/op_corpus.py --seed 3 --start 600 --count 1000 --arch x86-64-v4 --op CDIV

CI runs the first 1000 cases at seed 0 (tests/fuzz/test_fuzz_corpus.py). x86-64-v4 cases only
compile where the CPU lacks AVX-512 (counted as "compiled"). Each failing kernel is written to
OUT/NNNNN.uop with the failure as its comment; the exit status is 1 when any case failed.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "support")]
os.environ.setdefault("KCC_CHECK_ALLOC", "1")     # every allocation re-verified, as in tests

from fuzz import corpus                            # noqa: E402


def _one(case: corpus.Case) -> corpus.Outcome:
    try:
        return corpus.check_case(case)
    except Exception as e:                         # noqa: BLE001 - a generator bug, reported
        return corpus.Outcome(case, "error", f"harness: {type(e).__name__}: {e}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="corpus order and inputs (default 0)")
    ap.add_argument("--start", type=int, default=0, help="first case (default 0)")
    ap.add_argument("--count", type=int, default=None, help="cases to run (default: all)")
    ap.add_argument("--arch", choices=corpus.ARCHES, action="append",
                    help="only these arches (repeatable; default both)")
    ap.add_argument("--width", type=int, choices=corpus.WIDTHS, action="append",
                    help="only these vector widths (repeatable; default all)")
    ap.add_argument("--op", action="append", help="only these ops, e.g. CDIV (repeatable)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="processes (default 1)")
    ap.add_argument("-o", "--out", default="op-corpus-failures",
                    help="folder for failing kernels (default op-corpus-failures)")
    a = ap.parse_args(argv)
    todo = corpus.cases(a.seed, tuple(a.arch or corpus.ARCHES), tuple(a.width or corpus.WIDTHS))
    if a.op:
        todo = [c for c in todo if c.cell.op.name in {o.upper() for o in a.op}]
    todo = todo[a.start:None if a.count is None else a.start + a.count]
    print(f"{len(todo)} cases (seed {a.seed}, from {a.start})", flush=True)
    t0 = time.monotonic()
    status: collections.Counter = collections.Counter()
    by_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failed = []
    if a.jobs > 1:
        import multiprocessing
        pool = multiprocessing.get_context("spawn").Pool(a.jobs)
        results = pool.imap(_one, todo, chunksize=8)
    else:
        pool, results = None, map(_one, todo)
    for k, o in enumerate(results, 1):
        status[o.status] += 1
        by_op[o.case.cell.op.name][o.status] += 1
        if o.failed:
            failed.append(o)
            print(f"FAIL {o.case}: {o.status}: {o.detail[:300]}", flush=True)
        if k % 500 == 0:
            print(f"  {k}/{len(todo)} {dict(status)} {time.monotonic() - t0:.0f} s", flush=True)
    if pool is not None:
        pool.close()
    if failed:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for o in failed:
            note = "".join(f"# {line}\n" for line in f"{o.case}: {o.detail}".splitlines())
            text = o.text or "# (no kernel text)\n"
            head, _, rest = text.partition("\n")
            (out / f"{o.case.seed:08d}.uop").write_text(f"{head}\n{note}{rest}")
        print(f"{len(failed)} failing kernels written to {out}/")
    for op, c in sorted(by_op.items()):
        print(f"  {op:10} {dict(c)}")
    print(f"{len(todo)} cases: {dict(status)} in {time.monotonic() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
