"""What real producers (tinygrad 0.14) write (issue 8, part 1): BARRIER with ordering sources
(kcc/ir/verify.py, scheduled after them by linearize) and BUFFER slots unique per address
space. Oracles: the reference interpreter, ptxas.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.interp import run as interp_run
from paths import DATA
from ptx_util import needs_ptxas, ptxas_ok

KERNELS = DATA / "kernels"


# -- BARRIER with ordering sources; BUFFER slots per address space ------------------------------

def _reduce_numpy(x: np.ndarray) -> np.ndarray:
    """Sequential float32 sums of 16 elements, left to right (the kernel's loop order)."""
    out = np.zeros(16, np.float32)
    for g in range(16):
        acc = np.float32(0)
        for r in range(16):
            acc = np.float32(acc + x[16 * g + r])
        out[g] = acc
    return out


def test_barrier_sources_and_slots_per_space_interp() -> None:
    sink = parse((KERNELS / "reduce_local_reg.uop").read_text())
    bufs = {(u.arg.addrspace.name, u.arg.slot) for u in sink.toposort() if u.op is Ops.BUFFER}
    assert bufs == {("REG", 0), ("LOCAL", 0)}
    x = np.random.default_rng(2).standard_normal(256).astype(np.float32)
    out = interp_run(sink, [np.zeros(16, np.float32), x])[0]
    assert out.tobytes() == _reduce_numpy(x).tobytes()


def test_barrier_scheduled_after_its_sources() -> None:
    from kcc.passes.linearize import linearize
    sink = parse((KERNELS / "reduce_local_reg.uop").read_text())
    lin = linearize(sink)
    bar = next(i for i, u in enumerate(lin) if u.op is Ops.BARRIER)
    st = next(i for i, u in enumerate(lin) if u.op is Ops.STORE
              and u.src[0].src[0].op is Ops.BUFFER
              and u.src[0].src[0].arg.addrspace.name == "LOCAL")
    loads = [i for i, u in enumerate(lin) if u.op is Ops.LOAD and u.src[0].src[0].op is Ops.AFTER
             and u.src[0].src[0].src[0].arg.addrspace.name == "LOCAL"]
    assert st < bar < min(loads)


@needs_ptxas
def test_barrier_sources_ptxas(tmp_path: Path) -> None:
    sink = parse((KERNELS / "reduce_local_reg.uop").read_text())
    ptx = ptxas_ok(sink, tmp_path)
    assert ptx.index("st.shared") < ptx.index("bar.sync") < ptx.index("ld.shared")
    assert ptx.count(".shared .align") == 1


def test_barrier_source_must_be_an_effect() -> None:
    from kcc.frontend.errors import SourceError
    text = ("# kcc-uop 1\n%o = PARAM ParamArg(0, int32, 1)\n%z = INDEX(%o, 0)\n"
            "%v = LOAD(%z)\n%b = BARRIER(%v)\n%st = STORE(%z, 1)\n%g = GROUP(%b, %st)\n"
            'SINK(%g) KernelInfo(name="k")\n')
    with pytest.raises(SourceError, match="BARRIER's srcs are the effects it waits for"):
        parse(text)


@pytest.mark.parametrize("second, ok", [("LOCAL", True), ("REG", False)])
def test_buffer_slot_unique_within_its_space(second: str, ok: bool) -> None:
    from kcc.frontend.errors import SourceError
    text = ("# kcc-uop 1\n%o = PARAM ParamArg(0, int32, 1)\n"
            "%a = BUFFER ParamArg(0, int32, 1, addrspace=REG)\n"
            f"%b = BUFFER ParamArg(0, int32, 1, addrspace={second})\n"
            "%ai = INDEX(%a, 0)\n%s1 = STORE(%ai, 1)\n%bi = INDEX(%b, 0)\n%s2 = STORE(%bi, 2)\n"
            "%x = AFTER(%a, %s1)\n%xi = INDEX(%x, 0)\n%v = LOAD(%xi)\n%oi = INDEX(%o, 0)\n"
            "%s3 = STORE(%oi, %v)\n%g = GROUP(%s2, %s3)\nSINK(%g) KernelInfo(name=\"k\")\n")
    if ok:
        sink = parse(text)
        assert interp_run(sink, [np.zeros(1, np.int32)])[0][0] == 1
        from kcc.frontend.printer import format_uop
        assert parse(format_uop(sink)) is sink          # fmt keeps both slots 0
    else:
        with pytest.raises(SourceError, match="BUFFER slot 0 is already declared by %a"):
            parse(text)
