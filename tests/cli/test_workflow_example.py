"""The GitHub Actions workflow the documentation offers an engine repo is one that would run.

The block is found by its marker, not by its place: the first fenced ```yaml block after a
comment `<!-- github-actions-workflow ... -->` in README.md or any docs/*.md (every marked
block is linted, and there must be at least one, in docs/adopting.md). For each:

- it parses as YAML into a workflow: `on` (events GitHub knows), `jobs`, each job with
  `runs-on` and `steps`, each step a mapping with exactly one of `run` and `uses`, and no key
  GitHub does not know at any of these levels;
- every `uses:` names a well-known action at a released major version (`actions/checkout@v4`),
  with only inputs that action has, its required ones given, and `python-version` a quoted
  string of a Python lawkit supports;
- every `run:` is valid bash (`bash -n`), and every `lawkit ...` command in it parses with
  lawkit's own command line (its typer app): a real command, real options, valid choices;
- it runs `lawkit check`, installs lawkit, and runs `lawkit review --base` on pull requests
  only, after a checkout with the full history (`fetch-depth: 0`), since review reads the base
  revision's git objects.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!--\s*github-actions-workflow\b")

WORKFLOW_KEYS = {"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
JOB_KEYS = {"name", "permissions", "needs", "if", "runs-on", "environment", "concurrency",
            "outputs", "env", "defaults", "steps", "timeout-minutes", "strategy",
            "continue-on-error", "container", "services"}
STEP_KEYS = {"id", "if", "name", "uses", "run", "shell", "with", "env", "working-directory",
             "continue-on-error", "timeout-minutes"}
EVENTS = {"push", "pull_request", "pull_request_target", "workflow_dispatch", "schedule",
          "merge_group", "workflow_call", "workflow_run", "release", "repository_dispatch"}


@dataclass(frozen=True)
class Action:
    versions: frozenset[str]
    inputs: frozenset[str]
    required: frozenset[str] = frozenset()


ACTIONS = {
    "actions/checkout": Action(
        frozenset({"v4", "v5"}),
        frozenset({"repository", "ref", "token", "ssh-key", "ssh-known-hosts", "ssh-strict",
                   "ssh-user", "persist-credentials", "path", "clean", "filter",
                   "sparse-checkout", "sparse-checkout-cone-mode", "fetch-depth", "fetch-tags",
                   "show-progress", "lfs", "submodules", "set-safe-directory",
                   "github-server-url"})),
    "actions/setup-python": Action(
        frozenset({"v5", "v6"}),
        frozenset({"python-version", "python-version-file", "cache", "architecture",
                   "check-latest", "token", "cache-dependency-path", "update-environment",
                   "allow-prereleases", "freethreaded", "pip-version", "pip-install"})),
    "actions/cache": Action(
        frozenset({"v4"}),
        frozenset({"path", "key", "restore-keys", "upload-chunk-size", "enableCrossOsArchive",
                   "fail-on-cache-miss", "lookup-only", "save-always"}),
        frozenset({"path", "key"})),
    "actions/upload-artifact": Action(
        frozenset({"v4"}),
        frozenset({"name", "path", "if-no-files-found", "retention-days", "compression-level",
                   "overwrite", "include-hidden-files"}),
        frozenset({"path"})),
    "actions/download-artifact": Action(
        frozenset({"v4"}),
        frozenset({"name", "path", "pattern", "merge-multiple", "github-token", "repository",
                   "run-id"})),
}
SUPPORTED_PYTHONS = {"3.11", "3.12", "3.13"}

# Shell tokens that end one command and start the next, and redirections (dropped with their
# target).
_SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")", "|&", ";;"}
_REDIRECTS = {">", ">>", "<", "<<", "<<<", ">&", "&>", "<&", ">|"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the block's first YAML line
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def marked_blocks() -> list[Block]:
    """Every ```yaml block that follows a workflow marker, in README.md and docs/*.md."""
    blocks = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines):
            if not MARKER.search(line):
                continue
            start = next((i for i in range(index + 1, len(lines))
                          if lines[i].startswith("```")), None)
            assert start is not None and lines[start].strip() == "```yaml", (
                f"{path.relative_to(REPO)}:{index + 1}: the workflow marker must be followed by "
                "a ```yaml block")
            end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("```")),
                       None)
            assert end is not None, f"{path.relative_to(REPO)}:{start + 1}: unclosed block"
            blocks.append(Block(path, start + 2, "\n".join(lines[start + 1:end]) + "\n"))
    return blocks


