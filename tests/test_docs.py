"""The documentation keeps up with the code: every command and option has an entry in the README
or in docs/ (docs/commands.md), the CLI reference (docs/cli.md) is what `--help` prints today, and
the links of the README and of every docs page resolve."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
GENERATED = DOCS / "cli.md"
REGENERATE = ("regenerate it with: .venv/bin/python scripts/cli_reference.py "
              "(then commit docs/cli.md)")
COMMON = "Common options"
_HEADING = re.compile(r"^(#{1,6}) (.*)$")


def _cli_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference",
                                                  REPO / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _headings(text: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of every Markdown heading outside fenced blocks."""
    out, fenced = [], False
    for index, line in enumerate(text.splitlines()):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            out.append((index, len(match.group(1)), match.group(2).strip()))
    return out


def _section(text: str, predicate: Any) -> str | None:
    """The text under the first heading whose title satisfies predicate, subsections included."""
    lines = text.splitlines()
    headings = _headings(text)
    for number, (index, level, title) in enumerate(headings):
        if predicate(title):
            end = next((i for i, lv, _ in headings[number + 1:] if lv <= level), len(lines))
            return "\n".join(lines[index:end])
    return None


def _pages() -> list[Path]:
    """README.md and every page of docs/: what the documentation tests read."""
    return [README, *sorted(DOCS.glob("*.md"))]


def _written_pages() -> list[Path]:
    """The pages written by hand: docs/cli.md is --help itself, so it vouches for no entry."""
    return [page for page in _pages() if page != GENERATED]


