"""`lawkit check`: every law file valid, explained by its provenance and on the current digest.

A problem is one line a person can act on: the file and line, what is wrong, and what fixes it
(docs/law-files.md, docs/commands.md). The report's last line is the command that fixes what
a command can fix: `lawkit rekey --adopt` for laws written before lawkit, `lawkit rekey` for
stale keys (or, where the engine change moves host time, the refit `lawkit fit`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit.config import Workspace
from lawkit.errors import ConfigError, LawFileError, LawkitError, RefusalError
from lawkit.fsio import TEMP_PREFIX
from lawkit.keying.digest import current_digest
from lawkit.keying.facts import FileFacts, Problem
from lawkit.lawfiles.fixes import ADOPT_FIX, REKEY_FIX, refit_fix, stale_fix
from lawkit.lawfiles.lawbytes import read_bytes
from lawkit.workers import map_in_workers

if TYPE_CHECKING:
    from lawkit.footprint.envverdict import EnvSpec
    from lawkit.footprint.require import Require
    from lawkit.keying.checkcache import CheckCache
    from lawkit.keying.footprints import FileVerdict
    from lawkit.lawfiles.lawfile import LawFile

ENV_FIX = "lawkit rekey --accept-env"
"""Accepts a target environment as a law file's new baseline (the laws still hold), with the
target's ``--env`` and ``--why TEXT``."""
SYMLINKED_FOLDER = ("a symlinked folder: lawkit never follows a symlink below the laws folder "
                    "(its law files would be checked and rekeyed outside it); move the files "
                    "into the laws folder, or point --laws at the folder itself")


@dataclass(frozen=True)
class CheckReport:
    """What `check` found: the current digest, the files checked, their problems."""

    key: str
    digest: str
    files: list[str]
    problems: list[Problem] = field(default_factory=list)
    verdicts: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """Each stale file's footprint verdict where it names a footprint and the verdict is known
    (docs/footprints.md), and each file's whose environment differs, with the laws whose
    verdict is not untouched, each with its own (`sampling (sample_s) steps`): for a stale
    file, what the fix line recommends, a re-key or a refit."""
    laws: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Each of those files' laws with its verdict, as `rekey` and `review` give them."""
    require: str | None = None
    """The workspace's re-key policy (`[rekey] require`): what the fix line may name."""

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
        """The last line: the commands that fix what a command can fix, in the order to run
        them (a refit before an adoption before a rekey, the rekey with the refit that takes
        its place where the engine change moves host time), or None where no command does (a
        problem's own line says what to do)."""
        refits = [p.fix for p in self.problems if p.fix not in (None, ADOPT_FIX, REKEY_FIX)]
        stale = list(dict.fromkeys(p.path for p in self.problems if p.fix == REKEY_FIX))
        line = " && ".join(dict.fromkeys(refits))
        if any(p.fix == ADOPT_FIX for p in self.problems):
            line += (" && " if line else "") + ADOPT_FIX
        if stale:
            # an adoption of a file still stale exits 1 (adopt, then rekey): `;`, so that the
            # rekey runs after it when the line is pasted into a shell
            after = "; " if line.endswith(ADOPT_FIX) else " && " if line else ""
            line += after + stale_fix(stale, self.verdicts, self.require)
        return f"fix: {line}" if line else None

    def text_lines(self) -> list[str]:
        """One line per problem then the fix, or the one-line summary."""
        if self.ok:
            return [self.summary()]
        fix = self.fix_line()
        return [p.text() for p in self.problems] + ([fix] if fix else [])

    def github_lines(self) -> list[str]:
        """One workflow annotation per problem then the fix, or the summary."""
        if self.ok:
            return [self.summary()]
        fix = self.fix_line()
        return [p.github() for p in self.problems] + ([fix] if fix else [])

    def to_json(self) -> dict[str, Any]:
        """The report as the one JSON document `check --format json` prints."""
        return {"key": self.key, "digest": self.digest, "files": len(self.files), "ok": self.ok,
                "problems": [asdict(p) for p in self.problems],
                "fix": (self.fix_line() or "").removeprefix("fix: ") or None,
                "verdicts": {path: {"verdict": verdict, "laws": self.laws.get(path, [])}
                             for path, (verdict, _laws) in self.verdicts.items()}}

    def json_text(self) -> str:
        """`to_json` serialised."""
        return json.dumps(self.to_json(), indent=2)


