"""Binding a footprint to a fit, and a law file's verdict from the footprint its fit names.

``fit --footprint FILE`` calls ``bind_footprint``: the footprint must have been recorded on the
digest the captures ran on, and the ``fit`` provenance entry records ``Binding.to_json()``
(``{path, sha256}``, the path relative to the workspace root). ``bound_footprint`` reads it
back for check, rekey and review: a missing binding, a missing footprint file, or one whose
sha256 differs is None, and the verdict ``unknown``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lawkit.config import Workspace
from lawkit.footprint.document import Footprint, decode_footprint, inside, read_footprint_bytes
from lawkit.footprint.errors import FootprintError

ReadFile = Callable[[str], bytes | None]
"""Reads a file by its path relative to the workspace root; None when there is none."""


@dataclass(frozen=True)
class Binding:
    """The footprint a fit was made with: its path (from the workspace root) and sha256."""

    path: str
    sha256: str

    def to_json(self) -> dict[str, str]:
        """What the ``fit`` provenance entry records under ``footprint``."""
        return {"path": self.path, "sha256": self.sha256}


def bind_footprint(ws: Workspace, path: Path, captures_digest: str) -> tuple[Footprint, Binding]:
    """Read a footprint for a fit; refused unless it lies inside the workspace (the fit records
    its path from the workspace root) and was recorded on the captures' digest."""
    shown = ws.rel(path)
    root = os.path.realpath(ws.root)
    if not inside(os.path.realpath(path), root):
        raise FootprintError(
            f"outside the workspace ({ws.root}): a fit records its footprint's path from the "
            "workspace root, so `rekey` and `review` can find it; move or copy it inside "
            "(say, footprints/) and pass that path", path=shown)
    raw = read_footprint_bytes(path, shown=shown, root=ws.root)
    footprint = decode_footprint(raw, shown=shown)
    if footprint.digest != captures_digest:
        raise FootprintError(
            f"recorded on {footprint.key}={footprint.digest}, but the captures ran on "
            f"{footprint.key}={captures_digest}: record the footprint of the capture runs "
            "(`lawkit footprint record`)", path=shown)
    return footprint, Binding(shown, hashlib.sha256(raw).hexdigest())


def bound_footprint(ws: Workspace, binding: Mapping[str, Any] | None,
                    read: ReadFile | None = None) -> Footprint | None:
    """The footprint a binding names, or None when it is missing or its sha256 differs.

    ``read`` reads the file (from git objects, say); by default from the work tree.
    """
    if not binding or not isinstance(binding.get("path"), str) or \
            not isinstance(binding.get("sha256"), str):
        return None
    rel = binding["path"]
    raw = (read or (lambda p: _read_work_tree(ws, p)))(rel)
    if raw is None or hashlib.sha256(raw).hexdigest() != binding["sha256"]:
        return None
    try:
        return decode_footprint(raw, shown=rel)
    except FootprintError:
        return None


def _read_work_tree(ws: Workspace, rel: str) -> bytes | None:
    """A bound footprint's bytes from the work tree; None when it cannot be read as one (a
    FIFO, a device, too large, a symlink out of the workspace: its verdict is unknown)."""
    try:
        return read_footprint_bytes(Path(ws.root, *rel.split("/")), shown=rel, root=ws.root)
    except FootprintError:
        return None
