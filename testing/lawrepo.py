"""Git repositories of an engine and its law files, built commit by commit.

`git` is the tests' one git runner: a clean environment (no system or global config, a fixed
author), so a repository built by a module-scoped fixture, outside any test's monkeypatched
environment, is the same as one built inside a test. The engine (`ENGINE`: atom/*.py and files
no digest hashes) and the law texts are those of the review tests; law files are written with
lawkit.lawfiles.lawwrite, as `lawkit fit` and `lawkit rekey` write them, so a repository built
here depends on neither command.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import src_digest
from lawkit.lawfiles import lawfile
from lawkit.lawfiles.lawwrite import law_file_text, provenance_entry

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "lawkit tests",
    "GIT_AUTHOR_EMAIL": "tests@lawkit.invalid",
    "GIT_COMMITTER_NAME": "lawkit tests",
    "GIT_COMMITTER_EMAIL": "tests@lawkit.invalid",
}
GIT_REPO_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")
"""Variables that would point git at another repository than the test's own."""

AT = "2026-11-10T09:12:44Z"
WHY = "docstring only: cannot move host time"
CONFIG = 'laws = "laws"\n\n[digest]\nroot = "."\npackages = ["atom"]\n'
ENGINE: dict[str, str | None] = {
    "atom/__init__.py": "",
    "atom/engine/step.py": '"""One forward step."""\n\n\ndef step(batch):\n    return batch\n',
    "atom/sched.py": "def schedule(queue):\n    return queue[:8]\n",
    "atom/README.md": "not hashed: only *.py files are\n",
    "docs/guide.md": "outside the engine packages\n",
}
DOCSTRING_EDIT = {"atom/engine/step.py": '"""One forward step of the engine."""\n\n\n'
                                         'def step(batch):\n    return batch\n'}
LAWS: list[dict[str, Any]] = [
    {"name": "prefill", "target": "host_s", "where": {"phase": "prefill"},
     "terms": {"1": 0.0021, "num_seqs": 0.00012, "num_tokens": 3.1e-08},
     "fit": {"method": "ols", "n": 9120, "r2": 0.982}},
    {"name": "decode", "target": "host_s", "where": {"phase": "decode"},
     "terms": {"1": 0.0011, "num_seqs": 4.0e-05}},
]
REFITTED: list[dict[str, Any]] = [
    {**LAWS[0], "terms": {"1": 0.0023, "num_seqs": 0.00011, "num_tokens": 3.3e-08},
     "fit": {"method": "ols", "n": 9800, "r2": 0.985}},
    LAWS[1],
]


# -- git ----------------------------------------------------------------------------------------

def git(repo: Path, *args: str | bytes) -> str:
    """Run git in `repo` with a clean environment; its stdout, stripped."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_REPO_VARIABLES}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True,
                          env={**env, **GIT_ENV}, stdin=subprocess.DEVNULL)
    return proc.stdout.decode().strip()


def init_repo(path: Path, config: str | None = CONFIG) -> Path:
    """An empty repository on branch main (symlinks kept, no line-end conversion), holding
    `config` as its lawkit.toml unless it is None."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "commit.gpgsign", "false")
    git(path, "config", "core.autocrlf", "false")
    git(path, "config", "core.symlinks", "true")
    if config is not None:
        (path / "lawkit.toml").write_text(config)
    return path