def env_target(ws: Workspace, option: str | None, *, accept: bool = False) -> EnvSpec | None:
    """The target environment a command compares footprints with: ``--env`` (``option``), else
    the config's ``environment`` and ``python``; None where neither names one (no footprint is
    then read for the environment), unless ``accept`` (``rekey --accept-env``) needs one."""
    if not (accept or option or ws.environment or ws.python):
        return None
    from lawkit.footprint.envverdict import env_spec

    return env_spec(ws, option)


def check_workspace(ws: Workspace, *, cache: CheckCache | None = None,
                    paths: Sequence[Path] | None = None, env: EnvSpec | None = None,
                    ) -> CheckReport:
    """Check every law file of the workspace (or those `paths` name: see `named_law_files`)
    against the current digest; labels are compared among the files checked.

    With a `cache`, files whose facts it holds (same path, key name and bytes) are not parsed
    again, and the facts of the others are added to it.

    With ``env`` naming a target environment, each file bound to a footprint that recorded its
    environment gets one ``environment`` problem per difference in a distribution that ran
    (or in the Python) that moves a law's verdict, naming those laws.
    """
    files = [str(p) for p in named_law_files(ws, paths)] if paths else law_files(ws.laws, ws)
    digest = current_digest(ws)
    key = ws.digest.key
    shown = [ws.rel(p) for p in files]
    read = [read_law_file(path, name, key, cache) for path, name in zip(files, shown,
                                                                         strict=True)]
    facts = [_invalid(raw, name) if isinstance(raw, LawFileError) else known
             for name, (raw, _entry, known) in zip(shown, read, strict=True)]
    todo = [(i, raw) for i, (raw, _entry, _known) in enumerate(read)
            if facts[i] is None and isinstance(raw, bytes)]
    parsed = map_in_workers(lambda item: file_facts(item[1], shown[item[0]], key), todo)
    for (i, _raw), found in zip(todo, parsed, strict=True):
        facts[i] = found
        if cache is not None:
            cache.put(read[i][1], found)
    problems: list[Problem] = []
    first_with: dict[str, str] = {}
    for name, file in zip(shown, facts, strict=True):
        assert file is not None
        problems += file.problems_at(name, digest)
        if file.identity is None:
            continue
        if file.identity in first_with:
            problems.append(Problem(name, file.labels_line, "duplicate",
                                    f"the same labels as {first_with[file.identity]} "
                                    f"({file.identity}): two files cannot price the same "
                                    "thing; change the labels of one or merge them"))
        else:
            first_with[file.identity] = name
    stale = {p.path for p in problems if p.kind == "stale"}
    compared = env is not None and env.source is not None
    bound = [(name, raw) for name, (raw, _entry, _known) in zip(shown, read, strict=True)
             if (compared or name in stale) and isinstance(raw, bytes) and b"footprint" in raw]
    report = CheckReport(key=key, digest=digest, files=shown, problems=problems,
                         require=ws.require)
    if bound:
        _add_verdicts(ws, bound, report, stale, env)
    return report


def _env_problems(v: FileVerdict, policy: Require | None) -> list[Problem]:
    """One problem per difference of the environment that moves one of a file's laws, each law
    judged on the footprint of its own fit (a file's laws may rest on several). The fix names
    the acceptance of that target, unless the workspace's policy would refuse it."""
    from lawkit.footprint.lawverdict import env_option, law_verdict

    moved: dict[str, list[str]] = {}
    source = None
    for basis in v.bases:
        env = basis.diff.env
        if env is None or env.source is None:
            continue
        source = env.source
        for change in env.changes:
            alone = dataclasses.replace(env, changes=(change,), unpackaged=())
            laws = moved.setdefault(change.line(), [])
            laws += [said for law in v.laws if basis.path in law.footprints
                     and (verdict := law_verdict(basis.diff.regions, (), law.target,
                                                 alone)[1]) != "untouched"
                     and (said := f"{law.name} ({law.target}) {verdict}") not in laws]
    accept = f"{refit_fix(v.path)}, or if the laws still hold: {ENV_FIX} " \
             f"{env_option(source)}--why TEXT {v.path}"
    refused = policy is not None and any(not policy.passes(law.verdict) for law in v.laws)
    return [Problem(v.path, None, "environment", f"{line}: {', '.join(laws)}",
                    refit_fix(v.path) if refused else accept)
            for line, laws in moved.items() if laws]


