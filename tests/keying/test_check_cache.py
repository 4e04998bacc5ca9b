"""`lawkit check`'s cache: the same report as parsing every file, from what earlier runs learnt."""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import Workspace
from lawkit.keying import check as check_module
from lawkit.keying import checkcache
from lawkit.keying.check import check_workspace
from lawkit.keying.checkcache import CheckCache
from lawkit.keying.rekey import rekey
from lawkit.lawfiles import lawfile
from testing.workspaces import make_engine, make_workspace

runner = CliRunner()


def _mixed_workspace(root: Path) -> Workspace:
    """Files with every kind of problem: stale, invalid, unexplained, body-edited, duplicate."""
    ws = make_workspace(root, 8, stale=True)
    laws = root / "laws"
    (laws / "cell00001.yaml").write_text("schema: lawkit/1\nhost: [\n")
    text = (laws / "cell00002.yaml").read_text()
    (laws / "cell00002.yaml").write_text(text.replace("schedule_s", "schedule_seconds"))
    text = (laws / "cell00003.yaml").read_text()
    (laws / "cell00003.yaml").write_text(text.replace('crs00003', 'crs00004'))
    (laws / "sub").mkdir()
    (laws / "sub" / "nested.yaml").write_text(
        (laws / "cell00005.yaml").read_text().replace("crs00005", "nested"))
    return ws


