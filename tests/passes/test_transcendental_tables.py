"""The constant tables of kcc/passes/transcendental.py (EXP2/LOG2/SIN coefficients, pi's parts,
2/pi's words) as a compile reads them: from kcc's cache (kcc.startup.cached), each equal to its
exact computation (decimal, fractions), which a process with a warm cache does not import."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

from kcc_process import modules_after

from kcc.ir.dtype import dtypes
from kcc.passes import transcendental as T

EXP2 = """# kcc-uop 1
%x   = PARAM ParamArg(0, float32, 16)
%o   = PARAM ParamArg(1, float32, 16)
%i   = RANGE(16) (0, LOOP)                 : weakint
%xi  = INDEX(%x, %i)
%xv  = LOAD(%xi)                           : float32
%e   = EXP2(%xv)                           : float32
%oi  = INDEX(%o, %i)
%st  = STORE(%oi, %e)
%end = END(%st, %i)
SINK(%end) KernelInfo(name="exp2_only")
"""


def test_tables_are_their_exact_computation() -> None:
    built = T._build_tables()
    assert T._tables() == built
    assert marshal.loads(marshal.dumps(built)) == built     # what the cache file holds
    for dt in (dtypes.float32, dtypes.float64):
        assert built[f"exp2/{dt.name}"] == T._exp2_coeffs(dt)
        assert built[f"log/{dt.name}"] == T._log_coeffs(dt)
    assert built["pi"][1] == 1.5707963267948966 and built["pi"][0] == 2 / 3.141592653589793
    assert built["two_over_pi/8"] == built[f"two_over_pi/{T._TWO_OVER_PI_WORDS}"][:8]


def test_a_warm_cache_compiles_exp2_without_decimal_or_fractions(tmp_path: Path) -> None:
    src = tmp_path / "e.uop"
    src.write_text(EXP2)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")     # a cache of this test's own
    first, warm = (modules_after("compile", str(src), "-t", "x86", "-o", "e.o", cwd=tmp_path,
                                 env=env) for _ in range(2))
    assert (tmp_path / "e.o").read_bytes()[:4] == b"\x7fELF"
    assert "decimal" in first and "fractions" in first         # the tables built
    assert "kcc.passes.transcendental" in warm
    assert "decimal" not in warm and "fractions" not in warm   # and read
