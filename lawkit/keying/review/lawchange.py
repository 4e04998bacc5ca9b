"""One law file's change under review: its class, and whether its provenance explains it.

Classes (docs/commands.md, `lawkit review`):

    new        only at head
    removed    only at base: a finding, since deleting laws is not refitting them
    rekey      only the key line changed and `rekey` (or `adopt`) entries were appended
    adopt      only `adopt` entries were appended (and a `provenance:` line, where there was none)
    refit      a `fit` entry was appended (the laws may change with it)
    hand-edit  anything else: a finding naming the changed lines
    invalid    does not parse or validate at head: a finding
    forgotten  untouched by the change, but not naming the engine digest at head: a finding

A rekey or adopt is checked on the text and on the model
(`lawkit.keying.review.textchange`): usually the
text alone proves it (the base is the head less its new entry lines, with another quoted key),
so the base need not be parsed; any other shape parses both files and compares their data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import src_digest
from lawkit.errors import LawFileError
from lawkit.keying.check import is_law_file_name
from lawkit.keying.review import gitobjects
from lawkit.keying.review.textchange import (
    changed_spans,
    explained_lines,
    only_key_and_entries,
    rekey_shape,
)
from lawkit.lawfiles import lawbytes, lawfile

_SYMLINK = "120000"
_NOT_BLOBS = ("160000", "040000")


@dataclass(frozen=True)
class Finding:
    """One problem the review found: what, where (workspace-relative file and line) and the fix."""

    kind: str
    message: str
    path: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = self.path or ""
        if self.path is not None and self.line is not None:
            where = f"{self.path}:{self.line}"
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class AddedFit:
    """A `fit` entry the change adds: the digest its captures ran on, the `footprint` it names
    as written (None: none), and its line. `lawkit.keying.review.footprints` checks the
    footprint as `fit --footprint` would have."""

    digest: str
    footprint: Any
    line: int | None


@dataclass
class FileReview:
    """One law file's class, its key at base and at head, and what is wrong with it."""

    path: str
    kind: str
    key_from: str | None = None
    key_to: str | None = None
    findings: list[Finding] = field(default_factory=list)
    whys: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    touched: bool = True
    fits: list[AddedFit] = field(default_factory=list)
    env_rekeys: list[int | None] = field(default_factory=list)
    """The line of each `rekey` entry the change appends that accepts an environment."""

    @property
    def ok(self) -> bool:
        """True when nothing is wrong with the file."""
        return not self.findings

    def add(self, kind: str, message: str, line: int | None = None) -> None:
        """Record a finding on this file."""
        self.findings.append(Finding(kind, message, self.path, line))


class Loaded:
    """A law file at one revision: its text, and (parsed on first use) the file or its error."""

    def __init__(self, raw: bytes | None, shown: str, key: str,
                 error: LawFileError | None = None) -> None:
        self.raw = raw or b""
        self.text = self.raw.decode("utf-8", "replace")
        self._shown = shown
        self._key = key
        self._parsed = raw is None
        self._law_file: lawfile.LawFile | None = None
        self._error = error

    @property
    def law_file(self) -> lawfile.LawFile | None:
        """The validated file, or None when it does not parse (see `error`)."""
        self._parse()
        return self._law_file

    @property
    def error(self) -> LawFileError | None:
        """Why the file does not parse, or None."""
        self._parse()
        return self._error

    def _parse(self) -> None:
        if not self._parsed:
            self._parsed = True
            try:
                self._law_file = lawfile.parse(self.raw, self._shown, key=self._key)
            except LawFileError as exc:
                self._error = exc


def law_entries(entries: list[src_digest.TreeEntry], laws: str) -> dict[str, src_digest.TreeEntry]:
    """The law files (`*.yaml` below the laws folder) of a tree listing, by repository path."""
    out = {}
    for entry in entries:
        path = entry.path.decode("utf-8", "surrogateescape")
        if entry.mode not in _NOT_BLOBS and is_law_file_name(path.rpartition("/")[2]) and \
                gitobjects.below(laws, path):
            out[path] = entry
    return out


def identity(entry: src_digest.TreeEntry | None) -> tuple[str, bool] | None:
    """What makes a law file differ: its blob, and whether it is a symlink (not its x bit)."""
    return None if entry is None else (entry.oid, entry.mode == _SYMLINK)


