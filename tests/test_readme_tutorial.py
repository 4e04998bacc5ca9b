"""The ```console blocks of the README and of docs/*.md run, in order, and print what they show.

The convention, for whoever edits README.md or a page of docs/:

- Every fenced block whose info string is `console` is a transcript. A line starting with `$ `
  is a command; lines right after it starting with `> ` (or a bare `>`) continue it, as a shell
  shows a continued line or a here-document; every other line, up to the next command or the
  end of the block, is what the command prints (stdout and stderr together, as in a terminal).
  Blocks in ```sh, ```text, ```python ... are for reading only and never run.
- All the console blocks of one `## ` section of one page run in one bash session, in order,
  so `cd` and shell variables carry from one command to the next. Each section starts afresh,
  at the root of a temporary copy of the repository (its `examples/`, `laws/` and
  `pyproject.toml`, and a `.venv/bin/` holding `python`, `lawkit` and an `activate` that puts
  this Python's scripts first on PATH; they come first on PATH from the start too), with
  `$TMPDIR` inside the test's temporary folder, so `cd "$(mktemp -d)"` stays there too.
- A command must exit 0, unless its line (or, continued, its last line) ends with a comment
  `# exit N`: then it must exit N.
- The output must match line for line (trailing spaces and trailing blank lines ignored);
  a command shown with no output must print nothing. In an expected line, `…` matches any
  text (times, temporary paths, revision ids); a line that is only `…` matches any number of
  lines, none included.

Each section is one test, named after its heading (a docs page's prefixed by its path); a failure
names the page and line, the command, and the difference, and the workspace is left in pytest's
temporary folder.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
ELLIPSIS = "…"
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")


@dataclass
class Command:
    """One `$` command of a console block, with the output and exit code the page claims."""

    text: str
    line: int
    page: str = "README.md"
    exit_code: int = 0
    expected: list[str] = field(default_factory=list)


def console_sections(text: str, page: str = "README.md") -> dict[str, list[Command]]:
    """The commands of a page's console blocks, by `## ` section, in order.

    Sections are named by their heading, prefixed by the page's path unless it is the README.
    """
    sections: dict[str, list[Command]] = {}
    prefix = "" if page == "README.md" else f"{page}: "
    title = prefix + "(top)"
    in_block = False
    fence = ""
    current: Command | None = None
    continuing = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not in_block:
            if line.startswith("## "):
                title = prefix + line[3:].strip()
            elif line.startswith("```"):
                fence = line[3:].strip()
                in_block = True
                current, continuing = None, False
            continue
        if line.startswith("```"):
            in_block = False
            continue
        if fence != "console":
            continue
        if line.startswith("$ "):
            match = _EXIT.search(line)
            current = Command(text=line[2:], line=number, page=page,
                              exit_code=int(match.group(1)) if match else 0)
            sections.setdefault(title, []).append(current)
            continuing = True
        elif continuing and current is not None and (line == ">" or line.startswith("> ")):
            current.text += "\n" + line[2:]
            match = _EXIT.search(line)  # a continued command says it on its last line
            if match:
                current.exit_code = int(match.group(1))
        elif current is not None:
            continuing = False
            current.expected.append(line)
        else:
            raise AssertionError(f"{page}:{number}: console block output before any $ line")
    return sections


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the actual lines match the expected ones, `…` as described in the docstring."""
    patterns = [None if line.strip() == ELLIPSIS else
                re.compile(".*?".join(re.escape(part) for part in line.rstrip().split(ELLIPSIS))
                           + r"\Z")
                for line in _trim(expected)]
    lines = [line.rstrip() for line in _trim(actual)]
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(patterns):
                memo[i, j] = j == len(lines)
            elif patterns[i] is None:
                memo[i, j] = match(i + 1, j) or (j < len(lines) and match(i, j + 1))
            else:
                pattern = patterns[i]
                assert pattern is not None
                memo[i, j] = j < len(lines) and pattern.match(lines[j]) is not None \
                    and match(i + 1, j + 1)
        return memo[i, j]

    return match(0, 0)


def _trim(lines: list[str]) -> list[str]:
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    return out


def _workspace(tmp_path: Path) -> Path:
    """A temporary copy of the repository's workspace, with an activate script for this Python."""
    copy = tmp_path / "lawkit"
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("examples", "laws"):
        shutil.copytree(REPO / name, copy / name, ignore=ignore, symlinks=True)
    shutil.copy2(REPO / "pyproject.toml", copy / "pyproject.toml")
    bin_dir = copy / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    scripts = Path(sys.executable).parent
    (bin_dir / "activate").write_text(f'export PATH="{scripts}:$PATH"\n', encoding="utf-8")
    (bin_dir / "python").symlink_to(sys.executable)
    if (scripts / "lawkit").exists():
        (bin_dir / "lawkit").symlink_to(scripts / "lawkit")
    return copy


def _script(commands: list[Command], results: Path) -> str:
    """One bash script running every command in the current shell, output and status to files."""
    parts = []
    for index, command in enumerate(commands):
        parts.append(f"{{\n{command.text}\n}} > '{results}/{index}.out' 2>&1 < /dev/null\n"
                     f"echo $? > '{results}/{index}.rc'\n")
    return "".join(parts)


def _environment(tmp_path: Path) -> dict[str, str]:
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    env = dict(os.environ)
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "CDPATH", "BASH_ENV", "ENV", "GIT_DIR",
                 "GIT_WORK_TREE", "COLUMNS", "LINES"):
        env.pop(name, None)
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "TMPDIR": str(scratch),
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONUNBUFFERED": "1",  # stdout and stderr interleave as in a terminal
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "GIT_CONFIG_NOSYSTEM": "1",
    })
    return env


