"""src_digest/1 on a work tree: docs/digest.md's test vector, the edge cases, its invariants."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import random
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import src_digest
from src_digest import (
    DigestError,
    FileEntry,
    Manifest,
    diff_manifests,
    host_key_of,
    manifest_of,
)


def expected_digest(files: Mapping[bytes, bytes], length: int = 8) -> str:
    """docs/digest.md written out by hand: relpath -> content of the files that count."""
    h = hashlib.sha256(b"src_digest/1\n")
    for relpath in sorted(files):
        h.update(relpath + b"\0" + hashlib.sha256(files[relpath]).digest())
    return h.hexdigest()[:length]


def write(root: Path | bytes, relpath: bytes, content: bytes) -> None:
    """Write a file at a bytes relpath (any bytes a file name can hold), folders included."""
    path = os.path.join(os.fsencode(root), relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)


def symlink(root: Path, relpath: str, target: str) -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "engine"
    path.mkdir()
    return path


def test_design_test_vector_digests_to_8927e824(root: Path) -> None:
    write(root, b"atom/__init__.py", b"")
    write(root, b"atom/engine/step.py", b"x = 1\n")
    write(root, b"atom/engine/notes.txt", b"ignored")
    write(root, b"atom/__pycache__/step.cpython-311.pyc", b"ignored")
    by_hand = hashlib.sha256(
        b"src_digest/1\n"
        + b"atom/__init__.py\0"
        + hashlib.sha256(b"").digest()
        + b"atom/engine/step.py\0"
        + hashlib.sha256(b"x = 1\n").digest()
    ).hexdigest()[:8]

    assert host_key_of(root) == "8927e824" == by_hand
    assert host_key_of(str(root)) == host_key_of(os.fsencode(root)) == "8927e824"


def test_manifest_lists_each_hashed_file_with_its_sha256_in_byte_order(root: Path) -> None:
    write(root, b"atom/engine/step.py", b"x = 1\n")
    write(root, b"atom/__init__.py", b"")
    write(root, b"atom/Z.py", b"z")

    manifest = manifest_of(root)

    assert [e.relpath for e in manifest.entries] == [
        b"atom/Z.py",
        b"atom/__init__.py",
        b"atom/engine/step.py",
    ]
    step_sha = hashlib.sha256(b"x = 1\n").hexdigest()
    assert manifest.lines()[2] == f"{step_sha}  atom/engine/step.py"
    assert manifest.entries[0].relpath_text == "atom/Z.py"
    assert manifest.entries[0].hexdigest == hashlib.sha256(b"z").hexdigest()
    assert len(manifest) == 3
    assert manifest.digest() == host_key_of(root)


@pytest.mark.parametrize(
    ("target", "make_target"),
    [
        ("engine/step.py", True),  # a file
        ("engine", True),  # a folder
        ("../outside/nowhere.py", False),  # nothing
    ],
)
def test_symlink_named_like_a_pattern_is_hashed_as_its_target_string(
    root: Path, target: str, make_target: bool
) -> None:
    write(root, b"atom/engine/step.py", b"x = 1\n")
    symlink(root, "atom/x.py", target)

    assert host_key_of(root) == expected_digest(
        {b"atom/engine/step.py": b"x = 1\n", b"atom/x.py": target.encode()}
    )
    assert manifest_of(root).entries[1] == FileEntry(
        b"atom/x.py", hashlib.sha256(target.encode()).digest()
    )


def test_symlinked_folder_is_not_walked(root: Path, tmp_path: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(tmp_path, b"elsewhere/b.py", b"b")
    symlink(root, "atom/linked", str(tmp_path / "elsewhere"))
    symlink(root, "atom/self", ".")

    assert host_key_of(root) == expected_digest({b"atom/a.py": b"a"})


def test_folder_named_like_a_pattern_is_walked_and_never_hashed(root: Path) -> None:
    write(root, b"atom/y.py/inner.py", b"inner")
    write(root, b"atom/y.py/notes.txt", b"not hashed")

    assert [e.relpath for e in manifest_of(root).entries] == [b"atom/y.py/inner.py"]
    assert host_key_of(root) == expected_digest({b"atom/y.py/inner.py": b"inner"})


def test_pycache_folders_are_skipped_at_any_depth(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/__pycache__/a.py", b"skipped")
    write(root, b"atom/x/y/z/__pycache__/deep.py", b"skipped")
    write(root, b"atom/x/y/z/__pycache__/sub/deeper.py", b"skipped")
    write(root, b"atom/x/y/z/kept.py", b"kept")
    write(root, b"atom/not__pycache__/kept.py", b"kept too")

    assert host_key_of(root) == expected_digest(
        {
            b"atom/a.py": b"a",
            b"atom/x/y/z/kept.py": b"kept",
            b"atom/not__pycache__/kept.py": b"kept too",
        }
    )


def test_a_file_named_pycache_is_hashed_when_a_pattern_matches_it(root: Path) -> None:
    write(root, b"atom/__pycache__", b"a file, not a folder")

    assert host_key_of(root, include=["*"]) == expected_digest(
        {b"atom/__pycache__": b"a file, not a folder"}
    )


def test_non_utf8_file_names_are_hashed_by_their_bytes(root: Path) -> None:
    write(root, b"atom/caf\xe9.py", b"latin-1 name")
    write(root, b"atom/caf\xc3\xa9.py", b"utf-8 name")
    write(root, b"atom/\xff\xfe/m.py", b"in an undecodable folder")

    manifest = manifest_of(root)

    assert [e.relpath for e in manifest.entries] == [
        b"atom/caf\xc3\xa9.py",
        b"atom/caf\xe9.py",
        b"atom/\xff\xfe/m.py",
    ]
    assert manifest.entries[1].relpath_text == os.fsdecode(b"atom/caf\xe9.py")
    assert manifest.lines()[0].endswith("  atom/café.py")
    assert manifest.digest() == expected_digest(
        {
            b"atom/caf\xe9.py": b"latin-1 name",
            b"atom/caf\xc3\xa9.py": b"utf-8 name",
            b"atom/\xff\xfe/m.py": b"in an undecodable folder",
        }
    )


def test_include_patterns_are_case_sensitive_base_name_patterns(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/B.PY", b"b")
    write(root, b"atom/k.pyi", b"k")

    assert host_key_of(root, include=["*.py", "*.pyi"]) == expected_digest(
        {b"atom/a.py": b"a", b"atom/k.pyi": b"k"}
    )
    # A base-name pattern never matches across '/': 'atom/*.py' names no base name.
    with pytest.raises(DigestError):
        host_key_of(root, include=["atom/*.py"])


def test_crlf_content_is_hashed_exactly_as_stored(root: Path) -> None:
    write(root, b"atom/crlf.py", b"x = 1\r\ny = 2\r\n")

    assert host_key_of(root) == expected_digest({b"atom/crlf.py": b"x = 1\r\ny = 2\r\n"})
    assert host_key_of(root) != expected_digest({b"atom/crlf.py": b"x = 1\ny = 2\n"})


def test_exclude_star_crosses_slashes_and_matches_the_root_relative_path(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/gen/deep/er/gen_x.py", b"generated")
    write(root, b"atom/tests/test_a.py", b"test")
    write(root, b"atom/other/gen_y.py", b"kept: not below atom/gen/")

    digest = host_key_of(root, exclude=["atom/gen/*", "*/test_*.py"])

    assert digest == expected_digest(
        {b"atom/a.py": b"a", b"atom/other/gen_y.py": b"kept: not below atom/gen/"}
    )


def test_several_packages_are_hashed_together_and_a_missing_one_adds_nothing(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"plugins/nested/p.py", b"p")
    write(root, b"setup.py", b"outside every package")

    digest = host_key_of(root, packages=["atom", "plugins/nested/", "./missing"])

    assert digest == expected_digest({b"atom/a.py": b"a", b"plugins/nested/p.py": b"p"})
    assert host_key_of(root, packages=["atom", "atom"]) == expected_digest({b"atom/a.py": b"a"})
    assert host_key_of(root, packages=["."]) == expected_digest(
        {b"atom/a.py": b"a", b"plugins/nested/p.py": b"p", b"setup.py": b"outside every package"}
    )


def test_a_symlinked_package_folder_is_not_walked_like_git(root: Path, tmp_path: Path) -> None:
    write(tmp_path, b"real/a.py", b"a")
    write(root, b"other/b.py", b"b")
    symlink(root, "atom", str(tmp_path / "real"))

    with pytest.raises(DigestError, match="no file matched"):
        host_key_of(root)
    assert host_key_of(root, packages=["atom", "other"]) == expected_digest({b"other/b.py": b"b"})


def test_a_package_naming_a_file_hashes_that_file(root: Path) -> None:
    write(root, b"tools/run.py", b"run")

    assert host_key_of(root, packages=["tools/run.py"]) == expected_digest(
        {b"tools/run.py": b"run"}
    )


def test_fifo_named_like_a_pattern_is_not_a_regular_file_and_is_skipped(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    os.mkfifo(root / "atom" / "pipe.py")

    assert host_key_of(root) == expected_digest({b"atom/a.py": b"a"})


def test_no_file_matched_is_an_error_naming_include_packages_and_root(root: Path) -> None:
    write(root, b"atom/notes.txt", b"no python here")

    with pytest.raises(DigestError) as info:
        host_key_of(root)

    message = str(info.value)
    assert "no file matched include ['*.py'] under packages ['atom']" in message
    assert str(root) in message
    assert "\n" not in message


def test_no_package_folder_at_all_is_an_error_that_says_so(root: Path) -> None:
    with pytest.raises(DigestError, match=r"none of the packages \['atom', 'core'\] exists"):
        host_key_of(root, packages=["atom", "core"])


def test_a_missing_root_is_an_error_that_names_it(tmp_path: Path) -> None:
    with pytest.raises(DigestError, match=r"the digest root .*/nowhere is not a folder"):
        host_key_of(tmp_path / "nowhere")


def test_an_empty_manifest_is_allowed_only_when_asked_and_never_has_a_digest(root: Path) -> None:
    manifest = manifest_of(root, allow_empty=True)

    assert manifest.entries == ()
    with pytest.raises(DigestError, match="no file matched"):
        manifest.digest()


@pytest.mark.parametrize("length", [0, 3, 65, 100, True, 8.0])
def test_digest_length_outside_4_to_64_is_an_error(root: Path, length: Any) -> None:
    write(root, b"atom/a.py", b"a")

    with pytest.raises(DigestError, match="from 4 to 64"):
        host_key_of(root, length=length)
    with pytest.raises(DigestError, match="from 4 to 64"):
        manifest_of(root).digest(length)


def test_digest_length_4_and_64_are_prefixes_of_the_full_digest(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    full = expected_digest({b"atom/a.py": b"a"}, length=64)

    assert host_key_of(root, length=64) == full
    assert host_key_of(root, length=4) == full[:4]


@pytest.mark.parametrize("package", ["../outside", "/abs", "atom/../.."])
def test_a_package_outside_the_root_is_an_error(root: Path, package: str) -> None:
    with pytest.raises(DigestError, match="inside the digest root"):
        manifest_of(root, packages=[package])


def test_a_single_string_instead_of_a_list_is_a_type_error(root: Path) -> None:
    write(root, b"atom/a.py", b"a")

    with pytest.raises(TypeError):
        manifest_of(root, packages="atom")
    with pytest.raises(TypeError):
        manifest_of(root, include="*.py")


def test_an_unreadable_file_is_an_error_naming_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/secret.py", b"s")
    real_open = os.open

    def deny(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fsencode(path).endswith(b"secret.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)

    with pytest.raises(DigestError, match=r"cannot read .*atom/secret\.py: Permission denied"):
        host_key_of(root)


def test_an_unreadable_folder_is_an_error_naming_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/locked/b.py", b"b")
    real_scandir = os.scandir

    def deny(path: Any) -> Any:
        if os.fsencode(path).endswith(b"locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", deny)

    with pytest.raises(DigestError, match=r"cannot read folder .*atom/locked: Permission denied"):
        host_key_of(root)


@contextlib.contextmanager
def scandir_then(action: Any) -> Iterator[None]:
    """Patch os.scandir so that ``action(folder)`` runs after each folder is listed."""
    real_scandir = os.scandir

    def listed_then_changed(path: Any) -> Any:
        with real_scandir(path) as it:
            entries = list(it)
        action(os.fsencode(path))
        return contextlib.nullcontext(iter(entries))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "scandir", listed_then_changed)
        yield


def test_a_file_vanishing_during_the_walk_is_an_error_not_a_partial_digest(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/gone.py", b"g")

    def remove(folder: bytes) -> None:
        if folder.endswith(b"atom"):
            os.unlink(os.path.join(folder, b"gone.py"))

    with scandir_then(remove), pytest.raises(DigestError, match=r"atom/gone\.py"):
        host_key_of(root)


def test_a_folder_vanishing_during_the_walk_is_an_error(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/sub/b.py", b"b")

    def remove(folder: bytes) -> None:
        if folder.endswith(b"atom"):
            os.unlink(os.path.join(folder, b"sub", b"b.py"))
            os.rmdir(os.path.join(folder, b"sub"))

    with scandir_then(remove), pytest.raises(DigestError, match=r"cannot read folder .*atom/sub"):
        host_key_of(root)


def test_a_file_replaced_by_a_symlink_during_the_walk_is_an_error(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    write(root, b"atom/b.py", b"b")

    def swap(folder: bytes) -> None:
        if folder.endswith(b"atom"):
            os.unlink(os.path.join(folder, b"b.py"))
            os.symlink(b"a.py", os.path.join(folder, b"b.py"))

    with scandir_then(swap), pytest.raises(DigestError, match=r"atom/b\.py"):
        host_key_of(root)


def test_manifest_sorts_its_entries_and_rejects_duplicates() -> None:
    a, b = FileEntry(b"a.py", b"\0" * 32), FileEntry(b"b.py", b"\1" * 32)

    assert Manifest((b, a)).entries == (a, b)
    assert Manifest((b, a)) == Manifest((a, b))
    with pytest.raises(ValueError, match="duplicate"):
        Manifest((a, b, a))


def test_diff_manifests_names_added_removed_and_changed_files() -> None:
    def entry(path: bytes, content: bytes) -> FileEntry:
        return FileEntry(path, hashlib.sha256(content).digest())

    old = Manifest((entry(b"a.py", b"1"), entry(b"b.py", b"2"), entry(b"c\xe9.py", b"3")))
    new = Manifest((entry(b"a.py", b"1"), entry(b"b.py", b"changed"), entry(b"d.py", b"4")))

    diff = diff_manifests(old, new)

    assert diff.added == ("d.py",)
    assert diff.removed == (os.fsdecode(b"c\xe9.py"),)
    assert diff.changed == ("b.py",)
    assert not diff.is_empty
    assert diff_manifests(new, new).is_empty


def test_the_package_imports_nothing_but_the_standard_library() -> None:
    for module in Path(src_digest.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in sys.stdlib_module_names, f"{module.name}: {name}"


def test_the_git_half_loads_on_first_use_and_is_re_exported(root: Path) -> None:
    write(root, b"atom/a.py", b"a")
    # A work-tree digest (a pre-commit hook) never pays for importing the git half.
    script = (
        "import sys, src_digest; src_digest.host_key_of(sys.argv[1]); print(sorted(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True
    ).stdout
    assert "'src_digest'" in loaded
    assert "'src_digest.git'" not in loaded
    assert "'subprocess'" not in loaded
    for name in src_digest.__all__:
        assert getattr(src_digest, name) is not None, name
    assert sys.modules["src_digest.git"].manifest_at_rev is src_digest.manifest_at_rev
    with pytest.raises(AttributeError):
        src_digest.no_such_name  # noqa: B018


# Hypothesis: trees of a few folders and files; only *.py files outside __pycache__ count.

DIRS = st.lists(st.sampled_from(["pkg", "sub", "deep", "__pycache__", "y.py"]), max_size=3)
NAMES = st.sampled_from(["a.py", "b.py", "__init__.py", "c.PY", "notes.txt", "z.py"])
TREES = st.dictionaries(
    st.builds(lambda d, n: "/".join(["atom", *d, n]).encode(), DIRS, NAMES),
    st.binary(max_size=40),
    min_size=1,
    max_size=12,
).filter(lambda tree: not _file_folder_clash(tree))


def _file_folder_clash(tree: Mapping[bytes, bytes]) -> bool:
    folders = {p.rsplit(b"/", 1)[0] for p in tree}
    parents = {b"/".join(f.split(b"/")[: i + 1]) for f in folders for i in range(f.count(b"/") + 1)}
    return any(p in parents for p in tree)


def hashed(tree: Mapping[bytes, bytes]) -> dict[bytes, bytes]:
    """The files of a generated tree that src_digest/1 hashes with the defaults."""
    return {
        p: c
        for p, c in tree.items()
        if p.endswith(b".py") and b"__pycache__" not in p.split(b"/")[:-1]
    }


def build(base: Path, tree: Mapping[bytes, bytes], order: list[bytes]) -> Path:
    for relpath in order:
        write(base, relpath, tree[relpath])
    return base


@pytest.fixture(scope="module")
def fresh_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield lambda: tmp_path_factory.mktemp("tree")


@settings(max_examples=30, deadline=None)
@given(tree=TREES, seed=st.integers(0, 2**32 - 1))
def test_digest_is_the_hand_computation_whatever_the_creation_and_listing_order(
    fresh_dir: Any, tree: dict[bytes, bytes], seed: int
) -> None:
    rng = random.Random(seed)
    order = sorted(tree)
    first = build(fresh_dir(), tree, order)
    rng.shuffle(order)
    second = build(fresh_dir(), tree, order)
    real_scandir = os.scandir

    def shuffled(path: Any) -> Any:
        with real_scandir(path) as it:
            entries = list(it)
        rng.shuffle(entries)
        return contextlib.nullcontext(iter(entries))

    if not hashed(tree):
        with pytest.raises(DigestError):
            host_key_of(first)
        return
    digest = host_key_of(first)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "scandir", shuffled)
        shuffled_digest = host_key_of(second)

    assert digest == shuffled_digest == expected_digest(hashed(tree))


@settings(max_examples=30, deadline=None)
@given(tree=TREES, data=st.data())
def test_any_one_byte_change_of_a_hashed_file_changes_the_digest(
    fresh_dir: Any, tree: dict[bytes, bytes], data: st.DataObject
) -> None:
    candidates = sorted(p for p, c in hashed(tree).items() if c)
    if not candidates:
        return
    relpath = data.draw(st.sampled_from(candidates))
    content = tree[relpath]
    at = data.draw(st.integers(0, len(content) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != content[at]))
    base = build(fresh_dir(), tree, sorted(tree))
    before = host_key_of(base)

    write(base, relpath, content[:at] + bytes([byte]) + content[at + 1 :])

    assert host_key_of(base) != before


@settings(max_examples=30, deadline=None)
@given(tree=TREES, data=st.data())
def test_renaming_a_hashed_file_changes_the_digest(
    fresh_dir: Any, tree: dict[bytes, bytes], data: st.DataObject
) -> None:
    candidates = sorted(hashed(tree))
    if not candidates:
        return
    relpath = data.draw(st.sampled_from(candidates))
    folder = relpath.rsplit(b"/", 1)[0]
    new_name = data.draw(
        st.sampled_from([b"renamed.py", b"a2.py", b"A.py"]).filter(
            lambda n: folder + b"/" + n not in tree
        )
    )
    base = build(fresh_dir(), tree, sorted(tree))
    before = host_key_of(base)

    os.rename(
        os.path.join(os.fsencode(base), relpath), os.path.join(os.fsencode(base), folder, new_name)
    )

    assert host_key_of(base) != before
