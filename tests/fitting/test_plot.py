"""Fit and score plots: valid PNGs of the size the layout promises; matplotlib only when asked."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.errors import LawkitError
from lawkit.fitting import plot
from lawkit.fitting.plot import PAGE_LAWS, PANEL_PX, image_size, plot_fit
from lawkit.fitting.progress import progress
from lawkit.lawfiles.lawfile import Law
from lawkit.lawfiles.lawwrite import law_file_text

runner = CliRunner()
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """The (width, height) a PNG file's IHDR chunk declares, after checking the signature."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def _law(name: str = "prefill", terms: dict[str, float] | None = None) -> Law:
    return Law(name=name, target="host_s", where={"phase": "prefill"},
               terms=terms or {"1": 1e-3, "num_seqs": 1e-4, "num_tokens": 2e-8},
               domain={"num_seqs": [1.0, 200.0], "num_tokens": [1.0, 9000.0]})


def _frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    num_seqs = rng.integers(1, 256, n)
    num_tokens = rng.integers(1, 10_000, n)
    host_s = (1e-3 + 1e-4 * num_seqs + 2e-8 * num_tokens) * rng.normal(1.0, 0.03, n)
    return pd.DataFrame({"phase": rng.choice(["prefill", "decode"], n), "num_seqs": num_seqs,
                         "num_tokens": num_tokens, "host_s": host_s})


def test_plot_fit_writes_one_png_with_a_row_of_panels_per_law(tmp_path: Path) -> None:
    laws = [_law(), _law("slope only", {"num_seqs": 1.1e-4})]
    written = plot_fit(tmp_path / "fit.png", [(law, _frame()) for law in laws])
    assert written == [tmp_path / "fit.png"]
    # a block of 1 + most features = 3 panels per law, the two blocks side by side
    assert image_size(laws) == (2 * 3 * PANEL_PX[0], PANEL_PX[1])
    assert png_size(written[0]) == image_size(laws)
    assert written[0].stat().st_size > 20_000  # points, lines and text, not a blank canvas