BLOCKS = marked_blocks()


def test_the_docs_show_a_marked_workflow() -> None:
    assert BLOCKS, ("no ```yaml block follows a `<!-- github-actions-workflow -->` marker in "
                    "README.md or docs/*.md")


def test_the_adoption_guide_holds_the_workflow() -> None:
    """The workflow an engine repo copies sits in the adoption guide, where the linter reads it."""
    adopting = REPO / "docs" / "adopting.md"
    assert any(block.path == adopting for block in BLOCKS), (
        "docs/adopting.md: no marked ```yaml workflow under its CI job section")


def _load(block: Block) -> dict[str, Any]:
    data = yaml.safe_load(block.text)
    assert isinstance(data, dict), f"{block.where}: a workflow is a mapping"
    if True in data:  # YAML 1.1 (PyYAML) reads the key `on` as true; GitHub reads it as "on"
        data["on"] = data.pop(True)
    return data


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def _shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a bash script: words after assignments, without redirections."""
    script = re.sub(r"\\\n", " ", script)
    commands: list[list[str]] = []
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        current: list[str] = []
        tokens = iter(lexer)
        for token in tokens:
            if token in _SEPARATORS:
                commands.append(current)
                current = []
            elif token in _REDIRECTS:
                next(tokens, None)
            elif current or not _ASSIGNMENT.match(token):
                current.append(token)
        commands.append(current)
    return [command for command in commands if command]


def _lawkit_commands(workflow: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    return [(step, command[1:]) for step in _steps(workflow) if "run" in step
            for command in _shell_commands(step["run"]) if command[0] == "lawkit"]


def _parse_lawkit(args: list[str]) -> Any:
    """The lawkit command `args` names, after lawkit's own parser accepted its options.

    Through the objects typer builds only (typer may carry its own copy of click, so neither
    click's classes nor its exceptions are named here)."""
    from lawkit.cli import app

    group = typer.main.get_command(app)
    assert args and not args[0].startswith("-"), f"no command in: lawkit {shlex.join(args)}"
    parent = group.context_class(group, info_name="lawkit")
    command = group.get_command(parent, args[0])
    assert command is not None, f"lawkit has no command {args[0]!r}"
    try:
        command.make_context(args[0], list(args[1:]), parent=parent)
    except Exception as error:
        if not hasattr(error, "format_message"):  # click's usage errors have one; a bug has not
            raise
        pytest.fail(f"lawkit {shlex.join(args)}: {error.format_message()}")
    return command


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_the_workflow_has_a_valid_shape(block: Block) -> None:
    workflow = _load(block)
    assert set(workflow) <= WORKFLOW_KEYS, f"{block.where}: {set(workflow) - WORKFLOW_KEYS}"
    on = workflow.get("on")
    events = {on} if isinstance(on, str) else set(on or ())
    assert events and events <= EVENTS, f"{block.where}: on: {on!r}"
    jobs = workflow.get("jobs")
    assert isinstance(jobs, dict) and jobs, f"{block.where}: no jobs"
    for name, job in jobs.items():
        assert isinstance(job, dict), f"{block.where}: job {name} is not a mapping"
        assert set(job) <= JOB_KEYS, f"{block.where}: job {name}: {set(job) - JOB_KEYS}"
        assert job.get("runs-on"), f"{block.where}: job {name} has no runs-on"
        steps = job.get("steps")
        assert isinstance(steps, list) and steps, f"{block.where}: job {name} has no steps"
        for number, step in enumerate(steps, start=1):
            where = f"{block.where}: job {name}, step {number}"
            assert isinstance(step, dict), f"{where} is not a mapping"
            assert set(step) <= STEP_KEYS, f"{where}: {set(step) - STEP_KEYS}"
            assert ("run" in step) != ("uses" in step), f"{where}: needs one of run and uses"
            if "run" in step:
                assert isinstance(step["run"], str) and step["run"].strip(), where
                assert "with" not in step, f"{where}: `with` is for actions"
            if "with" in step:
                assert isinstance(step["with"], dict), f"{where}: with is not a mapping"


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_every_action_is_a_real_one_at_a_released_version(block: Block) -> None:
    uses = [step for step in _steps(_load(block)) if "uses" in step]
    assert uses, f"{block.where}: no action (a workflow needs actions/checkout at least)"
    for step in uses:
        name, _, version = str(step["uses"]).partition("@")
        assert name in ACTIONS, f"{block.where}: {step['uses']}: not one of {sorted(ACTIONS)}"
        action = ACTIONS[name]
        assert version in action.versions, (
            f"{block.where}: {step['uses']}: the version must be one of {sorted(action.versions)}")
        inputs = set(step.get("with") or {})
        assert inputs <= action.inputs, (
            f"{block.where}: {name} has no input {inputs - action.inputs}")
        assert action.required <= inputs, (
            f"{block.where}: {name} needs {action.required - inputs}")
        if name == "actions/setup-python":
            version_given = step["with"]["python-version"]
            assert isinstance(version_given, str), (
                f"{block.where}: python-version {version_given!r} must be quoted (3.10 is 3.1)")
            assert version_given in SUPPORTED_PYTHONS, (
                f"{block.where}: python-version {version_given}: lawkit supports "
                f"{sorted(SUPPORTED_PYTHONS)}")
    assert any(str(step["uses"]).startswith("actions/checkout@") for step in uses), block.where


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_every_run_is_bash_and_every_lawkit_command_parses(block: Block) -> None:
    workflow = _load(block)
    for step in _steps(workflow):
        if "run" in step:
            checked = subprocess.run(["bash", "-n"], input=step["run"], capture_output=True,
                                     text=True, check=False)
            assert checked.returncode == 0, f"{block.where}: {step['run']!r}: {checked.stderr}"
    commands = _lawkit_commands(workflow)
    assert commands, f"{block.where}: runs no lawkit command"
    for _step, args in commands:
        _parse_lawkit(args)


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_the_workflow_installs_lawkit_checks_and_reviews_pull_requests(block: Block) -> None:
    workflow = _load(block)
    runs = [step["run"] for step in _steps(workflow) if "run" in step]
    assert any(command[:2] in (["pip", "install"], ["python", "-m"]) and "lawkit" in " ".join(
        command) for run in runs for command in _shell_commands(run)), (
        f"{block.where}: no step installs lawkit")
    commands = _lawkit_commands(workflow)
    assert any(args[0] == "check" for _, args in commands), f"{block.where}: no lawkit check"
    reviews = [(step, args) for step, args in commands if args[0] == "review"]
    for step, args in reviews:
        assert any(arg == "--base" or arg.startswith("--base=") for arg in args), args
        assert "pull_request" in str(step.get("if", "")), (
            f"{block.where}: lawkit review runs on pull requests only (`if:` names pull_request)")
    if reviews:
        on = workflow["on"]
        assert "pull_request" in ({on} if isinstance(on, str) else set(on)), block.where
        checkouts = [step for step in _steps(workflow)
                     if str(step.get("uses", "")).startswith("actions/checkout@")]
        assert any((step.get("with") or {}).get("fetch-depth") == 0 for step in checkouts), (
            f"{block.where}: lawkit review --base reads the base revision: fetch-depth: 0")


def test_the_linter_catches_what_it_is_for() -> None:
    """The checks above fail on the mistakes they exist for (run against doctored commands)."""
    assert _shell_commands('base=$(git merge-base "origin/$X" HEAD)\nlawkit review --base '
                           '"$base" --format markdown \\\n  | tee -a "$S"') == [
        ["git", "merge-base", "origin/$X", "HEAD"],
        ["lawkit", "review", "--base", "$base", "--format", "markdown"],
        ["tee", "-a", "$S"]]
    _parse_lawkit(["check", "--format", "github"])
    for bad in (["chek"], ["check", "--format", "gitlab"], ["check", "--no-such-option"],
                ["review", "--format", "markdown"]):  # review without its required --base
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            _parse_lawkit(bad)
