"""`lawkit fit --cv COL | K`: folds are whole values of COL (or whole
files), each refitted (an `auto` K searched again), and `fit.cv` stored per law."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import lawkit
from lawkit.cli import app
from lawkit.fitting import breakpoints
from testing.workspaces import make_fit_folder

runner = CliRunner()
BS = np.repeat(np.arange(8, 129, 8), 3).astype(float)


def _workspace(root: Path, files: int = 1) -> Path:
    make_fit_folder(root, {"atom/__init__.py": b"x = 1\n"})
    rng = np.random.default_rng(3)
    host = 0.002 + 1e-5 * BS + 4e-4 * (BS > 60) + rng.normal(0, 2e-5, BS.size)
    frame = pd.DataFrame({"batch_size": BS, "sampler_s": host})
    (root / "caps").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(frame)), files)):
        frame.iloc[part].to_csv(root / "caps" / f"c{i}.csv", index=False)
    return root


def _fit(root: Path, *args: str) -> str:
    result = runner.invoke(app, ["fit", str(root / "caps"), "--out", str(root / "laws" / "s.yaml"),
                                 "--captured-on", "current", "--engine", str(root / "engine"),
                                 "--config", str(root / "lawkit.toml"), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_cv_by_a_column_leaves_out_whole_values_and_stores_fit_cv(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    output = _fit(root, "--formula", "sampler_s ~ 1 + batch_size", "--cv", "batch_size")
    law = lawkit.load(root / "laws" / "s.yaml").host.laws[0]
    assert law.fit is not None
    cv = law.fit["cv"]
    values = np.unique(BS)
    # The same figure by hand: each batch size held out whole, least squares on the others.
    y = 0.002 + 1e-5 * BS + 4e-4 * (BS > 60) + np.random.default_rng(3).normal(0, 2e-5, BS.size)
    ape, worst = [], 0.0
    for v in values:
        test = np.isin(BS, [v])
        train = ~test
        coef = np.linalg.lstsq(np.c_[np.ones(train.sum()), BS[train]], y[train], rcond=None)[0]
        err = np.abs(y[test] - (coef[0] + coef[1] * BS[test])) / y[test]
        ape.extend(err)
        worst = max(worst, float(err.mean()))
    assert cv["column"] == "batch_size" and cv["folds"] == len(values)
    assert cv["mape"] == pytest.approx(np.mean(ape), rel=1e-9)
    assert cv["worst_mape"] == pytest.approx(worst, rel=1e-9)
    assert f"cv {len(values)} folds (leave one batch_size out): mape=" in output


def test_cv_searches_auto_k_again_inside_every_fold(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = _workspace(tmp_path)
    calls: list[int] = []
    real = breakpoints.search

    def counting(*args: object, **kwargs: object) -> breakpoints.Search:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(breakpoints, "search", counting)
    _fit(root, "--formula", "sampler_s ~ 1 + batch_size + step(batch_size,auto)",
         "--method", "robust", "--cv", "batch_size")
    law = lawkit.load(root / "laws" / "s.yaml").host.laws[0]
    assert law.fit is not None and law.fit["cv"]["folds"] == len(np.unique(BS))
    assert len(calls) == 1 + len(np.unique(BS))  # the fit, then one search per fold
    assert "step(batch_size,60)" in law.terms


def test_cv_k_folds_are_whole_files_when_there_are_several(tmp_path: Path) -> None:
    root = _workspace(tmp_path, files=4)
    _fit(root, "--formula", "sampler_s ~ 1 + batch_size", "--cv", "2")
    law = lawkit.load(root / "laws" / "s.yaml").host.laws[0]
    assert law.fit is not None
    cv = law.fit["cv"]
    assert cv["split"] == "files" and cv["seed"] == 0 and cv["folds"] == 2
    assert 0 < cv["mape"] <= cv["worst_mape"]


def test_cv_k_folds_of_one_file_are_random_rows_with_a_seed(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _fit(root, "--formula", "sampler_s ~ 1 + batch_size", "--cv", "5")
    law = lawkit.load(root / "laws" / "s.yaml").host.laws[0]
    assert law.fit is not None
    assert {k: law.fit["cv"][k] for k in ("split", "seed", "folds")} == {
        "split": "random", "seed": 0, "folds": 5}


@pytest.mark.parametrize(("args", "message"), [
    (["--cv", "1"], "at least 2 folds"),
    (["--cv", "batch_size", "--holdout", "0.2"], "choose one"),
])
def test_bad_cv_requests_are_refused(tmp_path: Path, args: list[str], message: str) -> None:
    root = _workspace(tmp_path)
    result = runner.invoke(app, ["fit", str(root / "caps"), "--out", str(root / "laws" / "s.yaml"),
                                 "--captured-on", "current", "--engine", str(root / "engine"),
                                 "--config", str(root / "lawkit.toml"), "--formula",
                                 "sampler_s ~ 1 + batch_size", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_the_python_api_takes_cv_as_the_command_does(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    report = lawkit.fit(root / "caps", out=root / "laws" / "s.yaml", captured_on="current",
                        formula="sampler_s ~ 1 + batch_size", cv="batch_size", write=False,
                        workspace=root)
    (fitted,) = report.laws
    assert fitted.law["fit"]["cv"]["folds"] == len(np.unique(BS))
    by_count = lawkit.fit(root / "caps", out=root / "laws" / "s.yaml", captured_on="current",
                          formula="sampler_s ~ 1 + batch_size", cv=4, write=False,
                          workspace=root)
    assert by_count.laws[0].law["fit"]["cv"]["folds"] == 4
