"""DEV=CPU:KCC's objects go through tinygrad's compile cache (docs/tinygrad.md).

Oracle: a counter around KCCCompiler.compile in the process itself (not kcc's word): a second
process with the same CACHEDB calls it zero times and computes the same values."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


from paths import REPO as ROOT
from tinygrad_util import needs_tinygrad

pytestmark = needs_tinygrad

PROGRAM = """
import kcc.tinygrad
from kcc.tinygrad.renderer import KCCCompiler
calls = [0]
compile_ = KCCCompiler.compile
def counting(self, src):
    calls[0] += 1
    return compile_(self, src)
KCCCompiler.compile = counting
import numpy as np
from tinygrad import Device, Tensor
a = Tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
b = Tensor(np.linspace(-1, 1, 6, dtype=np.float32))
y = ((a * b).sum(axis=1) + a.max(axis=1)).relu()
print(type(Device['CPU'].renderer).__name__, y.tolist())
print('compiles', calls[0])
"""


def _run(tmp: Path, **extra: str) -> tuple[int, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
           "HOME": str(tmp), "DEV": "CPU:KCC", "PARALLEL": "0",
           "CACHEDB": str(tmp / "cache.db")}
    env.update(extra)
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    first, last = r.stdout.strip().splitlines()[-2:]
    assert first.startswith("KCCRenderer"), r.stdout
    return int(last.split()[1]), first


def test_a_second_process_compiles_nothing(tmp_path: Path) -> None:
    n1, out1 = _run(tmp_path)
    assert n1 >= 1
    n2, out2 = _run(tmp_path)
    assert n2 == 0 and out2 == out1
    # CCACHE=0 (tinygrad's switch) turns the cache off: every kernel compiles again
    n3, out3 = _run(tmp_path, CCACHE="0")
    assert n3 == n1 and out3 == out1
    # a switch that changes kcc's code has its own objects (so has each arch: the key test;
    # v4 code is not run here, the CI host may lack AVX-512)
    n4, out4 = _run(tmp_path, KCC_X86_HIGH_VEC_FIRST="1")
    assert n4 == n1 and out4 == out1


def test_key_covers_version_source_arch_and_switches(tmp_path: Path, monkeypatch) -> None:
    import kcc
    from kcc.tinygrad.renderer import KCCCompiler, cache_key, source_hash
    monkeypatch.delenv("KCC_X86_HIGH_VEC_FIRST", raising=False)
    key = cache_key("x86-64-v3")
    assert kcc.__version__ in key and source_hash() in key
    assert key != cache_key("x86-64-v4")
    monkeypatch.setenv("KCC_X86_HIGH_VEC_FIRST", "1")
    assert key != cache_key("x86-64-v3")
    # tinygrad quotes the key as an SQL table name
    assert set(key) <= set("abcdefghijklmnopqrstuvwxyz0123456789_.-")
    assert KCCCompiler("x86-64-v4").cachekey == cache_key("x86-64-v4")
    # the source hash follows kcc's code, not just its version number
    copy = tmp_path / "kcc"
    shutil.copytree(Path(kcc.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = source_hash(str(copy))
    assert before == source_hash()
    (copy / "ir" / "uop.py").write_text((copy / "ir" / "uop.py").read_text() + "\n# edit\n")
    source_hash.cache_clear()
    assert source_hash(str(copy)) != before


def test_beam_search_cache_is_kcc_own() -> None:
    """tinygrad keys BEAM results by device and renderer suffix: kcc's must differ from
    clang's (else DEV=CPU:KCC reuses a search timed on clang's code), and with and without
    kcc's native ops."""
    from kcc.tinygrad.renderer import KCCRenderer
    from tinygrad.renderer.cstyle import ClangRenderer
    assert KCCRenderer.suffix not in ("", ClangRenderer.suffix)
    assert KCCRenderer.suffix.startswith("KCC")
