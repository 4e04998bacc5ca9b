"""What `lawkit fit` refuses, up front or before writing anything: a cross-validation
that has nothing to leave out or scored no fold, a name a law file cannot hold, and a law file
`lawkit check` would never read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from lawkit.cli import app
from testing.workspaces import make_fit_folder

runner = CliRunner()


def _workspace(root: Path, batch_sizes: list[float]) -> Path:
    make_fit_folder(root)
    rng = np.random.default_rng(5)
    bs = np.repeat(np.asarray(batch_sizes, dtype=float), 4)
    frame = pd.DataFrame({"batch_size": bs, "sampler_s": 0.002 + 1e-5 * bs
                          + rng.normal(0, 2e-5, bs.size), "atom": "5e1f00d2"})
    frame.to_csv(root / "caps.csv", index=False)
    return root


def _fit(root: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["fit", str(root / "caps.csv"),
                                 "--config", str(root / "lawkit.toml"), *args])
    return result.exit_code, result.output


def test_cv_by_a_column_with_one_value_is_refused_naming_the_law_and_what_to_do(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path, [32.0])
    code, output = _fit(root, "--formula", "sampler_s ~ 1", "--out", str(root / "laws/s.yaml"),
                        "--cv", "batch_size")
    assert code == 2, output
    assert output == ("lawkit: error: law sampler_s: --cv batch_size: its rows hold one value "
                      "of batch_size (32.0): leaving it out leaves no rows to fit; "
                      "cross-validate by folds (--cv 5), or by a column with several values\n")
    assert list((root / "laws").iterdir()) == []


def test_cv_whose_every_fold_fails_is_refused_instead_of_storing_zero_folds(
        tmp_path: Path) -> None:
    # Two batch sizes: leaving either out leaves one, on which the slope cannot be fitted.
    root = _workspace(tmp_path, [8.0, 16.0])
    code, output = _fit(root, "--formula", "sampler_s ~ 1 + batch_size",
                        "--out", str(root / "laws/s.yaml"), "--cv", "batch_size")
    assert code == 2, output
    assert output.startswith("lawkit: error: --cv batch_size: every fold of law sampler_s "
                             "failed (the first: leaving out batch_size = 8.0: ")
    assert output.endswith("with no fold scored there is no cross-validation to store: choose "
                           "another --cv, or drop it\n")
    assert list((root / "laws").iterdir()) == []


def test_cv_with_more_folds_than_rows_says_how_many_held_no_row(tmp_path: Path) -> None:
    root = _workspace(tmp_path, [8.0, 16.0, 32.0])  # 12 rows
    code, output = _fit(root, "--formula", "sampler_s ~ 1", "--out", str(root / "laws/s.yaml"),
                        "--cv", "20")
    assert code == 0, output
    cv = yaml.safe_load((root / "laws/s.yaml").read_text())["host"]["laws"][0]["fit"]["cv"]
    assert cv["folds"] + cv["empty"] == 20 and cv["folds"] <= 12, cv
    assert f"empty={cv['empty']}" in output


@pytest.mark.skipif(os.name != "posix", reason="argv bytes arrive as surrogates on POSIX")
def test_a_name_with_a_byte_that_is_not_utf8_is_refused_before_the_fit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _workspace(tmp_path, [8.0, 16.0, 32.0])
    name = os.fsdecode(b"law\xff")  # what Python makes of such a byte in argv
    read: list[int] = []
    from lawkit.fitting import source
    from lawkit.fitting.captures.chunks import Chunk

    def reading(*args: object, **kwargs: object) -> Iterator[Chunk]:
        read.append(1)
        return iter(())

    monkeypatch.setattr(source, "read_captures", reading)
    code, output = _fit(root, "--formula", "sampler_s ~ 1 + batch_size",
                        "--out", str(root / "laws/s.yaml"), "--name", name)
    assert code == 2, output
    assert output == ("lawkit: error: --name 'law\\udcff': the byte 0xff is not UTF-8 text; "
                      "law files are UTF-8: give the name in UTF-8\n")
    assert read == [] and list((root / "laws").iterdir()) == []


def test_out_that_is_not_a_yaml_file_is_refused_naming_the_name_check_reads(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path, [8.0, 16.0, 32.0])
    code, output = _fit(root, "--formula", "sampler_s ~ 1 + batch_size",
                        "--out", str(root / "laws/s.txt"))
    assert code == 2, output
    assert output == ("lawkit: error: --out laws/s.txt: a law file is named *.yaml or *.yml, "
                      "the only files lawkit check reads: --out laws/s.yaml\n")
    assert list((root / "laws").iterdir()) == []


def test_out_outside_the_laws_folder_is_written_with_one_note_on_stderr_that_check_skips_it(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path, [8.0, 16.0, 32.0])
    result = runner.invoke(app, ["fit", str(root / "caps.csv"), "--config",
                                 str(root / "lawkit.toml"), "--formula",
                                 "sampler_s ~ 1 + batch_size", "--out", str(root / "s.yaml")])
    assert result.exit_code == 0, result.output
    assert result.stderr == ("lawkit: note: --out s.yaml is outside the laws folder laws: "
                             "lawkit check will not read it\n")
    assert (root / "s.yaml").exists()
    quiet = runner.invoke(app, ["fit", str(root / "caps.csv"), "--config",
                                str(root / "lawkit.toml"), "--formula",
                                "sampler_s ~ 1 + batch_size", "--out", str(root / "s.yaml"),
                                "-q"])
    assert (quiet.exit_code, quiet.output) == (0, "")
    (root / "laws" / "cpu").mkdir()
    code, output = _fit(root, "--formula", "sampler_s ~ 1 + batch_size",
                        "--out", str(root / "laws" / "cpu" / "s.YML"))
    assert code == 0, output
    assert "lawkit check will not read" not in output
    assert (root / "laws" / "cpu" / "s.YML").exists()
