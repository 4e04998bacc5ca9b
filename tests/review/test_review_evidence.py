"""`lawkit review` reads evidence it can stand on: each side digested with
its own config from git objects, check's rules at head, a refit's footprint held to what `fit
--footprint` requires, no change vouching for itself under `--require untouched`, and the files
in hashed packages that no digest hashes listed.

Each test builds a small repository (the engine of test_review with a sampler) and reviews a
head commit against its base; footprints are written by hand, as a forger would write them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, encode_footprint
from lawkit.footprint.units import units_of
from lawkit.keying.review.verify import ReviewReport, review
from testing.lawrepo import (
    CONFIG,
    ENGINE,
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

SAMPLER = {"atom/sampler.py": "def sample(logits):\n    return logits[0]\n"}
SAMPLER_EDIT = {"atom/sampler.py": "def sample(logits):\n    return max(logits)\n"}
SCHED_EDIT = {"atom/sched.py": "def schedule(queue):\n    return queue[:16]\n"}
BASE_ENGINE = {**ENGINE, **SAMPLER}
OLD = engine_digest(BASE_ENGINE)


def hashed(files: Mapping[str, str | None]) -> dict[str, str]:
    """The engine files the default config hashes (atom/**/*.py)."""
    return {k: v for k, v in files.items()
            if v is not None and k.startswith("atom/") and k.endswith(".py")}


def footprint_bytes(files: Mapping[str, str | None], *, ran: Sequence[str] = ("steps",),
                    never: Sequence[str] = (), digest: str | None = None,
                    unhashed: Sequence[str] = ()) -> bytes:
    """A footprint of the engine `files`, every unit but those `never` run having run in
    `ran`, recorded on their digest unless `digest` says otherwise."""
    engine = hashed(files)
    records = {rel: FileRecord(hashlib.sha256(text.encode()).hexdigest(),
                               {u.qualname: UnitRecord(u.digest, () if u.qualname in never
                                                       else tuple(ran))
                                for u in units_of(text.encode())})
               for rel, text in engine.items()}
    return encode_footprint(Footprint(key="atom", digest=digest or engine_digest(engine),
                                      command=("python", "run.py"), processes=1,
                                      files=records, unhashed=tuple(unhashed)))


def fitted(digest: str, footprint: str, raw: bytes) -> tuple[str, dict[str, Any]]:
    """A `fit` entry on `digest` naming the footprint file `footprint` with bytes `raw`."""
    kind, fields = fit_entry(digest)
    return kind, {**fields, "footprint": {"path": footprint,
                                          "sha256": hashlib.sha256(raw).hexdigest()}}


def run(repo: Path, base: str, *args: str) -> Any:
    """`lawkit review --base BASE ARGS...` in `repo`, through the CLI."""
    import os

    here = os.getcwd()
    os.chdir(repo)
    try:
        return runner.invoke(app, ["review", "--base", base, *args])
    finally:
        os.chdir(here)


def report(repo: Path, base: str, require: str | None = None) -> ReviewReport:
    return review(load_workspace(cwd=repo), base, require=require)


# -- the config at base and at head -------------------------------------------------------------

def test_a_change_excluding_the_file_it_edits_is_a_finding_listed_first(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    new = engine_digest({k: v for k, v in BASE_ENGINE.items() if k != "atom/sampler.py"})
    commit(repo, {"lawkit.toml": CONFIG + 'exclude = ["atom/sampler.py"]\n', **SAMPLER_EDIT,
                  "laws/a.yaml": rekeyed(law_text(OLD, "a"), OLD, new)}, "exclude and edit")
    got = report(repo, base)
    assert (got.base.digest, got.head.digest) == (OLD, new)
    first = got.findings[0]
    assert (first.kind, first.path) == ("config", "lawkit.toml")
    assert 'digest.exclude: [] at base, ["atom/sampler.py"] at head' in first.message
    assert [f.kind for f in got.findings] == ["config"]  # the re-key itself chains
    assert [c.to_json() for c in got.config] == [
        {"field": "digest.exclude", "base": [], "head": ["atom/sampler.py"]}]
    result = run(repo, base)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("lawkit review: base ") and f"atom {OLD}) -> head" in lines[0]
    at = lines.index("1 finding:")
    assert lines[at + 1].startswith('  lawkit.toml: the change edits the workspace config: '
                                    'digest.exclude: [] at base, ["atom/sampler.py"] at head')
    doc = json.loads(run(repo, base, "--format", "json").stdout)
    assert doc["config"] == [{"field": "digest.exclude", "base": [],
                              "head": ["atom/sampler.py"]}]
    assert doc["findings"][0]["kind"] == "config"
    markdown = run(repo, base, "--format", "markdown").stdout.splitlines()
    assert markdown[4].startswith("- ❌ lawkit.toml: the change edits the workspace config")


def test_each_digest_field_and_laws_are_compared(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    git(repo, "mv", "laws", "laws2")
    commit(repo, {"lawkit.toml": 'laws = "laws2"\n\n[digest]\nroot = "."\npackages = '
                  '["atom"]\ninclude = ["*.py", "*.pyx"]\nlength = 10\n'}, "settings")
    got = report(repo, base)
    assert [(c.field, c.base, c.head) for c in got.config] == [
        ("digest.include", ["*.py"], ["*.py", "*.pyx"]), ("digest.length", 8, 10),
        ("laws", "laws", "laws2")]
    assert [f.kind for f in got.findings][:3] == ["config"] * 3
    # the law file moved with its folder: removed from laws/, new (and stale) in laws2/
    assert {(r.path, r.kind) for r in got.files} == {("laws/a.yaml", "removed"),
                                                     ("laws2/a.yaml", "new")}


def test_an_unchanged_config_moved_into_pyproject_is_no_finding(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    new = engine_digest(BASE_ENGINE, SAMPLER_EDIT)
    commit(repo, {"lawkit.toml": None, "pyproject.toml": "[project]\nname = 'x'\n\n"
                  + CONFIG.replace('laws = "laws"\n\n[digest]', '[tool.lawkit]\nlaws = "laws"'
                                   '\n\n[tool.lawkit.digest]'),
                  **SAMPLER_EDIT, "laws/a.yaml": rekeyed(law_text(OLD, "a"), OLD, new)},
           "config into pyproject")
    got = report(repo, base)
    assert got.config == () and got.findings == []


def test_a_config_git_holds_at_neither_side_serves_both(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", config=CONFIG + 'exclude = ["atom/sampler.py"]\n')
    (repo / ".gitignore").write_text("lawkit.toml\n")
    key = engine_digest({k: v for k, v in BASE_ENGINE.items() if k != "atom/sampler.py"})
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(key, "a")}, "base")
    commit(repo, SAMPLER_EDIT, "an excluded file edited")
    got = report(repo, base)
    assert (got.base.digest, got.head.digest, got.findings) == (key, key, [])


def test_engine_and_laws_given_on_the_command_line_hold_for_both_sides(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    moved = {f"sub/{k}": v for k, v in BASE_ENGINE.items()}
    base = commit(repo, {**moved, "other/a.yaml": law_text(OLD, "a")}, "base")
    new = engine_digest(BASE_ENGINE, SAMPLER_EDIT)
    commit(repo, {"sub/atom/sampler.py": SAMPLER_EDIT["atom/sampler.py"],
                  "other/a.yaml": rekeyed(law_text(OLD, "a"), OLD, new)}, "head")
    got = review(load_workspace(cwd=repo, engine=Path("sub"), laws=Path("other")), base)
    assert (got.base.digest, got.head.digest) == (OLD, new)
    assert got.config == () and got.findings == []
    assert [(r.path, r.kind) for r in got.files] == [("other/a.yaml", "rekey")]


def test_a_config_that_does_not_parse_at_head_exits_2_naming_it(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    commit(repo, {"lawkit.toml": CONFIG + "length = 'eight'\n"}, "broken")
    git(repo, "checkout", "-q", base, "--", "lawkit.toml")  # the work tree's still parses
    result = run(repo, base)
    assert result.exit_code == 2, result.output
    assert "lawkit.toml: at head (" in result.stderr
    assert "digest.length: expected int" in result.stderr


def test_removing_every_law_file_is_a_finding(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(OLD, "a"),
                         "laws/b.yaml": law_text(OLD, "b")}, "base")
    commit(repo, {**SAMPLER_EDIT, "laws/a.yaml": None, "laws/b.yaml": None}, "drop the laws")
    got = report(repo, base)
    assert [f.kind for f in got.findings] == ["no-laws", "removed", "removed"]
    assert "no law files at head in the laws folder laws" in got.findings[0].message
    assert got.exit_code == 1


def test_repointing_laws_at_an_empty_folder_is_a_finding(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    commit(repo, {**SAMPLER_EDIT, "lawkit.toml": CONFIG.replace('"laws"', '"elsewhere"'),
                  "elsewhere/README.md": "nothing here\n"}, "repoint laws")
    got = report(repo, base)
    assert [f.kind for f in got.findings] == ["config", "no-laws", "removed"]
    assert 'laws: "laws" at base, "elsewhere" at head' in got.findings[0].message


# -- a refit's footprint, and evidence the change brings itself -----------------------------------

def _fitted_with_footprint(tmp_path: Path) -> tuple[Path, str, bytes]:
    """A repository whose base has laws fitted on OLD with an honest footprint, fp.json."""
    repo = init_repo(tmp_path / "repo")
    raw = footprint_bytes(BASE_ENGINE)
    base = commit(repo, {**BASE_ENGINE, "fp.json": raw.decode(), "laws/a.yaml": law_text(
        OLD, "a", provenance=[fitted(OLD, "fp.json", raw)])}, "base")
    return repo, base, raw


def test_a_hand_appended_fit_naming_a_copied_footprint_is_a_finding(tmp_path: Path) -> None:
    repo, base, raw = _fitted_with_footprint(tmp_path)
    new = engine_digest(BASE_ENGINE, SCHED_EDIT)
    # A copy of the footprint with every phase emptied, named by a fit entry written by hand.
    forged = footprint_bytes(BASE_ENGINE, ran=())
    commit(repo, {**SCHED_EDIT, "fp2.json": forged.decode(), "laws/a.yaml": law_text(
        new, "a", provenance=[fitted(OLD, "fp.json", raw), fitted(new, "fp2.json", forged)])},
        "a refit by hand")
    got = report(repo, base)
    [a] = got.files
    assert (a.kind, [f.kind for f in a.findings]) == ("refit", ["fit-footprint"])
    assert f"fp2.json was recorded on atom={OLD}, but the entry's captures ran on atom={new}" in \
        a.findings[0].message
    assert a.findings[0].line == line_of(git(repo, "show", "HEAD:laws/a.yaml"), "fp2.json")
    required = report(repo, base, "untouched")
    assert {f.kind for f in required.findings} == {"fit-footprint", "evidence"}


def test_a_copied_footprint_with_its_digest_edited_is_a_finding(tmp_path: Path) -> None:
    repo, base, raw = _fitted_with_footprint(tmp_path)
    new = engine_digest(BASE_ENGINE, SCHED_EDIT)
    forged = footprint_bytes(BASE_ENGINE, ran=(), digest=new)
    commit(repo, {**SCHED_EDIT, "fp2.json": forged.decode(), "laws/a.yaml": law_text(
        new, "a", provenance=[fitted(OLD, "fp.json", raw), fitted(new, "fp2.json", forged)])},
        "a refit by hand")
    [a] = report(repo, base).files
    assert [f.kind for f in a.findings] == ["fit-footprint"]
    assert "the files it lists do not digest to it" in a.findings[0].message


def test_a_fit_whose_footprint_head_lacks_or_differs_is_a_finding(tmp_path: Path) -> None:
    repo, base, raw = _fitted_with_footprint(tmp_path)
    new = engine_digest(BASE_ENGINE, SCHED_EDIT)
    honest = footprint_bytes({**BASE_ENGINE, **SCHED_EDIT})
    (repo / "fp-new.json").write_bytes(honest)  # in the work tree, never committed
    commit(repo, {**SCHED_EDIT, "laws/a.yaml": law_text(new, "a", provenance=[
        fitted(OLD, "fp.json", raw), fitted(new, "fp-new.json", honest),
        fitted(new, "fp.json", honest)])}, "refits naming a missing and a changed footprint")
    git(repo, "rm", "-q", "--cached", "fp-new.json")
    git(repo, "commit", "-qm", "untrack")
    [a] = report(repo, base).files
    messages = [f.message for f in a.findings]
    assert len(messages) == 2
    assert "fp-new.json is not in git at head" in messages[0]
    assert f"fp.json at head has sha256 {hashlib.sha256(raw).hexdigest()}, not the " in \
        messages[1]


def test_a_fit_naming_a_footprint_outside_the_repository_is_a_finding(tmp_path: Path) -> None:
    repo, base, raw = _fitted_with_footprint(tmp_path)
    new = engine_digest(BASE_ENGINE, SCHED_EDIT)
    commit(repo, {**SCHED_EDIT, "laws/a.yaml": law_text(new, "a", provenance=[
        fitted(OLD, "fp.json", raw), fitted(new, "../elsewhere.json", raw)])}, "a refit")
    [a] = report(repo, base).files
    assert [f.kind for f in a.findings] == ["fit-footprint"]
    assert "../elsewhere.json is outside the repository" in a.findings[0].message


def test_under_require_untouched_a_footprint_the_change_replaces_is_a_finding(
        tmp_path: Path) -> None:
    repo, base, raw = _fitted_with_footprint(tmp_path)
    head_engine = {**BASE_ENGINE, **SCHED_EDIT}
    new = engine_digest(head_engine)
    recorded = footprint_bytes(head_engine)  # recorded on the new engine: a lawful refit
    commit(repo, {**SCHED_EDIT, "fp.json": recorded.decode(), "laws/a.yaml": law_text(
        new, "a", provenance=[fitted(OLD, "fp.json", raw), fitted(new, "fp.json", recorded)])},
        "refit with a new footprint")
    assert report(repo, base).findings == []
    got = report(repo, base, "untouched")
    assert [v.verdict for v in got.footprints] == ["untouched"]
    [finding] = got.findings
    assert (finding.kind, finding.path) == ("evidence", "laws/a.yaml")
    assert "evidence changed with the code" in finding.message
    result = run(repo, base, "--require", "untouched")
    assert result.exit_code == 1
    assert "laws/a.yaml: --require untouched: the verdict rests on the footprint fp.json, " \
        "which this change adds or replaces" in result.stdout


def test_under_require_untouched_a_footprint_landed_before_the_change_is_evidence(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    raw = footprint_bytes(BASE_ENGINE, never=["sample"])
    base = commit(repo, {**BASE_ENGINE, "fp.json": raw.decode(), "laws/a.yaml": law_text(
        OLD, "a", provenance=[fitted(OLD, "fp.json", raw)])}, "base")
    new = engine_digest(BASE_ENGINE, SAMPLER_EDIT)
    commit(repo, {**SAMPLER_EDIT, "laws/a.yaml": rekeyed(law_text(
        OLD, "a", provenance=[fitted(OLD, "fp.json", raw)]), OLD, new)}, "a unit never run")
    got = report(repo, base, "untouched")
    assert [v.verdict for v in got.footprints] == ["untouched"]
    assert got.findings == []


# -- files in hashed packages that no digest hashes -----------------------------------------------

NOT_HASHED = {"atom/Grammar.txt": "start: expr\n", "atom/__pycache__/step.cpython-312.pyc":
              "\x00compiled", "atom/plugin.pyk": "loaded by a custom loader\n"}


def test_files_in_hashed_packages_that_the_digest_does_not_hash_are_listed(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "atom/plugin.pyk": "v1\n",
                         "laws/a.yaml": law_text(OLD, "a")}, "base")
    commit(repo, {**NOT_HASHED, "docs/guide.md": "outside every package\n",
                  "atom/README.md": None}, "unhashed files")
    got = report(repo, base)
    assert got.findings == [] and len(got.engine) == 0
    assert [(n.path, n.change) for n in got.not_hashed] == [
        ("atom/Grammar.txt", "added"), ("atom/README.md", "removed"),
        ("atom/__pycache__/step.cpython-312.pyc", "added"), ("atom/plugin.pyk", "changed")]
    text = run(repo, base).stdout.splitlines()
    at = next(i for i, line in enumerate(text) if "that the digest does not hash" in line)
    assert text[at].startswith("4 files in hashed packages that the digest does not hash "
                               "changed since base")
    assert text[at + 4] == "  changed  atom/plugin.pyk"
    doc = json.loads(run(repo, base, "--format", "json").stdout)
    assert {"path": "atom/plugin.pyk", "change": "changed"} in doc["not_hashed"]
    assert "- changed `atom/plugin.pyk`" in run(repo, base, "--format", "markdown").stdout
    assert "changed atom/plugin.pyk" in run(repo, base, "--format", "github").stdout


def test_under_require_untouched_a_changed_native_module_the_footprint_saw_is_a_finding(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    raw = footprint_bytes(BASE_ENGINE, unhashed=["atom/fast.so"])
    base = commit(repo, {**BASE_ENGINE, "atom/fast.so": "\x7fELF v1", "fp.json": raw.decode(),
                         "laws/a.yaml": law_text(OLD, "a", provenance=[
                             fitted(OLD, "fp.json", raw)])}, "base")
    commit(repo, {"atom/fast.so": "\x7fELF v2"}, "a native module rebuilt")
    assert report(repo, base).findings == []
    got = report(repo, base, "untouched")
    assert [v.verdict for v in got.footprints] == ["untouched"]
    [finding] = got.findings
    assert (finding.kind, finding.path) == ("unhashed", "laws/a.yaml")
    assert "atom/fast.so changed: a native module the footprint fp.json saw loaded" in \
        finding.message
    assert [(n.path, n.change) for n in got.not_hashed] == [("atom/fast.so", "changed")]


def test_a_footprint_over_the_size_cap_is_refused_unread(tmp_path: Path, monkeypatch: Any
                                                          ) -> None:
    from lawkit.footprint import document
    from lawkit.keying.review import gitobjects

    repo, base, raw = _fitted_with_footprint(tmp_path)
    commit(repo, SCHED_EDIT, "an edit")
    monkeypatch.setattr(document, "MAX_FILE_BYTES", len(raw) - 1)
    read: list[list[str]] = []
    real = gitobjects.read_blobs
    monkeypatch.setattr(gitobjects, "read_blobs",
                        lambda top, oids: read.append(list(oids)) or real(top, oids))
    got = report(repo, base)
    [verdict] = got.footprints
    assert verdict.verdict == "unknown"
    fp_oid = git(repo, "rev-parse", "HEAD:fp.json")
    assert all(fp_oid not in oids for oids in read)


def test_a_merge_that_conflicts_in_the_config_is_a_finding_not_an_error(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_ENGINE, "laws/a.yaml": law_text(OLD, "a")}, "base")
    git(repo, "checkout", "-q", "-b", "other")
    commit(repo, {"lawkit.toml": CONFIG + "length = 10\n"}, "other's length")
    git(repo, "checkout", "-q", "main")
    commit(repo, {"lawkit.toml": CONFIG + "length = 12\n"}, "our length")
    got = review(load_workspace(cwd=repo), base, merge_with="other")
    assert got.merge is not None and got.merge.conflicts == ("lawkit.toml",)
    assert [f.kind for f in got.merge.findings] == ["merge-conflict"]
