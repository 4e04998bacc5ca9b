"""`lawkit check`: every law file valid, explained by its provenance and on the current digest.

A problem is one line a person can act on: the file and line, what is wrong, and what fixes it
(DESIGN.md sections 5 and 6). The report's last line is the command that fixes what a command
can fix: `lawkit rekey --adopt` for laws written before lawkit, `lawkit rekey` for stale keys.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from lawkit import lawfile
from lawkit.config import Workspace
from lawkit.digest import current_digest
from lawkit.errors import ConfigError, LawFileError
from lawkit.fsio import TEMP_PREFIX

REKEY_FIX = 'lawkit rekey --why "..."'
ADOPT_FIX = 'lawkit rekey --adopt --why "..."'


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one law file; `fix` is the command that fixes it, where one does."""

    path: str
    line: int | None
    kind: str  # invalid, stale, unexplained, body-edited, duplicate
    message: str
    fix: str | None = None

    def text(self) -> str:
        """`laws/x.yaml:6: stale: names 59e9ff5a, the engine is at 68ad8fc6`."""
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.kind}: {self.message}"

    def github(self) -> str:
        """A GitHub workflow `::error` annotation."""
        props = f"file={_escape_property(self.path)}"
        if self.line is not None:
            props += f",line={self.line}"
        return f"::error {props}::{_escape_data(f'{self.kind}: {self.message}')}"


@dataclass(frozen=True)
class CheckReport:
    """What `check` found: the current digest, the files checked, their problems."""

    key: str
    digest: str
    files: list[str]
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems

    def summary(self) -> str:
        """The one line printed when all is good."""
        n = len(self.files)
        if n == 0:
            return f"no law files found; the engine is at {self.key}={self.digest}"
        return f"{n} law file{'s' if n != 1 else ''} name{'s' if n == 1 else ''} " \
               f"{self.key}={self.digest}"

    def fix_line(self) -> str | None:
        """The last line: the commands that fix what can be fixed, in the order to run them."""
        if self.ok:
            return None
        commands = [c for c in (ADOPT_FIX, REKEY_FIX) if any(p.fix == c for p in self.problems)]
        by_hand = sum(p.fix not in (ADOPT_FIX, REKEY_FIX) for p in self.problems)
        by_hand_text = "the problem above as its line says" if by_hand == 1 else \
            f"the {by_hand} problems above as their lines say"
        if not commands:
            return f"fix: {by_hand_text}"
        then = " && ".join(commands)
        return f"fix: first {by_hand_text}, then {then}" if by_hand else f"fix: {then}"

    def text_lines(self) -> list[str]:
        """One line per problem then the fix, or the one-line summary."""
        if self.ok:
            return [self.summary()]
        return [p.text() for p in self.problems] + [self.fix_line() or ""]

    def github_lines(self) -> list[str]:
        """One workflow annotation per problem then the fix, or the summary."""
        if self.ok:
            return [self.summary()]
        return [p.github() for p in self.problems] + [self.fix_line() or ""]

    def to_json(self) -> dict[str, Any]:
        """The report as the one JSON document `check --format json` prints."""
        return {"key": self.key, "digest": self.digest, "files": len(self.files), "ok": self.ok,
                "problems": [asdict(p) for p in self.problems],
                "fix": (self.fix_line() or "").removeprefix("fix: ") or None}

    def json_text(self) -> str:
        """`to_json` serialised."""
        return json.dumps(self.to_json(), indent=2)


def check_workspace(ws: Workspace) -> CheckReport:
    """Check every law file of the workspace against the current digest."""
    paths = law_paths(ws.laws, ws)
    digest = current_digest(ws)
    key = ws.digest.key
    shown = [ws.rel(p) for p in paths]
    checked = map_in_workers(lambda i: _check_file(paths[i], shown[i], key, digest),
                             range(len(paths)))
    problems: list[Problem] = []
    first_with: dict[str, str] = {}
    for name, (found, identity, labels_line) in zip(shown, checked, strict=True):
        problems += found
        if identity is None:
            continue
        if identity in first_with:
            problems.append(Problem(name, labels_line, "duplicate",
                                    f"the same labels as {first_with[identity]} ({identity}): "
                                    "two files cannot price the same thing; change the labels "
                                    "of one or merge them"))
        else:
            first_with[identity] = name
    return CheckReport(key=key, digest=digest, files=shown, problems=problems)


def _check_file(path: Path, shown: str, key: str, digest: str,
                ) -> tuple[list[Problem], str | None, int | None]:
    """The file's problems, its identity (labels) if it has one, and the labels' line."""
    try:
        law_file = lawfile.load(path, key=key, shown_as=shown)
    except LawFileError as exc:
        return [Problem(exc.path or shown, exc.line, "invalid", exc.detail)], None, None
    identity = None
    if law_file.labels:
        identity = ", ".join(f"{k}={v!r}" for k, v in sorted(law_file.labels.items()))
    return file_problems(law_file, key, digest), identity, law_file.line("labels")


