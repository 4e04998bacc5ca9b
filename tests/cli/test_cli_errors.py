"""Errors by kind: 2 for what a user can fix, 3 for a bug, never 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit import __version__
from lawkit.cli import app
from testing.reliability import LAWKIT
from testing.workspaces import make_workspace

runner = CliRunner()


def test_version_prints_the_version_and_exits_0() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"lawkit {__version__}\n"


def test_an_internal_error_exits_3_with_the_traceback_and_where_to_report_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_workspace(tmp_path)
    from lawkit.keying import check

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug on purpose")

    monkeypatch.setattr(check, "check_workspace", broken)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith("lawkit: internal error"), result.stderr
    assert "Traceback" in result.stderr and "RuntimeError: a bug on purpose" in result.stderr
    assert "please report it" in result.stderr.splitlines()[-1]


def test_an_internal_error_exits_3_in_a_subprocess_too(tmp_path: Path) -> None:
    make_workspace(tmp_path)
    code = ("import lawkit.keying.check as c\n"
            "def broken(*a, **k): raise RuntimeError('a bug on purpose')\n"
            "c.check_workspace = broken\n"
            "import sys; sys.argv = ['lawkit', 'check']\n"
            "from lawkit.cli import main; main()\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("lawkit: internal error"), proc.stderr
    assert "RuntimeError: a bug on purpose" in proc.stderr
    assert "please report it" in proc.stderr


def test_stdout_on_a_full_disk_is_one_line_and_exit_2(tmp_path: Path) -> None:
    make_workspace(tmp_path)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*LAWKIT, "check"], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, text=True, check=False, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "lawkit: error: cannot write the output: No space left on device\n"


def test_a_large_output_on_a_full_disk_is_one_line_and_exit_2(tmp_path: Path) -> None:
    make_workspace(tmp_path, files=400, stale=True)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*LAWKIT, "check", "--no-cache"], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, text=True, check=False, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "lawkit: error: cannot write the output: No space left on device\n"