def blob_needed(entry: src_digest.TreeEntry) -> bool:
    """Whether reviewing the file needs its blob (a symlink is refused unread)."""
    return entry.mode != _SYMLINK


def load(entry: src_digest.TreeEntry | None, blobs: dict[str, bytes], shown: str,
         key: str, too_big: dict[str, int] | None = None) -> Loaded | None:
    """The law file of a tree entry, read from its blob (None when there is no entry); a blob
    in `too_big` (over the law-file cap, left unread) is refused as check refuses the file."""
    if entry is None:
        return None
    if entry.mode == _SYMLINK:
        return Loaded(None, shown, key, LawFileError(
            "not a regular file (a symlink): law files are plain files", path=shown))
    if too_big and entry.oid in too_big:
        try:
            lawbytes.check_size(too_big[entry.oid], shown)
        except LawFileError as exc:
            return Loaded(None, shown, key, exc)
    return Loaded(blobs[entry.oid], shown, key)


@dataclass(frozen=True)
class Checker:
    """Classifies and verifies law files against the key name and the engine digest at head."""

    key: str
    head_digest: str
    base_rev: str
    base_digest: str | None = None

    def untouched(self, path: str, at_head: Loaded) -> FileReview | None:
        """A finding for a law file the change left alone, or None when it is current."""
        if at_head.law_file is None:
            review = FileReview(path, "invalid", touched=False)
            self._invalid(review, at_head)
            return review
        key = at_head.law_file.host.key[self.key]
        if key == self.head_digest:
            return None
        review = FileReview(path, "forgotten", key, key, touched=False)
        since = "" if key == self.base_digest else " (it was stale at base already)"
        review.add("forgotten", f"forgotten: names {self.key} {key}, but the engine at head "
                   f"digests to {self.head_digest} and this change leaves the file "
                   f"untouched{since}: re-key it (lawkit rekey --why TEXT {path}) or refit it",
                   self._key_line(at_head.law_file))
        return review

    def classify(self, path: str, at_base: Loaded | None, at_head: Loaded | None) -> FileReview:
        """The class and findings of a law file that differs between base and head."""
        if at_head is None or at_head.law_file is None:
            base_file = at_base.law_file if at_base else None
            key_from = base_file.host.key[self.key] if base_file else None
            if at_head is None:
                review = FileReview(path, "removed", key_from, None)
                review.add("removed", "the change deletes this law file: the laws it held are "
                           "gone, not refitted; a removal is reviewed by a person: restore it, "
                           "or remove it in a change of its own")
                return review
            review = FileReview(path, "invalid", key_from, None)
            self._invalid(review, at_head)
            return review
        head_file = at_head.law_file
        review = FileReview(path, "new", None, head_file.host.key[self.key])
        if at_base is None:
            self._integrity(review, head_file)
        else:
            self._changed(review, at_base, at_head, head_file)
        if review.key_to != self.head_digest:
            review.add("stale", f"names {self.key} {review.key_to}, but the engine at head "
                       f"digests to {self.head_digest}: re-key it (lawkit rekey --why TEXT "
                       f"{path}) or refit it", self._key_line(head_file))
        return review

    def _changed(self, review: FileReview, at_base: Loaded, at_head: Loaded,
                 head_file: lawfile.LawFile) -> None:
        after = head_file.host.provenance

        def hand_edit(why: str, fix: str, explained: frozenset[int] = frozenset()) -> None:
            line, spans = changed_spans(at_base.text, at_head.text, explained)
            review.kind = "hand-edit"
            review.add("hand-edit", f"hand-edit: {why}: {spans}: {fix}", line)

        # The usual change (a rekey, an adoption) is proven from the text alone, without
        # parsing the base; any other shape is judged on both parsed files.
        shape = rekey_shape(self.key, at_base.text, at_head.text, head_file)
        base_file = None
        if shape is not None:
            base_key, kept = shape
        else:
            base_file = at_base.law_file
            if base_file is None:
                assert at_base.error is not None
                hand_edit(f"the file did not parse at base ({at_base.error.detail}) and was "
                          "changed by hand", "check it with lawkit check")
                return
            before = base_file.host.provenance
            if after[:len(before)] != before:
                first = next((i for i, (a, b) in enumerate(zip(before, after, strict=False))
                              if a != b), len(after))
                hand_edit(f"provenance is append-only, but entry {first + 1} of the base's "
                          "history was changed or removed", "restore the base's entries")
                return
            base_key, kept = base_file.host.key[self.key], len(before)
        review.key_from = base_key
        appended = after[kept:]
        kinds = {entry.kind for entry in appended}
        review.whys = [e.rekey.why for e in appended if e.rekey]
        review.whys += [e.adopt.why for e in appended if e.adopt]
        review.refs = list(dict.fromkeys(r for e in appended if e.rekey for r in e.rekey.refs))
        review.fits = _fits(head_file, kept)
        review.env_rekeys = [head_file.line("host", "provenance", i)
                             for i, e in enumerate(head_file.host.provenance)
                             if i >= kept and e.rekey is not None and e.rekey.env is not None]
        if "fit" in kinds:
            review.kind = "refit"
        elif kinds:
            problem = None if base_file is None else only_key_and_entries(
                self.key, at_base.text, base_file, at_head.text, head_file, kept)
            if problem is not None:
                hand_edit(problem, "refit it (lawkit fit), or revert those lines and re-key "
                          "it (lawkit rekey)", explained_lines(self.key, head_file, kept))
                return
            review.kind = "rekey" if "rekey" in kinds else "adopt"
        else:
            hand_edit("changed with no provenance entry appended", "refit it (lawkit fit), or "
                      "revert those lines and re-key it (lawkit rekey)")
            return
        self._chain(review, base_key, head_file, appended)

    def _chain(self, review: FileReview, base_key: str, head_file: lawfile.LawFile,
               appended: Sequence[lawfile.ProvenanceEntry]) -> None:
        """Walk the appended entries from the key at base: each must follow from the one before."""
        first = len(head_file.host.provenance) - len(appended)
        key = base_key
        before_fit = None  # the key before the entry just walked, when that was a fit
        for i, entry in enumerate(appended, start=first):
            line = head_file.line("host", "provenance", i)
            fit_key, before_fit = before_fit, None
            if entry.rekey and entry.rekey.laws is not None and fit_key is not None:
                # a refit's kept laws, re-keyed from the key they were fitted on (`fit --why`)
                if (entry.rekey.from_, entry.rekey.to) != (fit_key, key):
                    review.add("rekey-from", f"the rekey entry of the laws the fit before it "
                               f"kept says {entry.rekey.from_} -> {entry.rekey.to}, but the fit "
                               f"moved the key {fit_key} -> {key}: refit them (lawkit fit "
                               "--why TEXT writes this entry)", line)
                if not entry.rekey.why.strip():
                    review.add("rekey-why", "the rekey entry has an empty why: say why the "
                               "change cannot move host time (lawkit fit --why TEXT)", line)
            elif entry.rekey:
                if entry.rekey.from_ != key:
                    was = (f"the law's key at base ({self.base_rev}) is" if i == first else
                           "the entry before it leaves the key at")
                    review.add("rekey-from", f"the rekey entry says from {entry.rekey.from_}, "
                               f"but {was} {key}: re-key from the base's key (run lawkit rekey "
                               "on the change's own base)", line)
                if not entry.rekey.why.strip():
                    review.add("rekey-why", "the rekey entry has an empty why: say why the "
                               "change cannot move host time (lawkit rekey --why TEXT)", line)
                key = entry.rekey.to
            elif entry.adopt:
                if entry.adopt.digest != key:
                    review.add("adopt-digest", f"the adopt entry names {entry.adopt.digest}, "
                               f"but the key it adopts is {key}", line)
                if not entry.adopt.why.strip():
                    review.add("adopt-why", "the adopt entry has an empty why (lawkit rekey "
                               "--adopt --why TEXT)", line)
            elif entry.fit:
                self._kept_in_silence(review, head_file, appended, i - first, key)
                before_fit, key = key, entry.fit.digest
        head_key = head_file.host.key[self.key]
        last = head_file.line("host", "provenance", len(head_file.host.provenance) - 1)
        if key != head_key:
            what = "fit" if review.kind == "refit" else "newest"
            review.add(f"{review.kind}-digest", f"the {what} entry leaves the key at {key}, but "
                       f"host.key.{self.key} is {head_key}: the key was edited by hand", last)
        # A re-key vouches for the laws as the newest fit or adoption left them: say so when
        # they were edited by hand since (`lawkit rekey` refuses such a file).
        vouched = next((e for e in reversed(head_file.host.provenance) if e.body is not None),
                       None)
        body = head_file.body_hash()
        if vouched is not None and vouched.body != body:
            review.add(f"{review.kind}-body", f"the laws' body hash is {body}, "
                       f"but the newest {vouched.kind} entry vouches for {vouched.body}: the "
                       "laws were edited after it: refit them (lawkit fit)", last)

    def _kept_in_silence(self, review: FileReview, head_file: lawfile.LawFile,
                         appended: Sequence[lawfile.ProvenanceEntry], at: int, key: str,
                         ) -> None:
        """A finding when the appended fit entry ``appended[at]`` moves the key from ``key``
        and keeps laws it did not fit, which neither the rekey entry right after it nor a later
        fit of the change covers: they would name a digest they were not fitted on. A fit
        entry that does not name its laws (an older lawkit's) cannot be told apart."""
        fit = appended[at].fit
        assert fit is not None
        if fit.laws is None or fit.digest == key:
            return
        covered = set(fit.laws)
        for later in appended[at + 1:]:
            if later.fit is not None and later.fit.laws is not None:
                covered |= set(later.fit.laws)
        following = appended[at + 1] if at + 1 < len(appended) else None
        if following is not None and following.rekey is not None:
            if following.rekey.laws is None:
                return
            covered |= set(following.rekey.laws)
        kept = [law.name for law in head_file.host.laws if law.name not in covered]
        if kept:
            first = len(head_file.host.provenance) - len(appended)
            review.add("refit-kept", f"the fit entry keeps {', '.join(kept)}, keyed to {key}, "
                       f"and moves the key to {fit.digest} with no rekey entry for "
                       f"{'them' if len(kept) > 1 else 'it'}: refit "
                       f"{'them' if len(kept) > 1 else 'it'} too, or say why the change cannot "
                       "move their host time (lawkit fit --why TEXT)",
                       head_file.line("host", "provenance", first + at))

    def _integrity(self, review: FileReview, head_file: lawfile.LawFile) -> None:
        """The integrity rule of docs/law-files.md, for a file new at head."""
        entries = head_file.host.provenance
        # A new file's older fit entries are history it brings along; what its verdict rests
        # on, and what this change vouches for, is its newest fit.
        review.fits = _fits(head_file, 0)[-1:]
        if not entries:
            review.add("unexplained", "a new law file with no provenance: fit it (lawkit fit) "
                       "or adopt it (lawkit rekey --adopt --why TEXT)", self._key_line(head_file))
            return
        line = head_file.line("host", "provenance", len(entries) - 1)
        if entries[-1].names_digest != review.key_to:
            review.add("new-digest", f"the newest provenance entry names "
                       f"{entries[-1].names_digest}, but host.key.{self.key} is "
                       f"{review.key_to}: the key was edited by hand", line)
        body = next((e.body for e in reversed(entries) if e.body is not None), None)
        if body is not None and body != head_file.body_hash():
            review.add("new-body", f"the laws' body hash is {head_file.body_hash()}, but the "
                       f"newest fit or adopt entry vouches for {body}: the laws were edited "
                       "after it: refit them (lawkit fit)", line)

    def _invalid(self, review: FileReview, at_head: Loaded) -> None:
        assert at_head.error is not None
        review.add("invalid", f"invalid at head: {at_head.error.detail}", at_head.error.line)

    def _key_line(self, law_file: lawfile.LawFile) -> int | None:
        return law_file.line("host", "key", self.key)


def _fits(head_file: lawfile.LawFile, kept: int) -> list[AddedFit]:
    """The `fit` entries after the first `kept` provenance entries."""
    entries = head_file.host.provenance
    return [AddedFit(e.fit.digest, (e.fit.model_extra or {}).get("footprint"),
                     head_file.line("host", "provenance", i))
            for i, e in enumerate(entries) if i >= kept and e.fit is not None]
