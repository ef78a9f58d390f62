"""kcc/startup.py: what a process loads instead of rebuilding (issue 24, item 4) is exactly what
it would build — the x86 form table's rows, dataclasses' generated methods — and a stale,
broken or unwritable cache only costs the rebuild. Properties, not timings (bench/startup.py
measures the time)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kcc.startup as startup
from kcc.encode.x86 import table

REPO = Path(__file__).resolve().parents[1]


def test_x86_rows_load_as_they_are_built() -> None:
    built = list(table.FORMS.values())
    loaded = table._load(table._dump(built))
    assert len(loaded) == len(built) and list(loaded) == [r.form for r in built]
    assert dict.__len__(loaded) == 0                             # nothing made yet
    for want in built:
        got = loaded[want.form]
        assert type(got) is type(want) and got.__dict__ == want.__dict__
        assert list(got.__dict__) == list(want.__dict__)        # field order kept
        assert hash(got) == hash(want) and got == want
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.form = "x"                                       # type: ignore[misc]
    assert list(loaded.values()) == built and loaded == table.FORMS
    assert loaded.rel == table.FORMS.rel and len(loaded.rel) > 30


def test_form_table_answers_without_making_rows() -> None:
    """A FormTable makes a Row only when one is asked for; membership, get of a missing form,
    iteration and len answer from the cached bytes (what isel and the encoder ask)."""
    t = table._load(table._dump(list(table.FORMS.values())))
    assert "add_rm64_imm8" in t and "no_such_form" not in t
    assert t.get("no_such_form") is None and t.get("no_such_form", 1) == 1
    assert len(t) == len(table.FORMS) and list(t) == list(table.FORMS) == list(t.keys())
    assert dict.__len__(t) == 0
    with pytest.raises(KeyError):
        t["no_such_form"]
    row = t["add_rm64_imm8"]
    assert t.get("add_rm64_imm8") is row and t["add_rm64_imm8"] is row
    assert dict.__len__(t) == 1
    assert [r.form for r in table.ROWS] == list(table.FORMS)
    assert table.GROUPS == tuple(dict.fromkeys(r.group for r in table.ROWS))


def test_cached_builds_once_then_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    src = tmp_path / "src.py"
    src.write_text("a")
    calls = []

    def build() -> list[int]:
        calls.append(1)
        return [1, 2, 3]

    def get() -> list[int]:
        return startup.cached("t", [str(src)], build, tuple, list, directory=str(tmp_path))

    assert get() == [1, 2, 3] and len(calls) == 1
    assert get() == [1, 2, 3] and len(calls) == 1               # loaded
    src.write_text("ab")                                         # the source changed: rebuild
    assert get() == [1, 2, 3] and len(calls) == 2
    for f in tmp_path.glob("t.*.bin"):
        f.write_bytes(b"\x00garbage")                            # unreadable: rebuild
    assert get() == [1, 2, 3] and len(calls) == 3
    assert get() == [1, 2, 3] and len(calls) == 3


def test_cached_blobs_builds_once_then_reads_each_when_asked(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """cached_blobs (the x86 table's rows): the head loaded and each blob read from the file
    when asked for, equal to what build returned; a changed source, a broken, cut or grown
    file is rebuilt."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    src = tmp_path / "src.py"
    src.write_text("a")
    blobs = [b"", b"one", bytes(range(256)) * 3, b"last"]
    calls = []

    def build() -> tuple[tuple, list[bytes]]:
        calls.append(1)
        return ("head", 7), list(blobs)

    def get() -> list:
        head, blob = startup.cached_blobs("t", [str(src)], build, directory=str(tmp_path))
        return [head, [blob(i) for i in (3, 0, 2, 1)]]

    want = [("head", 7), [blobs[3], blobs[0], blobs[2], blobs[1]]]
    assert get() == want and len(calls) == 1
    assert get() == want and len(calls) == 1                    # read from the file
    head, blob = startup.cached_blobs("t", [str(src)], build, directory=str(tmp_path))
    with pytest.raises(IndexError):
        blob(4)
    src.write_text("ab")                                        # the source changed: rebuild
    assert get() == want and len(calls) == 2
    (path,) = tmp_path.glob("t.*.bin")
    whole = path.read_bytes()
    for broken in (b"\x00garbage", whole[:-1], whole + b"x", b"kccT" + whole[4:20]):
        path.write_bytes(broken)                                # unreadable: rebuild
        n = len(calls)
        assert get() == want and len(calls) == n + 1
        assert path.read_bytes() == whole
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path.unlink()
    assert get() == want and not path.exists()                  # built, nothing written


def test_cached_writes_nothing_without_bytecode(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    src = tmp_path / "src.py"
    src.write_text("a")
    assert startup.cached("t", [str(src)], lambda: (1,), tuple, tuple,
                          directory=str(tmp_path)) == (1,)
    assert not list(tmp_path.glob("*.bin"))


def test_dataclass_methods_compiled_without_our_future_flags() -> None:
    startup.install_dataclass_cache()

    @dataclasses.dataclass(frozen=True)
    class P:
        x: int
        y: tuple = dataclasses.field(default_factory=tuple)

    # kcc/startup.py has `from __future__ import annotations`; dataclasses' exec does not, so
    # the generated __init__'s annotations are objects (a leaked flag would make them text)
    assert P.__init__.__annotations__["x"] == "int"              # from this module's text
    assert P.__init__.__annotations__["return"] is None
    p = P(1)
    assert p == P(1, ()) and hash(p) == hash(P(1)) and repr(p).endswith("P(x=1, y=())")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2                                                  # type: ignore[misc]


_PROBE = """
import json, sys
import kcc.startup as s
import kcc.encode.x86.encoder, kcc.targets.x86.target
r = s._RECORD_CODES
print(json.dumps({"compiled_new": r.dirty, "codes": len(r.codes or {})}))
"""


def test_second_process_compiles_no_record_method(tmp_path: Path) -> None:
    """kcc.record's generated __init__s come from the cache file the first process wrote."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(tmp_path / "pyc"),
               PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    runs = [json.loads(subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=tmp_path,
                                      capture_output=True, text=True, check=True,
                                      timeout=300).stdout) for _ in range(2)]
    assert runs[0]["compiled_new"] and runs[0]["codes"] > 25
    assert not runs[1]["compiled_new"] and runs[1]["codes"] == runs[0]["codes"]
    assert list((tmp_path / "pyc").rglob("x86-rows.*.bin"))


def test_forward_references_compile_as_typing_compiles_them() -> None:
    """typing's `compile` (kcc/startup.py _typing_compile): a forward reference's code is the
    builtin's, from the cache the second time; other calls are passed through."""
    import typing
    startup.install_dataclass_cache()
    assert typing.compile is startup._typing_compile
    for text in ("int", "tuple[int, ...]", "int | None", "dict[str, 'X']"):
        got = typing.compile(text, "<string>", "eval")
        want = compile(text, "<string>", "eval", dont_inherit=True)
        assert got.co_code == want.co_code and got.co_names == want.co_names
        assert got.co_consts == want.co_consts
        assert typing.compile(text, "<string>", "eval") is got          # cached
    code = typing.compile("x = 1", "<x>", "exec")                   # not a forward reference
    assert code.co_filename == "<x>"
    with pytest.raises(SyntaxError):
        typing.ForwardRef("1 +")
    ref = typing.ForwardRef("int")
    assert typing._eval_type(ref, {}, {}) is int

    class N(typing.NamedTuple):         # (this module's annotations are text: forward refs)
        a: int
        b: str

    assert N(1, "x").b == "x"
    assert N.__annotations__ == {"a": typing.ForwardRef("int"), "b": typing.ForwardRef("str")}


# every pattern kcc compiles through kcc.startup.regex, and patterns that exercise its parts
# (named and unnamed groups, flags set inline and as arguments, look-arounds, ranges)
REGEX_CASES = [
    (r"(?P<ws>[ \t]+)|(?P<ref>%[A-Za-z0-9_][A-Za-z0-9_.]*)|(?P<c>\#.*)", 0),
    (r"v(add|sub|mul|div|min|max|sqrt|cmp|round|fn?m(add|sub)\d\d\d)(ss|sd)$", 0),
    (r"(?i)ab(?=c)[^x-z]{2,5}?\Z", 0), (r"a.b", 16), (r"(?x) a b # c", 0), (r"", 0),
]


def test_regex_is_re_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kcc.startup.regex gives re.compile's pattern (Pattern equality compares the compiled
    program), built or loaded from the cache file; a broken file costs only the rebuild."""
    import re

    from kcc.frontend import fields, lexer
    from kcc.targets.x86 import slots
    kcc_patterns = [lexer._TOKEN, lexer._NUMBERISH, fields.NAME, fields._INT, fields._FLOAT,
                    slots._SCALAR_OPS]
    cases = REGEX_CASES + [(p.pattern, p.flags & ~re.UNICODE) for p in kcc_patterns]
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(startup, "cache_dir", lambda: str(tmp_path))
    for junk in (None, b"\x00garbage"):
        monkeypatch.setattr(startup, "_regexes", None)
        if junk is not None:
            for f in tmp_path.glob("regex.*.bin"):
                f.write_bytes(junk)
        for p, f in cases:
            got, want = startup.regex(p, f), re.compile(p, f)
            assert got == want and got.groupindex == want.groupindex
            assert got.match("vaddss") == want.match("vaddss") or \
                got.match("vaddss").span() == want.match("vaddss").span()
        startup._save_regexes()
        monkeypatch.setattr(startup, "_regexes", None)           # a new process: load
        for p, f in cases:
            assert startup.regex(p, f) == re.compile(p, f)
    assert len(list(tmp_path.glob("regex.*.bin"))) == 1
    assert [p == startup.regex(p.pattern, p.flags & ~re.UNICODE) for p in kcc_patterns] == \
        [True] * len(kcc_patterns)


_HOOK_PROBE = """
import json, sys
import kcc, kcc.startup as s
before = "dataclasses" in sys.modules
import dataclasses
out = {"before": before, "exec": dataclasses.exec is s._dataclass_exec,
       "inspect": "inspect" in sys.modules, "hooks": sum(isinstance(f, s._DataclassesHook)
                                                        for f in sys.meta_path),
       "source": "def dataclass" in dataclasses.__loader__.get_source("dataclasses")}
@dataclasses.dataclass
class C:
    x: int
out["doc"] = C.__doc__       # inspect.signature: the real inspect, imported on first use
out["inspect_now"] = "inspect" in sys.modules and hasattr(sys.modules["inspect"], "__file__")
print(json.dumps(out))
"""


def test_dataclasses_imported_after_kcc_gets_the_cache(tmp_path: Path) -> None:
    """A compile imports no dataclasses (kcc.record); a later `import dataclasses` in the same
    process (another target, a host program) is given the cached exec and inspect's stand-in
    by the finder kcc/__init__.py installs, which then leaves sys.meta_path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get(
        "PYTHONPATH", "")]))
    out = json.loads(subprocess.run([sys.executable, "-c", _HOOK_PROBE], env=env, cwd=tmp_path,
                                    capture_output=True, text=True, check=True,
                                    timeout=300).stdout)
    assert out == {"before": False, "exec": True, "inspect": False, "hooks": 0, "source": True,
                   "doc": "C(x: int)", "inspect_now": True}