def law_paths(folder: Path, ws: Workspace | None = None) -> list[Path]:
    """Every `*.yaml` below `folder`, recursively, in path order (temp files left out)."""
    if not folder.is_dir():
        shown = ws.rel(folder) if ws else str(folder)
        raise ConfigError(f"the laws folder {shown} does not exist: create it, or point "
                          "[tool.lawkit] laws (or --laws) at the folder of law files")
    found = []
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            if name.endswith(".yaml") and not name.startswith(TEMP_PREFIX):
                found.append(Path(dirpath, name))
    return sorted(found, key=lambda p: p.relative_to(folder).parts)


def file_problems(law_file: lawfile.LawFile, key: str, digest: str) -> list[Problem]:
    """A valid file's problems: a stale key, and whatever `integrity_problems` finds."""
    problems = []
    named = law_file.host.key[key]
    if named != digest:
        problems.append(Problem(law_file.path, law_file.line("host", "key", key), "stale",
                                f"names {named}, the engine is at {digest}", REKEY_FIX))
    return problems + integrity_problems(law_file, key)


def integrity_problems(law_file: lawfile.LawFile, key: str) -> list[Problem]:
    """Whether the provenance explains the key and vouches for the laws' body (DESIGN.md §5)."""
    path, host = law_file.path, law_file.host
    named = host.key[key]
    key_line = law_file.line("host", "key", key)
    if not host.provenance:
        return [Problem(path, key_line, "unexplained",
                        f"no provenance explains the key {named}: laws written before lawkit; "
                        f"adopt them with {ADOPT_FIX}", ADOPT_FIX)]
    problems = []
    refit = f"lawkit fit CAPTURE... --out {path}"
    newest = host.provenance[-1]
    newest_line = law_file.line("host", "provenance", len(host.provenance) - 1)
    if newest.names_digest != named:
        problems.append(Problem(
            path, key_line, "unexplained",
            f"the key {named} is not the digest the newest provenance entry (line {newest_line}) "
            f"names, {newest.names_digest}: it was edited by hand; put {newest.names_digest} "
            f"back and run lawkit rekey, or refit: {refit}", refit))
    for i in range(len(host.provenance) - 1, -1, -1):
        entry = host.provenance[i]
        if entry.body is None:
            continue
        if entry.body != law_file.body_hash():
            problems.append(Problem(
                path, law_file.line("host", "laws"), "body-edited",
                f"the laws differ from the body the {entry.kind} entry at line "
                f"{law_file.line('host', 'provenance', i)} recorded: edited by hand after it; "
                f"undo the edit, or refit: {refit}", refit))
        break
    return problems


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")



_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_FILES_PER_WORKER = 150  # below this a fork costs more than it saves


def map_in_workers(fn: Callable[[_Item], _Result], items: Iterable[_Item]) -> list[_Result]:
    """`[fn(item) for item in items]`, shared with forked worker processes when there are many.

    Parsing dominates `check` and `rekey` on a large workspace (about 1 ms a law file, nearly
    all of it in PyYAML and pydantic, under the GIL), so the items are split into contiguous
    chunks, one for this process and one per forked worker; each worker sends its results back
    pickled. A worker that fails in any way has its chunk redone here, so that a bug raises
    with its real traceback. Workers are forked only from a single-threaded process, where
    `fork` is safe.
    """
    todo = list(items)
    workers = min(_cpus(), 4, len(todo) // _FILES_PER_WORKER)
    if workers < 2 or not hasattr(os, "fork") or threading.active_count() > 1:
        return [fn(item) for item in todo]
    size = -(-len(todo) // workers)
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    children: list[tuple[int, int, list[_Item]]] = []
    try:
        for chunk in chunks[1:]:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover  (the worker: it never returns)
                _work(fn, chunk, read_end, write_end)
            os.close(write_end)
            children.append((pid, read_end, chunk))
        results = [fn(item) for item in chunks[0]]
        for pid, read_end, chunk in children:
            results += _gather(fn, pid, read_end, chunk)
    finally:
        for pid, read_end, _chunk in children:
            with contextlib.suppress(OSError):
                os.close(read_end)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return results


def _work(fn: Callable[[_Item], _Result], chunk: list[_Item], read_end: int,
          write_end: int) -> NoReturn:
    code = 1
    try:
        os.close(read_end)
        data = pickle.dumps([fn(item) for item in chunk], protocol=pickle.HIGHEST_PROTOCOL)
        with open(write_end, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)


def _gather(fn: Callable[[_Item], _Result], pid: int, read_end: int, chunk: list[_Item],
            ) -> list[_Result]:
    with open(read_end, "rb", closefd=False) as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status == 0:
        with contextlib.suppress(Exception):
            part: list[_Result] = pickle.loads(data)
            if len(part) == len(chunk):
                return part
    return [fn(item) for item in chunk]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
