"""A streamed fit parses the captures once: the first pass spills the columns to the temp
folder, every later pass reads the spill, with the same results, and no spill is
left behind by a fit that ends, fails, or was killed."""

from __future__ import annotations

import errno
import io
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import Workspace, load_workspace
from lawkit.errors import CaptureError, FitError
from lawkit.fitting import local, methods, progress, source, spill
from lawkit.fitting.captures.chunks import Chunk
from lawkit.fitting.captures.read import read_captures
from lawkit.fitting.fit import FitRequest, fit_laws
from testing.workspaces import make_fit_folder

CHUNK = 97  # rows per streamed chunk: many blocks, cut where no row group would be
DIGEST = "5e1f00d2"


def _workspace(root: Path, rows: int = 1500) -> Workspace:
    make_fit_folder(root)
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({
        "phase": rng.choice(["prefill", "decode"], rows),
        "tp": rng.choice([1, 2, 4], rows),
        "num_seqs": rng.integers(1, 257, rows).astype(float),
        "num_tokens": rng.uniform(1, 16384, rows),
        "atom": DIGEST,
    })
    y = 2e-3 + 1.2e-4 * frame.num_seqs + 3e-8 * frame.num_tokens + 1e-4 * frame.tp
    frame["host_s"] = np.abs(y + rng.normal(0, 1e-4, rows))
    frame.loc[rng.random(rows) < 0.03, "host_s"] *= 3.0  # outliers for the robust methods
    (root / "caps").mkdir()
    half = rows // 2
    frame.iloc[:half].to_csv(root / "caps" / "a.csv", index=False)
    frame.iloc[half:].to_csv(root / "caps" / "b.csv", index=False)
    return load_workspace(config=root / "lawkit.toml")


def _request(root: Path, method: str, **extra: Any) -> FitRequest:
    given: dict[str, Any] = {"chunk_rows": CHUNK, **extra}
    return FitRequest(captures=[root / "caps"], out=root / "laws" / "h.yaml",
                      formulas=["host_s ~ 1 + num_seqs + num_tokens"], by=["phase", "tp"],
                      where="num_seqs >= 2", method=method, **given)


def _coefficients(report: Any) -> dict[str, list[float]]:
    return {f.spec.name: list(f.law["terms"].values()) for f in report.laws}


