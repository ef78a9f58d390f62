"""kcc/targets/x86/sched.py: x86's scheduling model for passes/interleave.py (latencies in
the order the Intel optimization manual's tables give them; the registers per arch)."""

from __future__ import annotations

from kcc.frontend.parser import parse
from kcc.ir.ops import Ops
from kcc.ir.uop import toposort
from kcc.targets.amd.desc import AMD
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.sched import latency

KERNEL = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 16)
%a = PARAM ParamArg(1, float32, 16)
%b = PARAM ParamArg(2, int32, 16)
%i = RANGE(16) (0, LOOP)
%ai = INDEX(%a, %i)
%x = LOAD(%ai)
%bi = INDEX(%b, %i)
%y = LOAD(%bi)
%m = MUL(%x, %x)
%d = FDIV(%m, %x)
%s = ADD(%y, %y)
%f = CAST(%s) float32
%r = ADD(%d, %f)
%oi = INDEX(%o, %i)
%st = STORE(%oi, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def test_latencies_in_order() -> None:
    """A division outlasts a float multiply, which outlasts an integer add; a load waits on
    the cache (L1: ~5 cycles), a store makes no value to wait for."""
    nodes = toposort([parse(KERNEL)])
    lat = {(u.op, u.dtype.name if u.dtype else None): latency(u) for u in nodes}
    assert lat[Ops.FDIV, "float32"] > lat[Ops.MUL, "float32"] > lat[Ops.ADD, "int32"]
    assert lat[Ops.LOAD, "float32"] == 5 and lat[Ops.STORE, None] == 1


def test_models_per_arch() -> None:
    """x86-64-v4: 32 vector registers and 7 opmasks; x86-64-v3: 16 and no opmasks (a vector
    of bools is a vector there); GPU targets have no model (linearize's default order)."""
    v4, v3 = x86_desc("x86-64-v4").sched, x86_desc("x86-64-v3").sched
    assert (v4.vector_regs, v4.opmasks) == (32, 7)
    assert (v3.vector_regs, v3.opmasks) == (16, 0)
    assert v4.gprs == v3.gprs == 9
    assert CUDA.sched is None and AMD.sched is None
