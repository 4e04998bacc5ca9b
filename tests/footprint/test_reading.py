"""Reading a footprint file (docs/footprints.md): only a regular file,
opened without blocking, at most 64 MiB on disk and 512 MiB decompressed, the decompressed
size counted one chunk at a time before anything is parsed; anything else is exit 2 naming
the file, and `fit --footprint` takes only a footprint inside the workspace."""

from __future__ import annotations

import gzip
import os
import tracemalloc
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import Workspace, load_workspace
from lawkit.footprint.binding import bound_footprint
from lawkit.footprint.document import (
    MAX_FILE_BYTES,
    decode_footprint,
    read_footprint,
    write_footprint,
)
from lawkit.footprint.errors import FootprintError
from lawkit.footprint.trees import work_tree_sources
from testing.footprints import model_footprint

CAPTURES = "batch_size,step_s\n" + "".join(f"{b},{0.001 + 0.0001 * b}\n" for b in range(1, 9))
pytestmark = pytest.mark.timeout(60)  # a FIFO waited on, or /dev/zero read to its end, hangs

FIT = ["fit", "captures.csv", "--out", "laws/host.yaml", "--formula", "step_s ~ 1 + batch_size",
       "--captured-on", "current"]


@pytest.fixture
def engine(engine: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in engine (tests/footprint/conftest.py) with its footprint (built from the
    model, not recorded) and captures, as the working directory."""
    root = engine
    ws = load_workspace(config=root / "lawkit.toml")
    write_footprint(model_footprint(work_tree_sources(ws.digest), default=(("startup",), ())),
                    root / "fp.json")
    (root / "captures.csv").write_text(CAPTURES)
    monkeypatch.chdir(root)
    return root


def _diff(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["footprint", "diff", *args])
    return result.exit_code, result.stderr


def test_a_regular_footprint_file_reads_as_before(engine: Path) -> None:
    assert _diff("fp.json") == (0, "")


def test_a_footprint_that_is_a_fifo_is_refused_at_once_not_waited_on(engine: Path) -> None:
    os.mkfifo(engine / "fifo.json")
    code, err = _diff("fifo.json")
    assert code == 2
    assert "fifo.json: not a regular file (a FIFO)" in err


def test_a_device_or_a_folder_is_refused_before_a_byte_is_read(engine: Path) -> None:
    code, err = _diff("/dev/zero")
    assert (code, err.strip()) == (2, "lawkit: error: /dev/zero: not a regular file (a "
                                      "character device): a footprint is a file written by "
                                      "`lawkit footprint record`")
    code, err = _diff("atom")
    assert code == 2 and "atom: not a regular file (a folder)" in err


def test_a_symlink_out_of_the_workspace_is_refused(engine: Path, tmp_path: Path) -> None:
    (engine / "zero.json").symlink_to("/dev/zero")
    code, err = _diff("zero.json")
    assert code == 2 and "zero.json: a symlink to /dev/zero, outside the workspace" in err
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes((engine / "fp.json").read_bytes())
    (engine / "linked.json").symlink_to(outside)
    code, err = _diff("linked.json")
    assert code == 2 and f"a symlink to {outside}, outside the workspace" in err
    (engine / "inside.json").symlink_to("fp.json")
    assert _diff("inside.json") == (0, "")
    assert _diff(str(outside)) == (0, "")  # named directly, a file elsewhere is read


def test_a_file_over_64_mib_on_disk_is_refused_unread(engine: Path) -> None:
    with open(engine / "big.json", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: costs nothing to make
    code, err = _diff("big.json")
    assert code == 2 and "big.json: more than 64 MiB on disk" in err


def _spaces_gzip(path: Path, gib: int) -> None:
    """A gzip of ``gib`` GiB of spaces, ~1 MB per GiB: one 64 MiB member compressed once and
    written again and again (gzip readers join members, as `gzip -d` does)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = packer.compress(b" " * 2**26) + packer.flush()
    with open(path, "wb") as f:
        for _ in range(gib * 16):
            f.write(member)


def test_a_gzip_bomb_is_refused_holding_no_more_than_a_chunk(engine: Path) -> None:
    _spaces_gzip(engine / "bomb.json.gz", 2)
    raw = (engine / "bomb.json.gz").read_bytes()
    assert len(raw) < 3 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(FootprintError, match=r"bomb\.json\.gz: more than 512 MiB decompressed"):
            decode_footprint(raw, shown="bomb.json.gz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak
    code, err = _diff("bomb.json.gz")
    assert code == 2 and "bomb.json.gz: more than 512 MiB decompressed" in err


def test_a_damaged_gzip_is_not_a_footprint_file(engine: Path) -> None:
    data = gzip.compress((engine / "fp.json").read_bytes())
    (engine / "cut.json.gz").write_bytes(data[: len(data) // 2])
    code, err = _diff("cut.json.gz")
    assert code == 2 and "cut.json.gz: not a footprint file (JSON, or gzip of JSON)" in err
    (engine / "deep.json").write_text("[" * 100_000)
    code, err = _diff("deep.json")
    assert code == 2 and "deep.json: not a footprint file" in err


def test_fit_refuses_dev_zero_with_exit_2_naming_it(engine: Path) -> None:
    result = CliRunner().invoke(app, [*FIT, "--footprint", "/dev/zero"])
    assert result.exit_code == 2, result.output
    assert "/dev/zero: outside the workspace" in result.stderr
    (engine / "zero.json").symlink_to("/dev/zero")
    result = CliRunner().invoke(app, [*FIT, "--footprint", "zero.json"])
    assert result.exit_code == 2, result.output
    assert "zero.json: outside the workspace" in result.stderr
    assert not (engine / "laws" / "host.yaml").exists()


def test_fit_refuses_a_fifo_and_takes_a_footprint_inside_the_workspace(engine: Path) -> None:
    os.mkfifo(engine / "fifo.json")
    result = CliRunner().invoke(app, [*FIT, "--footprint", "fifo.json"])
    assert result.exit_code == 2 and "fifo.json: not a regular file (a FIFO)" in result.stderr
    result = CliRunner().invoke(app, [*FIT, "--footprint", "fp.json"])
    assert result.exit_code == 0, result.output
    assert 'footprint: {path: "fp.json"' in (engine / "laws" / "host.yaml").read_text()


def test_fit_refuses_a_footprint_outside_the_workspace_saying_what_to_do(
        engine: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes((engine / "fp.json").read_bytes())
    result = CliRunner().invoke(app, [*FIT, "--footprint", str(outside)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"lawkit: error: {outside}: outside the workspace ({engine}): a fit records its "
        "footprint's path from the workspace root, so `rekey` and `review` can find it; move "
        "or copy it inside (say, footprints/) and pass that path")
    assert not (engine / "laws" / "host.yaml").exists()


def test_a_bound_footprint_that_became_a_fifo_or_a_device_link_is_unknown(engine: Path) -> None:
    ws: Workspace = load_workspace(config=engine / "lawkit.toml")
    binding = {"path": "fp.json", "sha256": "0" * 64}
    (engine / "fp.json").unlink()
    os.mkfifo(engine / "fp.json")
    assert bound_footprint(ws, binding) is None  # unknown
    (engine / "fp.json").unlink()
    (engine / "fp.json").symlink_to("/dev/zero")
    assert bound_footprint(ws, binding) is None  # unknown


def test_read_footprint_without_a_workspace_still_refuses_what_is_not_a_file() -> None:
    with pytest.raises(FootprintError, match="not a regular file"):
        read_footprint(Path("/dev/null"))
