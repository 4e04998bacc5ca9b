"""Hostile and careless input, second round (issue 14): every verdict one a reviewer can rely
on, in bounded time and memory.

- rekey applies the law-file cap to what it would write, not only to what it reads.
- check's cache: a FIFO at its path cannot hang check.
- review applies the law-file cap to blobs before reading them (sizes from `git cat-file
  --batch-check`): a 2 GiB blob under laws/ costs bounded memory and well under 2 s.
"""

from __future__ import annotations

from pathlib import Path

from reliability import one_line_exit_2
from typer.testing import CliRunner
from workspaces import OLD, law_text, make_workspace

from lawkit.cli import app
from lawkit.lawfiles import lawbytes

runner = CliRunner()


def test_rekey_refuses_to_write_a_file_over_the_cap_and_writes_nothing(tmp_path: Path) -> None:
    make_workspace(tmp_path, 2, stale=True)
    path = tmp_path / "laws" / "big.yaml"
    text = law_text(key=OLD)
    path.write_text(text + "#" * (lawbytes.MAX_BYTES - len(text) - 200) + "\n")
    assert runner.invoke(app, ["check"]).stdout.count("stale") == 3
    before = {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()}
    one_line_exit_2(runner.invoke(app, ["rekey", "--why", "x" * 400]),
                    "laws/big.yaml", "over the 1 MiB", "nothing was written")
    assert {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()} == before


def test_a_fifo_at_the_cache_path_cannot_hang_check(tmp_path: Path) -> None:
    import os

    from reliability import run_bounded

    from lawkit.keying.checkcache import CheckCache

    ws = make_workspace(tmp_path, 3)
    path = CheckCache(ws.laws, folder=tmp_path / "cache").path
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    outcome = run_bounded(["check"], cwd=tmp_path, timeout=20,
                          env={"LAWKIT_CACHE_DIR": str(tmp_path / "cache")})
    assert outcome.code == 0, outcome.stderr
    assert outcome.stdout == "3 law files name atom=8927e824\n"
    assert outcome.seconds < 10


HUGE_BLOB = 300 << 20  # streamed into git (bigFileThreshold) from a sparse file: no 300 MB in RAM


def test_review_refuses_a_huge_law_blob_by_its_size_without_reading_it(tmp_path: Path) -> None:
    import subprocess

    from reliability import run_bounded

    make_workspace(tmp_path, 2)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "core.bigFileThreshold=1m", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as f:
        f.truncate(HUGE_BLOB)
    oid = git("hash-object", "-w", str(sparse))
    sparse.unlink()
    git("update-index", "--add", "--cacheinfo", f"100644,{oid},laws/huge.yaml")
    git("commit", "-qm", "a huge law file")
    outcome = run_bounded(["review", "--base", "HEAD~1"], cwd=tmp_path, timeout=30,
                          memory_mb=1024)
    assert outcome.code == 1, outcome.stderr
    assert "laws/huge.yaml" in outcome.stdout
    assert "larger than 1 MiB" in outcome.stdout, outcome.stdout
    assert outcome.seconds < 2.0, outcome.seconds
    assert outcome.max_rss_mb < 150, outcome.max_rss_mb