def write_files(root: Path, files: Mapping[str, str | bytes | None]) -> None:
    """Write each file (a path relative to ``root``, its folders made; None: delete it)."""
    for name, content in files.items():
        path = root / name
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def commit(repo: Path, files: Mapping[str, str | bytes | None], message: str) -> str:
    """Write (None: delete) the files, commit everything, and return the commit id."""
    write_files(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


# -- law files ----------------------------------------------------------------------------------

def engine_digest(*layers: Mapping[str, str | None]) -> str:
    """The src_digest/1 digest of the engine files given (later layers override earlier)."""
    files: dict[str, str | None] = {}
    for layer in layers:
        files.update(layer)
    return src_digest.Manifest(tuple(
        src_digest.FileEntry(name.encode(), hashlib.sha256(content.encode()).digest())
        for name, content in files.items()
        if content is not None and name.startswith("atom/") and name.endswith(".py")
        and "__pycache__" not in name
    )).digest()


def body_of(laws: Sequence[Mapping[str, Any]]) -> str:
    """The body hash of laws given as mappings."""
    return lawfile.body_hash([lawfile.Law.model_validate(dict(law)) for law in laws])


def fit_entry(digest: str, laws: Sequence[Mapping[str, Any]] = LAWS) -> tuple[str, dict[str, Any]]:
    """A `fit` provenance entry for laws fitted on `digest`, naming them as `lawkit fit`
    does."""
    return ("fit", {"digest": digest, "at": AT, "records": 18234, "body": body_of(laws),
                    "laws": [str(law["name"]) for law in laws], "captures": []})


def law_text(key: str, cell: str, *, laws: Sequence[Mapping[str, Any]] = LAWS,
             provenance: Sequence[tuple[str, Mapping[str, Any]]] | None = None) -> str:
    """A law file keyed to `key`, fitted on it unless `provenance` says otherwise."""
    entries = [fit_entry(key, laws)] if provenance is None else list(provenance)
    text = law_file_text(labels={"cell": cell}, key_name="atom", key=key, laws=laws,
                         provenance=entries, header="host laws of one cell")
    return text if entries else text.replace("  provenance:\n", "")


def commit_fitted_with_footprint(root: Path, files: Mapping[str, str | bytes | None],
                                 digest: str, laws: Sequence[Mapping[str, Any]],
                                 footprint: bytes) -> str:
    """Commit `files` with `laws/host.yaml`, `laws` fitted on `digest` with the footprint
    `footprint` written to `fp.json`, as `lawkit fit --footprint fp.json` leaves them; the
    commit id."""
    fit = ("fit", {"digest": digest, "at": AT, "records": 100, "body": body_of(laws),
                   "captures": [], "footprint": {
                       "path": "fp.json", "sha256": hashlib.sha256(footprint).hexdigest()}})
    return commit(root, {**files, "fp.json": footprint, "laws/host.yaml": law_text(
        digest, "a", laws=laws, provenance=[fit])}, "fitted with a footprint")


def rekeyed(text: str, old: str, new: str, *, why: str = WHY, from_: str | None = None) -> str:
    """`text` re-keyed as `lawkit rekey` does it: the key line, and one appended line."""
    assert text.count(f'atom: "{old}"') == 1
    entry = provenance_entry("rekey", {"from": from_ or old, "to": new, "at": AT, "why": why,
                                       "refs": ["#9"]})
    eol = "\r\n" if "\r\n" in text else "\n"
    if not text.endswith(("\n", "\r")):
        text += eol
    return text.replace(f'atom: "{old}"', f'atom: "{new}"') + f"    - {entry}{eol}"


def adopted(text: str, key: str) -> str:
    """`text`, a law file without provenance, adopted: `provenance:` and one `adopt` entry."""
    entry = provenance_entry("adopt", {"digest": key, "at": AT, "why": "fitted before lawkit",
                                       "body": body_of(LAWS)})
    return text + f"  provenance:\n    - {entry}\n"


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the nth line holding `needle`."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    return hits[nth - 1]


# -- the review scenario ------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    """A repository whose branches hold every kind of law-file change (see `build_scenario`)."""

    repo: Path
    base: str
    old: str
    new: str
    texts: dict[str, str]


def build_scenario(repo: Path) -> Scenario:
    """A base commit on `main` with the engine and law files keyed to its digest, then branches
    from it:

        good           the engine's docstring edited; every law re-keyed, refitted, adopted,
                       added or removed correctly: everything verifies
        bad            the same engine edit, with a hand-edit, a forgotten law, a re-key whose
                       `from` is wrong and a law file that no longer validates
        engine-moves   a hashed engine file edited: merging it moves the digest
        docs-only      only files outside the hashed set edited: merging it keeps the digest
        conflicting    the same engine line edited differently: the merge conflicts

    `good` is checked out at the end.
    """
    init_repo(repo)
    old, new = engine_digest(ENGINE), engine_digest(ENGINE, DOCSTRING_EDIT)
    at_base = {name: law_text(old, cell) for name, cell in (
        ("laws/rekeyed.yaml", "a"), ("laws/sub/deep.yaml", "b"), ("laws/refit.yaml", "c"),
        ("laws/hand-edited.yaml", "e"), ("laws/removed.yaml", "f"), ("laws/forgotten.yaml", "g"),
        ("laws/wrong-from.yaml", "h"), ("laws/broken.yaml", "i"))}
    # A law written before lawkit, already keyed to the new digest: adopting it is enough.
    at_base["laws/adopted.yaml"] = law_text(new, "d", provenance=[])
    base = commit(repo, {**ENGINE, **at_base}, "base")

    def rekey(name: str, **kwargs: Any) -> str:
        return rekeyed(at_base[name], old, new, **kwargs)

    shared = {
        **DOCSTRING_EDIT,
        "laws/rekeyed.yaml": rekey("laws/rekeyed.yaml"),
        "laws/sub/deep.yaml": rekey("laws/sub/deep.yaml"),
        "laws/refit.yaml": law_text(new, "c", laws=REFITTED,
                                    provenance=[fit_entry(old), fit_entry(new, REFITTED)]),
        "laws/adopted.yaml": adopted(at_base["laws/adopted.yaml"], new),
        "laws/new.yaml": law_text(new, "j"),
    }
    good = {**shared, **{name: rekey(name) for name in (
        "laws/hand-edited.yaml", "laws/forgotten.yaml", "laws/wrong-from.yaml",
        "laws/broken.yaml", "laws/removed.yaml")}}
    bad = {
        **shared,
        "laws/removed.yaml": None,
        "laws/hand-edited.yaml": rekey("laws/hand-edited.yaml").replace("0.0021", "0.0025", 1),
        "laws/wrong-from.yaml": rekey("laws/wrong-from.yaml", from_="deadbeef"),
        "laws/broken.yaml": rekey("laws/broken.yaml").replace("lawkit/1", "lawkit/2"),
    }
    branches = {
        "good": good,
        "bad": bad,
        "engine-moves": {"atom/sched.py": "def schedule(queue):\n    return queue[:16]\n"},
        "docs-only": {"docs/guide.md": "edited\n", "atom/README.md": "edited\n",
                      "atom/__pycache__/cached.py": "x = 1\n", "atom/notes.txt": "notes\n"},
        "conflicting": {"atom/engine/step.py": '"""A different docstring."""\n'},
    }
    texts = {}
    for branch, files in branches.items():
        git(repo, "checkout", "-q", "-b", branch, base)
        commit(repo, files, branch)
        texts.update({f"{branch}:{k}": v for k, v in files.items() if isinstance(v, str)})
    texts.update({f"base:{k}": v for k, v in at_base.items()})
    git(repo, "checkout", "-q", "good")
    return Scenario(repo=repo, base=base, old=old, new=new, texts=texts)
