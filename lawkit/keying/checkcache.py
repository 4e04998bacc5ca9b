"""What `lawkit check` learnt from each law file, kept between runs.

`check` runs in pre-commit hooks hundreds of times a day over files that have not changed.
Parsing and validating a law file costs about a millisecond (PyYAML, then pydantic); finding
its facts here costs a sha256 of its bytes, and a run that finds every file imports neither
PyYAML nor pydantic. So a 1,000-file check falls from over a second to about a quarter.

- An entry is found by the sha256 of the path as shown, the key's name and the file's bytes:
  an edited, renamed or re-keyed file is read afresh. What depends on the engine's digest (a
  stale key) is worked out on every run from the digest the entry says the file names.
- Entries of files no longer there are kept for a while (switching branches back and forth
  finds both sides), up to three times as many as there are law files in the laws folder (as
  the last run that saw the whole folder counted them: a `rekey PATH` of a few files keeps the
  others' entries), the oldest dropped.
- The whole cache is dropped when the code that makes the facts changes (lawkit's checking
  modules, the installed PyYAML, pydantic or Python).
- It is JSON, never pickle (the file is data, not code), one file per laws folder under
  `$LAWKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/lawkit`, else `~/.cache/lawkit`, so nothing is
  ever written into the user's repository. It is written whole to a temp file then renamed,
  and only when something changed; a temp left by a check killed mid-save goes at a later save.
- A cache that cannot be read or written is ignored: `check` never fails because of it. It is
  opened without blocking and read only if it is a regular file, so a FIFO or a device in its
  place cannot hang a pre-commit hook.
- It is a speed-up for a developer's own machine, trusted as that machine's own files are.
  Where the environment says `CI`, `check` and `rekey` neither read nor write it unless
  `--cache` is given: a cache restored from elsewhere is not the checkout's own, and an entry
  edited on disk would make `check` pass a stale law. `--no-cache` turns it off anywhere.
- `rekey` reads it (a file whose facts show it valid and its provenance in order is edited by
  its node tree alone) and adds the facts of the files it writes: the key it set, on its line;
  no problem; the labels it verified unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lawkit.fsio import ReadRefused, cache_folder, read_regular_file
from lawkit.keying.facts import FileFacts, Problem

FORMAT = 1
KEEP_OTHERS = 3
"""Entries of files not seen in a run are kept up to this many times the files seen."""
ABANDONED_AFTER_S = 3600
"""A save's temp file older than this was left by a check killed mid-save: the next save
removes it."""
_TEMP_PREFIX, _TEMP_SUFFIX = ".check-", ".tmp"
# what makes the facts: rekey writes those of the files it edits
_CODE = ("keying/check.py", "keying/checkcache.py", "keying/facts.py", "errors.py",
         "lawfiles/lawbytes.py", "lawfiles/lawfile.py", "keying/rekey.py", "lawfiles/yamlsafe.py",
         "lawfiles/fixes.py")
_LIBRARIES = ("yaml", "pydantic", "pydantic_core")


MAX_BYTES = 256 << 20
"""A cache file bigger than this is not read (a 10,000-file workspace's is about 10 MB)."""


def cache_wanted(flag: bool | None) -> bool:
    """Whether to use the cache: `--cache` (True) or `--no-cache` (False) as given; by default
    yes, except where the environment says `CI` (a restored cache is not the checkout's own)."""
    if flag is not None:
        return flag
    return os.environ.get("CI", "").strip().lower() in ("", "0", "false", "no")


class CheckCache:
    """The facts of the law files of one laws folder, by path, key name and bytes."""

    def __init__(self, laws: Path, folder: Path | None = None) -> None:
        where = os.path.abspath(laws).encode("utf-8", "surrogateescape")
        self.path = (folder or cache_folder()) / \
            f"check-{hashlib.sha256(where).hexdigest()[:20]}.json"
        self.code = _code_fingerprint()
        self._run, self._stored, self._files = self._read()
        self._used: dict[str, dict[str, Any]] = {}
        self._added = False

    @staticmethod
    def entry(shown: str, key: str, raw: bytes) -> str:
        """The name a file's facts are stored under: sha256 of its path as shown, the key's
        name and its bytes."""
        digest = hashlib.sha256()
        for part in (shown, key):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(raw)
        return digest.hexdigest()

    def get(self, entry: str) -> FileFacts | None:
        """The facts stored under `entry`, or None."""
        stored = self._stored.get(entry)
        if stored is None:
            return None
        try:
            facts = _facts(stored)
        except (KeyError, TypeError, ValueError):
            return None
        self._used[entry] = stored
        return facts

    def put(self, entry: str, facts: FileFacts) -> None:
        """Store a file's facts under `entry`."""
        self._used[entry] = {**facts.to_dict(), "run": self._run}
        self._added = True

    def save(self, *, files: int | None = None) -> None:
        """Write the cache when this run added to it: the entries it used, marked as seen in
        this run, then the most recently seen others, up to `KEEP_OTHERS` times as many as
        there are law files in the folder: `files` when this run saw them all, else as the
        last run that did counted them."""
        if not self._added:
            return
        if files is not None:
            self._files = files
        folder_size = max(self._files, len(self._used))
        for entry in self._used.values():
            entry["run"] = self._run
        others = sorted(((entry["run"], name) for name, entry in self._stored.items()
                         if name not in self._used and isinstance(entry, dict)
                         and isinstance(entry.get("run"), int)), reverse=True)
        entries = dict(self._used)
        for _run, name in others[:KEEP_OTHERS * folder_size]:
            entries[name] = self._stored[name]
        document = {"format": FORMAT, "code": self.code, "run": self._run,
                    "files": folder_size, "entries": entries}
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _remove_abandoned_temps(self.path.parent)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=_TEMP_PREFIX,
                                        suffix=_TEMP_SUFFIX)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(document, out, separators=(",", ":"))
                os.replace(temp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise

    def _read(self) -> tuple[int, dict[str, dict[str, Any]], int]:
        """This run's number, the entries stored and the law files the folder held, or
        (1, {}, 0) for a cache not usable."""
        unusable: tuple[int, dict[str, dict[str, Any]], int] = (1, {}, 0)
        raw = _read_regular(self.path)
        if raw is None:
            return unusable
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nesting too deep
            return unusable
        if not isinstance(document, dict) or document.get("format") != FORMAT \
                or document.get("code") != self.code or not isinstance(document.get("run"), int) \
                or not isinstance(document.get("entries"), dict):
            return unusable
        files = document.get("files")
        return (document["run"] + 1, document["entries"],
                files if isinstance(files, int) and not isinstance(files, bool) else 0)


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file of at most `MAX_BYTES`, or None: opened without blocking, so
    a FIFO or device at the path costs nothing (a FIFO with no writer would block `open`)."""
    try:
        return read_regular_file(path, MAX_BYTES)
    except ReadRefused:
        return None


def _remove_abandoned_temps(folder: Path) -> None:
    """Remove temps of saves killed before their rename: those over an hour old (a younger
    one may belong to a check saving right now)."""
    cutoff = time.time() - ABANDONED_AFTER_S
    for temp in folder.glob(f"{_TEMP_PREFIX}*{_TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            if temp.stat().st_mtime < cutoff:
                temp.unlink()


def _facts(stored: dict[str, Any]) -> FileFacts:
    problems = tuple(Problem(**problem) for problem in stored["problems"])
    return FileFacts(named=stored["named"], key_line=stored["key_line"], problems=problems,
                     identity=stored["identity"], labels_line=stored["labels_line"])


def _code_fingerprint() -> str:
    """A hash of what makes the facts: lawkit's checking modules, the versions of the libraries
    they use (their installed files' size and time) and of Python."""
    digest = hashlib.sha256(f"{FORMAT} {sys.version}".encode())
    here = Path(__file__).parents[1]
    for name in _CODE:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes())
    for library in _LIBRARIES:
        spec = importlib.util.find_spec(library)
        origin = spec.origin if spec is not None else None
        if origin is not None:
            st = os.stat(origin)
            digest.update(f"{library} {origin} {st.st_size} {st.st_mtime_ns}".encode())
    return digest.hexdigest()
