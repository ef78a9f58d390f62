"""Golden end-to-end files (golden/kernels/*.test, Cranelift-filetest style): each file holds a
kernel's .uop input and, after it, the expected text of every pipeline stage for x86-64-v3 —
the graph after each graph pass, the schedule after linearize, the machine listing after
select and allocate, and the encoded bytes with their disassembly after encode.

These are regression tests, not correctness oracles (golden/kernels/README.md): they pin down
what the pipeline does today so any change shows up as a readable unified diff. Review the
diff, then rewrite the files with `KCC_BLESS=1 pytest tests/test_golden_kernels.py`.
"""

from __future__ import annotations

import difflib
import io
import os
from pathlib import Path

import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import PASS_NAMES, run_pipeline
from kcc.targets.x86.target import X86Target

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "kernels"
MARK = "; after "
ARCH = "x86-64-v3"
# every stage but the first (verify prints nothing new: its graph is the input)
STAGES = tuple(p for p in PASS_NAMES if p != "verify")


def split(text: str) -> tuple[str, str]:
    """A golden file's input (.uop text) and its expected sections (from the first MARK)."""
    k = text.find("\n" + MARK)
    return (text, "") if k < 0 else (text[:k + 1], text[k + 1:])


def expected_sections(source: str) -> str:
    """The text of every stage of the pipeline for the kernel in source."""
    sink = parse(source)
    out = io.StringIO()
    for stage in STAGES:
        run_pipeline(sink, X86Target(ARCH), dump_after=stage, out=out)
    return out.getvalue()


def _files() -> list[Path]:
    return sorted(GOLDEN.glob("*.test"))


def test_golden_files_exist() -> None:
    assert len(_files()) >= 5, f"expected the golden kernels under {GOLDEN}"


def check_golden(path: Path, bless: bool = False) -> None:
    """Compare (or, blessing, rewrite) one golden file; a mismatch fails with a unified diff."""
    source, want = split(path.read_text())
    got = expected_sections(source)
    if bless:
        path.write_text(source + got)
        return
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"{path.name} (expected)", "kcc (now)", n=2))
        pytest.fail(f"{path.name} differs from the pipeline's output "
                    f"(KCC_BLESS=1 rewrites it after review):\n{diff}", pytrace=False)


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.stem)
def test_golden_kernel(path: Path) -> None:
    check_golden(path, bool(os.environ.get("KCC_BLESS")))


def test_split_finds_the_sections() -> None:
    src, rest = split("# kcc-uop 1\nSINK() x\n; after simplify\nA\n")
    assert src == "# kcc-uop 1\nSINK() x\n" and rest == "; after simplify\nA\n"


def test_a_changed_section_fails_with_a_diff(tmp_path: Path) -> None:
    """The comparison can fail: one changed line of a real file gives a unified diff."""
    path = _files()[0]
    source, want = split(path.read_text())
    broken = tmp_path / path.name
    broken.write_text(source + want.replace("\n", "\nX\n", 1))
    with pytest.raises(pytest.fail.Exception, match=r"(?s)differs.*\n-X\n"):
        check_golden(broken)
