"""One line, the right exit code, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lawkit.errors import FitError
from lawkit.lawfiles.where import parse_where


@pytest.mark.parametrize("text", ["tp in [1, 1e999]", "tp < -1e400", "tp == 1.5e308000"])
def test_a_non_finite_where_literal_is_refused(text: str) -> None:
    with pytest.raises(FitError, match="too large for a float"):
        parse_where(text)


def _fit(tmp_path: Path, capture: Path, *extra: str) -> Any:
    from typer.testing import CliRunner

    from lawkit.cli import app

    (tmp_path / "lawkit.toml").write_text('laws = "laws"\n')
    return CliRunner().invoke(app, ["fit", str(capture), "--formula", "host_s ~ 1 + bs",
                                    "--captured-on", "59e9ff5a", "--out", "laws/x.yaml",
                                    *extra])


@pytest.mark.parametrize("kind", ["list", "struct", "map"])
def test_fit_by_a_parquet_list_or_struct_column_is_one_line(tmp_path: Path, kind: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from testing.reliability import one_line_exit_2

    rows = 40
    values: Any = {"list": [[i % 3, 1] for i in range(rows)],
                   "struct": [{"a": i % 3} for i in range(rows)],
                   "map": [[("k", i % 3)] for i in range(rows)]}[kind]
    typ = {"list": None, "struct": None, "map": pa.map_(pa.string(), pa.int64())}[kind]
    table = pa.table({"bs": list(range(1, rows + 1)),
                      "host_s": [0.001 * i + 0.01 for i in range(rows)],
                      "g": pa.array(values, type=typ)})
    pq.write_table(table, tmp_path / "c.parquet")
    one_line_exit_2(_fit(tmp_path, tmp_path / "c.parquet", "--by", "g"), "c.parquet",
                    "column g holds", "a --by or --where column holds text or numbers")


def test_a_csv_with_two_columns_of_one_name_is_refused_naming_it(tmp_path: Path) -> None:
    from testing.reliability import one_line_exit_2

    capture = tmp_path / "c.csv"
    capture.write_text("bs,host_s,bs\n" + "".join(f"{i},{0.001 * i},{99 - i}\n"
                                                   for i in range(1, 40)))
    one_line_exit_2(_fit(tmp_path, capture), "c.csv", "two columns are named 'bs'")


@pytest.mark.parametrize("rev", ["", "  "])
def test_digest_of_an_empty_revision_is_an_error_not_the_work_tree(tmp_path: Path,
                                                                   rev: str) -> None:
    from typer.testing import CliRunner

    from lawkit.cli import app
    from testing.reliability import one_line_exit_2
    from testing.workspaces import make_engine

    make_engine(tmp_path)
    one_line_exit_2(CliRunner().invoke(app, ["digest", "--rev", rev]),
                    "an empty revision names nothing")


def test_digest_explain_outside_git_prints_the_digest_then_why_it_cannot_explain(
        tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lawkit.cli import app
    from testing.workspaces import make_engine

    make_engine(tmp_path)
    result = CliRunner().invoke(app, ["digest", "--explain"])
    assert result.exit_code == 2, result.output
    assert result.stdout == "8927e824\n"
    assert result.stderr.startswith("lawkit: error: --explain compares the work tree with")
    assert "not inside a git work tree" in result.stderr
    assert "run --explain in a git checkout" in result.stderr
