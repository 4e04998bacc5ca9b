"""A target environment from a lock file (docs/footprints.md): versions and sources only.

    pylock.toml, pylock.NAME.toml   PEP 751: [[packages]] name, version, marker, and its source
                                    (wheels/sdist from an index; vcs, directory or archive)
    uv.lock                         uv: [[package]] name, version, source, resolution-markers
    *.txt (a requirements file)     PEP 508 requirement lines (pip freeze, uv pip compile)

Names, versions, specifiers and markers are read by ``packaging``. A distribution is pinned
(`Pin.only`) only where the lock allows one version and says nothing more could be installed
from it: listed under several versions, without an exact pin (``torch>=2``, ``name @ URL``, a
pylock entry with no version), or by ``==1.0`` in a requirements file without ``--hash`` (pip
installs ``1.0+local`` from that line), it is ambiguous. A marker is evaluated where the target
fixes every variable it reads (the config's ``python`` fixes ``python_version`` and
``python_full_version``); one that reads a variable the lock file leaves open (the platform,
an extra) leaves its entry ambiguous; one that is false drops its entry. A lock file names no
exact Python and carries no configuration.

In a requirements file: comments, blank lines and option lines (``--index-url``,
``--find-links``...) are skipped; ``-r``/``-c`` files are read too, relative to the file that
names them; ``-e`` lines are skipped (an editable project is hashed, not pinned); ``--hash``
options pin the artifact. A line naming no distribution (a bare path or URL) is refused.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from lawkit.footprint.environment import Pin, Target, canonical_name
from lawkit.footprint.errors import LockFileError
from lawkit.footprint.manifest import current_environment, read_manifest
from lawkit.fsio import ReadRefused, read_regular_file

CURRENT = "current"
"""The target that names the environment lawkit runs in."""
MAX_LOCK_BYTES = 64 * 2**20
"""The largest lock file read (the lock of a large project is a few MiB)."""

_KINDS = ("pylock.toml (PEP 751), uv.lock, or a requirements file (*.txt) pinning "
          "name==version (or a manifest from lawkit env export, *.json)")
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_INCLUDES = ("-r", "--requirement", "-c", "--constraint")
_PYLOCK_SOURCES = ("vcs", "directory", "archive")
_UV_SOURCES = {"registry": "index", "git": "vcs", "url": "archive", "path": "path",
               "directory": "directory", "editable": "editable", "virtual": "virtual"}
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


@dataclass(frozen=True)
class _Entry:
    """One listing of a distribution: its exact version (None: it pins none), whether that pin
    admits nothing else, where the lock takes it from, and whether its marker is open."""

    version: str | None
    exact: bool
    source: str
    open_marker: bool = False


def read_target(spec: str, root: Path | None = None, *, python: str | None = None) -> Target:
    """The target named by ``--env`` or the config's ``environment``: ``current``, a manifest
    (``*.json``, written by ``lawkit env export``) or a lock file (relative to ``root`` when
    given); ``python`` (the config's exact Python) fixes the Python a lock file's markers
    are evaluated for."""
    if spec == CURRENT:
        return current_environment()
    path = Path(spec)
    full = root / path if root is not None and not path.is_absolute() else path
    if full.name.endswith((".json", ".json.gz")):
        return read_manifest(full, shown=spec)
    return read_lock(full, shown=spec, python=python)


def read_lock(path: Path, *, shown: str | None = None, python: str | None = None) -> Target:
    """The environment a lock file pins, by the kind its name says; `LockFileError` naming the
    file and line when it is unreadable, malformed or of another kind."""
    where = shown or str(path)
    fixed = _fixed_markers(python)
    name = path.name
    if name == "uv.lock":
        return _from_toml(path, where, "uv", fixed)
    if re.fullmatch(r"pylock\.([^.]+\.)?toml", name):
        return _from_toml(path, where, "pylock", fixed)
    if name.endswith(".toml"):  # a PEP 751 lock under another name says so by its lock-version
        return _from_toml(path, where, "pylock", fixed, sniff=True)
    if name.endswith(".txt"):
        entries: dict[str, list[_Entry]] = {}
        _read_requirements(path, where, entries, fixed, seen=set())
        return _target(where, entries)
    raise LockFileError(f"not a lock file lawkit reads: pass {_KINDS}, or --env current",
                        path=where)


def _fixed_markers(python: str | None) -> dict[str, str]:
    """The marker variables a target fixes: the Python's version when one is given; a
    requirement line's ``extra`` is never set."""
    fixed = {"extra": ""}
    if python:
        try:
            release = Version(python).release
        except InvalidVersion:
            return fixed
        fixed["python_full_version"] = python
        fixed["python_version"] = ".".join(map(str, release[:2]))
    return fixed


def _target(where: str, entries: Mapping[str, list[_Entry]]) -> Target:
    pins = {n: pin for n, listed in sorted(entries.items()) if (pin := _pin(listed)) is not None}
    return Target(where, None, pins)


def _pin(entries: list[_Entry]) -> Pin | None:
    """One distribution's pin from its entries (None: every entry's marker is false here):
    exact when one entry applies and pins exactly."""
    if not entries:
        return None
    versions = tuple(dict.fromkeys(e.version for e in entries if e.version is not None))
    sources = {e.source for e in entries}
    exact = all(e.exact and not e.open_marker for e in entries)
    return Pin(versions, exact=exact, source=sources.pop() if len(sources) == 1 else "")


def _applies(marker: str | Marker | None, fixed: Mapping[str, str], where: str,
             line: int | None) -> bool | None:
    """Whether an entry's marker holds where the target runs: True, False, or None when it
    reads a variable the target leaves open."""
    if marker is None:
        return True
    try:
        parsed = marker if isinstance(marker, Marker) else Marker(marker)
    except InvalidMarker as exc:
        raise LockFileError(f"marker {marker!r} is not a PEP 508 marker "
                            f"({str(exc).splitlines()[0]}); lock again", path=where,
                            line=line) from None
    variables = set(re.findall(r"[a-z_]+", _QUOTED.sub("", str(parsed)))) - {"and", "or",
                                                                             "in", "not"}
    if not variables <= fixed.keys():
        return None
    return parsed.evaluate(dict(fixed))


def _from_toml(path: Path, where: str, kind: str, fixed: Mapping[str, str], *,
               sniff: bool = False) -> Target:
    text = _read_text(path, where)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        reason = re.sub(r"\s*\(at [^)]*\)$", "", str(exc))
        raise LockFileError(f"not valid TOML ({reason}): fix the file or lock again",
                            path=where, line=int(at[1]) if at else None) from None
    if sniff and "lock-version" not in doc:
        raise LockFileError(f"a TOML file without lock-version is not a PEP 751 lock: pass "
                            f"{_KINDS}, or --env current", path=where)
    table = "packages" if kind == "pylock" else "package"
    if kind == "pylock":
        version = doc.get("lock-version")
        if not isinstance(version, str) or version.split(".")[0] != "1":
            raise LockFileError(f"lock-version {version!r}: lawkit reads PEP 751 lock-version "
                                "1.x; lock again with a tool that writes it",
                                path=where, line=_key_line(text, "lock-version"))
    tables = doc.get(table, [])
    if not isinstance(tables, list) or not all(isinstance(e, dict) for e in tables):
        raise LockFileError(f"{table}: expected an array of tables ([[{table}]]); lock again",
                            path=where, line=_key_line(text, table))
    headers = _header_lines(text, table)
    entries: dict[str, list[_Entry]] = {}
    for index, entry in enumerate(tables):
        name, version = entry.get("name"), entry.get("version")
        line = headers[index] if index < len(headers) else None  # None: an inline array
        if not isinstance(name, str) or not re.fullmatch(_NAME, name):
            raise LockFileError(f"[[{table}]] number {index + 1}: name {name!r} is not a "
                                "distribution name; lock again", path=where, line=line)
        if version is not None and not isinstance(version, str):
            raise LockFileError(f"[[{table}]] {name}: version {version!r} is not a string; "
                                "lock again", path=where, line=line)
        applies = _entry_applies(entry, kind, fixed, where, line)
        if applies is False:
            continue
        entries.setdefault(canonical_name(name), []).append(
            _Entry(version, version is not None, _toml_source(entry, kind), applies is None))
    return _target(where, entries)


def _entry_applies(entry: Mapping[str, object], kind: str, fixed: Mapping[str, str],
                   where: str, line: int | None) -> bool | None:
    """A pylock entry's ``marker``, or a uv.lock fork's ``resolution-markers`` (it applies
    where any of them holds)."""
    if kind == "pylock":
        marker = entry.get("marker")
        return _applies(marker if isinstance(marker, str) else None, fixed, where, line)
    forks = entry.get("resolution-markers")
    if not isinstance(forks, list) or not forks:
        return True
    results = {_applies(str(m), fixed, where, line) for m in forks}
    return True if True in results else (None if None in results else False)


def _toml_source(entry: Mapping[str, object], kind: str) -> str:
    """Where a lock entry takes its distribution from: ``index``, another source kind, or empty
    when the entry names none."""
    if kind == "pylock":
        found = [key for key in _PYLOCK_SOURCES if key in entry]
        if found:
            return found[0]
        return "index" if "wheels" in entry or "sdist" in entry else ""
    source = entry.get("source")
    if isinstance(source, dict):
        return next((_UV_SOURCES.get(str(key), str(key)) for key in source), "")
    return ""


def _read_requirements(path: Path, where: str, entries: dict[str, list[_Entry]],
                       fixed: Mapping[str, str], seen: set[str]) -> None:
    real = os.path.realpath(path)
    if real in seen:
        return  # -r a.txt in b.txt and -r b.txt in a.txt: each read once
    seen.add(real)
    for number, line in _logical_lines(_read_text(path, where)):
        if line.startswith("-"):
            option = re.split(r"[\s=]", line, maxsplit=1)[0]
            value = line[len(option):].lstrip(" \t=").strip()
            if option[:2] in ("-r", "-c") and len(option) > 2 and option[1] != "-":
                option, value = option[:2], option[2:]  # -rbase.txt, as pip reads it
            if option in _INCLUDES:
                if not value:
                    raise LockFileError(f"{option} names no file: write {option} FILE",
                                        path=where, line=number)
                included = path.parent / value
                _read_requirements(included, os.path.join(os.path.dirname(where), value),
                                   entries, fixed, seen)
            continue  # -e (hashed, not pinned), --index-url, --find-links...: no version
        requirement, hashed = _requirement(line, where, number)
        applies = _applies(requirement.marker, fixed, where, number)
        if applies is False:
            continue
        entries.setdefault(canonical_name(requirement.name), []).append(
            _requirement_entry(requirement, hashed, applies is None))


def _requirement(line: str, where: str, number: int) -> tuple[Requirement, bool]:
    """A requirement line as PEP 508 reads it, and whether it carries ``--hash`` options."""
    text, *options = re.split(r"\s(?=--?[A-Za-z])", " " + line)
    text = text.strip()
    hashed = any(o.startswith("--hash") for o in options)
    if re.match(r"[\w+.-]*://|[.~/\\]", text) or \
            re.match(rf"{_NAME}\.(whl|zip|gz)\b", text):
        raise LockFileError(f"{text!r} names no distribution: write name==version, or "
                            "name @ URL", path=where, line=number)
    try:
        return Requirement(text), hashed
    except InvalidRequirement as exc:
        named = re.match(rf"({_NAME})\s*(?:\[[^\]]*\])?\s*([^;]*)", text)
        if named is not None and named[2].strip() and not named[2].lstrip().startswith("@"):
            raise LockFileError(f"{named[2].strip()!r} after {named[1]} is not a version "
                                f"specifier: write {named[1]}==VERSION", path=where,
                                line=number) from None
        raise LockFileError(f"{text!r} is not a PEP 508 requirement "
                            f"({str(exc).splitlines()[0]}): write name==version",
                            path=where, line=number) from None


def _requirement_entry(requirement: Requirement, hashed: bool, open_marker: bool) -> _Entry:
    """What a requirement line pins: ``===V`` pins V; ``==V`` pins V when V has a local label
    or the line pins its artifacts by ``--hash`` (else pip may install ``V+local``); a URL, a
    wildcard or a range pins nothing."""
    if requirement.url:
        return _Entry(None, False, "url", open_marker)
    exact: str | None = None
    closed = False
    for spec in requirement.specifier:
        if spec.operator == "===":
            exact, closed = spec.version, True
        elif spec.operator == "==" and not spec.version.endswith(".*"):
            exact, closed = spec.version, "+" in spec.version or hashed
    return _Entry(exact, exact is not None and closed, "index", open_marker)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a requirements file without comments, joined where one ends in ``\\``,
    each with the number of its first line; blank ones skipped."""
    start, parts = 0, list[str]()
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw)  # a comment starts at # after a blank, as pip
        if not parts:
            start = number
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        joined = " ".join([*parts, line]).strip()
        parts = []
        if joined:
            yield start, joined
    if parts and (joined := " ".join(parts).strip()):
        yield start, joined


def _header_lines(text: str, table: str) -> list[int]:
    """The lines of the ``[[table]]`` headers, in order."""
    header = re.compile(rf"\s*\[\[\s*{re.escape(table)}\s*\]\]\s*(#.*)?")
    return [number for number, line in enumerate(text.splitlines(), 1)
            if header.fullmatch(line)]


def _key_line(text: str, key: str) -> int | None:
    """The line of a top-level ``key =`` or ``[[key]]``, or None."""
    pattern = re.compile(rf"\s*(\[\[\s*)?{re.escape(key)}\b")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return number
    return None


def _read_text(path: Path, where: str) -> str:
    """A lock file's text: a regular file of at most ``MAX_LOCK_BYTES``, in UTF-8."""
    try:
        data = read_regular_file(path, MAX_LOCK_BYTES)
    except ReadRefused as exc:
        raise LockFileError(exc.reason("the lock file", "name a lock file or manifest that exists, "
                                       "or use --env current",
                                       "not a lock file"), path=where) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise LockFileError("not UTF-8 text: save the lock file as UTF-8", path=where,
                            line=line) from None
