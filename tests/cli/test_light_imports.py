"""The light commands (digest, check, rekey, show, review, footprint, schema, env), scalar
prediction and `lawkit.capture` never import numpy, pandas, scipy, pyarrow or matplotlib; and
lawkit runs as `python -m lawkit` and as the installed `lawkit` script.

Each case builds its folder, then runs its steps: a step is a fresh Python process (the code
ends by printing which of the watched modules it loaded) or an action between two of them (a
commit). A command runs in-process there (CliRunner) and must exit as its step says.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from footprint_engine import copy_engine, edit, lawkit

from testing.lawrepo import build_scenario, git
from testing.samples import GOOD
from testing.workspaces import make_git_workspace, make_workspace

HEAVY = ("numpy", "pandas", "scipy", "pyarrow", "matplotlib")
PARSERS = ("yaml", "pydantic")  # check reads neither when every file is in its cache

LOADED = """\
import sys
def loaded(watched):
    names = {m.split(".")[0] for m in sys.modules}
    return sorted(m for m in watched if m in names)
"""


@dataclass(frozen=True)
class Process:
    """A Python process: its code, and the lines it must print."""

    code: str
    prints: tuple[str, ...] = ("[]",)


Step = Process | Callable[[Path], None]


def commands(*runs: tuple[Sequence[str], int], watched: Sequence[str] = HEAVY,
             prints: str = "[]") -> Process:
    """One process running each command (arguments, the exit it must give) in turn, then
    printing which of `watched` it loaded."""
    code = ("from typer.testing import CliRunner\nfrom lawkit.cli import app\n"
            f"for args, code in {[(list(a), c) for a, c in runs]!r}:\n"
            "    result = CliRunner().invoke(app, args)\n"
            "    assert result.exit_code == code, (args, result.output, result.exception)\n"
            f"print(loaded({tuple(watched)!r}))\n")
    return Process(code, (prints,))


# -- the folders ---------------------------------------------------------------------------------

def _engine_repo(root: Path) -> Path:
    """A workspace committed to git, with a law file outside laws/ to show."""
    make_git_workspace(root)
    (root / "x.yaml").write_text(GOOD)
    return root


def _review_repo(root: Path) -> Path:
    return build_scenario(root / "repo").repo


_FOOTPRINT_FIT = ["fit", "captures.csv", "--out", "laws/host.yaml", "--formula",
                  "step_s ~ 1 + batch_size", "--captured-on", "current", "--footprint", "fp.json"]


def _engine(root: Path) -> Path:
    return copy_engine(root / "engine")


def _fitted_with_a_footprint(root: Path) -> Path:
    """The stand-in engine, recorded and fitted with its footprint, committed; then the step
    path edited in the work tree."""
    repo = copy_engine(root / "repo")
    git(repo, "init", "-q", "-b", "main")
    result = lawkit("footprint", "record", "--out", "fp.json", "--", sys.executable, "run.py",
                    cwd=repo)
    assert result.returncode == 0, result.stderr
    (repo / "captures.csv").write_text(
        "batch_size,step_s\n" + "".join(f"{b},{0.001 + 0.0001 * b}\n" for b in range(1, 9)))
    result = lawkit(*_FOOTPRINT_FIT, cwd=repo)
    assert result.returncode == 0, result.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "engine, footprint and laws")
    git(repo, "tag", "fitted")
    edit(repo / "atom/runner.py", "return x * factor", "return x * factor + 0")
    return repo


def _folder(root: Path) -> Path:
    return root


def _keyed_folder(root: Path) -> Path:
    make_workspace(root, 2)
    return root


def _stale_folder(root: Path) -> Path:
    make_workspace(root, 2, stale=True)
    return root


def _commit_steps(repo: Path) -> None:
    git(repo, "commit", "-qam", "steps")


WITH_A_FOOTPRINT: list[Step] = [
    commands((["rekey", "--why", "w", "--require", "untouched"], 2), watched=HEAVY[:4]),
    commands((["rekey", "--why", "w"], 0), watched=HEAVY[:4]),
    _commit_steps,
    *[commands((["review", "--base", "fitted", "--format", fmt], 0), watched=HEAVY[:4])
      for fmt in ("text", "json", "github", "markdown")],
    commands((["review", "--base", "fitted", "--require", "untouched"], 1), watched=HEAVY[:4]),
]


CAPTURE = """\
from lawkit import capture
with capture.open("run.csv", features=("n",), regions=("r",), digest="0badc0de") as cap:
    cap.steps()
    with cap.step(n=1), cap.region("r"):
        pass
