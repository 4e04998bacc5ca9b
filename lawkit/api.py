"""The commands as Python functions: `lawkit.digest(...)`, `lawkit.check(...)`, ... .

Each returns the report its command prints (`report.lines()` or `report.to_json()` is what
the command shows) and raises a `LawkitError` where the command exits 2. The workspace is
found as the command finds it, by walking up from `workspace` (a folder; default: the working
directory), or is given as a `Workspace`, or is named by `config`; `engine` and `laws` override its
`[tool.lawkit]` values as `--engine` and `--laws` do. Relative paths are relative to the
working directory, as on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import datetime

    from lawkit.config import Workspace
    from lawkit.fitting.fit import FitReport
    from lawkit.fitting.score import ScoreReport
    from lawkit.keying.check import CheckReport
    from lawkit.keying.digest import DigestReport
    from lawkit.keying.rekey import RekeyReport
    from lawkit.keying.review.verify import ReviewReport
    from lawkit.lawfiles.lawfile import LawFile


def _workspace(
    where: Workspace | str | Path | None = None,
    *,
    config: str | Path | None = None,
    engine: str | Path | None = None,
    laws: str | Path | None = None,
) -> Workspace:
    """The workspace a command would use from `where` (a folder, or a Workspace as it is)."""
    from dataclasses import replace

    from lawkit.config import Workspace, load_workspace

    if isinstance(where, Workspace):
        ws = where
        if engine is not None:
            ws = replace(ws, digest=replace(ws.digest, root=Path(engine).absolute()))
        if laws is not None:
            ws = replace(ws, laws=Path(laws).absolute())
        return ws
    cwd = Path(where).absolute() if where is not None else None
    return load_workspace(config=_path(config), engine=_path(engine), laws=_path(laws), cwd=cwd)


def digest(
    workspace: Workspace | str | Path | None = None,
    *,
    engine: str | Path | None = None,
    rev: str | None = None,
    explain: bool = False,
    config: str | Path | None = None,
) -> DigestReport:
    """`lawkit digest`: the engine's digest (its `.digest`), from the work tree or at `rev`."""
    from lawkit.keying.digest import digest_report

    ws = _workspace(workspace, config=config, engine=engine)
    return digest_report(ws, rev=rev, explain=explain)


def check(
    workspace: Workspace | str | Path | None = None,
    *,
    env: str | Path | None = None,
    engine: str | Path | None = None,
    laws: str | Path | None = None,
    config: str | Path | None = None,
) -> CheckReport:
    """`lawkit check`: every law file valid, explained, on the current digest (`.ok`).

    `env` is `--env` ("current", a lock file or a manifest; default: the config's
    `environment`). Every file is parsed: the command's cache (see `lawkit.keying.checkcache`)
    is left to the CLI.
    """
    from lawkit.keying.check import check_workspace, env_target

    ws = _workspace(workspace, config=config, engine=engine, laws=laws)
    return check_workspace(ws, env=env_target(ws, _str(env)))


def review(
    base: str,
    head: str = "HEAD",
    *,
    merge_with: str | None = None,
    require: Literal["untouched", "startup"] | None = None,
    env: str | Path | None = None,
    workspace: Workspace | str | Path | None = None,
    engine: str | Path | None = None,
    laws: str | Path | None = None,
    config: str | Path | None = None,
) -> ReviewReport:
    """`lawkit review`: classify and verify every law file changed from `base` to `head`
    (`.exit_code`, `.findings`), with `--merge-with`, `--require` and `--env` as keywords."""
    from lawkit.keying.check import env_target
    from lawkit.keying.review.verify import review as review_change

    ws = _workspace(workspace, config=config, engine=engine, laws=laws)
    return review_change(ws, base, head, merge_with, require, env_target(ws, _str(env)))


def rekey(
    workspace: Workspace | str | Path | None = None,
    *,
    why: str,
    refs: Sequence[str] = (),
    to: str | None = None,
    from_: str | None = None,
    adopt: bool = False,
    accept_env: bool = False,
    env: str | Path | None = None,
    dry_run: bool = False,
    paths: Sequence[str | Path] | None = None,
    engine: str | Path | None = None,
    laws: str | Path | None = None,
    config: str | Path | None = None,
    at: datetime.datetime | None = None,
    require: Literal["untouched", "startup"] | None = None,
) -> RekeyReport:
    """`lawkit rekey`: move laws to `to` (default: the current digest) without a refit.

    `env` names the target environment the footprints are compared with (`--env`: "current"
    or a lock file or manifest; default: the config's `environment`); `accept_env=True`
    accepts it as the laws' new baseline (`--accept-env`), the keys kept; `adopt=True` vouches
    for laws as they are (`--adopt`). `require` ("untouched" or "startup"; default: the
    config's `[rekey] require`) refuses (nothing written) a law whose footprint verdict it does
    not pass; the report's `verdicts` hold each file's.
    """
    from lawkit.errors import LawkitError
    from lawkit.keying import rekey as lib
    from lawkit.keying.check import env_target

    ws = _workspace(workspace, config=config, engine=engine, laws=laws)
    if adopt and (accept_env or to is not None or require is not None or env is not None):
        raise LawkitError("adopt vouches for laws as they are, at the digest each file names: "
                          "leave out accept_env, to, require and env")
    if accept_env and (to is not None or from_ is not None):
        raise LawkitError("accept_env keeps each file's key: leave out to and from_")
    where = [Path(p) for p in paths] if paths is not None else None
    if adopt:
        return lib.adopt(ws, why=why, from_=from_, dry_run=dry_run, paths=where, at=at)
    spec = env_target(ws, _str(env), accept=accept_env)
    if accept_env:
        assert spec is not None
        return lib.accept_env(ws, why=why, env=spec, refs=refs, dry_run=dry_run, paths=where,
                              at=at, require=require)
    return lib.rekey(ws, why=why, refs=refs, to=to, from_=from_, dry_run=dry_run, paths=where,
                     at=at, require=require, env=spec)


