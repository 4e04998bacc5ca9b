"""The cache of installed files' sha256 is used only where sound: a file rewritten with its old
mtime put back (``cp -p``, an image layer) is hashed again, and one written just before it was
hashed is not kept."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from lawkit.footprint import hashcache
from lawkit.footprint.hashcache import FileHashes


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled at once (the tests cannot wait out the racy window)."""
    monkeypatch.setattr(hashcache, "RACY_NS", 0)


def _forge(cache: Path, path: Path, sha: str) -> None:
    """Make the cached sha256 of ``path`` say ``sha`` (only a cache read gives it back)."""
    doc = json.loads((cache / hashcache.NAME).read_text())
    doc["files"][os.path.realpath(path)][5] = sha
    (cache / hashcache.NAME).write_text(json.dumps(doc))


def test_an_unchanged_file_is_not_read_again(tmp_path: Path, settled: None) -> None:
    lib = tmp_path / "libtorch.so"
    lib.write_bytes(b"\x7fELF one")
    hashes = FileHashes(tmp_path / "cache")
    assert hashes.sha256(str(lib)) == _sha(b"\x7fELF one")
    hashes.save()
    _forge(tmp_path / "cache", lib, "f" * 64)
    assert FileHashes(tmp_path / "cache").sha256(str(lib)) == "f" * 64


def test_a_file_rewritten_with_its_mtime_kept_is_hashed_again(tmp_path: Path,
                                                              settled: None) -> None:
    lib = tmp_path / "libtorch.so"
    lib.write_bytes(b"\x7fELF one")
    hashes = FileHashes(tmp_path / "cache")
    hashes.sha256(str(lib))
    hashes.save()
    _forge(tmp_path / "cache", lib, "f" * 64)
    st = lib.stat()
    lib.write_bytes(b"\x7fELF two")  # the same size, as a rebuild at one version can be
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))  # what cp -p does
    assert lib.stat().st_mtime_ns == st.st_mtime_ns
    assert FileHashes(tmp_path / "cache").sha256(str(lib)) == _sha(b"\x7fELF two")


def test_a_file_changed_just_before_it_was_hashed_is_not_kept(tmp_path: Path) -> None:
    lib = tmp_path / "libtorch.so"
    lib.write_bytes(b"\x7fELF one")
    hashes = FileHashes(tmp_path / "cache")
    assert hashes.sha256(str(lib)) == _sha(b"\x7fELF one")
    hashes.save()
    assert not (tmp_path / "cache" / hashcache.NAME).exists()


def test_an_unreadable_cache_is_ignored(tmp_path: Path, settled: None) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / hashcache.NAME).write_text("{not json")
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"x")
    hashes = FileHashes(tmp_path / "cache")
    assert hashes.sha256(str(lib)) == _sha(b"x")
    assert hashes.sha256(str(tmp_path / "gone.so")) is None
    hashes.save()
    assert json.loads((tmp_path / "cache" / hashcache.NAME).read_text())["format"] == 1


def test_the_hashes_live_in_the_cache_folder_check_uses(tmp_path: Path, settled: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """$LAWKIT_CACHE_DIR when set, else $XDG_CACHE_HOME/lawkit, as for check's cache."""
    lib = tmp_path / "libtorch.so"
    lib.write_bytes(b"\x7fELF one")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    hashes = FileHashes()
    hashes.sha256(str(lib))
    hashes.save()
    assert (tmp_path / "xdg" / "lawkit" / hashcache.NAME).is_file()
    monkeypatch.setenv("LAWKIT_CACHE_DIR", str(tmp_path / "mine"))
    hashes = FileHashes()
    hashes.sha256(str(lib))
    hashes.save()
    assert (tmp_path / "mine" / hashcache.NAME).is_file()
