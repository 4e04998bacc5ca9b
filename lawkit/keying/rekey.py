"""`lawkit rekey`: move laws to a new digest without a refit, one provenance line per file.

Three runs over one skeleton (`_apply`: read under the laws folder's lock, prepare each file,
refuse or write all): `rekey`, where each law file whose key differs from the target gets
exactly two text edits (see `textedit`), the key's scalar and one appended `rekey` entry;
`adopt`, where a file without provenance, or whose laws were edited by hand, gets one `adopt`
entry and nothing else; `accept_env`, where a file whose footprints' environment differs from
the target gets one `rekey` entry with an `env` clause, the key kept. Every edited text is
re-parsed and compared with what the edit intends before anything is written; any refusal
writes nothing at all (docs/commands.md, `lawkit rekey`).
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import datetime
import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit import fsio
from lawkit.config import Workspace, require_digest
from lawkit.errors import LawkitError, RefusalError, printable
from lawkit.keying.check import (
    identity_of,
    integrity_problems,
    law_paths,
    named_law_files,
    read_law_file,
)
from lawkit.keying.digest import current_digest
from lawkit.keying.facts import FileFacts, Problem
from lawkit.lawfiles import lawbytes, lawfile, textedit, yamlsafe
from lawkit.lawfiles.lawwrite import provenance_entry
from lawkit.workers import map_in_workers

if TYPE_CHECKING:
    from lawkit.footprint.envverdict import EnvSpec
    from lawkit.footprint.require import Require
    from lawkit.keying.checkcache import CheckCache
    from lawkit.keying.footprints import FileVerdict

LOCK_WAIT_S = 5.0


@dataclass(frozen=True)
class Change:
    """One file edited (or, in a dry run, to be edited)."""

    path: str
    kind: str  # "rekey", "adopt" or "env" (the environment accepted, the key kept)
    from_: str
    to: str
    env: str = field(default="", compare=False)
    """For ``env``: the differences accepted, as a person says them."""


@dataclass(frozen=True)
class Skip:
    """One file left alone, and why."""

    path: str
    reason: str
    named: str | None = field(default=None, compare=False)
    """The digest the file names (where it was read), and its line: an adoption that skips a
    stale file still reports it stale."""
    key_line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RekeyReport:
    """What a rekey did: files changed, already at the target, skipped; the diff of a dry run."""

    key: str
    to: str | None
    dry_run: bool
    changed: list[Change] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    """What `check` reports in files already at the target (a body edited by hand): rekey has
    nothing to do there, and says so rather than exit 0 as if all were well."""
    diff: str = ""
    verdicts: list[FileVerdict] = field(default_factory=list)
    """The footprint verdict of each file re-keyed, against the work tree (docs/footprints.md)."""
    require: Require | None = None
    """The policy the verdicts passed (`lawkit.footprint.require`); None: none was set."""
    kind: str = "rekey"
    """``rekey``, ``adopt`` or ``env`` (the target environment accepted, the keys kept)."""
    target_env: str | None = None
    """For ``env``: the target environment accepted, as reports name it."""

    @property
    def adopt(self) -> bool:
        """Whether this was an adoption."""
        return self.kind == "adopt"

    @property
    def exit_code(self) -> int:
        """1, as `check` would exit, when a file at the target has a problem; else 0."""
        return 1 if self.problems else 0

    def lines(self) -> list[str]:
        """One line per file changed or skipped, the warning over `steps` laws, then the
        summary."""
        verb = "would " if self.dry_run else ""
        out = []
        for c in self.changed:
            if c.kind == "env":
                out.append(f"{'would accept' if verb else 'accepted'} the environment in "
                           f"{c.path}: {c.env}")
                out += self._verdict_lines(c.path)
            elif c.kind == "adopt":
                out.append(f"{verb}{'adopt' if verb else 'adopted'} {c.path} at "
                           f"{self.key}={c.to}")
            else:
                out.append(f"{verb}{'rekey' if verb else 'rekeyed'} {c.path}: {c.from_} -> "
                           f"{c.to}")
                out += self._verdict_lines(c.path)
        out += [f"skipped {s.path}: {s.reason}" for s in self.skipped]
        out += [p.text() for p in self.problems]
        warning = self.warning()
        return [*out, *([warning] if warning else []), self.summary()]

    def warning(self) -> str | None:
        """With no policy set, one line naming the laws re-keyed over a ``steps`` verdict (code
        their capture runs executed in steps changed); None when there are none."""
        changed = {c.path for c in self.changed}
        laws = [f"{law.name} ({law.target})" for v in self.verdicts if v.path in changed
                for law in v.laws if law.verdict == "steps"]
        if self.require is not None or not laws:
            return None
        done = "would re-key" if self.dry_run else "re-keyed"
        return printable(f"warning: {done} {len(laws)} law{'s' if len(laws) != 1 else ''} "
                         f"whose verdict is steps ({', '.join(laws)}): code their capture runs "
                         "executed in steps changed, so they may no longer hold; refit them "
                         "(lawkit fit CAPTURE... --out FILE), and set [rekey] require = "
                         "\"startup\" in the config so that such a re-key is refused")

    def _verdict_lines(self, path: str) -> list[str]:
        """A re-keyed file's footprint verdict, then each of its laws' (`<file>  <law>
        (<target>)  <verdict>`), when it names a footprint or a policy is set."""
        return [line for v in self.verdicts
                if v.path == path and (v.footprint is not None or self.require is not None)
                for line in [f"  footprint verdict {v.summary()}",
                             *(f"  {law.line()}" for law in v.laws)]]

    def summary(self) -> str:
        """One line: how many files changed, were already at the target, were skipped."""
        n = len(self.changed)
        files = f"{n} law file{'s' if n != 1 else ''}"
        at = f"{self.key}={self.to}"
        if self.kind == "adopt":
            head = f"{'would adopt' if self.dry_run else 'adopted'} {files}" if n else \
                "nothing to adopt"
        elif self.kind == "env":
            head = f"{'would accept' if self.dry_run else 'accepted'} the environment " \
                   f"{self.target_env} in {files}" if n else \
                f"nothing to accept: no law file's environment differs from {self.target_env}"
            at = "its environment"
        else:
            head = f"{'would rekey' if self.dry_run else 'rekeyed'} {files} to {at}" if n \
                else "nothing to rekey"
        if not (n or self.unchanged or self.skipped):
            return f"{head}: no law files"
        rest = []
        if self.unchanged:
            rest.append(f"{len(self.unchanged)} already at {at}")
        if self.skipped:
            rest.append(f"{len(self.skipped)} skipped")
        if self.problems:
            with_problems = len({p.path for p in self.problems})
            rest.append(f"{with_problems} of those with a problem lawkit check reports: see "
                        f"{'its line' if len(self.problems) == 1 else 'the lines'} above")
        return head + (f" ({', '.join(rest)})" if rest else "")

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON document."""
        return {
            "key": self.key, "to": self.to, "kind": self.kind, "adopt": self.adopt,
            "dry_run": self.dry_run, "target_env": self.target_env,
            "require": None if self.require is None else self.require.level,
            "changed": [{"path": c.path, "kind": c.kind, "from": c.from_, "to": c.to}
                        for c in self.changed],
            "unchanged": self.unchanged,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "problems": [dataclasses.asdict(p) for p in self.problems],
            "diff": self.diff,
            "verdicts": [v.to_json() for v in self.verdicts],
            "laws": [law.to_json() for v in self.verdicts for law in v.laws],
            "warning": self.warning(),
        }


