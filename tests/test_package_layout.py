"""The house rules of issue 19, checked on the source: a target is one folder of one name in each
layer (isel/<t>/, encode/<t>/, targets/<t>/), no target imports another target's modules, and
no module-level import cycle exists among kcc's modules (a cycle makes the import order of two
modules decide whether a name exists yet)."""

from __future__ import annotations

import ast
from pathlib import Path

KCC = Path(__file__).resolve().parents[1] / "kcc"
# the target each per-target folder belongs to (PTX is the CUDA target's selector and encoder)
TARGET_OF = {("isel", "x86"): "x86", ("isel", "amd"): "amd", ("isel", "ptx"): "cuda",
             ("encode", "x86"): "x86", ("encode", "amd"): "amd", ("encode", "ptx"): "cuda",
             ("targets", "x86"): "x86", ("targets", "amd"): "amd", ("targets", "cuda"): "cuda"}


def modules() -> dict[str, Path]:
    """Every module of kcc by dotted name (a package by its own name)."""
    out = {}
    for p in KCC.rglob("*.py"):
        parts = p.relative_to(KCC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def imports(path: Path, mods: dict[str, Path], top_only: bool) -> set[str]:
    """The kcc modules a file imports (at module level only, or anywhere)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_only else list(ast.walk(tree))
    found: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("kcc"):
            found.add(n.module)
            found.update(f"{n.module}.{a.name}" for a in n.names
                         if f"{n.module}.{a.name}" in mods)
        elif isinstance(n, ast.Import):
            found.update(a.name for a in n.names if a.name.startswith("kcc"))
    return {m for m in found if m in mods}


def target_of(module: str) -> str | None:
    """The target a module belongs to, or None for shared code."""
    parts = module.split(".")
    if len(parts) >= 3:
        return TARGET_OF.get((parts[1], parts[2]))
    return None


def test_no_target_imports_another_targets_modules() -> None:
    mods = modules()
    bad = [f"{m} imports {d}" for m, p in mods.items() if target_of(m)
           for d in imports(p, mods, top_only=False)
           if target_of(d) and target_of(d) != target_of(m)]
    assert not bad, "\n".join(bad)


def test_no_module_level_import_cycle() -> None:
    mods = modules()
    graph = {m: imports(p, mods, top_only=True) - {m} for m, p in mods.items()}
    state: dict[str, int] = {}      # 1: on the current path, 2: finished
    for root in graph:
        if root in state:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        state[root] = 1
        while stack:
            m, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[m] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                path = [s for s, _ in stack]
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(nxt):]
                                                                   + [nxt]))
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(graph[nxt]))))


def test_each_target_has_one_folder_per_layer() -> None:
    for (layer, folder), _ in TARGET_OF.items():
        path = KCC / layer / folder
        assert path.is_dir() or (KCC / layer / f"{folder}.py").is_file(), path
    for layer in ("isel", "encode", "targets"):
        flat = [p.name for p in (KCC / layer).glob("*.py")
                if p.stem.split("_")[0] in ("x86", "amd", "ptx", "cuda", "hsaco", "hip")
                and p.stem != "ptx"]
        assert not flat, f"target modules outside their folder in kcc/{layer}: {flat}"


def test_every_module_is_named_in_the_architecture_doc() -> None:
    # docs/architecture.md's layer tables are where a reader finds a module's job; a module
    # added without a line there leaves the docs untrue to the code
    import re
    doc = (KCC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [str(p.relative_to(KCC.parent)) for p in sorted(KCC.rglob("*.py"))
               if p.stem != "__init__" and not re.search(rf"\b{p.stem}\b", doc)]
    assert not missing, f"not named in docs/architecture.md: {missing}"
