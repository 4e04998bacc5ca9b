"""`lawkit fit --dask`: the passes of a fit as maps over files and trees
of merges on a Dask cluster of worker processes, giving the local fit within a small multiple
of cond x eps, written the same way, and unchanged when a worker dies mid-fit."""

from __future__ import annotations

import datetime
import logging
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.errors import CaptureError, FitError, LawkitError
from lawkit.fitting import distributed as dask_fit
from lawkit.fitting import methods, solve
from lawkit.fitting.captures.files import Capture
from lawkit.fitting.fit import FitReport, FitRequest, fit_laws, write_fit

distributed = pytest.importorskip("distributed")

runner = CliRunner()
EPS = float(np.finfo(np.float64).eps)
DIGEST = "68ad8fc6"
FORMULA = "host_s ~ 1 + num_seqs + max_context + num_seqs:max_context"
NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
FILES = 20


def make_captures(folder: Path, files: int = FILES, rows: int = 1500, *, seed: int = 7,
                  outliers: float = 0.0, row_group: int | None = None) -> Path:
    """Parquet captures: three models, a weight column, a feature far from zero (the design is
    ill-conditioned: cond ~ 1e6), the digest in the file metadata."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for k in range(files):
        n = rows + 37 * k
        seqs = rng.integers(1, 257, n).astype(np.float64)
        context = 1e5 + rng.uniform(0.0, 8.0, n)
        model = rng.choice(["llama", "qwen", "phi"], n)
        idle = rng.uniform(0.0, 1.0, n)
        y = 2e-3 + 1.2e-4 * seqs + 3e-7 * context + 1e-9 * seqs * context - 2e-4 * idle
        y = y + np.where(model == "qwen", 5e-4, 0.0) + rng.normal(0.0, 1e-5, n)
        if outliers:
            hit = rng.random(n) < outliers
            y[hit] += rng.uniform(0.0, 0.05, int(hit.sum()))
        table = pa.table({"num_seqs": seqs, "max_context": context, "idle": idle, "model": model,
                          "host_s": np.abs(y), "w": rng.uniform(0.2, 3.0, n)})
        table = table.replace_schema_metadata({"lawkit.atom": DIGEST})
        pq.write_table(table, folder / f"run-{k:02d}.parquet", row_group_size=row_group or n)
    return folder


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A LocalCluster of two worker processes, one thread each, on loopback, for the module;
    the environment its nannies set for their workers (OMP_NUM_THREADS=1, ...) is put back
    after it, for the tests that start processes of their own."""
    saved = dict(os.environ)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0",
                                  silence_logs=logging.ERROR) as local:
        yield local.scheduler_address
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_captures(tmp_path_factory.mktemp("dask") / "caps")