@dataclass(frozen=True)
class _Prepared:
    path: Path
    shown: str
    old: bytes
    new: bytes
    change: Change
    after: FileFacts  # what `check` will find in `new`, for its cache


@dataclass(frozen=True)
class _Unchanged:
    shown: str
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class _Refused:
    detail: str
    path: str | None
    line: int | None


_Outcome = _Prepared | _Unchanged | Skip | _Refused


class _Skipped(Exception):
    def __init__(self, reason: str, named: str | None = None, line: int | None = None) -> None:
        super().__init__(reason)
        self.named, self.line = named, line


class _AtTarget(Exception):
    def __init__(self, problems: Sequence[Problem] = ()) -> None:
        super().__init__()
        self.problems = tuple(problems)


def rekey(
    ws: Workspace,
    *,
    why: str,
    refs: Sequence[str] = (),
    to: str | None = None,
    from_: str | None = None,
    dry_run: bool = False,
    paths: Sequence[Path] | None = None,
    at: datetime.datetime | None = None,
    cache: CheckCache | None = None,
    require: str | None = None,
    env: EnvSpec | None = None,
) -> RekeyReport:
    """Re-key the workspace's law files (or `paths`) to `to` (default: the current digest).

    With `check`'s `cache`, a file it vouches for (valid, its provenance in order) is not
    validated again, and what `check` will find in each file written goes into it. Each file
    re-keyed gets its footprint verdict against the work tree and ``env`` (the target
    environment); the policy (``require``, else the workspace's ``[rekey] require``:
    `lawkit.footprint.require`) refuses a law whose verdict it does not pass.
    """
    from lawkit.footprint.require import Require

    run = _Run.of(ws, why, refs, at, dry_run, cache)
    if from_ is not None:
        require_digest(from_, "--from", ws.digest.length)
    policy = Require.of(require, ws)
    target = require_digest(to, "--to", ws.digest.length) if to is not None else \
        current_digest(ws)
    report = RekeyReport(key=run.key, to=target, dry_run=dry_run, require=policy)

    def prepare(file: _File) -> _Prepared:
        path, shown, raw, known = file
        assert isinstance(raw, bytes)
        return _prepare_rekey(path, shown, raw, known, run.key, target, run.when, why,
                              run.refs, from_)

    def judge(prepared: list[_Prepared], _outcomes: list[_Outcome]) -> None:
        report.verdicts.extend(_verdicts(ws, [(p.shown, p.old) for p in prepared], policy,
                                         env))

    with _reading(ws, paths, run) as files:
        return _apply(run, report, files, prepare, judge, paths)


