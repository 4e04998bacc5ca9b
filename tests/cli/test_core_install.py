"""The light core install (`pip install lawkit`, no extras): what a pre-commit hook or a CI job
that only checks laws gets. It runs every light command, refuses `fit` naming the extra, and
stays small."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testing.wheels import make_venv, site_packages
from testing.workspaces import make_workspace

REPO = Path(__file__).resolve().parents[2]
CORE_BUDGET_MB = 40
PLACEHOLDER = "/path/to/lawkit"


def _documented_install(extra: str = "") -> list[str]:
    """docs/adopting.md's `pip install` of lawkit by its path (`extra`: "[fit]", ...), as words."""
    for line in (REPO / "docs" / "adopting.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("pip install "):
            continue
        words = shlex.split(line, comments=True)
        if words[:2] == ["pip", "install"] and words[2:] == [PLACEHOLDER + extra]:
            return words
    raise AssertionError(f"docs/adopting.md gives no `pip install {PLACEHOLDER}{extra}` line")


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a venv holding lawkit installed as docs/adopting.md says, by its path, an empty venv), made
    once for the module. Neither venv holds pip: this Python's pip installs into the core one
    (`pip --python`), which saves seeding pip twice and leaves the same size to compare."""
    base = tmp_path_factory.mktemp("venvs")
    source = base / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".venv*", ".git", "*.egg-info", "build", "__pycache__", ".*_cache"))
    empty, env = base / "empty", base / "core"
    make_venv(empty)
    python = make_venv(env)
    pip, install, *rest = [str(source) if word == PLACEHOLDER else word
                           for word in _documented_install()]
    subprocess.run([sys.executable, "-m", pip, "--python", str(python), install, *rest, "-q",
                    "--disable-pip-version-check"], check=True)
    return env, empty


def test_the_adoption_guide_installs_each_extra_by_the_same_path_quoted_for_the_shell() -> None:
    for extra in ("[fit]", "[all]"):
        assert _documented_install(extra)[2] == f"{PLACEHOLDER}{extra}"


def _run(env: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(env / "bin" / "lawkit"), *args], cwd=cwd, env=clean,
                          capture_output=True, text=True, timeout=120)


def test_the_core_install_holds_no_fitting_library_and_stays_small(
        core: tuple[Path, Path]) -> None:
    env, empty = core
    site = site_packages(env)
    for heavy in ("numpy", "scipy", "pandas", "pyarrow", "matplotlib", "dask"):
        assert not (site / heavy).exists(), heavy
    grown = _size_mb(site) - _size_mb(site_packages(empty))
    assert grown <= CORE_BUDGET_MB, f"the core install adds {grown:.1f} MB"


def test_the_core_install_runs_every_light_command_and_refuses_fit_naming_the_extra(
        core: tuple[Path, Path], tmp_path: Path) -> None:
    env, _ = core
    make_workspace(tmp_path, files=2)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "laws"],
                   cwd=tmp_path, check=True)
    law = next((tmp_path / "laws").glob("*.yaml"))
    for args in (["digest"], ["footprint", "--help"], ["check"], ["show", str(law)],
                 ["rekey", "--why", "a comment", "--dry-run", "--to", "0badc0de"],
                 ["review", "--base", "HEAD"], ["schema"]):
        result = _run(env, tmp_path, *args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    fit = _run(env, tmp_path, "fit", "caps.csv", "--formula", "host_s ~ 1 + num_seqs",
               "--out", "laws/new.yaml", "--captured-on", "current")
    assert fit.returncode == 2, fit.stderr
    assert "pip install 'lawkit[fit]'" in fit.stderr and "Traceback" not in fit.stderr
    assert not (tmp_path / "laws" / "new.yaml").exists()


USER_CODE = '''\
import lawkit

reveal_type(lawkit.load)
reveal_type(lawkit.check)
reveal_type(lawkit.rekey)
reveal_type(lawkit.fit)
reveal_type(lawkit.score)
law_file = lawkit.load("laws/a100.yaml")
law = law_file.law("schedule_s")
ok: bool = lawkit.check("/ws").ok
diff: str = lawkit.rekey(why="docstring only", dry_run=True).diff
'''


def test_mypy_strict_sees_the_real_signatures_of_the_api_in_an_installed_lawkit(
        core: tuple[Path, Path], tmp_path: Path) -> None:
    env, _ = core
    (tmp_path / "user.py").write_text(USER_CODE)
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                             "--python-executable", str(env / "bin" / "python"), "user.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout
    revealed = [line.split("Revealed type is ", 1)[1] for line in result.stdout.splitlines()
                if "Revealed type is" in line]
    assert len(revealed) == 5 and not any(r.strip('"') == "Any" for r in revealed), revealed
    assert revealed[0].startswith('"def (path: str | pathlib.Path')
    assert revealed[1].endswith('-> lawkit.keying.check.CheckReport"')
    assert revealed[2].endswith('-> lawkit.keying.rekey.RekeyReport"')
    assert revealed[3].endswith('-> lawkit.fitting.report.FitReport"')
    assert revealed[4].endswith('-> lawkit.fitting.score.ScoreReport"')
