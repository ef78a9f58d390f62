"""kcc/passes/simplify.py `keep_params`: the PARAMs a rewrite dropped are appended to the new
SINK, found from the old graph's kept order where a pass sorted it, else by a walk of what
changed; both ways give the same PARAMs, in slot order."""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.uop import toposort
from kcc.passes.simplify import keep_params

TEXT = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 4)
%a = PARAM ParamArg(1, float32, 4)
%s = PARAM ParamArg(2, float32, 1)
%b = PARAM ParamArg(3, float32, 4)
%i = RANGE(4) (0, LOOP)
%xa = INDEX(%a, %i)
%x = LOAD(%xa)
%xs = INDEX(%s, 0)
%y = LOAD(%xs)
%xb = INDEX(%b, %i)
%z = LOAD(%xb)
%m = MUL(%x, %y)
%n = MUL(%m, %z)
%o = INDEX(%out, %i)
%t = STORE(%o, %n)
%e = END(%t, %i)
SINK(%e) KernelInfo(name="kp")
"""


def _drop_loads(sink: UOp, slots: set[int]) -> UOp:
    """sink with every LOAD of a PARAM whose slot is in slots replaced by 1.0 (the PARAMs
    then unread)."""
    repl = {n: UOp(Ops.CONST, (), 1.0) for n in toposort([sink]) if n.op is Ops.LOAD
            and n.src[0].src[0].op is Ops.PARAM and n.src[0].src[0].arg.slot in slots}
    order = toposort([sink])
    out: dict[UOp, UOp] = dict(repl)
    for n in order:
        if n not in out:
            srcs = tuple(out.get(s, s) for s in n.src)
            out[n] = n if srcs == n.src else n.replace(src=srcs)
    return out[sink]


@pytest.mark.parametrize("sorted_before", [True, False])
def test_dropped_params_are_kept_in_slot_order(sorted_before: bool) -> None:
    before = parse(TEXT, "kp.uop")
    after = _drop_loads(before, {1, 3})
    if sorted_before:
        toposort([before])                      # its order kept on it: read, not walked
        assert hasattr(before, "_order")
    elif hasattr(before, "_order"):             # (the parser's own sort): a walk instead
        object.__delattr__(before, "_order")
    assert hasattr(before, "_order") == sorted_before
    kept = keep_params(before, after)
    assert kept.src[:len(after.src)] == after.src
    assert [p.arg.slot for p in kept.src[len(after.src):]] == [1, 3]
    assert keep_params(before, before) is before
