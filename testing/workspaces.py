"""Law files and workspaces for tests and benchmarks: realistic text with correct body hashes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from lawkit.config import Workspace, load_workspace
from lawkit.keying.digest import current_digest
from lawkit.lawfiles import lawfile, lawwrite
from testing.lawrepo import commit, git, init_repo, write_files

OLD = "59e9ff5a"  # a digest no engine tree below hashes to
FIT_AT = "2026-10-02T11:20:00Z"
ENGINE = {"atom/__init__.py": b"", "atom/engine/step.py": b"x = 1\n"}
_PARTS = [("schedule", "schedule_s"), ("prepare", "prepare_s"), ("sample", "sample_s"),
          ("copy_out", "copy_s")]


def laws(count: int = 4, seed: int = 0) -> list[dict[str, Any]]:
    """`count` host laws as a fit writes them: terms, fit statistics and domain."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        name, target = _PARTS[i % len(_PARTS)]
        n = rng.randint(1000, 20000)
        out.append({
            "name": name if i < len(_PARTS) else f"{name}_{i}",
            "target": target,
            "where": {"phase": rng.choice(["prefill", "decode"])},
            "terms": {"1": rng.uniform(1e-4, 3e-3), "num_seqs": rng.uniform(1e-5, 2e-4),
                      "num_tokens": rng.uniform(1e-8, 5e-8),
                      "num_seqs:max_context": rng.uniform(1e-13, 1e-12)},
            "fit": {"method": "ols", "n": n, "r2": round(rng.uniform(0.9, 0.99), 3),
                    "rmse": round(rng.uniform(1e-4, 5e-4), 6), "mape": round(rng.uniform(0.01,
                                                                                      0.05), 3)},
            "domain": {"num_seqs": [1.0, 256.0], "num_tokens": [1.0, 16384.0],
                       "max_context": [128.0, 131072.0]},
        })
    return out


def body_of(law_dicts: list[dict[str, Any]]) -> str:
    """The body hash a fit records for these laws."""
    return lawfile.body_hash([lawfile.Law.model_validate(law) for law in law_dicts])


def law_text(*, key: str, labels: dict[str, Any] | None = None,
             law_dicts: list[dict[str, Any]] | None = None, provenance: str = "fit",
             fitted_on: str | None = None) -> str:
    """A law file as `lawkit fit` writes it; `provenance="none"` for one written before lawkit."""
    law_dicts = law_dicts if law_dicts is not None else laws()
    entries: list[tuple[str, dict[str, Any]]] = []
    if provenance == "fit":
        entries.append(("fit", {"digest": fitted_on or key, "at": FIT_AT, "records": 18234,
                                "body": body_of(law_dicts),
                                "captures": [{"path": "captures/run1.csv",
                                              "sha256": "ab" * 32}]}))
    text = lawwrite.law_file_text(labels=labels, key_name="atom", key=key, laws=law_dicts,
                                  provenance=entries,
                                  header="Host laws fitted by lawkit from captures.")
    if provenance == "none":
        text = text.replace("  provenance:\n", "")
    return text


def make_engine(root: Path, files: dict[str, bytes] | None = None) -> None:
    """An engine source tree below `root`."""
    write_files(root, files or ENGINE)


def files_below(folder: Path) -> dict[str, bytes]:
    """Every file below `folder`, by its path relative to it: two calls compare equal when a
    command wrote nothing there."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def make_fit_folder(root: Path, engine: dict[str, bytes] | None = None) -> Path:
    """A folder to fit captures in: lawkit.toml, an empty laws/ and, given `engine`, that
    engine tree below engine/ for `--captured-on current`."""
    (root / "laws").mkdir(parents=True, exist_ok=True)
    (root / "lawkit.toml").write_text('laws = "laws"\n'
                                      + ('[digest]\nroot = "engine"\n' if engine else ""))
    if engine:
        make_engine(root / "engine", engine)
    return root


def make_workspace(root: Path, files: int = 3, *, stale: bool = False,
                   provenance: str = "fit") -> Workspace:
    """A workspace with `lawkit.toml`, an engine tree and `files` law files below `laws/`.

    The laws name the engine's digest, or an older one (`stale`) whose fit explains it.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "lawkit.toml").write_text('laws = "laws"\n\n[digest]\nroot = "engine"\n'
                                      'packages = ["atom"]\n')
    make_engine(root / "engine")
    ws = load_workspace(config=root / "lawkit.toml")
    key = OLD if stale else current_digest(ws)
    (root / "laws").mkdir(exist_ok=True)
    body = laws()
    for i in range(files):
        name = f"cell{i:05d}.yaml"
        labels = {"cell": f"crs{i:05d}", "model": "deepseek-v4-pro", "parallel": "dpa8",
                  "role": "prefill"}
        (root / "laws" / name).write_text(law_text(key=key, labels=labels, law_dicts=body,
                                                   provenance=provenance))
    return ws


def make_git_workspace(root: Path, files: int = 2) -> Path:
    """`make_workspace`, committed on branch main of a git repository at `root`."""
    make_workspace(root, files)
    init_repo(root, config=None)
    commit(root, {}, "laws")
    assert git(root, "status", "--porcelain") == ""
    return root