def _name(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


def _find_section(predicate: Any) -> str | None:
    """The first section of the README or a written docs page whose heading satisfies predicate."""
    for page in _written_pages():
        section = _section(page.read_text(encoding="utf-8"), predicate)
        if section is not None:
            return section
    return None


def _commands() -> dict[str, Any]:
    group = _cli_reference().lawkit_command()
    ctx = group.context_class(group, info_name="lawkit")
    return {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}


def _mentions(text: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def test_the_cli_reference_is_what_help_prints_today() -> None:
    path = REPO / "docs" / "cli.md"
    assert path.is_file(), f"docs/cli.md is missing: {REGENERATE}"
    assert path.read_text(encoding="utf-8") == _cli_reference().render(), (
        f"docs/cli.md is stale (a command's options or help changed): {REGENERATE}")


def test_every_command_has_help_and_a_section_in_the_docs() -> None:
    missing = []
    for name, command in _commands().items():
        assert (command.help or "").strip(), f"lawkit {name} has no help text"
        heading = re.compile(rf"`lawkit {re.escape(name)}`")
        if _find_section(heading.search) is None:
            missing.append(name)
    assert not missing, ("neither README.md nor docs/ has a section for " + ", ".join(
        f"lawkit {n}" for n in missing) + ": add a heading like '## `lawkit NAME`' to "
        "docs/commands.md saying what it does, its flags and its exit codes")


def test_every_option_of_every_command_has_an_entry_in_the_docs() -> None:
    common = _find_section(lambda title: title == COMMON)
    assert common is not None, f"neither README.md nor docs/ has a '## {COMMON}' section"
    missing = []
    for name, command in _commands().items():
        heading = re.compile(rf"`lawkit {re.escape(name)}`")
        section = _find_section(heading.search) or ""
        for param in command.params:
            if param.param_type_name != "option":
                continue
            for flag in [*param.opts, *param.secondary_opts]:
                if flag != "--help" and not (_mentions(section, flag) or _mentions(common, flag)):
                    missing.append(f"lawkit {name} {flag}")
    assert not missing, ("neither README.md nor docs/ explains these options (in the command's "
                         f"section, or in '{COMMON}' when shared): " + ", ".join(missing))


def _slug(title: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(title) for _, _, title in _headings(page.read_text(encoding="utf-8"))}


def test_the_links_of_the_readme_and_the_docs_resolve() -> None:
    """Paths are relative to the page's folder, as GitHub reads them; so are anchors in pages."""
    broken = []
    for page in _pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{_name(page)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{_name(page)}: {target} (no such heading)")
    assert not broken, f"links to nothing: {', '.join(broken)}"


README_MAX_LINES = 150
_RUN_FIGURE = re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|us|µs|s|min|MB|MiB)\b|\b\d+\.\d+x\b")


def test_the_readme_is_short_and_holds_no_run_figures() -> None:
    """A newcomer reads it in five minutes; figures that change from run to run live in
    docs/performance.md, each beside the command that measures it again."""
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines, at most {README_MAX_LINES}: move the detail to docs/")
    figures = [f"README.md:{number}: {match.group(0)!r}"
               for number, line in enumerate(lines, start=1)
               for match in [_RUN_FIGURE.search(line)] if match]
    assert not figures, ("run figures belong in docs/performance.md, not the README: "
                         + ", ".join(figures))


def test_no_page_points_outside_the_repository() -> None:
    """The design notes are not in the repository: a page links the docs page that says it."""
    outside = [f"{_name(page)}:{number}"
               for page in _pages()
               for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"\bDESIGN\b", line)]
    assert not outside, ("these lines send the reader to DESIGN, which is not in the "
                         f"repository; link a page of docs/ instead: {', '.join(outside)}")


def test_no_file_outside_the_tests_points_at_the_design_notes_or_an_issue_number() -> None:
    """Code, examples, benches and scripts send a reader to docs/, never to notes outside the
    repository (the tests that forbid such references name them)."""
    root = README.parent
    listed = subprocess.run(["git", "ls-files", "-z", "--", "lawkit", "src_digest", "examples",
                             "bench", "scripts", "testing", ".ci", "pyproject.toml"],
                            cwd=root, capture_output=True, check=True).stdout.split(b"\0")
    found = [f"{name.decode()}:{number}"
             for name in listed if name
             for number, line in enumerate(
                 (root / name.decode()).read_text(encoding="utf-8", errors="replace")
                 .splitlines(), 1)
             if re.search(r"\bDESIGN\b|\b[Ii]ssue [0-9]", line)]
    assert not found, f"these lines point outside the repository: {', '.join(found)}"


def test_every_figure_of_the_performance_page_names_its_command() -> None:
    """Each section of docs/performance.md says how to measure its figures again."""
    text = (DOCS / "performance.md").read_text(encoding="utf-8")
    sections = [_section(text, lambda title, wanted=title: title == wanted)
                for _, level, title in _headings(text) if level == 2]
    assert sections, "docs/performance.md has no `## ` section"
    silent = [section.splitlines()[0] for section in sections
              if section is not None and not re.search(r"(bench|scripts)/\w+|\.ci/run", section)]
    assert not silent, f"docs/performance.md: no command reproduces {silent}"


def test_the_readme_links_every_page_of_the_docs() -> None:
    readme = README.read_text(encoding="utf-8")
    linked = {(REPO / target.partition("#")[0]).resolve()
              for target in re.findall(r"\]\(([^)\s#]+)[^)\s]*\)", readme)}
    unlinked = [_name(page) for page in _pages()[1:] if page.resolve() not in linked]
    assert not unlinked, (f"README.md does not link {', '.join(unlinked)}: add it to the list "
                          "under '## Reference'")


def test_the_installed_package_holds_every_module_the_readme_installs() -> None:
    """`pip install` of lawkit (pre-commit's hook, the CI job) ships every package folder."""
    # setuptools' packages.find takes every folder with an __init__.py whose dotted name
    # matches an `include` pattern (fnmatch); matched here without importing setuptools, which
    # a venv of Python 3.12 or newer does not hold
    import fnmatch

    find = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]["packages"]["find"]
    assert set(find) == {"include"}, find  # no `where`, `exclude` or namespaces to mirror
    folders = {init.parent.relative_to(REPO).as_posix().replace("/", ".")
               for top in ("lawkit", "src_digest") for init in (REPO / top).rglob("__init__.py")}
    missed = sorted(name for name in folders
                    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in find["include"]))
    assert not missed, f"a non-editable install would lack {missed}"
    others = [init.parent.name for init in REPO.glob("*/__init__.py")
              if any(fnmatch.fnmatchcase(init.parent.name, p) for p in find["include"])]
    assert sorted(others) == ["lawkit", "src_digest"], others


def test_the_yaml_and_toml_examples_of_the_readme_and_the_docs_parse() -> None:
    kinds = set()
    for page in _pages():
        blocks = re.findall(r"^ *```(yaml|toml)\n(.*?)^ *```", page.read_text(encoding="utf-8"),
                            flags=re.MULTILINE | re.DOTALL)
        for kind, body in blocks:
            kinds.add(kind)
            try:
                if kind == "yaml":
                    yaml.safe_load(body)
                else:
                    tomllib.loads(body)
            except (yaml.YAMLError, tomllib.TOMLDecodeError) as error:
                raise AssertionError(
                    f"{_name(page)}: a {kind} example does not parse: {error}") from error
    assert kinds == {"yaml", "toml"}
