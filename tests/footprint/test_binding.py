"""Binding a footprint to a fit, and a law file's verdict from the binding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lawkit.config import Workspace, load_workspace
from lawkit.footprint.binding import bind_footprint, bound_footprint
from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, write_footprint
from lawkit.footprint.errors import FootprintError
from lawkit.footprint.trees import SourceTree, work_tree_sources
from lawkit.footprint.units import units_of
from lawkit.footprint.verdict import diff_footprint

SOURCE = b"LIMIT = 1\n\n\ndef step():\n    return LIMIT\n\n\ndef unused():\n    return 0\n"
RAN = {"<module>": ("startup",), "step": ("steps",), "unused": ()}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "lawkit.toml").write_text('[digest]\npackages = ["atom"]\n')
    (tmp_path / "atom").mkdir()
    (tmp_path / "atom" / "m.py").write_bytes(SOURCE)
    ws = load_workspace(config=tmp_path / "lawkit.toml")
    tree = work_tree_sources(ws.digest)
    units = {u.qualname: UnitRecord(u.digest, RAN[u.qualname]) for u in units_of(SOURCE)}
    fp = Footprint("atom", tree.digest, ("python", "run.py"), 1,
                   {"atom/m.py": FileRecord(tree.sha256("atom/m.py"), units)})
    (tmp_path / "footprints").mkdir()
    write_footprint(fp, tmp_path / "footprints" / "fp.json.gz")
    return ws


def test_bind_records_the_path_from_the_workspace_root_and_the_files_sha256(ws: Workspace) -> None:
    digest = work_tree_sources(ws.digest).digest
    footprint, binding = bind_footprint(ws, ws.root / "footprints" / "fp.json.gz", digest)
    assert binding.to_json()["path"] == "footprints/fp.json.gz"
    assert bound_footprint(ws, binding.to_json()) == footprint


def test_bind_refuses_a_footprint_of_another_digest(ws: Workspace) -> None:
    with pytest.raises(FootprintError, match=r"fp.json.gz: recorded on atom=\w+, but the "
                       r"captures ran on atom=deadbeef"):
        bind_footprint(ws, ws.root / "footprints" / "fp.json.gz", "deadbeef")


def _verdict(ws: Workspace, binding: dict[str, Any] | None, target: SourceTree) -> str:
    footprint = bound_footprint(ws, binding)
    return "unknown" if footprint is None else diff_footprint(footprint, target).verdict


def test_a_missing_or_changed_footprint_makes_the_verdict_unknown(ws: Workspace) -> None:
    digest = work_tree_sources(ws.digest).digest
    _, binding = bind_footprint(ws, ws.root / "footprints" / "fp.json.gz", digest)
    target = work_tree_sources(ws.digest)
    assert _verdict(ws, binding.to_json(), target) == "untouched"
    assert _verdict(ws, None, target) == "unknown"
    assert _verdict(ws, {**binding.to_json(), "sha256": "0" * 64}, target) == \
        "unknown"
    (ws.root / "atom" / "m.py").write_bytes(SOURCE.replace(b"return 0", b"return 1"))
    assert _verdict(ws, binding.to_json(), work_tree_sources(ws.digest)) == \
        "untouched"
    (ws.root / "atom" / "m.py").write_bytes(SOURCE.replace(b"LIMIT = 1", b"LIMIT = 2"))
    assert _verdict(ws, binding.to_json(), work_tree_sources(ws.digest)) == "startup"
    (ws.root / "footprints" / "fp.json.gz").unlink()
    assert _verdict(ws, binding.to_json(), target) == "unknown"
