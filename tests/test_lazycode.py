"""kcc/lazycode.py: function bodies a bundle loads when first called (issue 24, item 4).

Fresh processes over a copy of the kcc package with a probe module of every kind of function
the rewrite meets: a process that imports the probe from the bundle sees stubs for its larger
plain functions, and each call gives what the function as compiled gives (the function then
holds that code, compared with compiling the source); docstrings, names and signatures are
the compiled functions' from the start; generators, closures and methods that use `super()`
are never stubbed; the functions a process called are whole in the next process's bundle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# each function's body is padded past lazycode's _MIN_SIZE (a smaller one is kept whole)
PAD = """    t0 = [str(q), repr(q), len(str(q)), abs(hash(str(q))) % 7, str(q) * 2, 'x' + str(q)]
    t1 = [str(q), repr(q), len(str(q)), abs(hash(str(q))) % 9, str(q) * 3, 'y' + str(q)]
    t2 = [str(q), repr(q), len(str(q)), abs(hash(str(q))) % 5, str(q) * 4, 'z' + str(q)]
    del t0, t1, t2
"""

PROBE_MODULE = f'''"""A module of functions for tests/test_lazycode.py."""
import functools


def plain(a, b=2, *args, c, d=4, **kw):
    """plain's docstring"""
    q = a
{PAD}    return [a, b, list(args), c, d, sorted(kw.items())]


def posonly(a, b, /, c=3, *, e=5):
    q = b
{PAD}    return [a, b, c, e]


def recursive(n):
    q = n
{PAD}    return 1 if n <= 1 else n * recursive(n - 1)


def _held_elsewhere(x):
    q = x
{PAD}    return ["held", x]


REGISTRY = {{"f": _held_elsewhere}}
del _held_elsewhere


def deco(f):
    @functools.wraps(f)
    def w(*a, **k):
        return ["wrapped", f(*a, **k)]
    return w


@deco
def decorated(x, y=1):
    """decorated's docstring"""
    q = x
{PAD}    return x + y


def gen(n):
    q = n
{PAD}    yield from range(n)


class K:
    """K's docstring"""

    def method(self, x):
        """method's docstring"""
        q = x
{PAD.replace("    ", "        ")}        return ["method", x]

    @staticmethod
    def st(x):
        q = x
{PAD.replace("    ", "        ")}        return ["st", x]

    @classmethod
    def cm(cls, x):
        q = x
{PAD.replace("    ", "        ")}        return ["cm", cls.__name__, x]

    @property
    def prop(self):
        q = 1
{PAD.replace("    ", "        ")}        return "prop"

    class Inner:
        def deep(self, x):
            q = x
{PAD.replace("    ", "            ")}            return ["deep", x]