def adopt(
    ws: Workspace,
    *,
    why: str,
    from_: str | None = None,
    dry_run: bool = False,
    paths: Sequence[Path] | None = None,
    at: datetime.datetime | None = None,
    cache: CheckCache | None = None,
) -> RekeyReport:
    """Append an `adopt` entry to each law file (or of `paths`) that has no provenance or
    whose laws were edited by hand since their newest fit or adoption, at the digest it names;
    the report's problems say which files still name another digest than the engine's."""
    run = _Run.of(ws, why, (), at, dry_run, cache)
    if from_ is not None:
        require_digest(from_, "--from", ws.digest.length)
    report = RekeyReport(key=run.key, to=None, dry_run=dry_run, kind="adopt")

    def prepare(file: _File) -> _Prepared:
        path, shown, raw, _known = file
        assert isinstance(raw, bytes)
        return _prepare_adopt(path, shown, raw, run.key, run.when, why, from_)

    def judge(_prepared: list[_Prepared], outcomes: list[_Outcome]) -> None:
        report.problems.extend(_still_stale(ws, outcomes))

    with _reading(ws, paths, run) as files:
        return _apply(run, report, files, prepare, judge, paths)


def accept_env(
    ws: Workspace,
    *,
    why: str,
    env: EnvSpec,
    refs: Sequence[str] = (),
    dry_run: bool = False,
    paths: Sequence[Path] | None = None,
    at: datetime.datetime | None = None,
    cache: CheckCache | None = None,
    require: str | None = None,
) -> RekeyReport:
    """Accept the target environment ``env`` as the new baseline of each law file (or of
    `paths`) bound to a footprint whose environment differs from it: one ``rekey`` entry with
    an ``env`` clause, the key kept. Each law is judged on the footprint it was fitted on, and
    the policy refuses as for a re-key."""
    from lawkit.footprint.require import Require
    from lawkit.keying import footprints

    if env.source is None:
        raise LawkitError("--accept-env accepts a target environment as the laws' new "
                          "baseline: name one with --env current|FILE, or set [tool.lawkit] "
                          "environment")
    run = _Run.of(ws, why, refs, at, dry_run, cache)
    policy = Require.of(require, ws)
    report = RekeyReport(key=run.key, to=None, dry_run=dry_run, require=policy, kind="env",
                         target_env=env.source)
    with _reading(ws, paths, run) as files:
        judged = _verdicts(ws, [(f[1], f[2]) for f in files if isinstance(f[2], bytes)],
                           None, env)
        clauses = {v.path: clause for v in judged if (clause := _env_clause(v))}
        accepted = [v for v in judged if v.path in clauses]
        # as a re-key, the policy judges the files it would edit, and those whose laws code
        # from no distribution makes unknown (no acceptance pins that code)
        footprints.refuse_under(policy, [v for v in judged if v.path in clauses or any(
            b.diff.env is not None and b.diff.env.unpackaged_line() for b in v.bases)])
        report.verdicts.extend(accepted)

        def prepare(file: _File) -> _Prepared:
            path, shown, raw, _known = file
            assert isinstance(raw, bytes)
            if shown not in clauses:
                lawfile.parse(raw, shown, key=run.key)  # a malformed file is refused
                raise _AtTarget()
            return _prepare_env(path, shown, raw, run.key, clauses[shown], run.when, why,
                                run.refs)

        return _apply(run, report, files, prepare, lambda _p, _o: None, paths)