def _without_spill(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pass parses the text again, as before the spill."""
    monkeypatch.setattr(source.Source, "first_pass", source.Source.chunks)


def _temp_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TMPDIR names `folder` (and tempfile's own default is the system's again)."""
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.delenv("TEMP", raising=False)
    monkeypatch.delenv("TMP", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    _temp_in(folder, monkeypatch)
    return folder


def test_a_pass_over_the_design_spill_answers_its_pieces_on_threads_in_the_rows_order(
        temp: Path) -> None:
    rng = np.random.default_rng(5)
    pieces = [(rng.random((n, 3)), rng.random(n), rng.random(n) if n % 2 else None)
              for n in (5, 700, 1, 333, 2048, 64, 900, 17)]
    with spill.DesignSpill.create() as designs:
        for piece in pieces:
            designs.write(*piece)
        # each thread reads into a buffer of its own: a copy taken while answering is intact
        got = list(designs.each(lambda x, y, w: (threading.get_ident(), x.copy(), y.copy(),
                                                 None if w is None else w.copy()), workers=3))
    assert threading.get_ident() not in {ident for ident, *_ in got}
    assert len(got) == len(pieces)
    for (_ident, x, y, w), (ex, ey, ew) in zip(got, pieces, strict=True):
        np.testing.assert_array_equal(x, ex)
        np.testing.assert_array_equal(y, ey)
        assert (w is None) == (ew is None) and (w is None or np.array_equal(w, ew))


def test_a_design_spill_cut_short_during_the_fit_is_a_fit_error_naming_it(temp: Path) -> None:
    with spill.DesignSpill.create() as designs:
        for n in (300, 300, 300):
            designs.write(np.ones((n, 2)), np.ones(n), None)
        list(designs.each(lambda x, y, w: None, workers=2))
        designs.path.write_bytes(b"")  # a temp cleaner truncating it between two passes
        with pytest.raises(FitError, match="cut short") as caught:
            list(designs.each(lambda x, y, w: None, workers=2))
    assert str(designs.path) in str(caught.value)


@pytest.mark.parametrize("method", ["ols", "huber", "robust"])
def test_a_streamed_fit_is_the_same_to_the_bit_whatever_the_threads_answering_its_passes(
        method: str, tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    fits = []
    for workers in (1, 2, 5):
        monkeypatch.setattr(local, "workers_for", lambda rows, k=workers: k)
        report = fit_laws(_request(tmp_path, method), ws)
        fits.append({f.spec.name: f.law["fit"] | {"terms": f.law["terms"]} for f in report.laws})
    assert fits[0] == fits[1] == fits[2]


@pytest.mark.parametrize("method", list(methods.NAMES))
def test_every_method_fits_the_same_coefficients_from_the_spill_as_from_the_text(
        method: str, tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    spilled = fit_laws(_request(tmp_path, method, holdout=0.2), ws)
    in_memory = fit_laws(_request(tmp_path, method, holdout=0.2, chunk_rows=None), ws)
    _without_spill(monkeypatch)
    text = fit_laws(_request(tmp_path, method, holdout=0.2), ws)
    assert len(spilled.laws) == 6 and list(temp.iterdir()) == []
    for name, coef in _coefficients(text).items():
        # the same blocks as the text's chunks: the same arithmetic
        np.testing.assert_allclose(_coefficients(spilled)[name], coef, rtol=1e-12, atol=0)
        # one chunk per file instead: the sums merge in another order
        np.testing.assert_allclose(_coefficients(in_memory)[name], coef, rtol=1e-9, atol=0)
    for a, b in zip(spilled.laws, text.laws, strict=True):
        assert a.law["where"] == b.law["where"] and a.law["domain"] == b.law["domain"]
        assert a.law["fit"]["holdout"]["n"] == b.law["fit"]["holdout"]["n"]
        assert a.n == b.n
    assert spilled.digest == DIGEST and spilled.records == text.records


def test_a_streamed_fit_parses_the_captures_once_whatever_the_passes(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    parsed = []
    read = read_captures

    def counting(*args: Any, **kwargs: Any) -> Iterator[Chunk]:
        parsed.append(1)
        yield from read(*args, **kwargs)

    monkeypatch.setattr(source, "read_captures", counting)
    report = fit_laws(_request(tmp_path, "huber"), ws)
    assert sum(report.passes.values()) > 20  # every law's IRLS passes ...
    assert len(parsed) == 1  # ... and one parse of the text


def test_the_spill_lives_in_the_temp_folder_while_the_fit_runs_and_is_gone_after(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    seen: list[list[Path]] = []
    chunks = spill.Spill.chunks

    def watching(self: spill.Spill) -> Iterator[spill.SpilledChunk]:
        seen.append(sorted(temp.iterdir()))
        yield from chunks(self)

    monkeypatch.setattr(spill.Spill, "chunks", watching)
    fit_laws(_request(tmp_path, "ols"), ws)
    # the columns, and the design of the law being fitted
    assert seen and all(1 <= len(files) <= 2 and all(f.name.startswith("lawkit-spill-")
                                                     for f in files) for files in seen)
    assert max(len(files) for files in seen) == 2
    assert list(temp.iterdir()) == []
    assert not list((tmp_path / "laws").iterdir())


def test_a_bad_value_met_on_a_pass_from_the_spill_is_quoted_as_the_file_holds_it(
        tmp_path: Path, temp: Path) -> None:
    ws = _workspace(tmp_path)
    path = tmp_path / "caps" / "b.csv"
    lines = path.read_text().splitlines()
    fields = lines[400].split(",")
    fields[3] = "lots"  # num_tokens, a fitted column: checked when its law is fitted
    lines[400] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")
    phase, tp = fields[0], int(fields[1])
    request = FitRequest(captures=[tmp_path / "caps"], out=tmp_path / "laws" / "h.yaml",
                         formulas=["host_s ~ 1 + num_seqs + num_tokens"],
                         where=f"phase == {phase!r} and tp == {tp}", chunk_rows=CHUNK)
    with pytest.raises(CaptureError) as caught:
        fit_laws(request, ws)
    assert str(caught.value) == \
        "caps/b.csv: column num_tokens, row 400 (line 401): 'lots' is not a number"
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "in memory"])
def test_a_spill_left_by_a_killed_fit_is_removed_by_the_next_fit(
        tmp_path: Path, temp: Path, streamed: bool) -> None:
    ws = _workspace(tmp_path)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = temp / f"lawkit-spill-{int(gone.stdout)}-x1.bin"
    stale.write_bytes(b"\0" * 4096)
    running = temp / "lawkit-spill-1-x2.bin"  # pid 1 is alive: its fit may still be running
    running.write_bytes(b"\0")
    other = temp / "notes.bin"
    other.write_bytes(b"")
    report = fit_laws(_request(tmp_path, "ols", chunk_rows=CHUNK if streamed else None), ws)
    assert report.laws and sorted(p.name for p in temp.iterdir()) == [
        "lawkit-spill-1-x2.bin", "notes.bin"]


def test_an_in_memory_fit_needs_no_temp_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    _temp_in(tmp_path / "missing", monkeypatch)
    assert len(fit_laws(_request(tmp_path, "ols", chunk_rows=None), ws).laws) == 6


class _FullDisk(io.BufferedRandom):
    """A file on a disk that fills after `room` bytes."""

    room = 5000

    def write(self, data: Any) -> int:
        size = memoryview(data).nbytes
        if self.tell() + size > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)


def test_a_disk_that_fills_while_spilling_is_a_clear_error_and_leaves_no_spill(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    monkeypatch.setattr(spill, "open", lambda fd, mode: _FullDisk(io.FileIO(fd, "r+")),
                        raising=False)
    with pytest.raises(FitError) as caught:
        fit_laws(_request(tmp_path, "ols"), ws)
    message = str(caught.value)
    assert message.startswith(f"cannot spill the parsed captures to {temp} (the disk filled")
    assert "set TMPDIR to a folder with room" in message
    assert list(temp.iterdir()) == []
    assert not list((tmp_path / "laws").iterdir())


class _FullOnFlush(io.BufferedRandom):
    """A file on a disk that fills with the bytes still in its buffer: its flush fails, and so
    does its close (which flushes, then closes the descriptor all the same)."""

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def _full_on_flush(monkeypatch: pytest.MonkeyPatch, which: int) -> None:
    """The `which`-th spill file opened (0: the columns, 1: the first law's design) is on a
    disk that fills with its last buffered bytes."""
    opened: list[int] = []

    def opening(fd: int, mode: str) -> io.BufferedRandom:
        opened.append(fd)
        kind = _FullOnFlush if len(opened) == which + 1 else io.BufferedRandom
        return kind(io.FileIO(fd, "r+"))

    monkeypatch.setattr(spill, "open", opening, raising=False)


@pytest.mark.parametrize("which", [0, 1], ids=["columns", "design"])
def test_a_disk_that_fills_with_the_last_buffered_bytes_is_a_clear_error_and_leaves_no_spill(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch, which: int) -> None:
    ws = _workspace(tmp_path)
    _full_on_flush(monkeypatch, which)
    with pytest.raises(FitError) as caught:
        fit_laws(_request(tmp_path, "huber"), ws)
    message = str(caught.value)
    # the figure counts every spill file of the fit, the columns' too when the design's fills
    spilled = re.search(rf"cannot spill the parsed captures to {re.escape(str(temp))} \(the "
                        r"disk filled; this fit had spilled (\d+) KiB there\)", message)
    assert spilled is not None, message
    columns = sum(f.stat().st_size for f in (tmp_path / "caps").iterdir()) // 1024
    assert int(spilled[1]) >= (columns // 3 if which else 1), message
    assert list(temp.iterdir()) == []
    assert not list((tmp_path / "laws").iterdir())


def test_a_spill_whose_close_meets_a_full_disk_is_still_removed(
        temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _full_on_flush(monkeypatch, 0)
    with spill.DesignSpill.create() as designs:
        designs.write(np.ones((3, 2)), np.ones(3), None)
        assert len(list(temp.iterdir())) == 1
    assert list(temp.iterdir()) == []


def test_the_cli_says_a_full_disk_at_the_last_buffered_bytes_in_one_line_and_exits_2(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _workspace(tmp_path)
    _full_on_flush(monkeypatch, 0)
    monkeypatch.setenv("LAWKIT_IN_MEMORY_BYTES", "0")
    result = CliRunner().invoke(app, ["fit", "caps", "--formula", "host_s ~ 1 + num_seqs",
                                      "--out", "laws/h.yaml"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("lawkit: error: law host_s: cannot spill the parsed "
                                    f"captures to {temp} (the disk filled")
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert list(temp.iterdir()) == []
    assert not list((tmp_path / "laws").iterdir())


@pytest.mark.parametrize("make", ["missing", "a file"])
def test_a_tmpdir_that_cannot_take_the_spill_is_an_error_naming_it_never_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: str) -> None:
    ws = _workspace(tmp_path)
    named = tmp_path / "scratch"
    if make == "a file":
        named.write_text("")
    # tempfile.gettempdir() would fall back to /tmp in silence: a full or missing TMPDIR
    # would never be named, and its leftovers never removed
    _temp_in(named, monkeypatch)
    assert spill.temp_folder() == named
    with pytest.raises(FitError) as caught:
        fit_laws(_request(tmp_path, "ols"), ws)
    assert str(caught.value).startswith(f"cannot spill the parsed captures to {named} (")
    assert str(caught.value).endswith("create it, or set TMPDIR to a folder you can write to")
    assert not list((tmp_path / "laws").iterdir())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", "")  # empty: not set
    monkeypatch.setenv("TEMP", "scratch")  # relative: to the working folder, as tempfile does
    assert spill.temp_folder() == named


def test_small_chunks_of_a_file_are_spilled_as_larger_blocks_with_the_same_fit_and_errors(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    for name in ("a", "b"):  # Parquet row groups of 50 rows: the reader's chunks
        frame = pd.read_csv(tmp_path / "caps" / f"{name}.csv")
        (tmp_path / "caps" / f"{name}.csv").unlink()
        frame.to_parquet(tmp_path / "caps" / f"{name}.parquet", row_group_size=50)
    blocks = []
    flush = spill.Spill.flush

    def counting(self: spill.Spill) -> None:
        flush(self)
        blocks.append(self.blocks)

    monkeypatch.setattr(spill.Spill, "flush", counting)
    spilled = fit_laws(_request(tmp_path, "huber", chunk_rows=230), ws)
    assert max(blocks) == 8  # 750 rows a file: blocks of 200, 200, 200 and 150 rows
    monkeypatch.setattr(source.Source, "first_pass", source.Source.chunks)
    text = fit_laws(_request(tmp_path, "huber", chunk_rows=230), ws)
    for name, coef in _coefficients(text).items():
        np.testing.assert_allclose(_coefficients(spilled)[name], coef, rtol=1e-9, atol=0)
    monkeypatch.undo()
    _temp_in(temp, monkeypatch)
    frame = pd.read_parquet(tmp_path / "caps" / "b.parquet")
    frame.loc[frame.index[420], "host_s"] = -1.0  # row 421, in the third block of b
    frame.to_parquet(tmp_path / "caps" / "b.parquet", row_group_size=50)
    law = frame.iloc[420]
    request = FitRequest(captures=[tmp_path / "caps"], out=tmp_path / "laws" / "h.yaml",
                         formulas=["host_s ~ 1 + num_seqs"], chunk_rows=230,
                         where=f"phase == {law.phase!r} and tp == {law.tp}")
    with pytest.raises(CaptureError, match=r"^caps/b.parquet: column host_s, row 421: "):
        fit_laws(request, ws)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_streamed_fit_shows_each_pass_of_each_law_on_a_terminal_unless_quiet(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")  # room for every column of the bar
    drawn: list[str] = []
    start = progress.PassBar.start

    def watching(self: progress.PassBar, rows: int | None) -> None:
        start(self, rows)
        if self._bar is not None:
            drawn.append(self._bar.tasks[-1].description)

    monkeypatch.setattr(progress.PassBar, "start", watching)
    for quiet in (True, False):
        stderr = _Terminal()
        monkeypatch.setattr(sys, "stderr", stderr)
        fit_laws(_request(tmp_path, "huber", quiet=quiet), ws)
        if quiet:
            assert drawn == [] and stderr.getvalue() == ""
    assert drawn[0] == "reading the captures: pass 1"
    assert drawn[1] == "law 1 of 6, host_s[decode,1] (huber): pass 1 of about 20"
    # the next law's estimate is the passes the last one made
    made = drawn.index("law 2 of 6, host_s[decode,2] (huber): pass 1 of about "
                       f"{sum(d.startswith('law 1 of 6') for d in drawn)}")
    assert made > 2 and "pass" in stderr.getvalue()
    assert "law 1 of 6, host_s[decode,1] (huber): pass 1 of about 20" in stderr.getvalue()


def test_the_bars_draw_names_with_brackets_as_they_are_not_as_rich_markup(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    stderr = _Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    with progress.PassBar() as bar:
        bar.law("law 1 of 2, host_s[decode]", "ols", 3)
        bar.start(100)
        bar.advance(50)
    with progress.progress(100, min_total=0) as advance:
        advance(10, "caps/[bold]host_s[decode].csv")
    drawn = stderr.getvalue()
    assert "law 1 of 2, host_s[decode] (ols): pass 1 of about 3" in drawn
    assert "reading captures: caps/[bold]host_s[decode].csv" in drawn


def test_drop_invalid_drops_and_counts_the_same_rows_from_the_spill_as_from_the_text(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    path = tmp_path / "caps" / "a.csv"
    lines = path.read_text().splitlines()
    for row, column, value in ((5, 3, "n/a"), (200, 5, ""), (333, 2, "-"), (600, 0, "")):
        fields = lines[row].split(",")
        fields[column] = value  # num_tokens, host_s, num_seqs; an empty phase (a label)
        lines[row] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")
    spilled = fit_laws(_request(tmp_path, "ols", drop_invalid=True), ws)
    _without_spill(monkeypatch)
    text = fit_laws(_request(tmp_path, "ols", drop_invalid=True), ws)
    # the empty phase and the num_seqs '-' (its bound selects rows): the scan's
    assert spilled.dropped == text.dropped == 2
    # num_tokens 'n/a' and the empty host_s: their laws'
    assert [f.dropped for f in spilled.laws] == [f.dropped for f in text.laws]
    assert sum(f.dropped for f in spilled.laws) == 2
    for name, coef in _coefficients(text).items():
        np.testing.assert_allclose(_coefficients(spilled)[name], coef, rtol=1e-12, atol=0)


@pytest.mark.parametrize("method", ["ols", "huber"])
def test_empty_target_cells_are_left_out_on_every_pass_from_the_spill_as_from_the_text(
        tmp_path: Path, temp: Path, method: str) -> None:
    ws = _workspace(tmp_path)
    for name in ("a.csv", "b.csv"):  # a region some steps did not enter: empty target cells
        path = tmp_path / "caps" / name
        frame = pd.read_csv(path)
        frame["host_s"] = frame["host_s"].astype(object)
        frame.loc[frame.index % 7 == 3, "host_s"] = ""
        frame.to_csv(path, index=False)
    spilled = fit_laws(_request(tmp_path, method), ws)
    in_memory = fit_laws(_request(tmp_path, method, chunk_rows=None), ws)
    expected = _coefficients(in_memory)
    for name, got in _coefficients(spilled).items():
        assert got == pytest.approx(expected[name], rel=1e-9), name
    dropped = {f.spec.name: f.dropped for f in spilled.laws}
    assert all(count > 0 for count in dropped.values())
    assert dropped == {f.spec.name: f.dropped for f in in_memory.laws}
