"""Which loaded code a `kcc compile` never runs: the code objects of kcc's modules that a
compile of FILE does not call, by size (issue 24, item 4: code objects cost a process page
faults whether they run or not).

    python bench/cold_code.py [FILE] [--top 40]     # FILE: examples/saxpy.uop, for x86

Compiles FILE in this process under a `sys.setprofile` hook that collects every code object
called; then, for each kcc module loaded, compiles its source again and walks its code
objects: one never called counts as cold with all it holds (its marshal size), one called is
walked into. Prints the loaded and cold totals, the modules by cold size, and the largest cold
functions. Code objects are matched by file, first line and name.
"""

from __future__ import annotations

import argparse
import marshal
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", type=Path, default=REPO / "examples" / "saxpy.uop")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    called: set[tuple[str, int, str]] = set()

    def hook(frame, event, arg):  # noqa: ANN001 — sys.setprofile's signature
        if event == "call":
            c = frame.f_code
            called.add((c.co_filename, c.co_firstlineno, c.co_name))

    with tempfile.TemporaryDirectory() as tmp:
        argv = ["compile", str(a.file), "-t", "x86", "-o", str(Path(tmp) / "k.o")]
        sys.setprofile(hook)            # before kcc is imported: class bodies are calls too
        try:
            from kcc.cli import main as kcc
            kcc(argv)
        except SystemExit:
            pass
        finally:
            sys.setprofile(None)
    cold: list[tuple[int, str, str]] = []
    per_module: dict[str, int] = {}
    total: dict[str, int] = {}

    def walk(code, module: str, qual: str) -> None:  # noqa: ANN001
        for c in code.co_consts:
            if hasattr(c, "co_code"):
                q = f"{qual}.{c.co_name}" if qual else c.co_name
                if (c.co_filename, c.co_firstlineno, c.co_name) in called:
                    walk(c, module, q)
                else:
                    size = len(marshal.dumps(c))
                    cold.append((size, module, q))
                    per_module[module] = per_module.get(module, 0) + size

    for name, mod in sorted(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if not name.startswith("kcc") or not path or not path.endswith(".py"):
            continue
        code = compile(Path(path).read_text(encoding="utf-8"), path, "exec")
        total[name] = len(marshal.dumps(code))
        walk(code, name, "")
    print(f"{len(total)} kcc modules loaded: {sum(total.values()):,} bytes of code, "
          f"{sum(per_module.values()):,} of it never called")
    print("\n| module | cold bytes | of |\n|---|---:|---:|")
    for name, size in sorted(per_module.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"| {name} | {size:,} | {total[name]:,} |")
    print("\n| function | module | bytes |\n|---|---|---:|")
    for size, name, q in sorted(cold, reverse=True)[:a.top]:
        print(f"| {q} | {name} | {size:,} |")


if __name__ == "__main__":
    main()
