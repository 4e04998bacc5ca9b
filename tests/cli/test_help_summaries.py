"""`lawkit --help` and `lawkit footprint --help` list each command with its first sentence
whole, never cut to `...`."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.core import TyperGroup

from lawkit.cli.app import app
from testing.cli import invoke


def _first_sentences(group: str) -> dict[str, str]:
    """Each command of a group (``""``: lawkit's own) with the first sentence of its help."""
    command = typer.main.get_command(app)
    for name in group.split():
        assert isinstance(command, TyperGroup)
        command = command.commands[name]
    assert isinstance(command, TyperGroup)
    sentences = {}
    for name, sub in command.commands.items():
        first = " ".join((sub.help or "").split("\n\n")[0].split())
        found = re.match(r".*?\.(?=\s+[A-Z`]|$)", first)
        assert found is not None, first
        sentences[name] = found.group(0)
    return sentences


@pytest.mark.parametrize("group", ["", "footprint"])
def test_help_lists_every_command_with_its_first_sentence_whole(group: str) -> None:
    result = invoke(*group.split(), "--help")
    assert result.exit_code == 0, result.output
    listed = " ".join(result.output.partition("Commands:")[2].split())
    assert "..." not in listed
    for name, sentence in _first_sentences(group).items():
        assert f"{name} {sentence}" in listed, (name, listed)
