"""Every method streams, and every method's statistics are the ones `score` prints."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import lawkit
from lawkit.fitting import methods, runner
from lawkit.fitting.captures import read as capture_read
from lawkit.fitting.captures.chunks import ColumnSpec
from lawkit.fitting.captures.files import find_captures
from lawkit.fitting.captures.read import read_chunks

TERMS = ("1", "a", "b", "c", "d", "e")
CHUNK = 64


def _chunks(rows: int, seed: int = 7) -> Iterator[tuple[np.ndarray, np.ndarray, None]]:
    """A regenerated stream of chunks of 6 terms (nothing of it is kept between passes)."""
    rng = np.random.default_rng(seed)
    coef = np.array([2.0, 0.5, 0.25, 1.5, 0.1, 0.05])
    for start in range(0, rows, CHUNK):
        k = min(CHUNK, rows - start)
        x = np.asfortranarray(np.column_stack([np.ones(k), rng.uniform(1, 10, (k, 5))]))
        y = x @ coef + rng.normal(0, 0.01, k)
        y[rng.random(k) < 0.05] += 50.0  # outliers for the robust methods to downweight
        yield x, y, None


def _peak(method: str, rows: int) -> int:
    tracemalloc.start()
    try:
        runner.run(methods.passes(method, TERMS), runner.in_turn(lambda: _chunks(rows)))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("method", list(methods.NAMES))
def test_every_method_streams_its_peak_memory_stays_flat_while_rows_grow_tenfold(
        method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The median gathers a bucket's values once at most _GATHER remain (65,536: 512 KiB, a
    # bound that does not grow with the rows); a small one here makes the bound visible.
    monkeypatch.setattr(methods, "_GATHER", 512)
    # The robust start runs in memory on its sample: bound it below both row counts.
    monkeypatch.setattr(methods, "SAMPLE_ROWS", 500)
    _peak(method, 1_000)  # warm-up: imports and caches are not the fit's memory
    small = _peak(method, 1_500)
    large = _peak(method, 15_000)  # every pass reads every row, traced: the time goes here
    # The 13,500 rows more, as a chunk list of 7 floats a row, would alone be 0.74 MB; the
    # robust start's sample is bounded (methods.SAMPLE_ROWS rows), so it is covered by the
    # same bound.
    assert large <= small + 256 * 1024, (small, large)


def test_the_robust_start_uses_a_bounded_sample_of_the_rows() -> None:
    request = methods.Sample(size=100)
    reply = None
    for x, y, w in _chunks(5_000):
        reply = methods.answer(request, reply, x, y, w)
    assert reply is not None and reply.x.shape == (100, 6)
    # The same rows whatever the chunking: a hash of each row's values picks them.
    whole = np.concatenate([c[0] for c in _chunks(5_000)])
    ys = np.concatenate([c[1] for c in _chunks(5_000)])
    one = methods.answer(request, None, whole, ys, None)
    np.testing.assert_array_equal(one.y, reply.y)


def _arrow_peak_of_a_streamed_csv(path: Path, rows: int) -> int:
    """The most arrow memory held while a CSV of `rows` rows streams (sampled at every chunk,
    when pyarrow's read-ahead queue is as full as it gets)."""
    import pyarrow as pa

    path.write_text("a,b,c,y\n" + "".join(f"{i},{i % 97}.25,{i % 13},{i * 0.5}\n"
                                          for i in range(rows)))
    capture = find_captures([path])[0]
    spec = ColumnSpec(numbers=("a", "b", "c", "y"))
    top = 0
    read = 0
    for chunk in read_chunks(capture, spec, chunk_rows=1 << 20):
        top = max(top, pa.total_allocated_bytes())
        read += chunk.size
    assert read == rows
    return top


def test_a_streamed_csv_read_holds_a_bounded_read_ahead_while_rows_grow_tenfold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pyarrow's streaming CSV reader queues up to 32 blocks ahead of the consumer: with 16 MiB
    # blocks, a 20M-row fit held 600 MiB of it. The streamed block size bounds it.
    assert capture_read._STREAM_BLOCK_BYTES * 32 <= 64 << 20
    block = 16 << 10
    monkeypatch.setattr(capture_read, "_STREAM_BLOCK_BYTES", block)
    _arrow_peak_of_a_streamed_csv(tmp_path / "warm.csv", 1_000)
    small = _arrow_peak_of_a_streamed_csv(tmp_path / "small.csv", 30_000)  # ~0.8 MB
    large = _arrow_peak_of_a_streamed_csv(tmp_path / "large.csv", 300_000)  # ~8 MB
    # The file at once would be ~5 MB of parsed columns and 8 MB of text; the read-ahead is
    # some 32 blocks of text and a parsed block per CPU, whatever the file's length.
    assert large <= small + 64 * block, (small, large)


@pytest.mark.parametrize("wide", [True, False])
def test_a_streamed_csv_with_lines_longer_than_a_block_reads_every_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wide: bool) -> None:
    # A header (wide) or a row of 1 KB longer than the streamed block: the rest of the file is
    # read in whole-file blocks, the rows already read staying read.
    monkeypatch.setattr(capture_read, "_STREAM_BLOCK_BYTES", 256)
    fillers = [f"unused_column_{i:03d}" for i in range(40 if wide else 0)]  # 800 bytes
    lines = [",".join(["y", "x", "note", *fillers])]
    for i in range(300):
        note = "z" * (1000 if i == 150 else 1)
        lines.append(",".join([f"{i}.5", str(i), note, *["0"] * len(fillers)]))
    path = tmp_path / "long.csv"
    path.write_text("\n".join(lines) + "\n")
    spec = ColumnSpec(numbers=("y", "x"))
    chunks = list(read_chunks(find_captures([path])[0], spec, chunk_rows=64))
    assert np.concatenate([c.columns["x"] for c in chunks]).tolist() == list(range(300))
    assert np.concatenate([c.columns["y"] for c in chunks]).tolist() == \
        [i + 0.5 for i in range(300)]
    assert [c.start for c in chunks] == np.cumsum([0] + [c.size for c in chunks[:-1]]).tolist()


