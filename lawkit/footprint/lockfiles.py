"""A target environment from a lock file (docs/footprints.md), read with the standard library.

    pylock.toml, pylock.NAME.toml   PEP 751: [[packages]] name, version; lock-version 1.x
    uv.lock                         uv: [[package]] name, version
    *.txt (a requirements file)     lines that pin name==version (pip freeze, uv pip compile)

A distribution listed under several versions (a lock for several platforms, a marker per
Python) or without an exact pin (``torch>=2``, ``name @ URL``, a pylock entry with no
version) is ambiguous: its `Pin` allows no one version. A lock file names no exact Python.

In a requirements file: comments, blank lines and option lines (``--index-url``,
``--find-links``...) are skipped; ``-r``/``-c`` files are read too, relative to the file that
names them; ``-e`` lines are skipped (an editable project is hashed, not pinned); ``--hash``
options are allowed; markers after ``;`` are not evaluated (a name pinned at two versions under
two markers is ambiguous). A line naming no distribution (a bare path or URL) is refused.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

from lawkit.footprint.environment import Pin, Target, canonical_name, current_environment
from lawkit.footprint.errors import LockFileError

CURRENT = "current"
"""The target that names the environment lawkit runs in."""
MAX_LOCK_BYTES = 64 * 2**20
"""The largest lock file read (the lock of a large project is a few MiB)."""

_KINDS = "pylock.toml (PEP 751), uv.lock, or a requirements file (*.txt) pinning name==version"
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_REQUIREMENT = re.compile(rf"(?P<name>{_NAME})\s*(?:\[[^\]]*\])?\s*(?P<rest>.*)")
_SPECIFIER = re.compile(r"(?P<op>~=|===|==|!=|<=|>=|<|>)\s*(?P<version>[^\s,;]+)")
_INCLUDES = ("-r", "--requirement", "-c", "--constraint")
_EDITABLE = ("-e", "--editable")


def read_target(spec: str, root: Path | None = None) -> Target:
    """The target named by ``--env`` or the config's ``environment``: ``current``, or a lock
    file (relative to ``root`` when given)."""
    if spec == CURRENT:
        return current_environment()
    path = Path(spec)
    return read_lock(root / path if root is not None and not path.is_absolute() else path,
                     shown=spec)


def read_lock(path: Path, *, shown: str | None = None) -> Target:
    """The environment a lock file pins, by the kind its name says; `LockFileError` naming the
    file and line when it is unreadable, malformed or of another kind."""
    where = shown or str(path)
    name = path.name
    if name == "uv.lock":
        return _from_toml(path, where, "uv")
    if re.fullmatch(r"pylock\.([^.]+\.)?toml", name):
        return _from_toml(path, where, "pylock")
    if name.endswith(".toml"):  # a PEP 751 lock under another name says so by its lock-version
        return _from_toml(path, where, "pylock", sniff=True)
    if name.endswith(".txt"):
        pins: dict[str, list[tuple[str | None, bool]]] = {}
        _read_requirements(path, where, pins, seen=set())
        return Target(where, None, {n: _pin(entries) for n, entries in sorted(pins.items())})
    raise LockFileError(f"not a lock file lawkit reads: pass {_KINDS}, or --env current",
                        path=where)


def _from_toml(path: Path, where: str, kind: str, *, sniff: bool = False) -> Target:
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
    pins: dict[str, list[tuple[str | None, bool]]] = {}
    for index, entry in enumerate(tables):
        name, version = entry.get("name"), entry.get("version")
        line = headers[index] if index < len(headers) else None  # None: an inline array
        if not isinstance(name, str) or not re.fullmatch(_NAME, name):
            raise LockFileError(f"[[{table}]] number {index + 1}: name {name!r} is not a "
                                "distribution name; lock again", path=where, line=line)
        if version is not None and not isinstance(version, str):
            raise LockFileError(f"[[{table}]] {name}: version {version!r} is not a string; "
                                "lock again", path=where, line=line)
        pins.setdefault(canonical_name(name), []).append((version, version is not None))
    return Target(where, None, {n: _pin(entries) for n, entries in sorted(pins.items())})


def _pin(entries: list[tuple[str | None, bool]]) -> Pin:
    """One distribution's pin from its entries: exact when each entry pins a version."""
    versions = tuple(dict.fromkeys(v for v, _ in entries if v is not None))
    return Pin(versions, exact=all(exact for _, exact in entries))


def _read_requirements(path: Path, where: str, pins: dict[str, list[tuple[str | None, bool]]],
                       seen: set[str]) -> None:
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
                                   pins, seen)
            continue  # -e (hashed, not pinned), --index-url, --find-links...: no version
        name, version = _requirement(line, where, number)
        pins.setdefault(canonical_name(name), []).append((version, version is not None))


def _requirement(line: str, where: str, number: int) -> tuple[str, str | None]:
    """A requirement line's name and exact version (None: it pins none)."""
    line = re.split(r"\s--?[A-Za-z]", " " + line)[0].strip()  # --hash=... after it
    line = line.split(";", 1)[0].strip()  # markers are not evaluated
    m = _REQUIREMENT.fullmatch(line)
    if m is None or re.match(r"[\w+.-]*://|[.~/\\]", line) or \
            m["name"].endswith((".whl", ".zip", ".gz")):
        raise LockFileError(f"{line!r} names no distribution: write name==version, or "
                            "name @ URL", path=where, line=number)
    rest = m["rest"].strip()
    if rest.startswith("@"):
        return m["name"], None  # a direct reference: its code may differ at one version
    exact: str | None = None
    for part in filter(None, (p.strip() for p in rest.split(","))):
        spec = _SPECIFIER.fullmatch(part)
        if spec is None:
            raise LockFileError(f"{part!r} after {m['name']} is not a version specifier: "
                                f"write {m['name']}==VERSION", path=where, line=number)
        if spec["op"] in ("==", "===") and not spec["version"].endswith(".*"):
            exact = spec["version"]
    return m["name"], exact


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
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LockFileError(f"cannot read the lock file: {exc.strerror}", path=where) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LockFileError("not a regular file: pass a lock file", path=where)
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_LOCK_BYTES + 1)
    except OSError as exc:
        raise LockFileError(f"cannot read the lock file: {exc.strerror}", path=where) from None
    finally:
        os.close(fd)
    if len(data) > MAX_LOCK_BYTES:
        raise LockFileError(f"larger than {MAX_LOCK_BYTES // 2**20} MiB: not a lock file",
                            path=where)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise LockFileError("not UTF-8 text: save the lock file as UTF-8", path=where,
                            line=line) from None
