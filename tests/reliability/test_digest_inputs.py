"""The digest never follows a symlink and never hashes part of a tree.

tests/src_digest/test_src_digest.py covers the library's rules (symlinked folders not walked, a file
vanishing or swapped for a symlink mid-walk, an unreadable file or folder); this adds the
targets an attacker would pick (`/`, a secret outside the root, a loop), a file swapped for a
FIFO mid-walk, and the command line: each failure is exit 2 with one line, and `check` and
`rekey` write nothing when the digest cannot be computed. Sessions and CI run as root, where
file modes prove nothing, so unreadable files are simulated by patching `os.open`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from src_digest import DigestError, host_key_of, manifest_of
from testing.reliability import one_line_exit_2
from testing.workspaces import make_workspace

runner = CliRunner()


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


@pytest.fixture
def engine(tmp_path: Path) -> Path:
    root = tmp_path / "engine"
    (root / "atom").mkdir(parents=True)
    (root / "atom" / "step.py").write_bytes(b"x = 1\n")
    return root


@pytest.mark.parametrize("target", ["/", "/etc/passwd", "/dev/zero", "/proc/self/environ",
                                    "../../secret.py", "loop.py"])
def test_a_symlink_is_hashed_as_its_target_string_and_never_read(
        engine: Path, tmp_path: Path, target: str) -> None:
    (tmp_path / "secret.py").write_bytes(b"TOKEN = 'do not hash me'\n")
    (engine / "atom" / "link.py").symlink_to(target)
    if target == "loop.py":
        (engine / "atom" / "loop.py").symlink_to("loop.py")  # a link to itself

    entries = {e.relpath: e.sha256 for e in manifest_of(engine).entries}

    assert entries[b"atom/link.py"] == _sha(target.encode())
    assert entries[b"atom/step.py"] == _sha(b"x = 1\n")


def test_a_symlink_to_the_root_or_above_is_not_walked(engine: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.py").write_bytes(b"secret")
    (engine / "atom" / "up").symlink_to("..")
    (engine / "atom" / "root").symlink_to("/")
    (engine / "atom" / "out").symlink_to(tmp_path / "outside")
    assert [e.relpath for e in manifest_of(engine).entries] == [b"atom/step.py"]


@contextlib.contextmanager
def _denied(name: bytes) -> Iterator[None]:
    """os.open refuses files whose path ends with `name`, as for a file root cannot read on
    a network mount (chmod proves nothing to root)."""
    real_open = os.open

    def deny(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fsencode(path).endswith(name):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "open", deny)
        yield


class _Listed:
    """What os.scandir returns (an iterator and a context manager), over a list made earlier."""

    def __init__(self, entries: list[os.DirEntry[bytes]]) -> None:
        self._entries = iter(entries)

    def __enter__(self) -> _Listed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self) -> _Listed:
        return self

    def __next__(self) -> os.DirEntry[bytes]:
        return next(self._entries)

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _vanishing(name: bytes) -> Iterator[None]:
    """os.scandir lists a folder, then `name` in it is removed before it is read."""
    real_scandir = os.scandir

    def listed_then_removed(path: Any) -> Any:
        with real_scandir(path) as it:
            entries = list(it)
        victim = os.path.join(os.fsencode(path), name)
        if os.path.lexists(victim):
            os.unlink(victim)
        return _Listed(entries)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "scandir", listed_then_removed)
        yield


def test_a_file_swapped_for_a_fifo_mid_walk_is_an_error_not_a_hang(engine: Path) -> None:
    real_scandir = os.scandir

    def listed_then_swapped(path: Any) -> Any:
        with real_scandir(path) as it:
            entries = list(it)
        victim = os.path.join(os.fsencode(path), b"step.py")
        if os.path.exists(victim):
            os.unlink(victim)
            os.mkfifo(victim)  # nobody writes: a blocking open or read would hang
        return _Listed(entries)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "scandir", listed_then_swapped)
        with pytest.raises(DigestError, match=r"atom/step\.py"):
            host_key_of(engine)


@pytest.mark.parametrize("command", [["digest"], ["digest", "--manifest"], ["digest", "--json"],
                                     ["check"], ["rekey", "--why", "x"]])
@pytest.mark.usefixtures("stale_workspace")
def test_an_unreadable_engine_file_is_exit_2_and_one_line_and_nothing_is_written(
        tmp_path: Path, command: list[str]) -> None:
    before = {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()}
    with _denied(b"step.py"):
        result = runner.invoke(app, command)
    one_line_exit_2(result, "atom/engine/step.py: Permission denied")
    assert result.stdout == ""
    assert {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()} == before


@pytest.mark.parametrize("command", [["digest"], ["check"], ["rekey", "--why", "x"]])
@pytest.mark.usefixtures("stale_workspace")
def test_an_engine_file_vanishing_mid_walk_is_exit_2_and_one_line_and_nothing_is_written(
        tmp_path: Path, command: list[str]) -> None:
    before = {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()}
    with _vanishing(b"step.py"):
        result = runner.invoke(app, command)
    one_line_exit_2(result, "atom/engine/step.py", "removed or changed during the digest")
    assert {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()} == before


def test_an_engine_file_name_with_a_line_break_fails_on_one_line(tmp_path: Path) -> None:
    make_workspace(tmp_path, 0)
    odd = os.fsencode(tmp_path / "engine" / "atom") + b"/odd\n\xffname.py"
    with open(odd, "wb") as f:
        f.write(b"x")
    with _denied(b"name.py"):
        line = one_line_exit_2(runner.invoke(app, ["digest"]), "Permission denied")
    assert "atom/odd\\n\\udcffname.py" in line
    manifest = runner.invoke(app, ["digest", "--manifest"])
    assert manifest.exit_code == 0
    assert manifest.stdout.splitlines()[-1].endswith("  atom/odd\\n\\udcffname.py")