@pytest.fixture(autouse=True)
def _workspace(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('laws = "."\n')  # `--out a.yaml` is a law file here


def request(caps: Path, out: str = "laws.yaml", **given: Any) -> FitRequest:
    options: dict[str, Any] = {"formulas": [FORMULA], "now": NOW, **given}
    return FitRequest(captures=[str(caps)], out=Path(out), **options)


def fit_both(caps: Path, address: str, **given: Any) -> tuple[FitReport, FitReport]:
    ws = load_workspace()
    return fit_laws(request(caps, **given), ws), fit_laws(request(caps, dask=address, **given),
                                                          ws)


def assert_same(local: Any, remote: Any, tol: float, where: str = "") -> None:
    """Same keys in the same order, same text and counts, numbers within `tol` (relative)."""
    assert type(local) is type(remote), where
    if isinstance(local, dict):
        assert list(local) == list(remote), where
        for key in local:
            assert_same(local[key], remote[key], tol, f"{where}.{key}")
    elif isinstance(local, list):
        assert len(local) == len(remote), where
        for i, (a, b) in enumerate(zip(local, remote, strict=True)):
            assert_same(a, b, tol, f"{where}[{i}]")
    elif isinstance(local, float):
        if where.endswith("fit.mape"):
            # The fit's MAPE is taken in the last residual pass, before its correction of
            # the coefficients moves the residuals by < 1e-10 of their norm (solve.refine).
            tol = max(tol, 1e-10)
        assert math.isclose(local, remote, rel_tol=tol, abs_tol=0.0), (where, local, remote)
    else:
        assert local == remote, where


def assert_same_report(local: FitReport, remote: FitReport, *, irls: bool = False) -> None:
    """The laws within 64 x cond x eps; digest, records and provenance exactly equal.

    An IRLS fit (huber) stops once a step moves the fitted values by less than 1e-10 of the
    scale, so two runs that round differently may stop that far apart: then 1e-10.
    """
    assert [f.spec.name for f in remote.laws] == [f.spec.name for f in local.laws]
    for a, b in zip(local.laws, remote.laws, strict=True):
        tol = 64 * a.law["fit"]["cond"] * EPS
        assert_same(a.law, b.law, max(tol, 1e-10) if irls else tol, a.spec.name)
        assert (a.n, a.dropped) == (b.n, b.dropped)
        assert a.law["domain"] == b.law["domain"]  # min and max: exact
    for name in ("digest", "digests", "records", "captures", "at", "dropped", "kept"):
        assert getattr(remote, name) == getattr(local, name), name
    assert remote.lines() == local.lines()


# -- the distributed fit is the local fit ----------------------------------------------------


def test_a_fit_of_twenty_files_on_two_workers_is_the_local_fit_within_cond_eps(
        captures: Path, cluster: str) -> None:
    local, remote = fit_both(captures, cluster, by=["model"], weight="w", holdout=0.2)
    assert [f.spec.name for f in local.laws] == ["host_s[llama]", "host_s[phi]", "host_s[qwen]"]
    assert local.laws[0].law["fit"]["cond"] > 1e5  # ill-conditioned enough to mean something
    assert len(local.captures) == FILES
    assert_same_report(local, remote)
    for a, b in zip(local.laws, remote.laws, strict=True):
        # Both are refined to the float64 limit: far closer than the cond x eps bound.
        x, y = np.array(list(a.law["terms"].values())), np.array(list(b.law["terms"].values()))
        assert np.all(np.abs(x - y) <= 8 * EPS * np.abs(x)), (x, y)
    # Written the same way: the same file but for the last digits of the statistics.
    write_fit(local, load_workspace())
    text = Path("laws.yaml").read_text()
    Path("laws.yaml").unlink()
    write_fit(remote, load_workspace())
    assert_same(yaml.safe_load(text), yaml.safe_load(Path("laws.yaml").read_text()), 1e-9)


def test_the_fit_command_with_dask_prints_and_writes_what_the_local_command_does(
        captures: Path, cluster: str) -> None:
    args = ["fit", str(captures), "--formula", FORMULA, "--by", "model"]
    local = runner.invoke(app, [*args, "--out", "local.yaml"])
    remote = runner.invoke(app, [*args, "--out", "dask.yaml", "--dask", cluster])
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    assert remote.output.replace("dask.yaml", "local.yaml") == local.output
    a = yaml.safe_load(Path("local.yaml").read_text())
    b = yaml.safe_load(Path("dask.yaml").read_text())
    for entry in (a, b):
        entry["host"]["provenance"][-1]["fit"]["at"] = "-"
    assert_same(a, b, 1e-9)


def test_local_starts_its_own_cluster_and_leaves_no_process_behind(tmp_path: Path) -> None:
    import psutil

    caps = make_captures(tmp_path / "caps", files=3, rows=300)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    args = ["fit", str(caps), "--formula", FORMULA, "--json"]
    local = runner.invoke(app, [*args, "--out", "a.yaml"])
    # after a local fit: its first import of threadpoolctl sets KMP_DUPLICATE_LIB_OK for good
    environ = dict(os.environ)
    remote = runner.invoke(app, [*args, "--out", "a.yaml", "--dask", "local:1"])
    assert remote.exit_code == 0, remote.output
    # Python's multiprocessing resource tracker stays for the life of this process.
    after = {p.pid for p in psutil.Process().children(recursive=True) if p.is_running()
             and p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in
             " ".join(p.cmdline())}
    assert after <= before
    assert dict(os.environ) == environ  # the nannies' settings for their workers undone
    a, b = yaml.safe_load(local.output), yaml.safe_load(remote.output)
    assert (a["written"], b["written"]) == (True, True)
    assert_same(a["laws"], [{**law, "replaced": False} for law in b["laws"]], 1e-9)


def test_a_local_fit_does_not_import_dask() -> None:
    import subprocess

    code = ("import sys, lawkit.fitting.fit, lawkit.cli.fit; "
            "print([m for m in ('distributed', 'dask', 'lawkit.fitting.distributed')"
            " if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("method", ["huber", "nnls", "robust"])
def test_huber_nnls_and_robust_run_every_pass_on_the_cluster_and_give_the_local_fit(
        tmp_path: Path, cluster: str, method: str) -> None:
    caps = make_captures(tmp_path / "caps", files=4, rows=600, seed=3,
                         outliers=0.0 if method == "nnls" else 0.05)
    # nnls: idle's least-squares coefficient is negative; it is held at 0 and the other two
    # are refitted by one more fold.
    local, remote = fit_both(caps, cluster, formulas=["host_s ~ 1 + num_seqs + idle"],
                             method=method, weight="w")
    fitted = local.laws[0].law["fit"]
    if method != "nnls":
        assert fitted["downweighted"] > 0 and fitted["scale"] > 0
    else:
        assert local.laws[0].law["terms"]["idle"] == 0.0 and "idle" not in fitted["stderr"]
    assert_same_report(local, remote, irls=method != "nnls")


def test_huber_takes_the_exact_median_of_many_rows_by_radix_selection(
        tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Few enough candidates to gather only after counting by bits: the counting passes run.
    monkeypatch.setattr(methods, "_GATHER", 16)
    caps = make_captures(tmp_path / "caps", files=3, rows=700, outliers=0.05, seed=5)
    local, remote = fit_both(caps, cluster, formulas=["host_s ~ 1 + num_seqs"], method="huber")
    assert_same_report(local, remote, irls=True)


def test_row_groups_of_a_large_file_become_tasks_with_the_rows_numbered_in_the_file(
        tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    caps = make_captures(tmp_path / "caps", files=2, rows=2000, row_group=300)
    monkeypatch.setattr(dask_fit, "ROWS_PER_TASK", 700)
    local, remote = fit_both(caps, cluster, holdout=0.3)
    assert_same_report(local, remote)
    # A bad value in the fourth row group is named with its row in the file.
    table = pq.read_table(caps / "run-01.parquet")
    values = table.column("host_s").to_numpy().copy()
    values[1000] = -1.0
    table = table.set_column(table.schema.get_field_index("host_s"), "host_s", pa.array(values))
    pq.write_table(table, caps / "run-01.parquet", row_group_size=300)
    with pytest.raises(CaptureError, match=r"run-01.parquet: column host_s, row 1001: -1.0 is "
                                           "negative"):
        fit_laws(request(caps, dask=cluster), load_workspace())


def test_plan_cuts_only_parquet_files_of_several_row_groups_beyond_the_task_size() -> None:
    files = [Capture(Path(f"/c/{k}.parquet"), f"{k}.parquet", "parquet", False) for k in range(3)]
    parts = dask_fit.plan_parts(files, [None, (100, 100), (300, 300, 300, 100)],
                                rows_per_task=600)
    assert [(p.file_index, p.row_groups, p.start) for p in parts] == [
        (0, None, 0), (1, None, 0), (2, (0, 1), 0), (2, (2, 3), 600)]


def test_csv_captures_are_one_task_per_file_and_give_the_local_fit(
        tmp_path: Path, cluster: str) -> None:
    parquet = make_captures(tmp_path / "pq", files=3, rows=400)
    folder = tmp_path / "csv"
    folder.mkdir()
    for path in sorted(parquet.glob("*.parquet")):
        pacsv.write_csv(pq.read_table(path), folder / f"{path.stem}.csv")
    local, remote = fit_both(folder, cluster, captured_on=DIGEST)
    assert_same_report(local, remote)


# -- retries --------------------------------------------------------------------------------


class KillOnce(distributed.WorkerPlugin):
    """Kills its worker process when the fold of task 10 or later starts there, once (the
    marker file says it happened): a worker lost mid-fit, with results in its memory."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        name = str(key).split("-")
        if finish == "executing" and name[1:2] == ["pass0"] and int(name[2]) >= 10:
            try:  # O_EXCL: of two workers reaching here at once, only one dies
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            os._exit(1)


def test_a_worker_killed_mid_fit_is_replaced_and_its_tasks_rerun_to_the_same_fit(
        captures: Path, cluster: str, tmp_path: Path) -> None:
    import cloudpickle

    marker = tmp_path / "killed"
    ws = load_workspace()
    local = fit_laws(request(captures), ws)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with distributed.Client(cluster, set_as_default=False) as client:
            before = set(client.scheduler_info()["workers"])
            client.register_plugin(KillOnce(str(marker)), name="kill-once")
            try:
                remote = fit_laws(request(captures, dask=cluster), ws)
            finally:
                client.unregister_worker_plugin("kill-once")
            client.wait_for_workers(2, timeout=30)
            after = set(client.scheduler_info()["workers"])
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert marker.exists()
    assert len(before - after) == 1  # a worker died mid-fit and its nanny started another
    assert_same_report(local, remote)


# -- errors ---------------------------------------------------------------------------------


def test_without_distributed_the_command_says_how_to_install_it(
        captures: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    result = runner.invoke(app, ["fit", str(captures), "--formula", FORMULA, "--out", "a.yaml",
                                 "--dask", "local"])
    assert result.exit_code == 2, result.output
    assert "--dask needs dask.distributed: pip install 'lawkit[dask]'" in result.output
    assert not Path("a.yaml").exists()


@pytest.mark.parametrize(("given", "message"), [
    ("local:0", "expected local:N with N worker processes"),
    ("local:two", "expected local:N with N worker processes"),
    ("tcp://127.0.0.1:1", "cannot reach the scheduler"),
])
def test_a_bad_dask_address_exits_2_and_writes_nothing(
        captures: Path, given: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_fit, "CONNECT_TIMEOUT", "1s")
    result = runner.invoke(app, ["fit", str(captures), "--formula", FORMULA, "--out", "a.yaml",
                                 "--dask", given])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not Path("a.yaml").exists()


def test_local_n_is_the_count_of_worker_processes() -> None:
    assert dask_fit.local_workers("local") == 2
    assert dask_fit.local_workers("local:3") == 3
    assert dask_fit.local_workers("tcp://scheduler:8786") is None
    with pytest.raises(LawkitError):
        dask_fit.local_workers("local:-1")


def test_the_first_bad_file_in_order_is_the_one_named(tmp_path: Path, cluster: str) -> None:
    caps = make_captures(tmp_path / "caps", files=6, rows=300)
    for k in (4, 2):
        (caps / f"run-{k:02d}.parquet").write_bytes(b"not parquet")
    with pytest.raises(CaptureError, match=r"run-02.parquet: cannot read as Parquet"):
        fit_laws(request(caps, dask=cluster), load_workspace())


def test_a_law_that_cannot_be_fitted_is_named_as_locally(tmp_path: Path, cluster: str) -> None:
    caps = make_captures(tmp_path / "caps", files=2, rows=300)
    messages = []
    for dask in (None, cluster):
        with pytest.raises(FitError) as raised:
            fit_laws(request(caps, formulas=["host_s ~ 1 + num_seqs"], where="num_seqs == 1",
                             dask=dask), load_workspace())
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    # num_seqs is a factor of the law: the condition bounds its rows (fit.bounds), it does
    # not select them, so the message names no where.
    assert messages[0].startswith("law host_s: terms 1 and num_seqs are collinear")


# -- the mergeable states ---------------------------------------------------------------------


def _folds(seed: int, sizes: list[int]) -> list[dask_fit.LawFold]:
    rng = np.random.default_rng(seed)
    out = []
    for n in sizes:
        x = np.column_stack([np.ones(n), rng.uniform(1e3, 1e3 + 1.0, n), rng.normal(0, 1, n)])
        y = x @ [1.0, 2e-3, 3.0] + rng.normal(0, 1e-3, n)
        fold = dask_fit.LawFold(solve.fold_chunk(None, x, y, rng.uniform(0.1, 2, n),
                                                 terms=("1", "a", "b")),
                                ymax=float(np.max(np.abs(y))), kept=n)
        fold.seen.low, fold.seen.high = {"a": float(x[:, 1].min())}, {"a": float(x[:, 1].max())}
        out.append(fold)
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 60), min_size=3,
                                                      max_size=3))
def test_merging_law_folds_is_associative_within_cond_eps(seed: int, sizes: list[int]) -> None:
    a, b, c = _folds(seed, sizes)
    left = dask_fit.merge(dask_fit.merge(a, b), c)
    right = dask_fit.merge(a, dask_fit.merge(b, c))
    assert left.state is not None and right.state is not None
    assert (left.kept, left.ymax, left.seen) == (right.kept, right.ymax, right.seen)
    assert left.state.n == right.state.n == sum(sizes)
    if sum(sizes) > 3:
        cond = solve.condition(left.state)
        # R is unique up to the signs of its rows; compare |R| on the scale of each column.
        scale = np.abs(left.state.r).max(axis=0)
        assert np.all(np.abs(np.abs(left.state.r) - np.abs(right.state.r))
                      <= 16 * cond * EPS * scale)
        bl, br = solve.solve_partial(left.state), solve.solve_partial(right.state)
        s = np.linalg.norm(left.state.r[:3, :3], axis=0)
        assert np.linalg.norm((bl - br) * s) <= 16 * cond * EPS * np.linalg.norm(bl * s)
    assert left.state.mean_y == pytest.approx(right.state.mean_y, rel=16 * EPS)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 60), min_size=3,
                                                      max_size=3))
def test_merging_residual_passes_is_associative_to_double_double(seed: int,
                                                                  sizes: list[int]) -> None:
    rng = np.random.default_rng(seed)
    coef = np.array([1.0, 2e-3, 3.0])
    parts = []
    scale = np.zeros(3)
    for n in sizes:
        x = np.column_stack([np.ones(n), rng.uniform(1e3, 1e3 + 1.0, n), rng.normal(0, 1, n)])
        y = x @ coef + rng.normal(0, 1e-3, n)
        parts.append(solve.residual_pass(None, coef, x, y))
        scale += np.abs(x).T @ (np.abs(y) + np.abs(x) @ np.abs(coef))
    a, b, c = parts
    left = dask_fit.merge(dask_fit.merge(a, b), c)
    right = dask_fit.merge(a, dask_fit.merge(b, c))
    got, want = left.xtr_hi + left.xtr_lo, right.xtr_hi + right.xtr_lo
    assert np.all(np.abs(got - want) <= 1e-28 * scale)
    assert left.ssr == pytest.approx(right.ssr, rel=4 * EPS) and left.n == right.n


def test_task_results_merge_in_order_and_keep_the_first_error() -> None:
    first = dask_fit._Failed(1, CaptureError("x", path="b"))
    second = dask_fit._Failed(2, CaptureError("y", path="c"))
    assert dask_fit.merge_all([None], first, second) is first
    assert dask_fit.merge_all(None, None) is None


@pytest.mark.parametrize(("method", "factor"), [("ols", "step"), ("huber", "hinge")])
def test_an_auto_breakpoint_is_searched_over_the_tasks_and_picks_the_local_k(
        tmp_path: Path, cluster: str, method: str, factor: str) -> None:
    folder = tmp_path / "caps"
    folder.mkdir()
    rng = np.random.default_rng(11)
    # Two files: two tasks whose objectives are summed. Six values: three candidates, K=72 the
    # middle one. Every candidate is a full fit, one pass over the tasks a step (an IRLS fit
    # for huber: tens of passes), so a candidate more costs a second or more here.
    for k in range(2):
        seqs = rng.choice(np.arange(32.0, 113.0, 16.0), 400)
        jump = (seqs > 72) * 4e-4 if factor == "step" else np.maximum(0.0, seqs - 72) * 2e-5
        y = 2e-3 + 1e-5 * seqs + jump + rng.normal(0.0, 1e-5, seqs.size)
        if method == "huber":
            y[rng.random(seqs.size) < 0.03] += 0.01  # outliers for huber to downweight
        table = pa.table({"num_seqs": seqs, "host_s": y})
        pq.write_table(table.replace_schema_metadata({"lawkit.atom": DIGEST}),
                       folder / f"run-{k}.parquet")
    formula = f"host_s ~ 1 + num_seqs + {factor}(num_seqs,auto)"
    local, remote = fit_both(folder, cluster, formulas=[formula], method=method)
    if method == "huber":
        assert local.laws[0].law["fit"]["downweighted"] > 0
    picked = local.laws[0].law["fit"]["breakpoints"]
    assert picked == {f"{factor}(num_seqs,72)": f"{factor}(num_seqs,auto)"}
    assert remote.laws[0].law["fit"]["breakpoints"] == picked
    assert list(remote.laws[0].law["terms"]) == list(local.laws[0].law["terms"])
    ours, theirs = local.laws[0].search, remote.laws[0].search
    assert ours is not None and theirs is not None
    assert [c.candidates for c in theirs.choices] == [c.candidates for c in ours.choices]
    for a, b in zip(ours.choices, theirs.choices, strict=True):
        assert b.knot == a.knot
        assert b.without == pytest.approx(a.without, rel=1e-9)
        assert b.objective == pytest.approx(a.objective, rel=1e-9)
    assert remote.lines() == local.lines()


def test_robust_with_an_auto_breakpoint_on_the_cluster_is_refused_naming_the_way_out(
        tmp_path: Path, cluster: str, captures: Path) -> None:
    with pytest.raises(FitError, match=r"law host_s: step\(num_seqs,auto\) with --method "
                                       "robust: its breakpoint search runs in this process"):
        fit_laws(request(captures, formulas=["host_s ~ 1 + step(num_seqs,auto)"],
                         method="robust", dask=cluster), load_workspace())
