"""Tests of opt-in FMA contraction (kcc/passes/contract.py): off by default; on, a float
MUL+ADD becomes MULACC (and x86 emits FMA), and the code computes what the interpreter computes
for the contracted graph (its MULACC rounds once, numpy-independent: tests/ir/test_interp.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from passes_support import param
from x86_util import reference

from kcc.cli import main
from kcc.ir import AxisType, KernelInfo, Ops, UOp, dtypes
from kcc.ir.uop import toposort
from kcc.passes.contract import contract
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.targets.x86.arch import X86_AVX2
from kcc.targets import registry
from kcc.targets.x86.objload import LoadedObject
from kcc.targets.manifest import check_launch
from kcc.targets.x86.target import compile_x86, launch

C = UOp.const
FAST = replace(X86_AVX2, fp_contract=True)


def _kernel(two_users: bool = False, lanes: int = 1) -> UOp:
    out, a, b, c = (param(i, dtypes.float32, 64) for i in range(4))
    r = UOp(Ops.RANGE, (C(64 // lanes),), (0, AxisType.LOOP))

    def at(buf: UOp) -> UOp:
        if lanes == 1:
            return UOp(Ops.INDEX, (buf, r))
        return UOp(Ops.SHRINK, (buf, UOp(Ops.MUL, (r, C(lanes))), C(lanes)))
    m = UOp(Ops.MUL, (UOp(Ops.LOAD, (at(a),)), UOp(Ops.LOAD, (at(b),))))
    s = UOp(Ops.ADD, (UOp(Ops.LOAD, (at(c),)), m))
    if two_users:
        s = UOp(Ops.SUB, (s, m))
    st = UOp(Ops.STORE, (at(out), s))
    return UOp(Ops.SINK, (UOp(Ops.END, (st, r)),), KernelInfo("fma_k"))


def test_default_is_exact_as_written() -> None:
    g = lower_weak_dtypes(_kernel())
    assert contract(g, X86_AVX2) is g


def test_fast_fuses_a_single_use_mul() -> None:
    g = contract(lower_weak_dtypes(_kernel()), FAST)
    assert [u.op for u in toposort([g]) if u.op in (Ops.MUL, Ops.ADD, Ops.MULACC)
            and u.dtype == dtypes.float32] == [Ops.MULACC]


def test_a_mul_with_another_user_is_not_fused() -> None:
    g = contract(lower_weak_dtypes(_kernel(two_users=True)), FAST)
    assert not any(u.op is Ops.MULACC for u in toposort([g]))


def test_contracted_x86_code_matches_the_interpreter_on_the_contracted_graph() -> None:
    rng = np.random.default_rng(3)
    for lanes in (1, 8):
        sink = _kernel(lanes=lanes)
        args = [np.zeros(64, np.float32)] + [rng.standard_normal(64).astype(np.float32)
                                             for _ in range(3)]
        want = reference(contract(lower_weak_dtypes(sink), FAST), args)
        exact = reference(sink, args)
        obj, descs = compile_x86([sink], fp_contract="fast")
        got = [a.copy() for a in args]
        with LoadedObject(obj) as lo:
            launch(lo, descs[0], check_launch(descs[0], got))
        assert np.array_equal(got[0], want[0])
        assert not np.array_equal(want[0], exact[0])     # contraction is observable here
        asm, _ = compile_x86([sink], emit="asm", fp_contract="fast")
        assert b"vfmadd" in asm


# -- the CLI flag: `kcc compile --fp-contract=fast` (a registry compile option) ---------------

SAXPY = Path(__file__).resolve().parents[2] / "examples" / "saxpy.uop"


def _asm(tmp_path: Path, *flags: str) -> tuple[int, str, bytes]:
    out = tmp_path / "k.s"
    out.unlink(missing_ok=True)
    r = CliRunner().invoke(main, ["compile", str(SAXPY), "-t", "x86", "--emit", "asm",
                                  "--no-manifest", "-o", str(out), *flags])
    return r.exit_code, r.output, out.read_bytes() if out.exists() else b""


def test_cli_fp_contract_fast_fuses_and_off_is_the_default(tmp_path: Path) -> None:
    code, _, fast = _asm(tmp_path, "--fp-contract=fast")
    assert code == 0 and b"vfmadd" in fast
    code, _, off = _asm(tmp_path, "--fp-contract=off")
    assert code == 0 and b"vfmadd" not in off and (b"vmulss" in off or b"vmulps" in off)
    code, _, default = _asm(tmp_path)
    assert code == 0 and default == off


def test_cli_fp_contract_fast_is_refused_by_a_target_without_it(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["compile", str(SAXPY), "-t", "cuda", "--emit", "ptx",
                                  "-o", str(tmp_path / "k.ptx"), "--fp-contract=fast"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "-t cuda does not compile --fp-contract=fast" in r.output
    assert "-t x86 does" in r.output
    assert not (tmp_path / "k.ptx").exists()


def test_cli_fp_contract_value_is_checked(tmp_path: Path) -> None:
    code, out, _ = _asm(tmp_path, "--fp-contract=on")
    assert code == 1 and "'on' is not one of 'off', 'fast'" in out


def test_registry_passes_only_non_default_options() -> None:
    x86 = registry.get("x86")
    assert x86.compile_options({}) == {} and x86.compile_options({"fp_contract": "off"}) == {}
    assert x86.compile_options({"fp_contract": "fast"}) == {"fp_contract": "fast"}
    with pytest.raises(registry.CompileError, match="-t cuda does not compile"):
        registry.get("cuda").compile_options({"fp_contract": "fast"})
