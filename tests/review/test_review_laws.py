"""`lawkit review` on one law file at a time: what makes a change a rekey, and what does not.

Each test builds a small repository: a base commit, then a head commit that changes one law file
(and the engine, so that the digest moves), and reviews head against base.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.keying.review.lawchange import FileReview
from lawkit.keying.review.verify import ReviewReport, review
from lawkit.lawfiles.lawwrite import provenance_entry
from testing.lawrepo import (
    AT,
    DOCSTRING_EDIT,
    ENGINE,
    LAWS,
    REFITTED,
    WHY,
    adopted,
    body_of,
    commit,
    engine_digest,
    fit_entry,
    git,
    init_repo,
    law_text,
    line_of,
    rekeyed,
)

runner = CliRunner()

OLD = engine_digest(ENGINE)
NEW = engine_digest(ENGINE, DOCSTRING_EDIT)
LAW = "laws/a.yaml"


def review_one(tmp_path: Path, before: str | bytes | None, after: str | bytes | None,
               *, engine_edit: bool = True) -> tuple[ReviewReport, FileReview | None]:
    """Review a change of one law file (with the engine's docstring edit alongside)."""
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**ENGINE, **({LAW: before} if before is not None else {})}, "base")
    commit(repo, {**(DOCSTRING_EDIT if engine_edit else {}), LAW: after}, "head")
    report = review(load_workspace(cwd=repo), base)
    files = {r.path: r for r in report.files}
    return report, files.get(LAW)


def kinds(review_: FileReview) -> list[str]:
    return [f.kind for f in review_.findings]


def test_a_crlf_file_re_keyed_as_rekey_writes_it_is_a_rekey(tmp_path: Path) -> None:
    before = law_text(OLD, "a").replace("\n", "\r\n")
    _, r = review_one(tmp_path, before.encode(), rekeyed(before, OLD, NEW).encode())
    assert r is not None and (r.kind, kinds(r)) == ("rekey", [])


def test_a_file_without_a_final_newline_gets_one_in_a_rekey(tmp_path: Path) -> None:
    before = law_text(OLD, "a").rstrip("\n")
    _, r = review_one(tmp_path, before, rekeyed(before, OLD, NEW))
    assert r is not None and (r.kind, kinds(r)) == ("rekey", [])


def test_two_chained_rekeys_in_one_change_verify(tmp_path: Path) -> None:
    middle = rekeyed(law_text(OLD, "a"), OLD, "12345678")
    _, r = review_one(tmp_path, law_text(OLD, "a"), rekeyed(middle, "12345678", NEW))
    assert r is not None and (r.kind, kinds(r)) == ("rekey", [])


def test_a_rekey_to_a_digest_other_than_the_heads_is_stale(tmp_path: Path) -> None:
    after = rekeyed(law_text(OLD, "a"), OLD, "0badc0de")
    _, r = review_one(tmp_path, law_text(OLD, "a"), after)
    assert r is not None and r.kind == "rekey"
    assert kinds(r) == ["stale"]
    assert r.findings[0].line == line_of(after, "atom:")
    assert f"names atom 0badc0de, but the engine at head digests to {NEW}" in \
        r.findings[0].message


def test_a_rekey_with_an_empty_why_is_a_finding(tmp_path: Path) -> None:
    _, r = review_one(tmp_path, law_text(OLD, "a"), rekeyed(law_text(OLD, "a"), OLD, NEW,
                                                            why=" "))
    assert r is not None and r.kind == "rekey" and kinds(r) == ["rekey-why"]


def test_a_rekey_that_also_edits_a_comment_is_a_hand_edit_naming_the_line(tmp_path: Path
                                                                          ) -> None:
    after = rekeyed(law_text(OLD, "a"), OLD, NEW).replace("# host laws", "# the host laws")
    _, r = review_one(tmp_path, law_text(OLD, "a"), after)
    assert r is not None and (r.kind, kinds(r)) == ("hand-edit", ["hand-edit"])
    assert r.findings[0].line == 1
    assert "lines other than the key and the new provenance entries changed: line 1 changed" \
        in r.findings[0].message


def test_a_key_edited_by_hand_without_an_entry_is_a_hand_edit(tmp_path: Path) -> None:
    before = law_text(OLD, "a")
    after = before.replace(f'"{OLD}"', f'"{NEW}"', 1)
    _, r = review_one(tmp_path, before, after)
    assert r is not None and kinds(r) == ["hand-edit"]
    assert "changed with no provenance entry appended: line 6 changed" in r.findings[0].message