def _add_verdicts(ws: Workspace, files: list[tuple[str, bytes]], report: CheckReport,
                  stale: set[str], env: EnvSpec | None = None) -> None:
    """The footprint verdict of stale files that name a footprint, and of files whose
    environment differs, against the work tree and the target environment, and each of their
    laws' (the verdicts `rekey` and `review` give); stale files whose verdict is unknown are
    left out. Each file's differences of the environment are problems of their own."""
    from lawkit.footprint.history import git_old_source
    from lawkit.footprint.require import Require
    from lawkit.footprint.trees import work_tree_sources
    from lawkit.keying.footprints import verdicts_of

    policy = Require.of(None, ws)
    judged = verdicts_of(ws, files, lambda: work_tree_sources(ws.digest),
                         old_source=git_old_source(ws.digest), env=env)
    for v in judged:
        moved = _env_problems(v, policy)
        report.problems.extend(moved)
        if not moved and (v.verdict == "unknown" or v.path not in stale):
            continue  # a file the environment moves is listed whatever its verdict
        report.verdicts[v.path] = (v.verdict, tuple(
            f"{law.name} ({law.target}) {law.verdict}" for law in v.laws
            if law.verdict != "untouched"))
        report.laws[v.path] = [law.to_json() for law in v.laws]


def read_law_file(path: str | Path, shown: str, key: str, cache: CheckCache | None,
                  ) -> tuple[bytes | LawFileError, str, FileFacts | None]:
    """A law file's bytes (or why they cannot be read), the cache entry they go under ("" with
    no cache) and the facts the cache holds for them (None: unknown, or no cache)."""
    try:
        raw = read_bytes(path, shown)
    except LawFileError as exc:
        linked = os.path.islink(path) and os.path.isdir(path)
        return (LawFileError(SYMLINKED_FOLDER, path=shown) if linked else exc), "", None
    if cache is None:
        return raw, "", None
    entry = cache.entry(shown, key, raw)
    return raw, entry, cache.get(entry)


def file_facts(raw: bytes, shown: str, key: str) -> FileFacts:
    """Parse and validate one law file's bytes into what `check` needs of it."""
    from lawkit.lawfiles import lawfile  # here, not above: a check its cache answers never needs it

    try:
        law_file = lawfile.parse(raw, shown, key=key)
    except LawFileError as exc:
        return _invalid(exc, shown)
    return FileFacts(named=law_file.host.key[key], key_line=law_file.line("host", "key", key),
                     problems=tuple(integrity_problems(law_file, key)),
                     identity=identity_of(law_file), labels_line=law_file.line("labels"))


def identity_of(law_file: LawFile) -> str | None:
    """What a file prices, by its labels (two files may not price the same): None without."""
    if not law_file.labels:
        return None
    return ", ".join(f"{k}={v!r}" for k, v in sorted(law_file.labels.items()))


def _invalid(exc: LawFileError, shown: str) -> FileFacts:
    return FileFacts(named=None, key_line=None,
                     problems=(Problem(exc.path or shown, exc.line, "invalid", exc.detail),))


def is_law_file_name(name: str) -> bool:
    """Whether a file name is a law file's: `*.yaml` or `*.yml` in any case,
    never a temp file of an interrupted write."""
    return name.lower().endswith((".yaml", ".yml")) and not name.startswith(TEMP_PREFIX)


def law_paths(folder: Path, ws: Workspace | None = None) -> list[Path]:
    """Every law file below `folder`, recursively, in path order (see `law_files`)."""
    return [Path(path) for path in law_files(folder, ws)]


