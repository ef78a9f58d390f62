"""kcc/targets/pathtext.py gives the strings pathlib gives (the oracle: pathlib itself), on
generated paths made of the pieces that change its parsing: slashes, `.`, `..`, dots in
names, and on real folders with symbolic links for resolve/relative_to."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcc.targets import pathtext

PIECES = st.sampled_from(["", "/", "//", "///", ".", "..", "a", "b.c", ".d", "e.", "f.g.h",
                          "k.o", "x.uop", " ", "..x", "x..", "é.json"])
PATHS = st.lists(PIECES, max_size=7).map("".join)


@settings(max_examples=3000, deadline=None)
@given(PATHS)
def test_pure_path_answers(path: str) -> None:
    p = PurePosixPath(path)
    assert pathtext.norm(path) == str(p)
    assert pathtext.name(path) == p.name
    assert pathtext.stem(path) == p.stem
    try:
        want = str(p.with_suffix(".json"))
    except ValueError as e:
        with pytest.raises(ValueError) as got:
            pathtext.with_suffix(path, ".json")
        assert str(got.value) == str(e)
    else:
        assert pathtext.with_suffix(path, ".json") == want


@settings(max_examples=500, deadline=None)
@given(PATHS, PATHS)
def test_relative_to_of_resolved_paths(a: str, b: str) -> None:
    ra, rb = str(Path("/" + a).resolve()), str(Path("/" + b).resolve())
    assert pathtext.resolve("/" + a) == ra
    try:
        want: str | None = str(PurePosixPath(ra).relative_to(rb))
    except ValueError:
        want = None
    assert pathtext.relative_to(ra, rb) == want


def test_resolve_follows_links_as_pathlib(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "k.o").write_bytes(b"")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.symlink("missing", tmp_path / "dangling")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for p in ["link/k.o", "link/../x", "./link//k.o", "dangling", "real/./k.o", "."]:
            want = Path(p).resolve()
            assert pathtext.resolve(p) == str(want)
            folder = str(Path("link").resolve())
            try:
                rel: str | None = str(want.relative_to(folder))
            except ValueError:
                rel = None
            assert pathtext.relative_to(pathtext.resolve(p), folder) == rel
    finally:
        os.chdir(cwd)