def _env_clause(verdict: FileVerdict) -> dict[str, list[str | None]]:
    """The ``env`` clause accepting every difference of the environment of each footprint a
    file's laws rest on (each law on its own fit's: a file may hold several)."""
    from lawkit.footprint.envverdict import clause_of

    out: dict[str, list[str | None]] = {}
    for basis in verdict.bases:
        env = basis.diff.env
        if env is not None and env.changes:
            for name, pair in clause_of(env).items():
                out.setdefault(name, pair)
    return out


@dataclass(frozen=True)
class _Run:
    """What every kind of run shares: the workspace, the key, the entry's words and time."""

    ws: Workspace
    key: str
    why: str
    refs: list[str]
    when: str
    dry_run: bool
    cache: CheckCache | None

    @classmethod
    def of(cls, ws: Workspace, why: str, refs: Sequence[str], at: datetime.datetime | None,
           dry_run: bool, cache: CheckCache | None) -> _Run:
        stamp = (at or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
        return cls(ws, ws.digest.key, one_line(why, "--why"),
                   [one_line(ref, "--ref") for ref in refs],
                   stamp.strftime("%Y-%m-%dT%H:%M:%SZ"), dry_run, cache)


@contextlib.contextmanager
def _reading(ws: Workspace, paths: Sequence[Path] | None, run: _Run) -> Iterator[list[_File]]:
    """The law files (those of `paths`, else every one), read under the laws folder's lock
    (none for a dry run), stray temp files of an interrupted run removed first."""
    lock = contextlib.nullcontext() if run.dry_run else \
        fsio.locked(ws.laws, timeout=LOCK_WAIT_S, shown=ws.rel(ws.laws))
    with lock:
        if not run.dry_run:
            fsio.remove_stray_temps(ws.laws)
        files = named_law_files(ws, paths) if paths else law_paths(ws.laws, ws)
        yield [_read(path, ws, run.key, run.cache) for path in files]


def _apply(run: _Run, report: RekeyReport, files: list[_File],
           prepare: Callable[[_File], _Prepared],
           judge: Callable[[list[_Prepared], list[_Outcome]], None],
           paths: Sequence[Path] | None) -> RekeyReport:
    """The skeleton of every run: each file prepared (in workers), any refusal raised with
    nothing written, ``judge`` given what was prepared, then the report filled and the files
    replaced (or, in a dry run, the diff)."""

    def outcome(file: _File) -> _Outcome:
        """What happens to one file, as a value: it may come back from a worker process."""
        shown, raw = file[1], file[2]
        try:
            if isinstance(raw, LawkitError):
                raise raw
            return prepare(file)
        except _AtTarget as at:
            return _Unchanged(shown, at.problems)
        except _Skipped as skip:
            return Skip(shown, str(skip), skip.named, skip.line)
        except LawkitError as exc:
            return _Refused(exc.detail, exc.path, exc.line)

    outcomes = map_in_workers(outcome, files)
    refusals = [o for o in outcomes if isinstance(o, _Refused)]
    if refusals:
        raise _refusal(refusals)
    prepared = [o for o in outcomes if isinstance(o, _Prepared)]
    judge(prepared, outcomes)
    report.changed.extend(p.change for p in prepared)
    report.unchanged.extend(o.shown for o in outcomes if isinstance(o, _Unchanged))
    report.problems.extend(p for o in outcomes if isinstance(o, _Unchanged) for p in o.problems)
    report.skipped.extend(o for o in outcomes if isinstance(o, Skip))
    if run.dry_run:
        return dataclasses.replace(report, diff=_diff(prepared))
    fsio.replace_files([(p.path, p.new) for p in prepared],
                       shown={p.path: p.shown for p in prepared},
                       read={p.path: p.old for p in prepared})
    if run.cache is not None:
        for p in prepared:
            run.cache.put(run.cache.entry(p.shown, run.key, p.new), p.after)
        run.cache.save(files=None if paths else len(files))
    return report


def _still_stale(ws: Workspace, outcomes: Sequence[_Outcome]) -> list[Problem]:
    """Check's stale line for each file an adoption wrote or left alone that names a digest
    other than the engine's: an adoption vouches for laws, not keys, so such a file still
    fails check, and the run must not exit 0."""
    named = [(o.shown, o.change.from_, o.after.key_line) if isinstance(o, _Prepared) else
             (o.path, o.named, o.key_line) for o in outcomes if isinstance(o, _Prepared | Skip)]
    stale = [n for n in named if n[1] is not None]
    if not stale:
        return []
    digest = current_digest(ws)
    return [FileFacts(named=key, key_line=line, problems=()).problems_at(shown, digest)[0]
            for shown, key, line in stale if key != digest]


_File = tuple[Path, str, bytes | LawkitError, FileFacts | None]


def _read(path: Path, ws: Workspace, key: str, cache: CheckCache | None) -> _File:
    """A file as `prepare` takes it: its path, as shown, its bytes (or why they cannot be read)
    and what check's cache holds for them. Read here, in the parent, so that the cache knows
    which entries this run used."""
    shown = ws.rel(path)
    raw, _entry, known = read_law_file(path, shown, key, cache)
    return path, shown, raw, known


def rekeyed_bytes(raw: bytes, shown: str, *, key: str, to: str, at: str, why: str,
                  refs: Sequence[str] = ()) -> bytes:
    """A law file's bytes with the key set to `to` and one `rekey` entry appended.

    `raw` unchanged when the file already names `to`; RefusalError (nothing else changes)
    when the provenance does not explain the key or the body, or the edit cannot be placed.
    """
    try:
        return _prepare_rekey(Path(shown), shown, raw, None, key, to, at, why, list(refs),
                              None).new
    except _AtTarget:
        return raw


def adopted_bytes(raw: bytes, shown: str, *, key: str, at: str, why: str) -> bytes:
    """A law file's bytes with one `adopt` entry appended (`raw` when its provenance already
    explains its key and its laws)."""
    try:
        return _prepare_adopt(Path(shown), shown, raw, key, at, why, None).new
    except _Skipped:
        return raw


def _prepare_rekey(path: Path, shown: str, raw: bytes, known: FileFacts | None, key: str,
                   target: str, when: str, why: str, refs: list[str], from_: str | None,
                   ) -> _Prepared:
    """The file re-keyed; `known` is what check's cache holds for `raw`, if anything: a valid
    file without problems is then edited by its node tree alone, not validated again."""
    source: lawfile.LawFile | lawfile.LawText
    law_file: lawfile.LawFile | None = None
    if known is not None and known.named is not None and not known.problems:
        named = known.named
    else:
        law_file = lawfile.parse(raw, shown, key=key)
        named = law_file.host.key[key]
    if named == target:
        raise _AtTarget(integrity_problems(law_file, key) if law_file is not None else ())
    if from_ is not None and named != from_:
        raise _Skipped(f"names {named}, not --from {from_}")
    if law_file is None:
        assert known is not None
        identity, source = known.identity, lawfile.law_text(raw, shown)
    else:
        problems = integrity_problems(law_file, key)
        if problems:
            raise RefusalError(problems[0].message, path=shown, line=problems[0].line)
        identity, source = identity_of(law_file), law_file
    fields = {"from": named, "to": target, "at": when, "why": why, "refs": refs}
    edits = [textedit.key_edit(source, key, target),
             textedit.provenance_edit(source, provenance_entry("rekey", fields))]
    new, after = _verified(raw, source, edits, key, target, {"rekey": fields})
    return _Prepared(path, shown, raw, new, Change(shown, "rekey", named, target),
                     _facts_after(after, key, target, identity))


def _prepare_env(path: Path, shown: str, raw: bytes, key: str,
                 clause: dict[str, list[str | None]], when: str, why: str, refs: list[str],
                 ) -> _Prepared:
    """The file with one ``rekey`` entry accepting the environment's differences (``clause``:
    each name's recorded and target version) as its new baseline; the key stays."""
    from lawkit.footprint.envverdict import accepted_label

    law_file = lawfile.parse(raw, shown, key=key)
    problems = integrity_problems(law_file, key)
    if problems:
        raise RefusalError(problems[0].message, path=shown, line=problems[0].line)
    named = law_file.host.key[key]
    fields = {"from": named, "to": named, "env": clause, "at": when, "why": why, "refs": refs}
    edits = [textedit.provenance_edit(law_file, provenance_entry("rekey", fields))]
    new, after = _verified(raw, law_file, edits, key, named, {"rekey": fields})
    said = ", ".join(f"{name} {old} -> {accepted_label(new)}"
                     for name, (old, new) in clause.items())
    return _Prepared(path, shown, raw, new, Change(shown, "env", named, named, said),
                     _facts_after(after, key, named, identity_of(law_file)))


def _prepare_adopt(path: Path, shown: str, raw: bytes, key: str, when: str, why: str,
                   from_: str | None) -> _Prepared:
    """The file with one `adopt` entry vouching for its laws as they are: laws written before
    lawkit, or laws edited by hand after their newest fit or adoption; never a key edited by
    hand, which a rekey or a refit explains."""
    law_file = lawfile.parse(raw, shown, key=key)
    named = law_file.host.key[key]
    if law_file.host.provenance:
        problems = integrity_problems(law_file, key)
        if not problems:
            raise _Skipped("nothing to adopt: its provenance explains its key and its laws",
                           named, law_file.line("host", "key", key))
        if problems[0].kind == "unexplained":
            raise RefusalError(f"{problems[0].message}; --adopt vouches for laws as they are, "
                               "not for a key", path=shown, line=problems[0].line)
    if from_ is not None and named != from_:
        raise _Skipped(f"names {named}, not --from {from_}")
    fields = {"digest": named, "at": when, "why": why, "body": law_file.body_hash()}
    edits = [textedit.provenance_edit(law_file, provenance_entry("adopt", fields))]
    new, after = _verified(raw, law_file, edits, key, named, {"adopt": fields})
    return _Prepared(path, shown, raw, new, Change(shown, "adopt", named, named),
                     _facts_after(after, key, named, identity_of(law_file)))


def _facts_after(after: yamlsafe.Document, key: str, named: str, identity: str | None,
                 ) -> FileFacts:
    """What `check` finds in a file rekey wrote: the key it set, on the line it now has, and
    no problem (the new entry explains the key; the laws are those the entries vouch for)."""
    return FileFacts(named=named, key_line=after.line(("host", "key", key)), problems=(),
                     identity=identity, labels_line=after.line(("labels",)))


def _verified(raw: bytes, law_file: lawfile.LawFile | lawfile.LawText,
              edits: list[textedit.Edit], key: str, new_key: str, entry: dict[str, Any],
              ) -> tuple[bytes, yamlsafe.Document]:
    """The edited bytes, once shown to differ by the edits alone and to read back as intended,
    with the node tree they read back as."""
    shown = law_file.path
    old_text = law_file.text
    new_text = textedit.apply_edits(old_text, edits)
    if not textedit.only_these_edits(old_text, new_text, edits):
        raise RefusalError("the edit would change more than the key and one provenance line "
                           "(a lawkit bug: please report it with this file)", path=shown)
    lawfile.ProvenanceEntry.model_validate(entry)
    new_root = textedit.reread(new_text, shown)
    where = textedit.reads_as_intended(law_file.document.nodes[()], new_root, key=key,
                                       digest=new_key, entry=entry)
    if where is not None:
        raise RefusalError(f"the edited file would read back with {where} changed, not just "
                           "the key and one provenance entry: edit it by hand, or report it "
                           "with this file", path=shown, line=law_file.line("host"))
    bom = codecs.BOM_UTF8 if raw.startswith(codecs.BOM_UTF8) else b""
    new = bom + new_text.encode("utf-8")
    if len(new) > lawbytes.MAX_BYTES:
        raise RefusalError(f"the edited file would be {len(new):,} bytes, over the "
                           f"{lawbytes.MAX_BYTES >> 20} MiB that check and fit accept for a law "
                           "file: split its laws over several files (or give a shorter --why)",
                           path=shown)
    return new, yamlsafe.Document(None, yamlsafe.NodeIndex(new_root))


def _verdicts(ws: Workspace, files: list[tuple[str, bytes]], require: Require | None,
              env: EnvSpec | None = None) -> list[FileVerdict]:
    """Each file's footprint verdict, and each of its laws', against the engine's work tree
    (what runs now, whatever --to says); a refusal when the policy refuses a law's. The work
    tree is read only when a file names a footprint, and without a policy a file is parsed
    again (for its laws' names) only then."""
    from lawkit.keying import footprints

    if require is None and not any(b"footprint" in raw for _shown, raw in files):
        return [footprints.FileVerdict(shown, "unknown") for shown, _raw in files]
    return footprints.judged_on_work_tree(ws, files, env, require)


def _diff(prepared: list[_Prepared]) -> str:
    out: list[str] = []
    for p in prepared:
        old = _diff_lines(p.old)
        new = _diff_lines(p.new)
        for line in difflib.unified_diff(old, new, f"a/{p.shown}", f"b/{p.shown}"):
            out.append(line if line.endswith("\n") else
                       line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _diff_lines(raw: bytes) -> list[str]:
    text = raw.decode("utf-8").removeprefix("\ufeff")
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _refusal(refusals: list[_Refused]) -> RefusalError:
    first = refusals[0]
    more = len(refusals) - 1
    tail = f" ({more} more file{'s' if more != 1 else ''} refused: lawkit check lists them)" \
        if more else ""
    return RefusalError(f"{first.detail}; nothing was written{tail}", path=first.path,
                        line=first.line)


def one_line(value: str, flag: str) -> str:
    text = value.strip()
    if not text:
        raise LawkitError(f"{flag}: must not be empty: say why the change cannot move host time"
                          if flag == "--why" else f"{flag}: must not be empty")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\ufeff"
           or 0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise LawkitError(f"{flag}: one line of printable text, please (no line breaks or "
                          "control characters)")
    return text
