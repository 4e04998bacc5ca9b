"""A hostile or broken config is one line and exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from testing.reliability import one_line_exit_2, run_bounded

runner = CliRunner()


@pytest.mark.parametrize("name", ["lawkit.toml", "pyproject.toml"])
def test_a_config_that_is_not_utf8_is_one_line(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b'[project]\nname = "\xff\xfe"\n')
    one_line_exit_2(runner.invoke(app, ["check"]), name, "not UTF-8")


def test_a_non_utf8_parent_pyproject_without_lawkit_is_one_line(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                ) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "\xff"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    one_line_exit_2(runner.invoke(app, ["digest"]), "pyproject.toml", "not UTF-8")


def test_a_toml_nested_100000_deep_is_one_line_in_bounded_time(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    outcome = run_bounded(["check"], cwd=tmp_path, timeout=20)
    assert outcome.code == 2, outcome.stderr
    assert "nested too deep" in outcome.error_line()


@pytest.mark.parametrize("line", ['root = "a\\u0000b"', 'packages = ["at\\u0000om"]',
                                  'include = ["*.py\\u0000"]'])
def test_a_nul_in_root_or_packages_is_one_line(tmp_path: Path, line: str) -> None:
    (tmp_path / "lawkit.toml").write_text(f"[digest]\n{line}\n")
    one_line_exit_2(runner.invoke(app, ["digest"]), "lawkit.toml", "NUL")
