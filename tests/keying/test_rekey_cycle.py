"""The workflow the project exists for, end to end in a git repository."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from lawkit.cli import app
from testing.lawrepo import git
from testing.workspaces import law_text, laws, make_engine

runner = CliRunner()


def _invoke(*args: str) -> tuple[int, list[str]]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout.splitlines()


def test_check_edit_check_rekey_check_in_a_git_repo_moves_two_lines_per_law_file(
        tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('[digest]\nroot = "."\npackages = ["atom"]\n')
    make_engine(tmp_path)
    digest = runner.invoke(app, ["digest"]).stdout.strip()
    names = ["laws/a100/prefill.yaml", "laws/a100/decode.yaml", "laws/h100.yaml",
             "laws/crlf.yaml"]
    for i, name in enumerate(names):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = law_text(key=digest, labels={"cell": f"c{i}"}, law_dicts=laws(seed=i),
                        provenance="none")
        path.write_bytes(text.replace("\n", "\r\n" if "crlf" in name else "\n").encode())
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "core.autocrlf", "false")

    code, out = _invoke("check")
    assert code == 1 and out[-1] == 'fix: lawkit rekey --adopt --why "..."'
    assert _invoke("rekey", "--adopt", "--why", "laws written before lawkit")[0] == 0
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "adopted laws")
    assert _invoke("check") == (0, [f"4 law files name atom={digest}"])

    step = tmp_path / "atom" / "engine" / "step.py"
    step.write_text('"""One forward step."""\n' + step.read_text())
    code, out = _invoke("check")
    new = runner.invoke(app, ["digest"]).stdout.strip()
    assert code == 1, out
    assert sorted(out[:-1]) == sorted(
        f"{name}:6: stale: names {digest}, the engine is at {new}" for name in names)
    assert out[-1] == ('fix: lawkit rekey --why "..." if the engine change cannot move host '
                       'time, else refit each: lawkit fit CAPTURE... --out FILE')

    code, out = _invoke("rekey", "--why", "a docstring cannot move host time", "--ref", "#3")
    assert code == 0, out
    numstat = sorted(git(tmp_path, "diff", "--numstat", "--", "laws").splitlines())
    assert numstat == sorted(f"2\t1\t{name}" for name in names)
    assert _invoke("check") == (0, [f"4 law files name atom={new}"])

    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "rekeyed laws")
    code, out = _invoke("rekey", "--why", "again")
    assert (code, out) == (0, [f"nothing to rekey (4 already at atom={new})"])
    assert git(tmp_path, "status", "--porcelain") == ""
