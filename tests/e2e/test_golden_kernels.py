"""Golden end-to-end files (golden/kernels/<arch>/*.test, Cranelift-filetest style), one format
for every target and stage: a header naming the target and arch (and, optionally, the stages
recorded and an input file), the kernel's .uop input, then the expected text of each stage —
the graph after each graph pass, the schedule after linearize, the machine listing after
select and allocate, the encoded bytes / PTX / AMD assembly after encode.

    ; target: amd gfx942 [emit]        which target, arch (and --emit kind) the file compiles for
    ; stages: linearize select encode  the stages recorded (default: every stage; `output`:
                                       the whole emitted file of a text emit, e.g. PTX)
    ; input: examples/saxpy.uop        the .uop input is that file (repository-relative) ...
    # kcc-uop 1                        ... or follows the header in the file itself
    ...
    ; after linearize
    ...

These are regression tests, not correctness oracles (golden/kernels/README.md): they pin down
what the pipeline does today so any change shows up as a readable unified diff. Review the
diff, then rewrite the files with `KCC_BLESS=1 pytest tests/e2e/test_golden_kernels.py`
(blessing keeps the header and input, and regenerates everything after them).
"""

from __future__ import annotations

import difflib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from kcc.frontend.parser import parse
from kcc.targets import registry
from kcc.targets.pipeline import PASS_NAMES

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden" / "kernels"
MARK = "; after "
# every stage but the first (verify prints nothing new: its graph is the input)
STAGES = tuple(p for p in PASS_NAMES if p != "verify")
OUTPUT = "output"           # the emitted file itself (text emits: PTX, AMD assembly)


@dataclass(frozen=True)
class FileTest:
    """One golden file taken apart: header, input text and the expected stage sections."""

    target: str
    arch: str
    emit: str | None
    stages: tuple[str, ...]
    head: str           # the header and embedded input, kept verbatim by blessing
    source: str         # the .uop input
    expected: str       # the text from the first MARK on


def split(text: str) -> tuple[str, str]:
    """A golden file's head (header and input) and its expected sections (from the first
    MARK)."""
    k = text.find("\n" + MARK)
    return (text, "") if k < 0 else (text[:k + 1], text[k + 1:])


def read_filetest(path: Path) -> FileTest:
    """Parse a golden file's header; a file with no `; target:` line is refused."""
    head, expected = split(path.read_text())
    fields: dict[str, str] = {}
    body = []
    for line in head.splitlines(True):
        key, sep, value = line[2:].partition(":") if line.startswith("; ") else ("", "", "")
        if sep and key in ("target", "stages", "input") and not body:
            fields[key] = value.strip()
        else:
            body.append(line)
    if "target" not in fields:
        raise ValueError(f"{path}: no '; target: NAME ARCH' header line")
    target, arch, *emit = fields["target"].split()
    stages = tuple(fields["stages"].split()) if "stages" in fields else STAGES
    unknown = [s for s in stages if s not in STAGES + (OUTPUT,)]
    if unknown:
        raise ValueError(f"{path}: unknown stages {unknown} (stages: {' '.join(STAGES)})")
    source = (REPO / fields["input"]).read_text() if "input" in fields else "".join(body)
    return FileTest(target, arch, emit[0] if emit else None, stages, head, source, expected)


def stage_text(ft: FileTest) -> str:
    """The text of the file's stages for its kernel, compiled through the target registry (a
    kernel the target refuses records its refusal)."""
    spec = registry.get(ft.target)
    emit = ft.emit or spec.default_emit
    sink = parse(ft.source)
    out = io.StringIO()
    for stage in ft.stages:
        try:
            if stage == OUTPUT:
                out.write(f"{MARK}{OUTPUT}\n")
                out.write(spec.compile([sink], ft.arch, emit).data.decode())
            else:
                spec.compile([sink], ft.arch, emit, dump_after=stage, out=out)
        except registry.CompileError as e:
            out.write(f"; refused: {e}\n")
            break
    return out.getvalue()


def _files() -> list[Path]:
    return sorted(GOLDEN.glob("*/*.test"))


def check_golden(path: Path, bless: bool = False) -> None:
    """Compare (or, blessing, rewrite) one golden file; a mismatch fails with a unified diff."""
    ft = read_filetest(path)
    got = stage_text(ft)
    if bless:
        path.write_text(ft.head + got)
        return
    if got != ft.expected:
        diff = "".join(difflib.unified_diff(ft.expected.splitlines(True), got.splitlines(True),
                                            f"{path.name} (expected)", "kcc (now)", n=2))
        name = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
        pytest.fail(f"{name} differs from the pipeline's output "
                    f"(KCC_BLESS=1 rewrites it after review):\n{diff}", pytrace=False)


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_kernel(path: Path) -> None:
    check_golden(path, bool(os.environ.get("KCC_BLESS")))


def test_every_example_has_a_filetest_on_every_target() -> None:
    have = {(p.parent.name, p.stem) for p in _files()}
    for ex in sorted((REPO / "examples").glob("*.uop")):
        for arch in ("sm_90", "gfx1100", "gfx942"):
            assert (arch, ex.stem) in have, f"no golden/kernels/{arch}/{ex.stem}.test"


def test_split_finds_the_sections() -> None:
    src, rest = split("# kcc-uop 1\nSINK() x\n; after simplify\nA\n")
    assert src == "# kcc-uop 1\nSINK() x\n" and rest == "; after simplify\nA\n"


def test_header_is_read(tmp_path: Path) -> None:
    p = tmp_path / "k.test"
    p.write_text("; target: amd gfx942\n; stages: select encode\n; input: examples/saxpy.uop\n")
    ft = read_filetest(p)
    assert (ft.target, ft.arch, ft.emit, ft.stages) == ("amd", "gfx942", None,
                                                        ("select", "encode"))
    assert ft.source == (REPO / "examples" / "saxpy.uop").read_text()
    p.write_text("# kcc-uop 1\nSINK()\n")
    with pytest.raises(ValueError, match="no '; target: NAME ARCH' header"):
        read_filetest(p)


def test_a_changed_section_fails_with_a_diff(tmp_path: Path) -> None:
    """The comparison can fail: one changed line of a real file gives a unified diff."""
    for path in (GOLDEN / "x86-64-v3" / "saxpy.test", GOLDEN / "gfx1100" / "saxpy.test"):
        ft = read_filetest(path)
        broken = tmp_path / path.parent.name / path.name
        broken.parent.mkdir()
        text = path.read_text().replace("; input: examples/", f"; input: {REPO}/examples/")
        head, want = split(text)
        broken.write_text(head + want.replace("\n", "\nX\n", 1))
        assert ft.expected
        with pytest.raises(pytest.fail.Exception, match=r"(?s)differs.*\n-X\n"):
            check_golden(broken)