def _check(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["check", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout


def _cache_files(home: Path) -> list[Path]:
    folder = home / ".cache" / "lawkit"
    return sorted(folder.glob("check-*.json")) if folder.exists() else []


def test_a_cached_check_prints_exactly_what_parsing_every_file_prints(tmp_path: Path) -> None:
    _mixed_workspace(tmp_path)
    parsed = _check("--no-cache")
    assert parsed[0] == 1
    assert "body-edited" in parsed[1] and "duplicate" in parsed[1] and "invalid" in parsed[1]
    assert _check() == parsed  # fills the cache
    assert _check() == parsed  # answered by it
    for fmt in ("json", "github"):
        assert _check("--format", fmt) == _check("--format", fmt, "--no-cache")


def test_the_cache_answers_without_parsing_and_staleness_follows_the_engine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_workspace(tmp_path, 5)
    first = check_workspace(ws, cache=CheckCache(ws.laws))
    first_cache = CheckCache(ws.laws)
    check_workspace(ws, cache=first_cache)
    first_cache.save()

    def parse_nothing(*_args: object) -> None:
        raise AssertionError("a file was parsed although the cache knows it")

    monkeypatch.setattr(check_module, "file_facts", parse_nothing)
    assert first.ok
    assert check_workspace(ws, cache=CheckCache(ws.laws)) == first
    make_engine(ws.root / "engine", {"atom/new.py": b"x = 1\n"})  # the digest moves
    moved = check_workspace(ws, cache=CheckCache(ws.laws))
    assert [p.kind for p in moved.problems] == ["stale"] * 5
    assert moved.problems[0].message == f"names {first.digest}, the engine is at {moved.digest}"


def test_an_edited_file_is_read_afresh(tmp_path: Path) -> None:
    make_workspace(tmp_path, 3)
    assert _check()[0] == 0
    law = tmp_path / "laws" / "cell00001.yaml"
    law.write_text(law.read_text() + "extra: [\n")
    code, out = _check()
    assert code == 1
    assert out.startswith("laws/cell00001.yaml:")
    assert "invalid: not valid YAML" in out


def test_a_renamed_file_is_shown_under_its_new_name(tmp_path: Path) -> None:
    make_workspace(tmp_path, 2, provenance="none")
    assert "laws/cell00000.yaml:6: unexplained" in _check()[1]
    (tmp_path / "laws" / "cell00000.yaml").rename(tmp_path / "laws" / "renamed.yaml")
    out = _check()[1]
    assert "laws/renamed.yaml:6: unexplained" in out
    assert "cell00000" not in out


def test_check_never_writes_into_the_workspace_and_no_cache_writes_nothing(
        tmp_path: Path) -> None:
    make_workspace(tmp_path / "ws", 3, stale=True)
    os.chdir(tmp_path / "ws")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert _check("--no-cache")[0] == 1
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert _check()[0] == 1
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    new = [p for p in after if p not in before]
    assert new and all(p.parts[:2] == ("home", ".cache") for p in new)


@pytest.mark.parametrize("garbage", [
    b"\x00\xff not json", b"[]", b'{"format": 1}', b"[" * 100_000,
    b'{"format": 1, "code": "x", "run": 1, "entries": {}}',
])
def test_a_damaged_or_foreign_cache_is_ignored_and_replaced(tmp_path: Path,
                                                             garbage: bytes) -> None:
    _mixed_workspace(tmp_path)
    expected = _check("--no-cache")
    assert _check() == expected
    [cache] = _cache_files(tmp_path / "home")
    cache.write_bytes(garbage)
    assert _check() == expected
    assert json.loads(cache.read_text())["format"] == checkcache.FORMAT


def test_damaged_entries_are_parsed_again(tmp_path: Path) -> None:
    _mixed_workspace(tmp_path)
    expected = _check("--no-cache")
    _check()
    [cache] = _cache_files(tmp_path / "home")
    document = json.loads(cache.read_text())
    for i, name in enumerate(document["entries"]):
        document["entries"][name] = [] if i % 2 else {"named": 1}
    cache.write_text(json.dumps(document))
    assert _check() == expected


def test_a_cache_folder_that_cannot_be_written_is_ignored(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    make_workspace(tmp_path / "ws", 3, stale=True)
    os.chdir(tmp_path / "ws")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be\n")
    monkeypatch.setenv("LAWKIT_CACHE_DIR", str(blocker / "lawkit"))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1 and result.exception is not None
    assert isinstance(result.exception, SystemExit)
    assert "stale" in result.stdout and result.stderr == ""


def test_lawkit_cache_dir_and_xdg_cache_home_choose_the_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_workspace(tmp_path / "ws", 2)
    os.chdir(tmp_path / "ws")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _check()[0] == 0
    assert list((tmp_path / "xdg" / "lawkit").glob("check-*.json"))
    monkeypatch.setenv("LAWKIT_CACHE_DIR", str(tmp_path / "mine"))
    assert _check()[0] == 0
    assert list((tmp_path / "mine").glob("check-*.json"))


def test_new_lawkit_code_drops_the_cache(workspace: Workspace,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cache = CheckCache(workspace.laws)
    check_workspace(workspace, cache=cache)
    cache.save()
    entry = CheckCache.entry("laws/cell00000.yaml", "atom",
                             (workspace.laws / "cell00000.yaml").read_bytes())
    assert CheckCache(workspace.laws).get(entry) is not None
    monkeypatch.setattr(checkcache, "_code_fingerprint", lambda: "another lawkit")
    assert CheckCache(workspace.laws).get(entry) is None


def test_switching_branches_back_finds_the_first_side_still_cached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_workspace(tmp_path, 4)
    side_a = {p: p.read_bytes() for p in ws.laws.glob("*.yaml")}
    for text in (side_a, {p: raw.replace(b"crs", b"abc") for p, raw in side_a.items()}):
        for path, raw in text.items():
            path.write_bytes(raw)
        cache = CheckCache(ws.laws)
        check_workspace(ws, cache=cache)
        cache.save()
    for path, raw in side_a.items():
        path.write_bytes(raw)
    monkeypatch.setattr(check_module, "file_facts", lambda *_: pytest.fail("parsed"))
    assert check_workspace(ws, cache=CheckCache(ws.laws)).ok


def test_old_entries_are_dropped_beyond_three_times_the_files(workspace: Workspace) -> None:
    law = workspace.laws / "cell00000.yaml"
    original = law.read_text()
    for i in range(10):
        law.write_text(original + f"# edit {i}\n")
        cache = CheckCache(workspace.laws)
        check_workspace(workspace, cache=cache)
        cache.save()
    stored = json.loads(cache.path.read_text())["entries"]
    assert len(stored) == 2 + checkcache.KEEP_OTHERS * 2


@pytest.mark.usefixtures("workspace")
def test_a_save_removes_the_temps_of_saves_killed_over_an_hour_ago(tmp_path: Path) -> None:
    folder = tmp_path / "home" / ".cache" / "lawkit"
    folder.mkdir(parents=True)
    old, recent = folder / ".check-killed.tmp", folder / ".check-saving-now.tmp"
    for temp in (old, recent):
        temp.write_text("{")
    hours_ago = os.stat(old).st_mtime - checkcache.ABANDONED_AFTER_S - 60
    os.utime(old, (hours_ago, hours_ago))
    assert _check()[0] == 0
    assert not old.exists() and recent.exists()
    assert len(_cache_files(tmp_path / "home")) == 1


# -- rekey and the cache ---------------------------------------------------------------------

def _labels_last(text: str) -> str:
    lines = text.splitlines(keepends=True)
    labels = next(line for line in lines if line.startswith("labels:"))
    return "".join(line for line in lines if line is not labels) + labels


def _key_last_in_host(text: str) -> str:
    """host's `key` after its laws and provenance (host is the file's last section)."""
    key = text[text.index("  key:\n"):text.index("  laws:\n")]
    return text.replace(key, "", 1) + key


STYLES: dict[str, Callable[[str], bytes]] = {
    "as fit writes it": str.encode,
    "CRLF": lambda text: text.replace("\n", "\r\n").encode(),
    "BOM": lambda text: b"\xef\xbb\xbf" + text.encode(),
    "labels after host": lambda text: _labels_last(text).encode(),
    "key last in host": lambda text: _key_last_in_host(text).encode(),
    "no labels": lambda text: "".join(line for line in text.splitlines(keepends=True)
                                      if not line.startswith("labels:")).encode(),
    "no final newline": lambda text: text.rstrip("\n").encode(),
    "comments": lambda text: text.replace("host:\n", "host:  # priced\n# about the key\n").encode(),
}


def _styled_workspace(root: Path, *, stale: bool, provenance: str = "fit") -> Workspace:
    ws = make_workspace(root, len(STYLES), stale=stale, provenance=provenance)
    for path, style in zip(sorted(ws.laws.glob("*.yaml")), STYLES.values(), strict=True):
        path.write_bytes(style(path.read_text()))
    return ws


def _parse_nothing(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("a law file was parsed although the cache knows it")


@pytest.mark.parametrize("adopt", [False, True])
def test_the_check_after_a_rekey_is_answered_by_what_rekey_put_in_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, adopt: bool) -> None:
    ws = _styled_workspace(tmp_path, stale=not adopt, provenance="none" if adopt else "fit")
    twin = ws.laws / "cell00003.yaml"  # labels after host: a duplicate names their new line
    twin.write_bytes(twin.read_bytes().replace(b"crs00003", b"crs00000"))
    assert _check()[0] == 1  # stale or unexplained
    args = ["rekey", "--why", "a docstring changed", *(["--adopt"] if adopt else [])]
    assert runner.invoke(app, args).exit_code == 0
    make_engine(ws.root / "engine", {"atom/later.py": b"x = 2\n"})  # stale: each key's line
    expected = _check("--no-cache")
    expected_json = _check("--format", "json", "--no-cache")
    assert expected[1].count(": stale: ") == len(STYLES), expected
    assert expected[1].count(": duplicate: ") == 1, expected
    monkeypatch.setattr(check_module, "file_facts", _parse_nothing)
    assert _check() == expected
    assert _check("--format", "json") == expected_json


def test_a_rekey_of_files_the_cache_vouches_for_writes_the_same_bytes_without_validating(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = _styled_workspace(tmp_path / "cold", stale=True)
    warm = _styled_workspace(tmp_path / "warm", stale=True)
    cache = CheckCache(warm.laws)
    check_workspace(warm, cache=cache)
    cache.save()
    at = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)
    rekey(cold, why="same", at=at)
    monkeypatch.setattr(lawfile, "parse", _parse_nothing)
    rekey(warm, why="same", at=at, cache=CheckCache(warm.laws))
    for path in sorted(cold.laws.glob("*.yaml")):
        assert (warm.laws / path.name).read_bytes() == path.read_bytes(), path.name


@pytest.mark.usefixtures("stale_workspace")
def test_a_file_whose_cached_facts_hold_a_problem_is_refused_as_without_the_cache(
        tmp_path: Path) -> None:
    law = tmp_path / "laws" / "cell00001.yaml"
    law.write_text(law.read_text().replace("0.0002174046967242549", "0.0003"))  # by hand
    assert "body-edited" in _check()[1]
    cached = runner.invoke(app, ["rekey", "--why", "x"])
    (Path.home() / ".cache").rename(Path.home() / "moved")
    uncached = runner.invoke(app, ["rekey", "--why", "x"])
    assert cached.exit_code == uncached.exit_code == 2
    assert cached.stderr == uncached.stderr
    assert "edited by hand" in cached.stderr