class Sub(K):
    def method(self, x):
        q = x
{PAD.replace("    ", "        ")}        return ["sub", super().method(x)]
'''

# what a process reports: for each function, whether it is a stub before the call, the call's
# result, whether it is the compiled function's code after the call, and its doc/signature
SCRIPT = r"""
import inspect, json, sys
import kcc
from kcc import _lazy_probe as p

want = compile(open(p.__file__).read(), p.__file__, "exec", dont_inherit=True)
def compiled(qualname):
    todo = [want]
    while todo:
        c = todo.pop()
        for k in c.co_consts:
            if hasattr(k, "co_code"):
                if k.co_qualname == qualname:
                    return k
                todo.append(k)

def raw(f):
    return getattr(f, "__wrapped__", None) or getattr(f, "__func__", None) or \
        getattr(f, "fget", None) or f

calls = {
    "plain": lambda: p.plain(1, 2, 3, 4, c=5, z=6),
    "posonly": lambda: p.posonly(1, 2, e=7),
    "recursive": lambda: p.recursive(5),
    "_held_elsewhere": lambda: p.REGISTRY["f"](3),
    "decorated": lambda: p.decorated(1, y=2),
    "gen": lambda: list(p.gen(3)),
    "K.method": lambda: p.K().method(1),
    "K.st": lambda: p.K.st(2),
    "K.cm": lambda: p.K.cm(3),
    "K.prop": lambda: p.K().prop,
    "K.Inner.deep": lambda: p.K.Inner().deep(4),
    "Sub.method": lambda: p.Sub().method(5),
}
funcs = {
    "plain": p.plain, "posonly": p.posonly, "recursive": p.recursive,
    "_held_elsewhere": p.REGISTRY["f"], "decorated": raw(p.decorated), "gen": p.gen,
    "K.method": p.K.method, "K.st": raw(p.K.__dict__["st"]), "K.cm": raw(p.K.__dict__["cm"]),
    "K.prop": raw(p.K.__dict__["prop"]), "K.Inner.deep": p.K.Inner.deep,
    "Sub.method": p.Sub.method,
}
out = {}
for name, f in funcs.items():
    stub = "__kcc_lazy__" in f.__code__.co_names
    meta = [f.__doc__, f.__name__, f.__qualname__, str(inspect.signature(f)),
            f.__code__.co_firstlineno, f.__code__.co_filename == p.__file__]
    got = calls[name]()
    out[name] = [stub, got, f.__code__ == compiled(name), meta]
out["K.__doc__"] = p.K.__doc__
print(json.dumps(out))
"""


def _copy(tmp: Path) -> Path:
    shutil.copytree(REPO / "kcc", tmp / "kcc", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "kcc" / "_lazy_probe.py").write_text(PROBE_MODULE)
    return tmp


def _run(root: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(root)
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300, cwd=root)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


STUBBED = {"plain", "posonly", "recursive", "_held_elsewhere", "decorated", "K.method",
           "K.st", "K.cm", "K.prop", "K.Inner.deep"}


def test_stubs_call_as_the_compiled_functions_then_are_made_whole(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    first = _run(root)                      # from the source: no stubs
    assert not any(v[0] for k, v in first.items() if k != "K.__doc__")
    second = _run(root)                     # from the bundle the first process wrote
    assert {k for k, v in second.items() if k != "K.__doc__" and v[0]} == STUBBED
    for name in first:
        if name == "K.__doc__":
            assert second[name] == first[name] == "K's docstring"
            continue
        assert second[name][1] == first[name][1], name      # the call's result
        assert second[name][3] == first[name][3], name      # doc, names, signature, line
        assert first[name][2], name          # the source's own code (the probe's check)
        # after its call the function holds the compiled code; the one only the registry
        # holds is called through a new function of that code, the stub left in place
        assert second[name][2] == (name != "_held_elsewhere"), name
    assert second["plain"][1] == [1, 2, [3, 4], 5, 4, [["z", 6]]]
    assert second["decorated"][1] == ["wrapped", 3]
    assert second["recursive"][1] == 120
    third = _run(root)                      # the second process's calls were noted: whole
    assert not any(v[0] for k, v in third.items() if k != "K.__doc__")
    assert all(third[k][1] == first[k][1] for k in first)


def test_get_code_is_the_module_as_compiled(tmp_path: Path) -> None:
    """runpy and tracebacks see the module's code as compiled, never the stubs."""
    root = _copy(tmp_path)
    _run(root)
    sys.path.insert(0, str(root))
    try:
        from kcc.bundle import Bundle
    finally:
        sys.path.remove(str(root))
    [path] = (root / "kcc" / "__pycache__").glob("modules.*.bin")
    b = Bundle(str(path))
    src = root / "kcc" / "_lazy_probe.py"
    want = compile(src.read_text(), str(src), "exec", dont_inherit=True)
    assert b.loader.get_code("kcc._lazy_probe") == want
    stubbed = b.loader._code("kcc._lazy_probe", None)
    stubs = [c for c in stubbed.co_consts
             if hasattr(c, "co_code") and "__kcc_lazy__" in c.co_names]
    assert stubbed != want and {c.co_name for c in stubs} >= {"plain", "posonly"}
