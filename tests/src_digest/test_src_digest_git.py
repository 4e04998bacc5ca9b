"""src_digest/1 from git objects: the same digest as a checkout of the revision, no checkout."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import src_digest
from src_digest import (
    DigestError,
    GitObjectsError,
    TreeEntry,
    git_toplevel,
    host_key_of,
    ls_tree,
    manifest_at_rev,
    manifest_of,
    read_blobs,
    select_tree,
)
from testing.lawrepo import commit, git, init_repo


def write(base: Path, relpath: str | bytes, content: bytes) -> None:
    path = os.path.join(os.fsencode(base), os.fsencode(relpath))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)


def checkout(repo: Path, rev: str, where: Path) -> Path:
    """A fresh work tree of ``rev`` (symlinks and bytes as git checks them out)."""
    git(repo, "worktree", "add", "-q", "--detach", str(where), rev)
    return where


def build_history(engine: Path) -> list[str]:
    """Commits that add, change, rename and delete engine files under ``engine``.

    Each commit also holds files the digest must not see: a note, a __pycache__ file named
    like a module, a file outside the package; and ones it must: symlinks, CRLF, non-UTF-8.
    """
    repo = _repo_of(engine)
    revs = []
    write(engine, "atom/__init__.py", b"")
    write(engine, "atom/engine/step.py", b"x = 1\n")
    write(engine, "atom/engine/notes.txt", b"not hashed")
    write(engine, "atom/__pycache__/step.cpython-311.pyc", b"not hashed")
    write(engine, "atom/deep/__pycache__/stale.py", b"not hashed either")
    write(engine, "atom/crlf.py", b"a = 1\r\nb = 2\r\n")
    write(engine, "atom/y.py/inner.py", b"in a folder named like a module")
    write(engine, "setup.py", b"outside the package")
    os.symlink("engine/step.py", engine / "atom" / "link.py")
    os.symlink("../nowhere.py", engine / "atom" / "dangling.py")
    os.symlink("engine", engine / "atom" / "enginedir")  # a symlinked folder: not walked
    os.symlink("engine", engine / "atom" / "enginedir.py")  # named like a module: hashed
    revs.append(commit(repo, {}, "add the engine"))

    write(engine, "atom/engine/step.py", b"x = 2\n")
    revs.append(commit(repo, {}, "change step"))

    git(repo, "mv", str(engine / "atom/engine/step.py"), str(engine / "atom/engine/stage.py"))
    revs.append(commit(repo, {}, "rename step to stage"))

    os.unlink(engine / "atom" / "crlf.py")
    write(engine, b"atom/caf\xe9.py", b"a non-UTF-8 name")
    write(engine, "atom/engine/new.py", b"new = True\n")
    revs.append(commit(repo, {}, "delete crlf, add files"))
    return revs


def _repo_of(path: Path) -> Path:
    while not (path / ".git").exists():
        path = path.parent
    return path


def assert_same_as_checkout(
    repo: Path, rev: str, checkout_root: Path, prefix: str = "", **rules: Sequence[str]
) -> str:
    from_git = manifest_at_rev(repo, rev, prefix=prefix, **rules)
    from_checkout = manifest_of(checkout_root, **rules)
    assert from_git == from_checkout, src_digest.diff_manifests(from_checkout, from_git)
    assert from_git.digest() == host_key_of(checkout_root, **rules)
    return from_git.digest()


def test_digest_at_each_revision_equals_the_digest_of_its_checkout(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", config=None)
    revs = build_history(repo)

    digests = []
    for i, rev in enumerate(revs):
        work = checkout(repo, rev, tmp_path / f"wt{i}")
        digests.append(assert_same_as_checkout(repo, rev, work))
        assert_same_as_checkout(repo, rev, work, exclude=["atom/engine/*"])
        assert_same_as_checkout(repo, rev, work, include=["*.py", "*.txt"])

    assert len(set(digests)) == len(revs)  # every commit changed hashed content


def test_the_first_revision_hashes_exactly_the_expected_files(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", config=None)
    first = build_history(repo)[0]

    relpaths = [e.relpath for e in manifest_at_rev(repo, first).entries]

    assert relpaths == [
        b"atom/__init__.py",
        b"atom/crlf.py",
        b"atom/dangling.py",
        b"atom/engine/step.py",
        b"atom/enginedir.py",
        b"atom/link.py",
        b"atom/y.py/inner.py",
    ]
    by_path = {e.relpath: e for e in manifest_at_rev(repo, first).entries}
    # Symlinks are their target strings; CRLF is hashed as stored.
    assert by_path[b"atom/link.py"] == src_digest.FileEntry(
        b"atom/link.py", hashlib.sha256(b"engine/step.py").digest()
    )
    assert by_path[b"atom/crlf.py"].hexdigest == hashlib.sha256(b"a = 1\r\nb = 2\r\n").hexdigest()


def test_digest_at_a_revision_with_the_engine_in_a_subfolder(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", config=None)
    write(repo, "atom/decoy.py", b"an atom/ at the top level is not the engine's")
    revs = build_history(repo / "examples" / "engine")

    top, prefix = git_toplevel(repo / "examples" / "engine")

    assert (Path(top), prefix) == (repo.resolve(), "examples/engine")
    for i, rev in enumerate(revs):
        work = checkout(repo, rev, tmp_path / f"wt{i}")
        assert_same_as_checkout(Path(top), rev, work / "examples" / "engine", prefix=prefix)
    relpaths = [e.relpath for e in manifest_at_rev(top, revs[-1], prefix=prefix + "/").entries]
    assert relpaths[0] == b"atom/__init__.py"
    assert b"atom/decoy.py" not in relpaths


def test_git_toplevel_at_the_top_level_has_an_empty_prefix(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", config=None)

    assert git_toplevel(repo) == (str(repo.resolve()), "")


def test_a_submodule_without_its_objects_fails_naming_it_never_skipped(tmp_path: Path) -> None:
    # docs/digest.md: the work tree walk hashes a submodule's checked-out files, so --rev
    # reads them from the submodule's own objects; with none here it fails, rather than give
    # the digest of a checkout without them (tests/src_digest/test_digest_submodules.py: with them).
    from src_digest import SubmoduleError

    repo = init_repo(tmp_path / "repo", config=None)
    write(repo, "atom/a.py", b"a")
    commit(repo, {}, "one file")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},atom/vendored.py")
    git(repo, "commit", "-q", "-m", "a submodule named like a module")

    entries = ls_tree(repo, "HEAD", ["atom"])

    assert TreeEntry("160000", head, b"atom/vendored.py") in entries
    with pytest.raises(SubmoduleError, match=r"submodule atom/vendored\.py"):
        manifest_at_rev(repo, "HEAD")


def test_manifest_at_rev_runs_git_twice_whatever_the_file_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = init_repo(tmp_path / "repo", config=None)
    for i in range(60):
        write(repo, f"atom/m{i // 10}/f{i}.py", f"v = {i}\n".encode())
    commit(repo, {}, "sixty files")
    calls: list[list[Any]] = []
    real_run = subprocess.run

    def counting(args: Any, *rest: Any, **kwargs: Any) -> Any:
        calls.append(list(args))
        return real_run(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)

    assert len(manifest_at_rev(repo, "HEAD")) == 60
    assert [c[3:5] for c in calls] == [["--literal-pathspecs", "ls-tree"], ["cat-file", "--batch"]]


def test_read_blobs_reads_many_blobs_in_one_process_by_the_ids_asked(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", config=None)
    write(repo, "a.py", b"")
    write(repo, "b.bin", bytes(range(256)) * 3 + b"\n\n")
    commit(repo, {}, "two blobs")
    oids = {e.path: e.oid for e in ls_tree(repo, "HEAD")}

    blobs = read_blobs(repo, [oids[b"b.bin"], oids[b"a.py"], oids[b"b.bin"]])

    assert blobs == {oids[b"a.py"]: b"", oids[b"b.bin"]: bytes(range(256)) * 3 + b"\n\n"}
    assert read_blobs(repo, []) == {}
    with pytest.raises(GitObjectsError, match=r"cannot read object 0{40}"):
        read_blobs(repo, ["0" * 40])


def test_select_tree_applies_the_work_tree_rules_to_ls_tree_entries() -> None:
    entries = [
        TreeEntry("100644", "1" * 40, b"eng/atom/a.py"),
        TreeEntry("100755", "2" * 40, b"eng/atom/__pycache__/b.py"),
        TreeEntry("120000", "3" * 40, b"eng/atom/link.py"),
        TreeEntry("160000", "4" * 40, b"eng/atom/sub.py"),
        TreeEntry("100644", "5" * 40, b"eng/atomic/c.py"),
        TreeEntry("100644", "6" * 40, b"eng/atom/notes.txt"),
        TreeEntry("100644", "7" * 40, b"atom/top.py"),
    ]

    selected = select_tree(entries, prefix="eng")

    assert selected == [(b"atom/a.py", entries[0]), (b"atom/link.py", entries[2])]


def test_a_bad_revision_is_a_git_error_naming_it(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", config=None)
    write(repo, "atom/a.py", b"a")
    commit(repo, {}, "one file")

    with pytest.raises(GitObjectsError, match="'no-such-rev'") as info:
        manifest_at_rev(repo, "no-such-rev")
    assert "\n" not in str(info.value)
    with pytest.raises(GitObjectsError, match="'--output=x'"):
        manifest_at_rev(repo, "--output=x")
    assert isinstance(info.value, DigestError)


def test_a_revision_without_the_package_is_an_error_unless_empty_is_allowed(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo", config=None)
    write(repo, "README", b"no engine yet")
    first = commit(repo, {}, "no engine")

    with pytest.raises(DigestError, match=r"none of the packages exists.*at revision '[0-9a-f]+'"):
        manifest_at_rev(repo, first)
    assert manifest_at_rev(repo, first, allow_empty=True).entries == ()


def test_git_toplevel_outside_a_repository_is_a_git_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plain").mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))

    with pytest.raises(GitObjectsError, match="plain is not inside a git work tree"):
        git_toplevel(tmp_path / "plain")


def test_a_missing_git_is_a_git_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    with pytest.raises(GitObjectsError, match="git is not installed"):
        manifest_at_rev(tmp_path, "HEAD")
