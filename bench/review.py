"""Benchmark `lawkit review` on a big change against the floor: git reading the same objects.

Run: .venv/bin/python bench/review.py [--runs N] [--laws N] [--engine-files N] [--keep DIR]

A generated repository: a 400-file engine (atom/, ~7.5 MB of .py, nested packages) and 1,000
law files (laws/<model>/<cell>.yaml, two to four laws each, fitted on the base's digest). The
change edits one engine docstring and re-keys every law file as `lawkit rekey` does (the key
line and one appended provenance line). Best of N, after a warm-up:

1. whole process: `python -m lawkit review --base BASE --format json` (target: < 2 s);
2. the floor, in the same run: the git commands that read the same objects, `git ls-tree -r -z`
   of base and head and one `git cat-file --batch` of every blob the review reads;
3. for context: `python -c "import lawkit.cli"` (start-up) and the review in process.

Standard library and lawkit only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

try:
    import src_digest
    from lawkit.lawfiles.lawwrite import law_file_text, provenance_entry
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import src_digest
    from lawkit.lawfiles.lawwrite import law_file_text, provenance_entry

TARGET_S = 2.0
AT = "2026-11-10T09:12:44Z"
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@lawkit.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@lawkit.invalid"}
WORDS = ("def", "class", "return", "self", "import", "from", "if", "else", "for", "in", "while",
         "yield", "None", "True", "False", "tensor", "batch", "seq", "token", "block", "cache",
         "kv", "attn", "scheduler", "sampler", "step", "input", "output", "rank", "world",
         "dtype", "device", "stream", "event", "prefill", "decode", "chunk", "slot")
PHASES = ("prefill", "decode", "mixed", "idle")


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """Run git in `repo`; its stdout."""
    proc = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True,
                          check=True, env={**os.environ, **GIT_ENV})
    return proc.stdout


def make_engine(repo: Path, files: int, total_bytes: int, rng: random.Random) -> None:
    """Nested packages of .py files under repo/atom, sizes skewed like real code."""
    folders = [Path("atom")]
    for i in range(max(1, files // 10)):
        parent = rng.choice(folders[: max(1, len(folders) // 2 + 1)])
        folders.append(parent / f"pkg{i:03d}" if len(parent.parts) < 5 else Path("atom"))
    folders = list(dict.fromkeys(folders))
    paths = [folder / "__init__.py" for folder in folders]
    paths += [rng.choice(folders) / f"mod{i:04d}.py" for i in range(files - len(paths))]
    weights = [rng.lognormvariate(0.0, 1.2) for _ in paths]
    scale = total_bytes / sum(weights)
    pool = " ".join(rng.choices(WORDS, k=400_000)).encode()
    for path, weight in zip(paths, weights, strict=True):
        size = 0 if path.name == "__init__.py" else int(weight * scale)
        start = rng.randrange(max(1, len(pool) - size))
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(b'"""A module."""\n' + pool[start:start + size] + b"\n")
        (repo / path.parent / "notes.txt").write_bytes(b"not hashed\n")


def law_text(key: str, rng: random.Random, cell: str) -> str:
    """A law file of two to four laws, fitted on `key`."""
    from lawkit.lawfiles import lawfile

    laws = []
    for phase in PHASES[: rng.randint(2, 4)]:
        laws.append({
            "name": phase, "target": "host_s", "where": {"phase": phase},
            "terms": {"1": rng.uniform(1e-4, 3e-3), "num_seqs": rng.uniform(1e-5, 2e-4),
                      "num_tokens": rng.uniform(1e-9, 5e-8)},
            "fit": {"method": "ols", "n": rng.randint(1000, 20000), "r2": rng.uniform(0.9, 1)},
            "domain": {"num_seqs": [1.0, 256.0], "num_tokens": [1.0, 16384.0]},
        })
    body = lawfile.body_hash([lawfile.Law.model_validate(law) for law in laws])
    fit = {"digest": key, "at": AT, "records": rng.randint(1000, 50000), "body": body,
           "captures": []}
    return law_file_text(labels={"cell": cell, "model": "bench"}, key_name="atom", key=key,
                         laws=laws, provenance=[("fit", fit)], header="bench host laws")


def rekeyed(text: str, old: str, new: str) -> str:
    """What `lawkit rekey` writes: the key line, and one appended provenance line."""
    entry = provenance_entry("rekey", {"from": old, "to": new, "at": AT,
                                       "why": "docstring only", "refs": ["#9"]})
    return text.replace(f'atom: "{old}"', f'atom: "{new}"', 1) + f"    - {entry}\n"


def build(repo: Path, n_laws: int, n_engine: int) -> tuple[str, str]:
    """The repository, its base commit and the re-keyed head; returns (base, new digest)."""
    rng = random.Random(9)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "lawkit.toml").write_text('laws = "laws"\n[digest]\nroot = "."\n')
    make_engine(repo, n_engine, 7_500_000, rng)
    old = src_digest.host_key_of(repo)
    texts = {}
    for i in range(n_laws):
        path = repo / "laws" / f"model{i % 10}" / f"cell{i:04d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        texts[path] = law_text(old, rng, f"c{i:04d}")
        path.write_text(texts[path])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").decode().strip()
    step = sorted((repo / "atom").rglob("mod*.py"))[0]
    step.write_bytes(step.read_bytes().replace(b"A module.", b"A module, documented.", 1))
    new = src_digest.host_key_of(repo)
    for path, text in texts.items():
        path.write_text(rekeyed(text, old, new))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "re-key every law")
    return base, new


def best_of(runs: int, fn: Callable[[], object]) -> float:
    """The fastest of `runs` timed calls, after one warm-up call, in seconds."""
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measure (best kept)")
    parser.add_argument("--laws", type=int, default=1000, help="law files")
    parser.add_argument("--engine-files", type=int, default=400, help="engine .py files")
    parser.add_argument("--keep", type=Path, help="build the repository in DIR and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        repo = (args.keep or Path(tmp)) / "repo"
        base, new = build(repo, args.laws, args.engine_files)
        env = {**os.environ, **GIT_ENV}
        review_argv = [sys.executable, "-m", "lawkit", "review", "--base", base, "--format",
                       "json"]

        def whole_review() -> dict[str, object]:
            proc = subprocess.run(review_argv, cwd=repo, capture_output=True, env=env,
                                  check=False)
            if proc.returncode != 0:
                raise SystemExit(f"lawkit review exited {proc.returncode}: "
                                 f"{proc.stderr.decode()[-500:]}{proc.stdout.decode()[-500:]}")
            doc: dict[str, object] = json.loads(proc.stdout)
            return doc

        doc = whole_review()
        counts = doc["counts"]
        assert isinstance(counts, dict) and counts["rekey"] == args.laws, counts
        review_s = best_of(args.runs, whole_review)

        # The floor: the same git objects read by git alone (ls-tree of both trees, one
        # cat-file of every blob the review reads: all law files at both ends, the engine).
        paths = ["laws", "atom"]
        blobs: dict[str, None] = {}
        for rev in (base, "HEAD"):
            for record in git(repo, "ls-tree", "-r", "-z", rev, "--", *paths).split(b"\0"):
                if record:
                    blobs[record.split(b"\t")[0].split()[2].decode()] = None
        batch = ("\n".join(blobs) + "\n").encode()

        def git_floor() -> None:
            git(repo, "ls-tree", "-r", "-z", "--full-tree", base, "--", *paths)
            git(repo, "ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", *paths)
            git(repo, "cat-file", "--batch", "--buffer", stdin=batch)

        floor_s = best_of(args.runs, git_floor)
        start_s = best_of(args.runs, lambda: subprocess.run(
            [sys.executable, "-c", "import lawkit.cli"], check=True, env=env))

        from lawkit.config import load_workspace
        from lawkit.keying.review.verify import review

        ws = load_workspace(cwd=repo)
        in_process_s = best_of(args.runs, lambda: review(ws, base))

        mb = sum(len(b) for b in [batch]) / 1e6
        print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs; "
              f"{args.laws} law files re-keyed to {new}, {args.engine_files}-file engine, "
              f"{len(blobs)} distinct blobs ({mb:.2f} MB of ids)")
        rows = [
            ("lawkit review --base (whole process)", review_s,
             f"{'ok' if review_s < TARGET_S else 'OVER'} (< {TARGET_S:.0f} s)"),
            ("git ls-tree x2 + git cat-file --batch", floor_s,
             f"review / floor = {review_s / floor_s:.1f}x"),
            ("python -c 'import lawkit.cli' (start-up)", start_s, ""),
            ("review() in process", in_process_s, ""),
        ]
        width = max(len(r[0]) for r in rows)
        for name, seconds, note in rows:
            print(f"{name:<{width}}  {seconds * 1e3:8.1f} ms  {note}".rstrip())
    return 0 if review_s < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
