"""Regressions of linearize's loop order (kcc/passes/linearize.py) an independent fuzzer found
(issue 12 §1-2): one END closing two loops nests them by axis id, and the x86 and PTX schedules
agree. Oracle: the reference interpreter.
"""

from __future__ import annotations

import numpy as np

from fuzz.harness import check_x86, run_reference, run_x86
from ptx_util import k
from kcc.ir.ops import Ops
from kcc.passes.linearize import linearize
from kcc.passes.lower_weak import lower_weak_dtypes



def _check(text: str, seeds: range = range(4)) -> None:
    sink = k(text)
    for seed in seeds:
        check_x86(sink, seed)




# -- loop order ----------------------------------------------------------------------------

END_ORDER = """%o = PARAM ParamArg(0, int64, 1)
%acc = BUFFER ParamArg(0, int64, 1, addrspace=REG)
%p0 = INDEX(%acc, 0)
%z = CAST(0) int64
%init = STORE(%p0, %z)
%i = RANGE(2, %init) (0, LOOP)
%j = RANGE(2, %init) (1, LOOP)
%a = AFTER(%acc, %init, %i, %j)
%p1 = INDEX(%a, 0)
%cur = LOAD(%p1)
%m = MUL(%cur, 10)
%i2 = MUL(%i, 2)
%ij = ADD(%i2, %j)
%v = ADD(%m, %ij)
%st = STORE(%p1, %v)
%e = END(%st, %j, %i)
%aE = AFTER(%acc, %e)
%p2 = INDEX(%aE, 0)
%r = LOAD(%p2)
%po = INDEX(%o, 0)
%s2 = STORE(%po, %r)
SINK(%s2) KernelInfo(name="k")
"""


def test_one_end_closing_two_loops_nests_them_by_axis_id() -> None:
    """acc = acc*10 + (2i+j) closed by END(%st, %j, %i), i axis 0: for i: for j gives 0,1,2,3
    -> 123 (END's operand order gave 213 on x86 and PTX)."""
    sink = k(END_ORDER)
    want = 0
    for i in range(2):
        for j in range(2):
            want = want * 10 + 2 * i + j
    assert want == 123
    assert run_reference(sink, [np.zeros(1, np.int64)])[0].tolist() == [123]
    assert run_x86(sink, [np.zeros(1, np.int64)])[0].tolist() == [123]
    sched = [u for u in linearize(lower_weak_dtypes(sink)) if u.op is Ops.RANGE]
    assert [r.arg[0] for r in sched] == [0, 1]          # the schedule x86 and PTX consume
