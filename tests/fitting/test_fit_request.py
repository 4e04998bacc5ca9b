"""`lawkit fit` and `lawkit.fit` build one FitRequest from the same arguments, odd ones included:
the same request, or the same one-line error (exit 2 on the command line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import lawkit
from lawkit.cli import app
from lawkit.config import Workspace
from lawkit.errors import LawkitError
from lawkit.fitting import fit as fit_module
from lawkit.fitting.request import FitRequest

STOP = "stopped before the fit"


class _Recorded(LawkitError):
    pass


@pytest.fixture
def recorded(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> list[FitRequest]:
    """The requests `run_fit` is given; it then stops, so that no capture is read."""
    seen: list[FitRequest] = []

    def stop(request: FitRequest, ws: Workspace) -> Any:
        seen.append(request)
        raise _Recorded(STOP)

    monkeypatch.setattr(fit_module, "run_fit", stop)
    return seen


def _cli(recorded: list[FitRequest], args: list[str]) -> FitRequest | str:
    result = CliRunner().invoke(app, ["fit", "caps.csv", "--out", "laws/x.yaml",
                                      "--formula", "host_s ~ 1 + bs", *args])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert len(message.splitlines()) == 1, message
    assert message.startswith("lawkit: error: "), message
    return recorded.pop() if message.endswith(STOP) else message.removeprefix("lawkit: error: ")


def _api(recorded: list[FitRequest], **kwargs: Any) -> FitRequest | str:
    try:
        lawkit.fit("caps.csv", out="laws/x.yaml", formula="host_s ~ 1 + bs", **kwargs)
    except _Recorded:
        return recorded.pop()
    except LawkitError as exc:
        return str(exc)
    raise AssertionError("lawkit.fit neither fitted nor refused")


@pytest.mark.parametrize(("by", "expected"), [
    ("model,tp", ["model", "tp"]),
    (" model , tp ", ["model", "tp"]),
    ("model,Model", ["model", "Model"]),
    ("", []),
    ("model,,tp", "--by 'model,,tp': an empty column name: expected COL[,COL], e.g. --by model,tp"),
    ("model,", "--by 'model,': an empty column name: expected COL[,COL], e.g. --by model,tp"),
    (",", "--by ',': an empty column name: expected COL[,COL], e.g. --by model,tp"),
    (" ", "--by ' ': an empty column name: expected COL[,COL], e.g. --by model,tp"),
    ("tp,tp", "--by 'tp,tp': column 'tp' is named twice: name each column once"),
    ("tp, model ,tp ", "--by 'tp, model ,tp ': column 'tp' is named twice: name each column once"),
])
def test_fit_and_the_api_agree_on_odd_by_values(recorded: list[FitRequest], by: str,
                                                expected: list[str] | str) -> None:
    cli = _cli(recorded, ["--by", by])
    api = _api(recorded, by=by)
    if isinstance(expected, str):
        assert cli == api == expected
    else:
        assert isinstance(cli, FitRequest) and isinstance(api, FitRequest)
        assert list(cli.by) == list(api.by) == expected


def test_the_api_takes_by_as_several_values_as_the_cli_takes_one(
        recorded: list[FitRequest]) -> None:
    assert list(_api(recorded, by=["model", "tp"]).by) == ["model", "tp"]  # type: ignore[union-attr]
    assert _api(recorded, by=["model", ""]) == _cli(recorded, ["--by", "model,"])
    assert _api(recorded, by=["tp", "model,tp"]) == _cli(recorded, ["--by", "tp,model,tp"])


@pytest.mark.parametrize(("items", "mapping"), [
    (["gpu=a100", "note= a=b "], {"gpu": "a100", "note": " a=b "}),
    ([" gpu =a100"], {" gpu ": "a100"}),
    (["=a100"], {"": "a100"}),
    (["  =a100"], {"  ": "a100"}),
])
def test_fit_and_the_api_agree_on_labels(recorded: list[FitRequest], items: list[str],
                                         mapping: dict[str, str]) -> None:
    cli = _cli(recorded, [arg for item in items for arg in ("--label", item)])
    api = _api(recorded, labels=mapping)
    if isinstance(cli, str):
        assert cli == api == f"--label {items[0]!r}: expected KEY=VALUE"
    else:
        assert isinstance(api, FitRequest)
        assert dict(cli.labels) == dict(api.labels) == {k.strip(): v for k, v in mapping.items()}


def test_fit_and_the_api_build_the_same_request(recorded: list[FitRequest], tmp_path: Path,
                                                ) -> None:
    cli = _cli(recorded, ["--by", "model", "--where", "bs > 1", "--method", "huber",
                          "--cv", "5", "--label", "gpu=a100", "--weight", "w",
                          "--footprint", "fp.json", "--captured-on", "current",
                          "--allow-negative", "--drop-invalid"])
    api = _api(recorded, by="model", where="bs > 1", method="huber", cv=5,
               labels={"gpu": "a100"}, weight="w", footprint="fp.json", captured_on="current",
               allow_negative=True, drop_invalid=True)
    assert isinstance(cli, FitRequest) and isinstance(api, FitRequest)
    assert {**vars(cli), "captures": list(cli.captures), "formulas": list(cli.formulas)} == \
        {**vars(api), "captures": list(api.captures), "formulas": list(api.formulas)}