def fit(
    captures: str | Path | Sequence[str | Path],
    *,
    out: str | Path,
    formula: str | Sequence[str] = (),
    by: str | Sequence[str] = (),
    where: str | None = None,
    method: str | None = None,
    holdout: float | None = None,
    labels: Mapping[str, str] | None = None,
    name: str | None = None,
    captured_on: str | None = None,
    allow_negative: bool = False,
    allow_mixed_digests: bool = False,
    drop_invalid: bool = False,
    weight: str | None = None,
    cv: str | int | None = None,
    footprint: str | Path | None = None,
    why: str | None = None,
    require: Literal["untouched", "startup"] | None = None,
    trace_map: str | Path | None = None,
    write: bool = True,
    workspace: Workspace | str | Path | None = None,
    engine: str | Path | None = None,
    config: str | Path | None = None,
) -> FitReport:
    """`lawkit fit`: fit laws from captures into `out` (nothing written with `write=False`).

    `formula` and `by` take one value or several (`by="model,tp"` as on the command line: an
    empty column name or one named twice is a LawkitError, as `--by` is);
    `cv` is `--cv`: a column (leave one value out) or a number of folds;
    `footprint` binds the laws to the footprint of the capture runs (`fit --footprint`);
    `why` and `require` re-key the laws of `out` the fit keeps when it moves the file's key
    (`fit --why`, `--require`; default: the config's `[rekey] require`), each judged as
    `rekey` judges it, the config's environment included: without `why`, such a fit is a
    RefusalError; `trace_map` is `--trace-map`: a TOML file whose `[trace]` table reads the
    traces among `captures` (default: the workspace's `[trace]`).
    """
    from lawkit.fitting import fit as lib
    from lawkit.fitting.request import build_request

    request = build_request(
        captures, out=out, formula=formula, by=by, where=where, method=method, holdout=holdout,
        labels=labels, name=name, captured_on=captured_on, allow_negative=allow_negative,
        allow_mixed_digests=allow_mixed_digests, drop_invalid=drop_invalid, weight=weight, cv=cv,
        footprint=footprint, why=why, require=require, trace_map=trace_map)
    ws = _workspace(workspace, config=config, engine=engine)
    return lib.run_fit(request, ws) if write else lib.fit_laws(request, ws)


def score(
    law_file: LawFile | str | Path,
    captures: Any,
    *,
    where: str | None = None,
    max_mape: float | None = None,
    drop_invalid: bool = False,
    keep_data: bool = False,
    require: Literal["current"] | None = None,
    trace_map: str | Path | None = None,
    workspace: Workspace | str | Path | None = None,
    config: str | Path | None = None,
) -> ScoreReport:
    """`lawkit score`: each law's figures on captures (`.exit_code` is the command's).

    `captures` are capture paths (files, folders, globs), or rows in memory: a DataFrame or a
    mapping of column -> array (then `law_file` may be a loaded LawFile, and `where`,
    `drop_invalid` and `trace_map` do not apply). `require="current"` refuses, as `lawkit.load`
    does, a law file whose key is not the workspace's current digest. `trace_map` is
    `--trace-map`: a TOML file whose `[trace]` table reads the traces among `captures`
    (default: the workspace's `[trace]`).
    """
    from lawkit.fitting import score as lib
    from lawkit.lawfiles.lawfile import LawFile, load

    if require is not None:
        path = law_file.path if isinstance(law_file, LawFile) else law_file
        located = workspace if workspace is not None or config is None else \
            _workspace(None, config=config)
        load(path, require=require, workspace=located)

    if not isinstance(captures, (str, Path)) and not _is_path_list(captures):
        if where is not None or drop_invalid or trace_map is not None:
            raise TypeError("where, drop_invalid and trace_map apply to capture files; filter "
                            "the rows in memory yourself")
        loaded = law_file if isinstance(law_file, LawFile) else load(law_file)
        return lib.score_data(loaded, captures, max_mape=max_mape, keep_data=keep_data)
    if isinstance(law_file, LawFile):
        law_file = law_file.path
    ws = _workspace(workspace, config=config)
    return lib.score(ws, law_file, _paths(captures), where=where, max_mape=max_mape,
                     drop_invalid=drop_invalid, keep_data=keep_data, trace_map=_path(trace_map))


def _str(value: str | Path | None) -> str | None:
    return None if value is None else str(value)


def _path(value: str | Path | None) -> Path | None:
    return Path(value) if value is not None else None


def _paths(value: str | Path | Sequence[str | Path]) -> list[str | Path]:
    return [value] if isinstance(value, (str, Path)) else list(value)


def _is_path_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, (str, Path)) for v in value)