CSV_HEADER = "model,batch_size,schedule_s\n"


def _capture(path: Path) -> Path:
    rng = np.random.default_rng(3)
    lines = [CSV_HEADER]
    for model in ("a", "b"):
        for batch in range(1, 65):
            value = 1e-3 + 2e-5 * batch + rng.normal(0, 1e-6)
            if batch > 56:
                value += 4e-4  # a regime break at the edge of the domain
            lines.append(f"{model},{batch},{value!r}\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("method", list(methods.NAMES))
def test_the_statistics_fit_prints_are_the_ones_score_prints_on_the_same_rows(
        tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    capture = _capture(tmp_path / "caps.csv")
    (tmp_path / "laws").mkdir()
    out = tmp_path / "laws" / "s.yaml"
    report = lawkit.fit(capture, out=out, formula="schedule_s ~ 1 + batch_size", by="model",
                        method=method, captured_on="68ad8fc6", workspace=tmp_path)
    scored = lawkit.score(out, capture, workspace=tmp_path)
    by_name = {s.name: s.metrics for s in scored.laws}
    for fitted in report.laws:
        stats = fitted.law["fit"]
        m = by_name[fitted.spec.name]
        assert stats["n"] == m.n
        assert stats["r2"] == pytest.approx(m.r2, rel=1e-9)
        assert stats["rmse"] == pytest.approx(m.rmse, rel=1e-9)
        assert stats["mape"] == pytest.approx(m.mape, rel=1e-9)
        assert stats["resid_sd"] == pytest.approx(m.rmse * np.sqrt(m.n / (m.n - 2)), rel=1e-9)
        if method in ("huber", "robust"):
            assert stats["downweighted"] >= 1 and stats["scale"] > 0
    assert report.records == 128