def law_files(folder: Path, ws: Workspace | None = None, *, empty_ok: bool = False,
              ) -> list[str]:
    """Every law file (`is_law_file_name`) below `folder`, recursively, in path order, as
    strings (a `Path` costs about 10 us to make: 0.1 s at 10,000 files).

    A symlinked folder below `folder` is never walked (its files would be checked from outside
    the laws folder, or twice) nor skipped in silence: it is listed like a file, and reading it
    refuses it (`read_law_file`). A folder without law files is a ConfigError unless `empty_ok`.
    """
    shown = ws.rel(folder) if ws else str(folder)
    if not folder.is_dir():
        point = "create it, or point [tool.lawkit] laws (or --laws) at the folder of law files"
        raise ConfigError(f"the laws folder {shown} does not exist: "
                          f"{ws.advice(point) if ws else point}")
    found: list[tuple[tuple[str, ...], str]] = []  # (parts below the folder, path)
    for dirpath, dirnames, filenames in os.walk(folder):
        below = os.path.relpath(dirpath, folder)
        parts = () if below == "." else tuple(below.split(os.sep))
        for name in dirnames:
            if os.path.islink(os.path.join(dirpath, name)):
                found.append(((*parts, name), os.path.join(dirpath, name)))
        for name in filenames:
            if is_law_file_name(name):
                found.append(((*parts, name), os.path.join(dirpath, name)))
    if not found and not empty_ok:
        point = "point [tool.lawkit] laws (or --laws) at the folder of law files"
        raise ConfigError(f"no law files in the laws folder {shown} (every *.yaml and *.yml "
                          "below it is one): an empty laws folder is an error, not a pass; "
                          f"write one with lawkit fit --out, or "
                          f"{ws.advice(point) if ws else point}")
    return [path for _parts, path in sorted(found)]


def named_law_files(ws: Workspace, paths: Sequence[Path]) -> list[Path]:
    """The law files `paths` name (files, or folders: every law file below), each once, in the
    order given: what `check PATH...` and `rekey PATH...` work on. A path outside the laws
    folder, through a symlinked folder below it, missing, or whose name is not a law file's
    is a LawkitError naming it (exit 2): a file check would never read is not checked."""
    laws = Path(os.path.abspath(ws.laws))
    out: dict[Path, None] = {}
    for given in paths:
        path = Path(os.path.abspath(given))
        if path != laws and laws not in path.parents:
            point = "name files below it, or point [tool.lawkit] laws (or --laws) at theirs"
            raise LawkitError(f"{given}: not in the laws folder {ws.rel(laws)}: lawkit checks "
                              f"and rekeys the workspace's law files; {ws.advice(point)}")
        # A symlinked folder on the way would take a rekey's write outside the laws folder.
        for folder in [p for p in path.parents if laws in p.parents] + \
                ([path] if path != laws and path.is_dir() else []):
            if folder.is_symlink():
                raise RefusalError(f"{given}: {ws.rel(folder)} is {SYMLINKED_FOLDER}")
        if path.is_dir():
            out.update(dict.fromkeys(law_paths(path, ws)))
        elif not (path.is_file() or path.is_symlink()):
            raise LawkitError(f"{given}: no such law file")
        elif not is_law_file_name(path.name):
            raise LawkitError(f"{given}: not a law file: a law file's name ends in .yaml or "
                              ".yml (check never reads any other)")
        else:
            out[path] = None
    return list(out)


def integrity_problems(law_file: LawFile, key: str) -> list[Problem]:
    """Whether the provenance explains the key and vouches for the laws' body (the integrity
    rule of docs/law-files.md)."""
    path, host = law_file.path, law_file.host
    named = host.key[key]
    key_line = law_file.line("host", "key", key)
    if not host.provenance:
        return [Problem(path, key_line, "unexplained",
                        f"no provenance explains the key {named}: laws written before lawkit; "
                        f"adopt them with {ADOPT_FIX}", ADOPT_FIX)]
    problems = []
    refit = refit_fix(path)
    newest = host.provenance[-1]
    newest_line = law_file.line("host", "provenance", len(host.provenance) - 1)
    if newest.names_digest != named:
        problems.append(Problem(
            path, key_line, "unexplained",
            f"the key {named} is not the digest the newest provenance entry (line {newest_line}) "
            f"names, {newest.names_digest}: it was edited by hand; put {newest.names_digest} "
            f"back and run lawkit rekey --why TEXT, or refit: {refit}", refit))
    for i in range(len(host.provenance) - 1, -1, -1):
        entry = host.provenance[i]
        if entry.body is None:
            continue
        if entry.body != law_file.body_hash():
            problems.append(Problem(
                path, law_file.line("host", "laws"), "body-edited",
                f"the laws differ from the body the {entry.kind} entry at line "
                f"{law_file.line('host', 'provenance', i)} recorded: edited by hand after it; "
                f"undo the edit, refit ({refit}), or keep it: {ADOPT_FIX} {path}",
                f"{refit}, or to keep the edit: {ADOPT_FIX} {path}"))
        break
    return problems

