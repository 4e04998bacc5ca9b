"""`lawkit init`: a lawkit.toml keyed after the engine's first package, the laws folder, the next
three commands; never over an existing config."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.keying.init import key_for

runner = CliRunner()


def _init(*args: str) -> Result:
    return runner.invoke(app, ["init", *args])


def _package(root: Path, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


def test_init_writes_a_config_keyed_after_the_first_package_and_prints_the_next_commands(
        tmp_path: Path) -> None:
    _package(tmp_path / "src", "My-Engine.v2")
    _package(tmp_path / "src", "extra")
    result = _init("--engine", "src", "--package", "My-Engine.v2", "--package", "extra")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "lawkit: wrote lawkit.toml (digest of My-Engine.v2, extra under src, key my_engine_v2) "
        "and laws/",
        "next:",
        "  lawkit digest",
        "  # time the engine's steps with lawkit.capture in a harness,",
        "  # and record which engine code that run executes:",
        "  lawkit footprint record --out footprint.json -- python HARNESS.py",
        "  pip install 'lawkit[fit]'  # fit and score need numpy, pandas and scipy",
        "  lawkit fit CAPTURE --formula 'TARGET ~ 1 + FEATURE' --footprint footprint.json "
        "--out laws/TARGET.yaml",
        "  lawkit check"]
    ws = load_workspace()
    assert ws.config_path == tmp_path / "lawkit.toml"
    assert ws.laws == tmp_path / "laws" and ws.laws.is_dir()
    assert ws.digest.root == tmp_path / "src"
    assert ws.digest.packages == ("My-Engine.v2", "extra")
    assert ws.digest.key == "my_engine_v2"
    assert ws.require == "startup"  # a start-up change needs only --why; steps, a refit
    digest = runner.invoke(app, ["digest", "--json"])
    assert digest.exit_code == 0, digest.output
    assert '"key": "my_engine_v2"' in digest.stdout


def test_init_finds_the_one_package_of_this_folder_and_key_overrides_the_name(
        tmp_path: Path) -> None:
    _package(tmp_path, "engine")
    _package(tmp_path, "tests")  # a test folder is not the engine
    result = _init("--key", "sim")
    assert result.exit_code == 0, result.output
    ws = load_workspace()
    assert (ws.digest.packages, ws.digest.key, ws.digest.root) == (("engine",), "sim", tmp_path)


@pytest.mark.parametrize("package,key", [("vllm", "vllm"), ("Sarathi-Serve", "sarathi_serve"),
                                         ("src/my.engine", "my_engine")])
def test_the_key_is_the_package_lower_cased_with_dashes_and_dots_as_underscores(
        package: str, key: str) -> None:
    assert key_for(package) == key


@pytest.mark.parametrize("existing", [
    ("lawkit.toml", ""),
    ("pyproject.toml", "[project]\nname = 'e'\n\n[tool.lawkit]\nlaws = 'l'\n"),
])
def test_init_refuses_a_folder_that_has_a_config_exit_2_and_changes_nothing(
        tmp_path: Path, existing: tuple[str, str]) -> None:
    _package(tmp_path, "engine")
    (tmp_path / existing[0]).write_text(existing[1])
    before = _tree(tmp_path)
    result = _init()
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"lawkit: error: {existing[0]}: this folder's workspace config "
                             "exists already: edit it, or run lawkit init in another folder\n")
    assert _tree(tmp_path) == before


def test_init_beside_a_pyproject_without_a_lawkit_table_writes_lawkit_toml(
        tmp_path: Path) -> None:
    _package(tmp_path, "engine")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'engine'\n")
    assert _init().exit_code == 0
    assert load_workspace().config_path == tmp_path / "lawkit.toml"


@pytest.mark.parametrize("args,message", [
    ((), "no Python package (a folder with __init__.py) in {root}: pass --package NAME for the "
         "folder the engine's code is in (and --engine ROOT for the folder holding it)"),
    (("--package", "nothere"), "--package nothere: no such folder in {root}: pass the folder "
                               "the engine's code is in"),
    (("--engine", "missing"), "--engine missing: not a folder: pass the engine's source root"),
    (("--package", "2fast"), "the key named after 2fast '2fast': expected a field name like "
                             "'atom' (letters, digits, _ and -, not starting with a digit): "
                             "pass --key NAME"),
    (("--package", "2fast", "--key", "a b"), "--key 'a b': expected a field name like 'atom' "
                                             "(letters, digits, _ and -, not starting with a "
                                             "digit): pass --key NAME"),
])
def test_init_with_nothing_to_digest_or_a_bad_key_is_exit_2_and_writes_nothing(
        tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "2fast").mkdir()
    before = _tree(tmp_path)
    result = _init(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"lawkit: error: {message.format(root=tmp_path)}\n"
    assert _tree(tmp_path) == before


def test_a_config_without_a_key_keeps_atom_as_its_key(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('[digest]\npackages = ["engine"]\n')
    assert load_workspace().digest.key == "atom"
