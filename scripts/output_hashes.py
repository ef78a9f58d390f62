"""Hash every output kcc writes for a corpus of kernels, to show that a change to how the back
end works (compile time, refactoring) leaves what it writes byte-for-byte the same.

    python scripts/output_hashes.py OUT.txt [--fuzz N] [DIR ...]
    python scripts/output_hashes.py before.txt; (change); python scripts/output_hashes.py after.txt
    cmp before.txt after.txt

The corpus: examples/*.uop, tests/data/kernels/**/*.uop, the .uop files under each DIR (e.g. the
tinygrad captures of bench/tinygrad_x86.py --capture-dir), and N fuzz kernels (default 300)
drawn, derandomized, from the strategies of tests/fuzz (the same N kernels on every run of
one checkout; a drawn kernel whose printed text does not parse back is left out). Each
kernel gives one line per output: the x86-64-v3 and x86-64-v4 objects
with their manifest entries, and for every third kernel sm_90 PTX and gfx1100/gfx942 AMD
assembly (the allocator and encoders are shared). A kernel a target refuses hashes its
message; any other exception is written as an internal error.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "support"),
                str(REPO / "bench")]

from kcc.frontend.parser import parse          # noqa: E402
from kcc.frontend.printer import format_uop    # noqa: E402
from kcc.targets import registry               # noqa: E402

CONFIGS = (("x86", "x86-64-v3", "obj"), ("x86", "x86-64-v4", "obj"))
GPU_CONFIGS = (("cuda", "sm_90", "ptx"), ("amd", "gfx1100", "asm"), ("amd", "gfx942", "asm"))


def fuzz_kernels(n: int) -> list[tuple[str, str]]:
    """n fuzz kernels as (name, .uop text), drawn in a fixed order from tests/fuzz."""
    from hypothesis import HealthCheck, given, settings

    from fuzz import shapes
    from fuzz.lanewise import lanewise, lanewise_reduce, lanewise_tile
    from fuzz.strategies import X86_AVOID, elementwise, reduce, vector
    mix = [(elementwise(avoid=X86_AVOID), 8), (reduce(avoid=X86_AVOID), 5),
           (vector(avoid=X86_AVOID), 5), (vector(avoid=X86_AVOID, wide=True), 3),
           (lanewise(), 5), (lanewise(wide=True), 2), (lanewise_reduce(), 3),
           (lanewise_tile(), 3), (shapes.carried(), 2), (shapes.mixed_lanes(), 2),
           (shapes.spills(), 2), (shapes.jam(), 2)]
    total = sum(w for _, w in mix)
    out: list[tuple[str, str]] = []
    for strategy, weight in mix:
        @settings(max_examples=max(1, n * weight // total), deadline=None, database=None,
                  derandomize=True, suppress_health_check=list(HealthCheck))
        @given(strategy)
        def draw(sink) -> None:
            out.append((f"fuzz{len(out):04d}", format_uop(sink)))
        draw()
    return out


def kernel_text(path: Path) -> str:
    """A kernel file's text (a tinygrad capture's inline SPECIAL bound on its own line)."""
    from compile_time import source
    return source(path)


def output_hash(text: str, name: str, target: str, arch: str, emit: str) -> str:
    """A short hash of one compile's output bytes and kernel descriptions (the manifest)."""
    try:
        c = registry.get(target).compile([parse(text, name)], arch, emit)
    except registry.CompileError as e:
        return "refused:" + hashlib.sha256(str(e).encode()).hexdigest()[:12]
    except Exception as e:                   # noqa: BLE001 - recorded, so a change shows
        return f"error:{type(e).__name__}:{hashlib.sha256(str(e).encode()).hexdigest()[:12]}"
    return hashlib.sha256(c.data + repr(c.descs).encode()).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--fuzz", type=int, default=300, help="fuzz kernels to add (0: none)")
    a = ap.parse_args()
    files = sorted((REPO / "examples").glob("*.uop")) + sorted(
        (REPO / "tests" / "data" / "kernels").rglob("*.uop"))
    for d in a.dirs:
        files += sorted(d.rglob("*.uop"))
    corpus = [(str(f.relative_to(REPO)) if f.is_relative_to(REPO) else str(f), kernel_text(f))
              for f in files]
    for name, text in fuzz_kernels(a.fuzz):
        try:
            parse(text, name)
        except Exception:                    # noqa: BLE001 - a kernel whose text is not
            continue                         # the graph drawn (see the report) is left out
        corpus.append((name, text))
    lines = []
    for i, (name, text) in enumerate(corpus):
        for target, arch, emit in CONFIGS + (GPU_CONFIGS if i % 3 == 0 else ()):
            lines.append(f"{name} {target} {arch} {output_hash(text, name, target, arch, emit)}")
    a.out.write_text("\n".join(lines) + "\n")
    bad = sum(" error:" in line for line in lines)
    print(f"{len(corpus)} kernels, {len(lines)} outputs, {bad} internal errors -> {a.out}")


if __name__ == "__main__":
    main()