def test_rewriting_the_provenance_history_is_a_hand_edit(tmp_path: Path) -> None:
    before = law_text(OLD, "a")
    after = rekeyed(before.replace('records: 18234', 'records: 99999'), OLD, NEW)
    _, r = review_one(tmp_path, before, after)
    assert r is not None and kinds(r) == ["hand-edit"]
    assert "provenance is append-only, but entry 1" in r.findings[0].message


def test_a_refit_whose_laws_were_edited_after_the_fit_is_a_finding(tmp_path: Path) -> None:
    after = law_text(NEW, "a", laws=REFITTED, provenance=[fit_entry(OLD), fit_entry(NEW, LAWS)])
    _, r = review_one(tmp_path, law_text(OLD, "a"), after)
    assert r is not None and r.kind == "refit" and kinds(r) == ["refit-body"]
    assert f"but the newest fit entry vouches for {body_of(LAWS)}" in r.findings[0].message


def test_a_refit_whose_fit_digest_is_not_the_key_is_a_finding(tmp_path: Path) -> None:
    after = law_text(NEW, "a", laws=REFITTED,
                     provenance=[fit_entry(OLD), fit_entry("0badc0de", REFITTED)])
    _, r = review_one(tmp_path, law_text(OLD, "a"), after)
    assert r is not None and r.kind == "refit" and kinds(r) == ["refit-digest"]


def test_an_adopt_naming_another_digest_is_a_finding(tmp_path: Path) -> None:
    before = law_text(NEW, "a", provenance=[])
    after = adopted(before, NEW).replace(f'digest: "{NEW}"', 'digest: "0badc0de"')
    _, r = review_one(tmp_path, before, after)
    assert r is not None and r.kind == "adopt"
    assert kinds(r) == ["adopt-digest"]


def test_a_new_law_file_without_provenance_is_unexplained(tmp_path: Path) -> None:
    _, r = review_one(tmp_path, None, law_text(NEW, "a", provenance=[]))
    assert r is not None and r.kind == "new" and kinds(r) == ["unexplained"]


def test_a_new_law_file_keyed_to_the_old_digest_is_stale(tmp_path: Path) -> None:
    _, r = review_one(tmp_path, None, law_text(OLD, "a"))
    assert r is not None and r.kind == "new" and kinds(r) == ["stale"]


def test_a_removed_law_file_is_a_finding_for_a_person(tmp_path: Path) -> None:
    report, r = review_one(tmp_path, law_text(OLD, "a"), None)
    assert r is not None and (r.kind, r.key_from, r.key_to, kinds(r)) == (
        "removed", OLD, None, ["removed"])
    assert "the change deletes this law file" in r.findings[0].message
    assert report.exit_code == 1


def test_a_law_file_that_stops_parsing_is_invalid_with_its_line(tmp_path: Path) -> None:
    after = rekeyed(law_text(OLD, "a"), OLD, NEW).replace("  laws:\n", "  laws: [\n")
    _, r = review_one(tmp_path, law_text(OLD, "a"), after)
    assert r is not None and r.kind == "invalid" and kinds(r) == ["invalid"]
    assert r.findings[0].line is not None
    assert "not valid YAML" in r.findings[0].message


