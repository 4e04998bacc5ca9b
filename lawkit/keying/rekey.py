"""`lawkit rekey`: move laws to a new digest without a refit, one provenance line per file.

Each law file whose key differs from the target gets exactly two text edits (see `textedit`):
the key's scalar and one appended `rekey` entry; with `adopt`, a file without provenance, or
whose laws were edited by hand, gets one `adopt` entry and nothing else. Every edited text is
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit import fsio
from lawkit.config import Workspace, require_digest
from lawkit.errors import LawkitError, RefusalError
from lawkit.keying.check import (
    identity_of,
    integrity_problems,
    law_paths,
    named_law_files,
    read_law_file,
)
from lawkit.keying.digest import current_digest
from lawkit.keying.facts import FileFacts, Problem
from lawkit.keying.footprints import FileVerdict
from lawkit.lawfiles import lawbytes, lawfile, textedit, yamlsafe
from lawkit.lawfiles.lawwrite import provenance_entry
from lawkit.workers import map_in_workers

if TYPE_CHECKING:
    from lawkit.footprint.envverdict import EnvSpec
    from lawkit.keying.checkcache import CheckCache

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
    adopt: bool
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
    require: str | None = None

    @property
    def exit_code(self) -> int:
        """1, as `check` would exit, when a file at the target has a problem; else 0."""
        return 1 if self.problems else 0

    def lines(self) -> list[str]:
        """One line per file changed or skipped, then the summary."""
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
        return [*out, self.summary()]

    def _verdict_lines(self, path: str) -> list[str]:
        """A re-keyed file's footprint verdict, then each of its laws' (`<file>  <law>
        (<target>)  <verdict>`), when it names a footprint or one is required."""
        return [line for v in self.verdicts
                if v.path == path and (v.footprint is not None or self.require is not None)
                for line in [f"  footprint verdict {v.summary()}",
                             *(f"  {law.line()}" for law in v.laws)]]

    def summary(self) -> str:
        """One line: how many files changed, were already at the target, were skipped."""
        n = len(self.changed)
        files = f"{n} law file{'s' if n != 1 else ''}"
        if self.adopt:
            head = f"{'would adopt' if self.dry_run else 'adopted'} {files}" if n else \
                "nothing to adopt"
        else:
            head = f"{'would rekey' if self.dry_run else 'rekeyed'} {files} to " \
                   f"{self.key}={self.to}" if n else "nothing to rekey"
        if not (n or self.unchanged or self.skipped):
            return f"{head}: no law files"
        rest = []
        if self.unchanged:
            rest.append(f"{len(self.unchanged)} already at {self.key}={self.to}")
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
            "key": self.key, "to": self.to, "adopt": self.adopt, "dry_run": self.dry_run,
            "changed": [{"path": c.path, "kind": c.kind, "from": c.from_, "to": c.to}
                        for c in self.changed],
            "unchanged": self.unchanged,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "problems": [dataclasses.asdict(p) for p in self.problems],
            "diff": self.diff,
            "verdicts": [v.to_json() for v in self.verdicts],
            "laws": [law.to_json() for v in self.verdicts for law in v.laws],
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
    adopt: bool = False,
    dry_run: bool = False,
    paths: Sequence[Path] | None = None,
    at: datetime.datetime | None = None,
    cache: CheckCache | None = None,
    require: str | None = None,
    env: EnvSpec | None = None,
    accept_env: bool = False,
) -> RekeyReport:
    """Re-key the workspace's law files (or `paths`) to `to` (default: the current digest).

    With `adopt`, append an `adopt` entry instead to each file that has no provenance or whose
    laws were edited by hand since their newest fit or adoption. With
    `check`'s `cache`, a file it vouches for (valid, its provenance in order) is not validated
    again, and what `check` will find in each file written goes into it. With `require`
    ("untouched"), a file re-keyed whose footprint verdict differs is a refusal. ``env`` is the
    target environment footprints are compared with; with `accept_env`, each file bound to a
    footprint whose environment differs from it gets one ``rekey`` entry with an ``env`` clause
    (the key kept) that makes it the file's new baseline.
    """
    length, key = ws.digest.length, ws.digest.key
    why = one_line(why, "--why")
    refs = [one_line(ref, "--ref") for ref in refs]
    if from_ is not None:
        require_digest(from_, "--from", length)
    if adopt and to is not None:
        raise LawkitError("--to does not apply with --adopt: an adoption records the digest each "
                          "file names; run lawkit rekey afterwards to move the keys")
    _check_require(require, adopt)
    if accept_env and (adopt or to is not None or from_ is not None or env is None
                       or env.source is None):
        raise LawkitError("--env accepts the target environment as the laws' new baseline: "
                          "name one (--env current|FILE, or [tool.lawkit] environment), and "
                          "leave out --adopt, --to and --from")
    if env is not None:
        env = dataclasses.replace(env, strict=require is not None)
    target = None if adopt else \
        require_digest(to, "--to", length) if to is not None else current_digest(ws)
    files = named_law_files(ws, paths) if paths else law_paths(ws.laws, ws)
    stamp = (at or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
    when = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    report = RekeyReport(key=key, to=target, adopt=adopt, dry_run=dry_run, require=require)
    lock = contextlib.nullcontext() if dry_run else \
        fsio.locked(ws.laws, timeout=LOCK_WAIT_S, shown=ws.rel(ws.laws))
    with lock:
        if not dry_run:
            fsio.remove_stray_temps(ws.laws)

        clauses: dict[str, dict[str, list[str | None]]] = {}
        early: list[FileVerdict] = []
        if accept_env:
            from lawkit.footprint.envverdict import clause_of

            read = [_read(path, ws, key, cache) for path in files]
            early = _verdicts(ws, [(f[1], f[2]) for f in read if isinstance(f[2], bytes)],
                              require, env)
            clauses = {v.path: clause_of(v.diff.env) for v in early if v.diff is not None
                       and v.diff.env is not None and v.diff.env.changes}

        def prepare(file: _File) -> _Outcome:
            """What happens to one file, as a value: it may come back from a worker process."""
            path, shown, raw, known = file
            try:
                if isinstance(raw, LawkitError):
                    raise raw
                if accept_env:
                    if shown not in clauses:
                        return _Unchanged(shown, ())
                    return _prepare_env(path, shown, raw, key, clauses[shown], when, why, refs)
                if adopt:
                    return _prepare_adopt(path, shown, raw, key, when, why, from_)
                assert target is not None
                return _prepare_rekey(path, shown, raw, known, key, target, when, why, refs,
                                      from_)
            except _AtTarget as at:
                return _Unchanged(shown, at.problems)
            except _Skipped as skip:
                return Skip(shown, str(skip), skip.named, skip.line)
            except LawkitError as exc:
                return _Refused(exc.detail, exc.path, exc.line)

        outcomes = map_in_workers(prepare, read if accept_env else
                                  [_read(path, ws, key, cache) for path in files])
        refusals = [o for o in outcomes if isinstance(o, _Refused)]
        if refusals:
            raise _refusal(refusals)
        prepared = [o for o in outcomes if isinstance(o, _Prepared)]
        if accept_env:
            report.verdicts.extend(v for v in early if v.path in clauses)
        elif not adopt:
            report.verdicts.extend(_verdicts(ws, [(p.shown, p.old) for p in prepared], require,
                                             env))
        else:
            report.problems.extend(_still_stale(ws, outcomes))
        report.changed.extend(p.change for p in prepared)
        report.unchanged.extend(o.shown for o in outcomes if isinstance(o, _Unchanged))
        report.problems.extend(p for o in outcomes if isinstance(o, _Unchanged)
                               for p in o.problems)
        report.skipped.extend(o for o in outcomes if isinstance(o, Skip))
        if dry_run:
            return dataclasses.replace(report, diff=_diff(prepared))
        fsio.replace_files([(p.path, p.new) for p in prepared],
                           shown={p.path: p.shown for p in prepared},
                           read={p.path: p.old for p in prepared})
        if cache is not None:
            for p in prepared:
                cache.put(cache.entry(p.shown, key, p.new), p.after)
            cache.save(files=None if paths else len(files))
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
    law_file = lawfile.parse(raw, shown, key=key)
    problems = integrity_problems(law_file, key)
    if problems:
        raise RefusalError(problems[0].message, path=shown, line=problems[0].line)
    named = law_file.host.key[key]
    fields = {"from": named, "to": named, "env": clause, "at": when, "why": why, "refs": refs}
    edits = [textedit.provenance_edit(law_file, provenance_entry("rekey", fields))]
    new, after = _verified(raw, law_file, edits, key, named, {"rekey": fields})
    said = ", ".join(f"{name} {old} -> {new or 'absent'}" for name, (old, new) in clause.items())
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


def _check_require(require: str | None, adopt: bool) -> None:
    from lawkit.keying.footprints import check_require

    check_require(require)
    if require is not None and adopt:
        raise LawkitError("--require does not apply with --adopt: an adoption moves no key")


def _verdicts(ws: Workspace, files: list[tuple[str, bytes]], require: str | None,
              env: EnvSpec | None = None) -> list[FileVerdict]:
    """Each file's footprint verdict, and each of its laws', against the engine's work tree
    (what runs now, whatever --to says); a refusal when `require` is given and a law's differs.
    The work tree is read only when a file names a footprint, and without `require` a file is
    parsed again (for its laws' names) only then."""
    from lawkit.footprint.history import git_old_source
    from lawkit.footprint.lawverdict import moved_reason
    from lawkit.footprint.trees import work_tree_sources
    from lawkit.keying import footprints

    if require is None and not any(b"footprint" in raw for _shown, raw in files):
        return [footprints.FileVerdict(shown, "unknown") for shown, _raw in files]
    verdicts = footprints.verdicts_of(ws, files, lambda: work_tree_sources(ws.digest),
                                      old_source=git_old_source(ws.digest), env=env)
    bad = footprints.failing_laws(verdicts, require)
    if bad:
        first = next(v for v in verdicts if v.path == bad[0].file)
        by_file: dict[str, list[str]] = {}
        for law in bad:
            by_file.setdefault(law.file, []).append(f"{law.name} ({law.target}) {law.verdict}")
        laws = "; ".join((f"in {file}: " if i else "") + ", ".join(named)
                         for i, (file, named) in enumerate(by_file.items()))
        fix = "fit it with --footprint" if first.diff is None else \
            moved_reason(first.diff.units, first.diff.env)
        raise RefusalError(f"--require {require}: {len(bad)} law{'s' if len(bad) != 1 else ''} "
                           f"not {require}: {laws}; footprint verdict {first.summary()}; {fix}; "
                           "nothing was written", path=first.path)
    return verdicts


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
