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
    loaded = table._load(table._dump(table.ROWS))
    assert loaded == table.ROWS
    for got, want in zip(loaded, table.ROWS):
        assert type(got) is type(want) and got.__dict__ == want.__dict__
        assert list(got.__dict__) == list(want.__dict__)        # field order kept
        assert hash(got) == hash(want)
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.form = "x"                                       # type: ignore[misc]


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
print(json.dumps({"compiled_new": s._codes_dirty, "codes": len(s._codes or {})}))
"""


def test_second_process_compiles_no_dataclass_method(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(tmp_path / "pyc"),
               PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    runs = [json.loads(subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=tmp_path,
                                      capture_output=True, text=True, check=True,
                                      timeout=300).stdout) for _ in range(2)]
    assert runs[0]["compiled_new"] and runs[0]["codes"] > 50
    assert not runs[1]["compiled_new"] and runs[1]["codes"] == runs[0]["codes"]
    assert list((tmp_path / "pyc").rglob("x86-forms.*.bin"))