def test_a_symlinked_law_file_is_invalid(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    os.symlink("a.yaml", repo / "laws" / "b.yaml")
    commit(repo, {}, "head")
    report = review(load_workspace(cwd=repo), base)
    assert [(r.path, r.kind) for r in report.files] == [("laws/b.yaml", "invalid")]
    assert "a symlink" in report.findings[0].message


def test_a_change_outside_the_laws_and_engine_has_nothing_to_review(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    commit(repo, {"docs/guide.md": "edited\n", "laws/notes.txt": "not a law file\n"}, "head")
    report = review(load_workspace(cwd=repo), base)
    assert report.files == () and report.unchanged == 1 and report.exit_code == 0
    assert len(report.engine) == 0


def test_paths_are_relative_to_a_workspace_below_the_repository_top(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "lawkit.toml").unlink()
    sub = {"sim/lawkit.toml": 'laws = "laws"\n[digest]\nroot = "../engine"\n'}
    moved = {f"engine/{k}": v for k, v in ENGINE.items()}
    base = commit(repo, {**sub, **moved, "sim/laws/a.yaml": law_text(OLD, "a")}, "base")
    commit(repo, {**{f"engine/{k}": v for k, v in DOCSTRING_EDIT.items()},
                  "sim/laws/a.yaml": rekeyed(law_text(OLD, "a"), OLD, NEW)}, "head")
    report = review(load_workspace(cwd=repo / "sim"), base)
    assert [(r.path, r.kind, r.ok) for r in report.files] == [("laws/a.yaml", "rekey", True)]
    assert report.engine.changed == ("../engine/atom/engine/step.py",)


def test_a_conflict_outside_the_hashed_set_still_gives_the_merged_digest(tmp_path: Path
                                                                         ) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**ENGINE, LAW: law_text(OLD, "a")}, "base")
    git(repo, "checkout", "-q", "-b", "other")
    commit(repo, {"docs/guide.md": "theirs\n"}, "other")
    git(repo, "checkout", "-q", "main")
    commit(repo, {**DOCSTRING_EDIT, "docs/guide.md": "ours\n",
                  LAW: rekeyed(law_text(OLD, "a"), OLD, NEW)}, "head")
    report = review(load_workspace(cwd=repo), base, merge_with="other")
    assert report.merge is not None
    assert report.merge.conflicts == ("docs/guide.md",)
    assert report.merge.digest == NEW
    assert [f.kind for f in report.findings] == ["merge-conflict"]


def test_a_change_made_by_lawkit_rekey_reviews_clean(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**ENGINE, "laws/a.yaml": law_text(OLD, "a"),
                         "laws/crlf.yaml": law_text(OLD, "b").replace("\n", "\r\n"),
                         "laws/old/c.yaml": law_text(NEW, "c", provenance=[])}, "base")
    monkeypatch.chdir(repo)
    commit(repo, DOCSTRING_EDIT, "engine: docstring")
    result = runner.invoke(app, ["rekey", "--adopt", "--why", "fitted before lawkit"])
    # the adoption moves no key: the two stale files are named, and the rekey moves them
    assert result.exit_code == 1, result.output
    assert [line.split(":")[0] for line in result.stdout.splitlines() if ": stale: " in line] \
        == ["laws/a.yaml", "laws/crlf.yaml"]
    result = runner.invoke(app, ["rekey", "--why", WHY, "--ref", "#9"])
    assert result.exit_code == 0, result.output
    commit(repo, {}, "laws: rekey")
    result = runner.invoke(app, ["review", "--base", base])
    assert result.exit_code == 0, result.output
    assert "law files changed: 3 (2 re-keyed (67%), 1 adopted); untouched: 0 current" in \
        result.stdout.splitlines()


def test_an_at_field_is_not_needed_to_tell_classes_apart(tmp_path: Path) -> None:
    # A rekey entry's fields come in any order: the class is the entry's kind, not its text.
    entry = provenance_entry("rekey", {"why": WHY, "to": NEW, "from": OLD, "at": AT})
    after = law_text(OLD, "a").replace(f'"{OLD}"', f'"{NEW}"', 1) + f"    - {entry}\n"
    _, r = review_one(tmp_path, law_text(OLD, "a"), after)
    assert r is not None and (r.kind, kinds(r)) == ("rekey", [])


@pytest.mark.parametrize(("before", "after", "expected"), [
    (law_text(OLD, "a"), rekeyed(law_text(OLD, "a"), OLD, NEW), (OLD, 1)),
    (law_text(OLD, "a").replace("\n", "\r\n"),
     rekeyed(law_text(OLD, "a").replace("\n", "\r\n"), OLD, NEW), (OLD, 1)),
    (law_text(OLD, "a").rstrip("\n"), rekeyed(law_text(OLD, "a").rstrip("\n"), OLD, NEW),
     (OLD, 1)),
    (law_text(NEW, "a", provenance=[]), adopted(law_text(NEW, "a", provenance=[]), NEW),
     (NEW, 0)),
    (law_text(OLD, "a").replace(f'"{OLD}"', f"'{OLD}'", 1),
     rekeyed(law_text(OLD, "a"), OLD, NEW), (OLD, 1)),
    # Anything else is left to the parsers: a comment on the key line, another line changed.
    (law_text(OLD, "a").replace(f'"{OLD}"', f'"{OLD}"  # old', 1),
     rekeyed(law_text(OLD, "a"), OLD, NEW), None),
    (law_text(OLD, "a"), rekeyed(law_text(OLD, "a"), OLD, NEW).replace("0.0021", "0.0025"),
     None),
    (law_text(OLD, "a"), law_text(OLD, "a") + "device: {gpu: a100}\n", None),
])
def test_the_text_proof_accepts_only_a_key_swap_and_appended_entries(
        before: str, after: str, expected: tuple[str, int] | None) -> None:
    from lawkit.keying.review.textchange import rekey_shape
    from lawkit.lawfiles import lawfile

    head = lawfile.parse(after.encode(), "a.yaml")
    assert rekey_shape("atom", before, after, head) == expected


