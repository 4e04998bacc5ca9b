"""`lawkit --help` and `lawkit footprint --help` list each command with its first sentence
whole, never cut to `...`."""

from __future__ import annotations

import re

import pytest
from testing.cli import invoke

from lawkit.cli import app


def _first_sentences(group: object) -> dict[str, str]:
    import typer.main

    command = typer.main.get_command(app)
    for name in group.split() if isinstance(group, str) else []:
        command = command.commands[name]  # type: ignore[attr-defined]
    return {name: " ".join(sub.help.split("\n\n")[0].split())
            for name, sub in command.commands.items()}  # type: ignore[attr-defined]


@pytest.mark.parametrize("group", ["", "footprint"])
def test_help_lists_every_command_with_its_first_sentence_whole(group: str) -> None:
    result = invoke(*group.split(), "--help")
    assert result.exit_code == 0, result.output
    listed = " ".join(result.output.partition("Commands:")[2].split())
    assert "..." not in listed
    for name, first in _first_sentences(group).items():
        sentence = re.match(r".*?\.(?=\s+[A-Z`]|$)", first)
        assert sentence is not None, first
        assert f"{name} {sentence.group(0)}" in listed, (name, listed)