cap = capture.open("run.parquet", features=("n",), regions=("r",), digest="0badc0de")
cap.steps()
with cap.step(n=1), cap.region("r"):
    pass
print(loaded(("numpy", "pandas", "scipy", "pyarrow", "typer", "yaml", "pydantic")))
cap.close()
print(loaded(("pandas", "scipy", "pyarrow")))
"""

WHERE = """\
from lawkit.lawfiles.where import parse_where
e = parse_where('a == 1 and b in ["x"]'); e.as_mapping(); e.columns()
print(loaded(("numpy", "pandas")))
"""

PREDICT = """\
import lawkit
law = lawkit.Law(name='x', target='t', terms={'1': 1.0, 'a': 2.0}, domain={'a': [0.0, 9.0]})
assert law.predict({'a': 3}) == 7.0
print(loaded(("numpy",)))
"""

PREDICT_WHERE_STEP = """\
import warnings, lawkit
law = lawkit.Law(name='x', target='t', terms={'1': 1.0, 'step(a,2)': 2.0},
                 where={'phase': 'decode'}, domain={'a': [0.0, 9.0]})
assert law.predict({'a': 3, 'phase': 'decode'}) == 3.0
assert law.compile()({'a': 1, 'phase': 'decode'}) == 1.0
warnings.simplefilter('ignore')
assert law.predict({'a': 30, 'phase': 'prefill'}) == 3.0
print(loaded(("numpy",)))
"""

CASES: dict[str, tuple[Callable[[Path], Path], list[Step]]] = {
    "digest and show": (_engine_repo, [commands(
        (["digest", "--explain"], 0), (["digest", "--rev", "HEAD"], 0), (["show", "x.yaml"], 0))]),
    # the first run parses and fills check's cache, the second reads only the cache
    "check": (_keyed_folder, [
        commands((["check"], 0), watched=HEAVY + PARSERS, prints="['pydantic', 'yaml']"),
        commands((["check"], 0), watched=HEAVY + PARSERS)]),
    "rekey": (_stale_folder, [commands((["rekey", "--why", "w"], 0))]),
    "schema": (_folder, [commands((["schema"], 0))]),
    "env export": (_folder, [commands((["env", "export", "--out", "manifest.json"], 0))]),
    "review": (_review_repo, [commands(
        (["review", "--base", "main", "--merge-with", "docs-only", "--format", "markdown"], 0))]),
    "footprint record and diff": (_engine, [
        commands((["footprint", "record", "--out", "fp.json", "--", sys.executable, "run.py"],
                  0)),
        commands((["footprint", "diff", "fp.json"], 0)),
        commands((["footprint", "diff", "fp.json", "--json"], 0))]),
    "rekey and review with a footprint": (_fitted_with_a_footprint, WITH_A_FOOTPRINT),
    "the where parser": (_folder, [Process(WHERE)]),
    "scalar prediction": (_folder, [Process(PREDICT)]),
    "scalar prediction with a where and a step": (_folder, [Process(PREDICT_WHERE_STEP)]),
    # pyarrow only once a parquet capture closes, and still neither pandas nor scipy
    "lawkit.capture": (_folder, [Process(CAPTURE, ("[]", "['pyarrow']"))]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_light_command_imports_no_numpy_pandas_scipy_pyarrow_or_matplotlib(
        tmp_path: Path, case: str) -> None:
    setup, steps = CASES[case]
    cwd = setup(tmp_path)
    for step in steps:
        if not isinstance(step, Process):
            step(cwd)
            continue
        done = subprocess.run([sys.executable, "-c", LOADED + step.code], cwd=cwd,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert tuple(done.stdout.splitlines()[-len(step.prints):]) == step.prints, done.stdout


@pytest.mark.usefixtures("stale_workspace")
def test_python_dash_m_lawkit_and_the_installed_script_both_run(tmp_path: Path) -> None:
    script = shutil.which("lawkit", path=str(Path(sys.executable).parent))
    assert script is not None, f"no lawkit script beside {sys.executable}"
    for command in ([sys.executable, "-m", "lawkit"], [script]):
        digest = subprocess.run([*command, "digest"], cwd=tmp_path, capture_output=True,
                                text=True, check=False)
        assert (digest.returncode, digest.stdout) == (0, "8927e824\n"), digest.stderr
        check = subprocess.run([*command, "check"], cwd=tmp_path, capture_output=True,
                               text=True, check=False)
        assert check.returncode == 1, check.stderr
        assert check.stdout.splitlines()[-1].startswith('fix: lawkit rekey --why "..." if ')
        assert check.stderr == ""