def test_a_law_stale_before_the_change_is_reported_as_such(tmp_path: Path) -> None:
    report, r = review_one(tmp_path, law_text("0badc0de", "a"), law_text("0badc0de", "a"),
                           engine_edit=False)
    assert r is not None and (r.kind, r.touched, kinds(r)) == ("forgotten", False, ["forgotten"])
    assert "(it was stale at base already)" in r.findings[0].message
    assert report.exit_code == 1


def test_an_engine_missing_at_head_exits_2(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", 'laws = "laws"\n[digest]\npackages = ["atom"]\n')
    base = commit(repo, {**ENGINE, LAW: law_text(OLD, "a")}, "base")
    git(repo, "rm", "-q", "-r", "atom")
    commit(repo, {}, "engine gone")
    result = runner.invoke(app, ["review", "--base", base, "--config",
                                 str(repo / "lawkit.toml")])
    assert result.exit_code == 2, result.output
    assert "no engine file at head (HEAD)" in result.stderr


def test_a_large_review_shared_with_workers_gives_the_serial_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    names = [f"laws/m{i % 4}/c{i:03d}.yaml" for i in range(400)]
    before = {name: law_text(OLD, name) for name in names}
    base = commit(repo, {**ENGINE, **before}, "base")
    after: dict[str, str | bytes | None] = {
        name: rekeyed(text, OLD, NEW) for name, text in before.items()}
    after[names[7]] = before[names[7]]  # forgotten
    after[names[300]] = rekeyed(before[names[300]], OLD, NEW, from_="deadbeef")
    commit(repo, {**DOCSTRING_EDIT, **after}, "head")
    ws = load_workspace(cwd=repo)
    shared = review(ws, base)
    monkeypatch.setattr("lawkit.keying.review.verify.map_in_workers",
                        lambda fn, items: [fn(i) for i in items])
    serial = review(ws, base)
    assert shared == serial
    assert sorted((f.path, f.kind) for f in shared.findings) == sorted([
        (names[7], "forgotten"), (names[300], "rekey-from")])
    assert shared.counts()["rekey"] == 399


def test_markdown_lists_every_finding_and_counts_the_verified_files_past_a_cap(
        tmp_path: Path) -> None:
    from lawkit.keying.review.formats import MARKDOWN_OK_ROWS, as_markdown

    repo = init_repo(tmp_path / "repo")
    names = [f"laws/c{i:03d}.yaml" for i in range(MARKDOWN_OK_ROWS + 30)]
    before = {name: law_text(OLD, name) for name in names}
    base = commit(repo, {**ENGINE, **before}, "base")
    after: dict[str, str | bytes | None] = {
        name: rekeyed(text, OLD, NEW) for name, text in before.items()}
    after[names[-1]] = rekeyed(before[names[-1]], OLD, NEW, why="")
    commit(repo, {**DOCSTRING_EDIT, **after}, "head")
    lines = as_markdown(review(load_workspace(cwd=repo), base)).splitlines()
    rows = [line for line in lines if line.startswith("| `laws/")]
    assert len(rows) == MARKDOWN_OK_ROWS + 1
    assert rows[-1].startswith(f"| `{names[-1]}` | rekey |") and "❌" in rows[-1]
    assert "| … 29 more | 29 rekey | | ✅ ok |" in lines
    assert len("\n".join(lines)) < 65536


def test_a_rekey_of_laws_edited_after_their_fit_is_a_finding(tmp_path: Path) -> None:
    # The base's laws no longer match their fit entry's body: a re-key must not vouch for them.
    before = law_text(OLD, "a").replace("0.0021", "0.0025", 1)
    _, r = review_one(tmp_path, before, rekeyed(before, OLD, NEW))
    assert r is not None and r.kind == "rekey" and kinds(r) == ["rekey-body"]
    assert "the newest fit entry vouches for" in r.findings[0].message
