"""Workspace discovery and config validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lawkit.config import load_workspace
from lawkit.errors import ConfigError


def test_pyproject_with_tool_lawkit_is_found_walking_up_and_paths_resolve_against_it(
        tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.lawkit]\nlaws = "host/laws"\n'
        '[tool.lawkit.digest]\nroot = "engine"\npackages = ["atom", "atom_ext"]\nlength = 12\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    ws = load_workspace(cwd=deep)
    assert ws.root == tmp_path
    assert ws.laws == tmp_path / "host" / "laws"
    assert ws.digest.root == tmp_path / "engine"
    assert ws.digest.packages == ("atom", "atom_ext")
    assert ws.digest.length == 12
    assert ws.digest.key == "atom"


def test_a_pyproject_without_tool_lawkit_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('laws = "L"\n')
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n')
    ws = load_workspace(cwd=inner)
    assert ws.config_path == tmp_path / "lawkit.toml"
    assert ws.laws == tmp_path / "L"


def test_no_config_means_the_defaults_in_the_working_directory(tmp_path: Path) -> None:
    ws = load_workspace(cwd=tmp_path)
    assert ws.config_path is None
    assert ws.digest.root == tmp_path
    assert ws.laws == tmp_path / "laws"


def test_command_line_overrides_are_relative_to_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('[digest]\nroot = "engine"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    ws = load_workspace(cwd=sub, engine=Path("../other"), laws=Path("mylaws"))
    assert ws.digest.root == (sub / "../other").absolute()
    assert ws.laws == sub / "mylaws"


def test_explicit_config_is_used_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "lawkit.toml").write_text('laws = "x"\n')
    assert load_workspace(cwd=tmp_path, config=Path("conf/lawkit.toml")).laws == \
        tmp_path / "conf" / "x"
    with pytest.raises(ConfigError, match=r"config file nope\.toml not found"):
        load_workspace(cwd=tmp_path, config=Path("nope.toml"))


@pytest.mark.parametrize(("text", "message"), [
    ('lawz = "x"\n', "lawz: unknown key"),
    ('[digest]\nlength = 3\n', "digest.length: expected 4..64"),
    ('[digest]\nlength = "8"\n', "digest.length: expected int"),
    ('[digest]\npackages = "atom"\n', "digest.packages: expected a list of non-empty strings"),
    ('[digest]\nkey = "a b"\n', "digest.key: expected a field name"),
    ('[digest]\nroots = "."\n', "digest.roots: unknown key"),
    ('laws = \n', "not valid TOML"),
])
def test_bad_config_names_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "lawkit.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_workspace(cwd=tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'lawkit.toml'}: ")
    assert message in str(info.value)
