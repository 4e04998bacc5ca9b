"""`lawkit review`: a reviewer's checks of a law-changing change, from git objects."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from lawkit.cli.app import (
    ConfigOption,
    EngineOption,
    EnvOption,
    JsonOption,
    LawsOption,
    QuietOption,
    app,
    print_json,
    report_format,
    run,
)


class ReviewFormat(StrEnum):
    """The report formats of `lawkit review`."""

    text = "text"
    json = "json"
    github = "github"
    markdown = "markdown"


@app.command()
def review(
    base: Annotated[str, typer.Option(
        "--base", help="The revision the change starts from (the merge base of a pull request, "
        "say origin/main).", show_default=False)],
    head: Annotated[str, typer.Option(
        "--head", help="The revision the change ends at.")] = "HEAD",
    merge_with: Annotated[str | None, typer.Option(
        "--merge-with", help="Also digest the merge of the head with this revision (git 2.38+, "
        "no checkout): a finding if the laws go stale on merge or the merge conflicts.",
        show_default=False)] = None,
    format: Annotated[ReviewFormat | None, typer.Option(
        "--format", help="text (the default), json (one document, the same as --json), github "
        "(workflow annotations) or markdown (a comment body).", show_default=False)] = None,
    json: JsonOption = False,
    quiet: QuietOption = False,
    require: Annotated[str | None, typer.Option(
        "--require", metavar="untouched|startup", help="A finding (exit 1) for every law at "
        "head whose verdict the policy does not pass (untouched; startup: untouched or "
        "startup), naming it (no footprint: unknown, a finding too), and for a change to the "
        "environment's evidence; default: the stricter [rekey] require of base and head.",
        show_default=False)] = None,
    env: EnvOption = None,
    engine: EngineOption = None,
    laws: LawsOption = None,
    config: ConfigOption = None,
) -> None:
    """Classify and verify every law file changed since --base (rekey, refit, adopt, new,
    removed, hand-edit), from git objects, without a checkout.

    Also lists the units of each engine file changed, and the footprint verdict (untouched,
    startup, steps or unknown) of each law file whose fit names a footprint (fit --footprint),
    read from git objects at head. With a target environment (--env, or [tool.lawkit]
    environment; a lock file is read from the work tree), a footprint that recorded its
    environment is compared with it: under a policy, each difference in a distribution that
    ran (or in the Python) that moves a law past it is a finding naming both.

    Exit 0 when everything verifies; 1 with findings (a hand-edit, an invalid, stale or
    forgotten law, a re-key that does not chain from the base's key, a merge that conflicts or
    leaves the laws stale); 2 on bad input (a revision that does not resolve, laws or engine
    outside the repository, git too old for --merge-with).
    """
    format = report_format(format, json, ReviewFormat.text)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.keying.check import env_target
        from lawkit.keying.review import formats
        from lawkit.keying.review.verify import review as review_change

        ws = load_workspace(config=config, engine=engine, laws=laws)
        report = review_change(ws, base, head, merge_with, require, env_target(ws, env))
        if quiet and report.exit_code == 0 and format is not ReviewFormat.json:
            return 0
        if format is ReviewFormat.json:
            print_json(report.to_json())
        elif format is ReviewFormat.github:
            typer.echo(formats.as_github(report), nl=False)
        elif format is ReviewFormat.markdown:
            typer.echo(formats.as_markdown(report), nl=False)
        else:
            typer.echo(formats.as_text(report), nl=False)
        return report.exit_code

    run(body)
