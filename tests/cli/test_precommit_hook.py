"""The real pre-commit runs this repository's hook (`.pre-commit-hooks.yaml`, id `lawkit-check`).

An engine repo is made in a temporary folder: a workspace (`lawkit.toml`, a copy of the
stand-in engine, one of the bundled law files, keyed to that engine), a
`.pre-commit-config.yaml` whose `repo:` is a snapshot of this repository's work tree (tracked
files and untracked ones git does not ignore, committed in a temporary git repository, so
uncommitted changes to the hook or to lawkit are what gets tested) at that snapshot's commit,
and `pre-commit install`. Then, with real `git commit`s:

1. the first commit passes (the laws name the engine's digest);
2. a commit of an engine change without a re-key is blocked, and pre-commit's output holds
   every line `lawkit check` prints about the stale law;
3. after `lawkit rekey --why ...` the same commit passes.

pre-commit installs lawkit from the snapshot into an environment of its own (whatever lawkit's
dependencies are at the time), which takes a minute or more: the test is marked `slow` but runs
in the normal suite, and every commit of the module shares one PRE_COMMIT_HOME, so the
environment is built once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK_ID = "lawkit-check"
TIMEOUT = 1200  # seconds for one command; the first commit builds pre-commit's environment
pytestmark = pytest.mark.slow


def _git_env(home: Path) -> dict[str, str]:
    """An environment for git and pre-commit cut off from this machine's own git and pip config
    where it could change the result, with this Python's scripts first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PRE_COMMIT", "VIRTUAL_ENV"))}
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "lawkit test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "lawkit test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "PRE_COMMIT_HOME": str(home),
        "PRE_COMMIT_COLOR": "never",
        # pip inside pre-commit's environment: quiet, no prompts, wheels where there are some;
        # the pip cache is the machine's own, so a second run downloads nothing.
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PIP_PROGRESS_BAR": "off",
        "PIP_PREFER_BINARY": "1",
        "NO_COLOR": "1",
    })
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False, stdin=subprocess.DEVNULL)


def _ok(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = _run(args, cwd, env)
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _snapshot(dest: Path, env: dict[str, str]) -> str:
    """This repository's work tree, as it is now, committed in a new git repository at dest."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.fail(f"the pre-commit test needs this repository's git work tree: "
                    f"{listed.stderr.decode(errors='replace')}")
    dest.mkdir()
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        source = REPO / name
        if not source.is_file():  # deleted in the work tree, or a submodule
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    assert (dest / ".pre-commit-hooks.yaml").is_file()
    _ok(["git", "init", "-q"], dest, env)
    _ok(["git", "add", "-A"], dest, env)
    _ok(["git", "commit", "-q", "--no-verify", "-m", "snapshot of the work tree"], dest, env)
    return _ok(["git", "rev-parse", "HEAD"], dest, env).strip()


@dataclass
class Hook:
    repo: Path  # the snapshot of this repository
    rev: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hook]:
    base = tmp_path_factory.mktemp("precommit")
    env = _git_env(base / "pre-commit-home")
    repo = base / "lawkit-snapshot"
    yield Hook(repo, _snapshot(repo, env), env)


def _engine_repo(root: Path, hook: Hook) -> Path:
    """A git repository holding a lawkit workspace and pre-commit, with the hook installed."""
    root.mkdir()
    shutil.copytree(REPO / "examples" / "engine" / "atom", root / "atom",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "laws").mkdir()
    shutil.copy2(REPO / "laws" / "phi-2-tp1.yaml", root / "laws" / "phi-2-tp1.yaml")
    (root / "lawkit.toml").write_text(
        'laws = "laws"\n\n[digest]\nroot = "."\npackages = ["atom"]\n', encoding="utf-8")
    (root / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {hook.repo.as_posix()}\n"
        f"    rev: {hook.rev}\n"
        "    hooks:\n"
        f"      - id: {HOOK_ID}\n", encoding="utf-8")
    _ok(["git", "init", "-q"], root, hook.env)
    _ok([sys.executable, "-m", "pre_commit", "install"], root, hook.env)
    return root


def _lawkit(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """This checkout's lawkit (the suite's own venv), the one the hook's snapshot was made of."""
    return _run([sys.executable, "-m", "lawkit", *args], cwd, env)


def _commit(root: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    _ok(["git", "add", "-A"], root, env)
    return _run(["git", "commit", "-m", message], root, env)


def test_the_hook_blocks_a_stale_law_and_passes_after_rekey(hook: Hook, tmp_path: Path) -> None:
    root = _engine_repo(tmp_path / "engine-repo", hook)
    env = hook.env
    assert _lawkit(["check"], root, env).returncode == 0

    first = _commit(root, env, "engine and its laws")
    output = first.stdout + first.stderr
    assert first.returncode == 0, output
    assert "lawkit check" in output and "Passed" in output, output

    # A comment in hashed engine source: the digest moves, the law names the old one.
    scheduler = root / "atom" / "scheduler.py"
    scheduler.write_text(scheduler.read_text(encoding="utf-8") + "# a comment\n",
                         encoding="utf-8")
    checked = _lawkit(["check"], root, env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    stale_lines = [line for line in (checked.stdout + checked.stderr).splitlines() if line.strip()]
    assert any("stale" in line for line in stale_lines), stale_lines

    blocked = _commit(root, env, "a comment in the scheduler")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert "Failed" in output and f"hook id: {HOOK_ID}" in output, output
    for line in stale_lines:  # lawkit's own message, as check prints it, through pre-commit
        assert line in output, f"{line!r} is not in pre-commit's output:\n{output}"
    log = _ok(["git", "log", "--format=%s"], root, env).splitlines()
    assert log == ["engine and its laws"], log

    rekeyed = _lawkit(["rekey", "--why", "a comment in the scheduler, no host time moves"],
                      root, env)
    assert rekeyed.returncode == 0, rekeyed.stdout + rekeyed.stderr

    passed = _commit(root, env, "a comment in the scheduler")
    output = passed.stdout + passed.stderr
    assert passed.returncode == 0, output
    assert "Passed" in output and "Failed" not in output, output
    log = _ok(["git", "log", "--format=%s"], root, env).splitlines()
    assert log == ["a comment in the scheduler", "engine and its laws"], log
