"""bench/gate_assist.py: with --base, both checkouts' objects of one kernel are linked into one
driver and each is timed (the A/B of docs/performance.md, "Cheaper gate safe bases")."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import gate_assist  # noqa: E402


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("objcopy") is None,
                    reason="needs cc and objcopy")
def test_base_and_this_checkout_are_both_timed(tmp_path: Path) -> None:
    uop = ROOT / "tests/data/kernels/shared/pad_gated_load.uop"
    t = gate_assist.time_kernel(uop, "x86-64-v3", 5, tmp_path, base=str(ROOT))
    assert len(t) == 2 and all(len(x) == 2 and min(x) >= 0 for x in t)
    src = (tmp_path / "main.c").read_text()
    assert "case 0:" in src and "case 1:" in src and "#define NK 2" in src
    assert "base_" in src                      # the base's renamed symbol is called


def test_one_object_without_base(tmp_path: Path) -> None:
    uop = ROOT / "tests/data/kernels/shared/pad_gated_load.uop"
    ((g, o),) = gate_assist.time_kernel(uop, "x86-64-v3", 3, tmp_path)
    assert g >= 0 and o >= 0


def test_base_is_compiled_by_the_base_checkout_from_any_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a stand-in base checkout whose kcc only writes the manifest and a marker: run from this
    # checkout's root (where `python -c` would import this checkout's kcc first), the base's
    # compile must still be the base's
    tree = tmp_path / "tree"
    (tree / "kcc").mkdir(parents=True)
    (tree / "kcc" / "__init__.py").write_text("")
    (tree / "kcc" / "cli.py").write_text(
        "import json, sys\n"
        "def main():\n"
        "    out = sys.argv[sys.argv.index('-o') + 1]\n"
        "    open(out[:-2] + '.json', 'w').write(json.dumps({'kernels': [{'symbol': 'k'}]}))\n"
        "    open(out + '.base', 'w').write('base')\n"
        "    return 0\n")
    monkeypatch.chdir(ROOT)
    uop = ROOT / "tests/data/kernels/shared/pad_gated_load.uop"
    desc = gate_assist._compile(uop, "x86-64-v3", tmp_path / "b.o", str(tree))
    assert desc == {"symbol": "k"} and (tmp_path / "b.o.base").exists()
