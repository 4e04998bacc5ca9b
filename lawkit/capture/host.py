"""Where captures were taken: the CPU model, logical CPUs, platform and Python version.

Kept beside a `.csv` or `.jsonl` capture in `<capture name>.host.json` (for `run1.csv`,
`run1.csv.host.json`), written at open, and in a Parquet capture's file metadata under
`lawkit.host`, written at close; the same JSON object in both:

    {"cpu_model": "AMD EPYC 7B13", "logical_cpus": 16, "platform": "Linux-6.8.0-x86_64",
     "python": "3.12.3"}

Read once per capture from the standard library (never per step): `/proc/cpuinfo`'s first
`model name` on Linux (elsewhere, or where it has none, the machine's architecture).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from lawkit.errors import CaptureError
from lawkit.fsio import ReadRefused, read_regular_file

SUFFIX = ".host.json"
"""Appended to a text capture's file name to name its host file."""
METADATA_KEY = b"lawkit.host"
"""The Parquet file metadata key holding the host."""
_MAX_BYTES = 1 << 16  # a host file is a few lines; /proc/cpuinfo's first CPU is near its top
_FIELDS = ("cpu_model", "logical_cpus", "platform", "python")

Host = dict[str, str | int | None]


def this_host() -> Host:
    """The host this process runs on."""
    uname = os.uname()
    return {"cpu_model": _cpu_model(uname.machine), "logical_cpus": os.cpu_count(),
            "platform": f"{uname.sysname}-{uname.release}-{uname.machine}",
            "python": platform.python_version()}


def host_path(capture: Path) -> Path:
    """The host file of a text capture."""
    return capture.with_name(capture.name + SUFFIX)


def host_json(host: Host) -> bytes:
    """The host as the bytes of its file (and of the Parquet metadata value)."""
    return (json.dumps(host, indent=1) + "\n").encode()


def keep_host(capture: Path, shown: str, host: Host, *, rows_exist: bool) -> None:
    """Write the host file of a text capture; appending, check that it names this host.

    A capture that already holds rows but has no host file (written before lawkit recorded
    hosts, or by another writer) gets none: its rows' host is not known.
    """
    path = host_path(capture)
    if rows_exist:
        before = _read(path, shown)
        if before is None:
            return
        for field in _FIELDS:
            if before.get(field) != host[field]:
                raise CaptureError(f"exists with rows taken on another host ({field} "
                                   f"{before.get(field)!r}, here {host[field]!r}, says "
                                   f"{path.name}): laws fitted on two hosts price neither; "
                                   "name a new file", path=shown)
        return
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_bytes(host_json(host))
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise CaptureError(f"cannot write {path.name}: {exc.strerror}", path=shown) from None


def _read(path: Path, shown: str) -> dict[str, object] | None:
    try:
        data: bytes | None = read_regular_file(path, _MAX_BYTES)
    except ReadRefused as exc:
        if exc.problem == "missing":
            return None
        if exc.problem == "unreadable":
            raise CaptureError(f"cannot read {path.name}: {exc.detail}", path=shown) from None
        data = None  # a FIFO, a folder, a file too big: not a host file
    try:
        host = json.loads(data) if data is not None else None
    except ValueError:
        host = None
    if not isinstance(host, dict):
        raise CaptureError(f"{path.name} beside it is not a host file (a JSON object of "
                           f"{', '.join(_FIELDS)}): remove it, or name a new file", path=shown)
    return host


def _cpu_model(machine: str) -> str:
    try:
        with open("/proc/cpuinfo", "rb") as f:
            info = f.read(_MAX_BYTES)
    except OSError:
        info = b""
    for line in info.splitlines():
        name, _, value = line.partition(b":")
        if name.strip() == b"model name" and value.strip():
            return value.strip().decode("utf-8", "replace")
    # not platform.processor(): on Linux it runs `uname -p`, a child process in the engine's
    return machine or "unknown"