def _all_console_sections() -> dict[str, list[Command]]:
    sections: dict[str, list[Command]] = {}
    for page in PAGES:
        sections.update(console_sections(page.read_text(encoding="utf-8"),
                                         page.relative_to(REPO).as_posix()))
    return sections


SECTIONS = _all_console_sections()


def _fails_then_rekeys(commands: list[Command]) -> bool:
    """Whether a section shows a failing check, then a rekey, then a check that passes."""
    texts = [(c.text.split(" #")[0].strip(), c.exit_code) for c in commands]
    failing = next((i for i, (t, rc) in enumerate(texts) if t == "lawkit check" and rc == 1), None)
    if failing is None:
        return False
    rekey = next((i for i, (t, _) in enumerate(texts[failing:], failing)
                  if t.startswith("lawkit rekey") and "--dry-run" not in t), None)
    return rekey is not None and any(t == "lawkit check" and rc == 0
                                     for t, rc in texts[rekey + 1:])


def test_the_readme_shows_a_rekey_that_runs_and_fails_first() -> None:
    """Guard the guard: the README's one example is found: check fails, rekey, check passes."""
    readme = [commands for commands in SECTIONS.values() if commands[0].page == "README.md"]
    assert any(_fails_then_rekeys(commands) for commands in readme), (
        "README.md: no section whose ```console block shows `lawkit check  # exit 1`, then "
        "`lawkit rekey`, then a `lawkit check` that passes")


def test_the_readmes_own_engine_block_goes_from_init_to_a_law_bound_to_its_footprint() -> None:
    """Guard the guard: a newcomer's first run is shown whole: init, a harness timing its steps
    with lawkit.capture, footprint record of that harness, fit --footprint, check."""
    commands = SECTIONS.get("Your own engine")
    assert commands, "README.md: no `## Your own engine` console blocks"
    texts = [c.text for c in commands]
    steps = [next((i for i, t in enumerate(texts) if t.startswith(start) and part in t), None)
             for start, part in (("lawkit init", ""), ("cat > ", "lawkit import capture"),
                                 ("lawkit footprint record", ""), ("lawkit fit", "--footprint"),
                                 ("lawkit check", ""))]
    assert None not in steps and steps == sorted(steps), list(zip(texts, steps, strict=False))


def test_the_tutorial_and_the_adoption_guide_run() -> None:
    """Guard the guard: the pages the README's blocks moved to are found and executed."""
    tutorial = SECTIONS.get("docs/tutorial.md: A re-key from start to finish")
    assert tutorial, "docs/tutorial.md: no `## A re-key from start to finish` console blocks"
    assert _fails_then_rekeys(tutorial)
    assert any(c.text.startswith("lawkit review") for c in tutorial)
    assert any(c.text.startswith("lawkit footprint record") for c in tutorial)
    adopting = [title for title, commands in SECTIONS.items()
                if commands[0].page == "docs/adopting.md"]
    assert any(c.text.startswith("lawkit digest --manifest")
               for title in adopting for c in SECTIONS[title]), (
        "docs/adopting.md: the manifest comparison no longer runs")


def test_console_blocks_are_read_from_every_docs_page_by_section() -> None:
    assert (REPO / "docs" / "commands.md") in PAGES
    text = "# Page\n\n## Two\n\n```console\n$ echo hi\nhi\n```\n\n```text\n$ not run\n```\n"
    sections = console_sections(text, "docs/page.md")
    assert list(sections) == ["docs/page.md: Two"]
    [command] = sections["docs/page.md: Two"]
    assert (command.page, command.line, command.text, command.expected) == (
        "docs/page.md", 6, "echo hi", ["hi"])


def test_the_matcher_reads_ellipses_as_documented() -> None:
    assert output_matches(["a … c"], ["a b b c"])
    assert output_matches(["x", "…", "z"], ["x", "z"])
    assert output_matches(["x", "…", "z"], ["x", "1", "2", "z"])
    assert not output_matches(["x"], ["x", "y"])
    assert not output_matches(["a … c"], ["a b d"])
    assert output_matches([], [""])


@pytest.mark.parametrize("section", list(SECTIONS))
def test_console_blocks_print_what_the_page_shows(section: str, tmp_path: Path) -> None:
    commands = SECTIONS[section]
    workspace = _workspace(tmp_path)
    results = tmp_path / "results"
    results.mkdir()
    script = tmp_path / "session.sh"
    script.write_text(_script(commands, results), encoding="utf-8")
    subprocess.run(["bash", "--noprofile", "--norc", str(script)], cwd=workspace,
                   env=_environment(tmp_path), stdin=subprocess.DEVNULL, timeout=300, check=False)
    failures = []
    for index, command in enumerate(commands):
        rc_file = results / f"{index}.rc"
        where = f"{command.page}:{command.line}: $ {command.text}"
        if not rc_file.is_file():
            failures.append(f"{where}\nnever ran: the session ended before it")
            break
        rc = int(rc_file.read_text())
        actual = (results / f"{index}.out").read_text(encoding="utf-8").splitlines()
        if rc != command.exit_code:
            failures.append(f"{where}\nexited {rc}, the page says {command.exit_code} (mark "
                            "another exit code with a trailing '# exit N'); it printed:\n"
                            + "\n".join(actual))
        elif not output_matches(command.expected, actual):
            diff = difflib.unified_diff(command.expected, actual, command.page, "actual",
                                        lineterm="")
            failures.append(f"{where}\nprinted something else than the page shows (a '…' "
                            "matches any text):\n" + "\n".join(diff))
    if failures:
        pytest.fail(f"{len(failures)} of {len(commands)} commands differ from "
                    f"{commands[0].page} "
                    f"(workspace: {workspace}):\n\n" + "\n\n".join(failures), pytrace=False)