def test_laws_past_a_page_go_to_numbered_files(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert PAGE_LAWS == 12
    monkeypatch.setattr(plot, "PAGE_LAWS", 2)  # the same paging, drawn faster
    laws = [_law(f"law{i}", {"1": 1e-3, "num_seqs": 1e-4}) for i in range(5)]
    written = plot_fit(tmp_path / "many.png", [(law, _frame(30)) for law in laws])
    assert written == [tmp_path / "many.png", tmp_path / "many-2.png", tmp_path / "many-3.png"]
    assert png_size(written[0]) == (2 * 2 * PANEL_PX[0], PANEL_PX[1])
    assert png_size(written[2]) == (2 * PANEL_PX[0], PANEL_PX[1])


def test_many_laws_are_laid_out_in_a_grid_not_one_tall_column(tmp_path: Path) -> None:
    laws = [_law(f"law{i}", {"1": 1e-3, "num_seqs": 1e-4}) for i in range(7)]
    (written,) = plot_fit(tmp_path / "grid.png", [(law, _frame(30)) for law in laws])
    # blocks of 2 panels, 3 side by side (2,400 px), in 3 rows; the last row holds one
    assert png_size(written) == image_size(laws) == (3 * 2 * PANEL_PX[0], 3 * PANEL_PX[1])


def test_a_verdict_gets_a_title_line_of_its_own_and_residuals_say_their_sign() -> None:
    from lawkit.fitting.score import metrics

    figures = metrics(np.array([1.0, 2.0]), np.array([1.5, 1.0]), np.array([False, True]))
    title = plot._title(_law("schedule_s[codellama/CodeLlama-34b-Instruct-hf,2]"), figures,
                        "FAIL: MAPE > 10.0%")
    assert title.splitlines()[2] == "FAIL: MAPE > 10.0%"
    assert "FAIL" not in title.splitlines()[1]
    assert "measured - predicted" in plot.RESIDUAL_LABEL


def test_a_law_without_rows_gets_a_labelled_empty_panel(tmp_path: Path) -> None:
    frame = _frame()
    frame = frame[frame["phase"] == "decode"]
    (written,) = plot_fit(tmp_path / "empty.png", [(_law(), frame)])
    assert png_size(written) == (3 * PANEL_PX[0], PANEL_PX[1])


def test_svg_and_pdf_are_written_when_the_name_asks_and_other_names_are_refused(
        tmp_path: Path) -> None:
    (svg,) = plot_fit(tmp_path / "fit.svg", [(_law(), _frame())])
    assert svg.read_text().lstrip().startswith("<?xml")
    with pytest.raises(LawkitError, match=r"expected a \.png, \.svg or \.pdf file name"):
        plot_fit(tmp_path / "fit.jpeg", [(_law(), _frame())])
    with pytest.raises(LawkitError, match="does not exist"):
        plot_fit(tmp_path / "missing" / "fit.png", [(_law(), _frame())])


def test_without_matplotlib_the_error_names_the_extra_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(LawkitError, match=r"pip install 'lawkit\[plot\]'"):
        plot_fit(tmp_path / "fit.png", [(_law(), _frame())])
    assert not (tmp_path / "fit.png").exists()


def test_plotting_leaves_pyplot_and_the_global_backend_alone(tmp_path: Path) -> None:
    code = ("import sys\nfrom lawkit.lawfiles.lawfile import Law\n"
            "from lawkit.fitting.plot import plot_fit\n"
            "law = Law(name='x', target='t', terms={'1': 1.0, 'a': 2.0})\n"
            f"plot_fit({str(tmp_path / 'x.png')!r}, [(law, {{'a': [1, 2], 't': [3.0, 5.1]}})])\n"
            "print('matplotlib.pyplot' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
    assert png_size(tmp_path / "x.png") == (2 * PANEL_PX[0], PANEL_PX[1])


def test_score_plot_draws_every_law_of_the_file(tmp_path: Path) -> None:
    laws = [{"name": "prefill", "target": "host_s", "where": {"phase": "prefill"},
             "terms": {"1": 1e-3, "num_seqs": 1e-4, "num_tokens": 2e-8}},
            {"name": "chunked", "target": "host_s", "where": {"phase": "chunked"},
             "terms": {"1": 1e-3}}]
    (tmp_path / "laws.yaml").write_text(law_file_text(
        labels=None, key_name="atom", key="1234abcd", laws=laws,
        provenance=[("adopt", {"digest": "1234abcd", "at": "2026-01-01T00:00:00Z",
                               "why": "test", "body": "x"})]))
    _frame().to_csv(tmp_path / "caps.csv", index=False)
    result = runner.invoke(app, ["score", "laws.yaml", "caps.csv", "--plot", "score.png",
                                 "--json"])
    assert result.exit_code == 0, result.output
    assert result.stdout.lstrip().startswith("{")  # the note goes to stderr
    assert "lawkit: wrote score.png" in result.stderr
    assert png_size(tmp_path / "score.png") == (2 * 3 * PANEL_PX[0], PANEL_PX[1])


# -- progress ----------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_stderr_only(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr, stdout = _Terminal(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "stdout", stdout)
    with progress(100, min_total=0) as advance:
        advance(40, "caps.csv")
        advance(60)
    assert "reading captures" in stderr.getvalue()
    assert stdout.getvalue() == ""


def test_progress_is_silent_when_quiet_off_a_terminal_or_small(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for stderr, quiet, total in ((_Terminal(), True, 10**9), (io.StringIO(), False, 10**9),
                                 (_Terminal(), False, 10)):
        monkeypatch.setattr(sys, "stderr", stderr)
        with progress(total, quiet=quiet) as advance:
            advance(total)
        assert stderr.getvalue() == ""


def test_fit_plot_draws_the_laws_it_wrote_against_their_captures(tmp_path: Path) -> None:
    _frame().to_csv(tmp_path / "caps.csv", index=False)
    result = runner.invoke(app, [
        "fit", "caps.csv", "--formula", "host_s ~ 1 + num_seqs + num_tokens", "--by", "phase",
        "--captured-on", "1234abcd", "--out", "laws/a.yaml", "--plot", "fit.png"])
    assert result.exit_code == 0, result.output
    assert "lawkit: wrote fit.png" in result.stderr
    assert png_size(tmp_path / "fit.png") == (2 * 3 * PANEL_PX[0], PANEL_PX[1])


def test_fit_refuses_a_plot_it_cannot_draw_before_writing_anything(tmp_path: Path) -> None:
    _frame().to_csv(tmp_path / "caps.csv", index=False)
    result = runner.invoke(app, [
        "fit", "caps.csv", "--formula", "host_s ~ 1 + num_seqs", "--captured-on", "1234abcd",
        "--out", "laws/a.yaml", "--plot", "fit.gif"])
    assert result.exit_code == 2
    assert "expected a .png, .svg or .pdf file name" in result.stderr
    assert not (tmp_path / "laws" / "a.yaml").exists()


@pytest.mark.parametrize("method", ["robust", "huber"])
def test_the_fit_plot_marks_the_rows_the_method_downweighted(tmp_path: Path,
                                                              method: str) -> None:
    from lawkit.fitting.runner import fit_arrays

    x = np.arange(1.0, 41.0)
    y = 1.0 + 0.5 * x + np.random.default_rng(0).normal(0, 0.01, x.size)
    y[-4:] += 5.0  # four rows off the line: the ones the fit must downweight
    result = fit_arrays(np.c_[np.ones(x.size), x], y, ["1", "x"], method)
    law = Law.model_validate({"name": "l", "target": "t", "terms": dict(
        zip(["1", "x"], result.coef, strict=True)), "fit": {
        "method": method, "scale": result.scale, "downweighted": result.downweighted}})
    predicted = law.predict({"x": x}, on_domain="ignore")
    down = plot.downweighted(law, y, predicted)
    assert int(down.sum()) == result.downweighted  # the method's own count
    assert down[-4:].all()
    written = plot_fit(tmp_path / "d.png", [(law, {"x": x, "t": y})])
    assert written[0].read_bytes().startswith(PNG_SIGNATURE)
