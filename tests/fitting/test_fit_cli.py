"""`lawkit fit` from the command line: laws, statistics, provenance,
merging into an existing file, and every bad capture refused with nothing written."""

from __future__ import annotations

import difflib
import gzip
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.fitting.fit import FitRequest, fit_laws, run_fit
from lawkit.lawfiles import lawfile

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "data" / "sarathi-a100" / "cpu_overheads.csv"
FORMULA = "schedule_median ~ 1 + batch_size"
GROUPS = [("Qwen/Qwen-72B", 4), ("codellama/CodeLlama-34b-Instruct-hf", 2),
          ("internlm/internlm-20b", 2), ("meta-llama/Llama-2-70b-hf", 4),
          ("meta-llama/Llama-2-7b-hf", 1), ("microsoft/phi-2", 1)]
DIGEST = "68ad8fc6"
EPS = float(np.finfo(np.float64).eps)


@pytest.fixture(autouse=True)
def _laws_here(tmp_path: Path) -> None:
    """The working folder is the laws folder: `--out a.yaml` is a law file check reads (a test
    that needs another workspace writes its own lawkit.toml)."""
    (tmp_path / "lawkit.toml").write_text('laws = "."\n')


def sarathi(tmp_path: Path, name: str = "cpu_overheads.csv") -> Path:
    folder = tmp_path / "captures"
    folder.mkdir(exist_ok=True)
    return Path(shutil.copy(DATA, folder / name))


def fit(*args: str) -> Result:
    return runner.invoke(app, ["fit", *args])


def ok(*args: str) -> str:
    result = fit(*args)
    assert result.exit_code == 0, result.output
    return result.output


def table() -> pa.Table:
    return pacsv.read_csv(DATA)


def lstsq(rows: pa.Table, target: str = "schedule_median") -> np.ndarray:
    x = np.column_stack([np.ones(rows.num_rows), rows.column("batch_size").to_numpy()])
    coef, *_ = np.linalg.lstsq(x, rows.column(target).to_numpy(), rcond=None)
    return np.asarray(coef)


def group(model: str, tp: int) -> pa.Table:
    rows = table()
    mask = [m == model and t == tp for m, t in zip(rows.column("model_name").to_pylist(),
                                                   rows.column("tensor_parallel_degree")
                                                   .to_pylist(), strict=True)]
    return rows.filter(pa.array(mask))


# -- the laws -------------------------------------------------------------------------------


def test_by_model_and_tp_writes_one_law_per_group_named_and_selected_as_captured(
        tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    output = ok(str(capture), "--formula", FORMULA, "--by", "model_name,tensor_parallel_degree",
                "--captured-on", DIGEST, "--out", "laws/a100.yaml", "--label", "cell=a100")
    assert "wrote laws/a100.yaml (6 added; digest 68ad8fc6, 78 records)" in output
    law_file = lawfile.load(tmp_path / "laws" / "a100.yaml")
    assert [law.name for law in law_file.host.laws] == [
        f"schedule_median[{model},{tp}]" for model, tp in GROUPS]
    for law, (model, tp) in zip(law_file.host.laws, GROUPS, strict=True):
        assert law.where == {"model_name": model, "tensor_parallel_degree": tp}
        assert type(law.where["tensor_parallel_degree"]) is int
        assert law.filter is None
        assert law.target == "schedule_median"
        coef = np.array(list(law.terms.values()))
        assert list(law.terms) == ["1", "batch_size"]
        np.testing.assert_allclose(coef, lstsq(group(model, tp)), rtol=1e-10)
        assert law.fit is not None
        assert law.fit["n"] == 13 and law.fit["p"] == 2 and law.fit["method"] == "ols"
        assert law.domain == {"batch_size": [8.0, 128.0]}
        for term in ("1", "batch_size"):
            low, high = law.fit["ci95"][term]
            assert low < law.terms[term] < high
    assert law_file.labels == {"cell": "a100"}
    assert law_file.host.key == {"atom": DIGEST}
    (entry,) = law_file.host.provenance
    assert entry.fit is not None
    assert entry.fit.digest == DIGEST and entry.fit.records == 78
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry.fit.at)
    assert entry.fit.body == law_file.body_hash()
    sha = hashlib.sha256(DATA.read_bytes()).hexdigest()
    assert entry.fit.captures == [{"path": "captures/cpu_overheads.csv", "sha256": sha}]
    assert entry.fit.model_extra == {"lawkit": "0.1.0"}


def test_the_written_file_reads_the_same_under_yaml_1_1(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    ok(str(capture), "--formula", FORMULA, "--by", "model_name", "--captured-on", DIGEST,
       "--out", "a.yaml")
    text = (tmp_path / "a.yaml").read_text()
    law_file = lawfile.load(tmp_path / "a.yaml")
    assert yaml.safe_load(text) == law_file.document.data  # PyYAML is a YAML 1.1 loader
    assert "e-" in text or "e+" in text


def test_the_stored_where_is_a_mapping_or_a_filter(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    ok(str(capture), "--formula", FORMULA, "--where",
       "model_name == 'microsoft/phi-2' and tensor_parallel_degree in [1, 2]",
       "--captured-on", DIGEST, "--out", "a.yaml")
    (law,) = lawfile.load(tmp_path / "a.yaml").host.laws
    assert law.where == {"model_name": "microsoft/phi-2", "tensor_parallel_degree": [1, 2]}
    assert law.filter is None
    ok(str(capture), "--formula", "sampler_e2e_median ~ batch_size", "--where",
       "tensor_parallel_degree == 1 and batch_size <= 96", "--by", "model_name",
       "--captured-on", DIGEST, "--out", "b.yaml")
    laws = lawfile.load(tmp_path / "b.yaml").host.laws
    assert [law.name for law in laws] == ["sampler_e2e_median[meta-llama/Llama-2-7b-hf]",
                                          "sampler_e2e_median[microsoft/phi-2]"]
    # batch_size is a feature of the law: its condition bounds the domain (fit.bounds) and
    # leaves a plain mapping to select the rows.
    assert laws[0].where == {"tensor_parallel_degree": 1,
                             "model_name": "meta-llama/Llama-2-7b-hf"}
    assert laws[0].filter is None
    assert laws[0].fit is not None and laws[0].fit["n"] == 11
    assert laws[0].fit["bounds"] == "batch_size <= 96"
    assert laws[0].domain == {"batch_size": [8.0, 96.0]}


def test_robust_fit_of_qwen_72b_tp4_lands_near_the_slope_of_its_clean_rows(
        tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    where = "model_name == 'Qwen/Qwen-72B' and tensor_parallel_degree == 4"
    ok(str(capture), "--formula", FORMULA, "--where", where, "--method", "robust",
       "--name", "robust", "--captured-on", DIGEST, "--out", "q.yaml")
    ok(str(capture), "--formula", FORMULA, "--where", where + " and batch_size <= 96",
       "--name", "clean", "--captured-on", DIGEST, "--out", "q.yaml")
    laws = {law.name: law for law in lawfile.load(tmp_path / "q.yaml").host.laws}
    robust, clean = laws["robust"], laws["clean"]
    assert abs(robust.terms["batch_size"] / clean.terms["batch_size"] - 1) < 0.05
    assert robust.fit is not None and robust.fit["method"] == "robust"
    assert robust.fit["downweighted"] >= 2 and "scale" in robust.fit


def test_several_formulas_give_one_law_each_and_name_sets_a_single_law(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    ok(str(capture), "--formula", FORMULA, "--formula", "sampler_e2e_median ~ batch_size - 1",
       "--where", "model_name == 'microsoft/phi-2'", "--captured-on", DIGEST, "--out", "a.yaml")
    laws = lawfile.load(tmp_path / "a.yaml").host.laws
    assert [law.name for law in laws] == ["schedule_median", "sampler_e2e_median"]
    assert list(laws[1].terms) == ["batch_size"]
    result = fit(str(capture), "--formula", FORMULA, "--formula", FORMULA, "--captured-on",
                 DIGEST, "--out", "b.yaml")
    assert result.exit_code == 2
    assert "two laws would be named 'schedule_median'" in result.output
    assert not (tmp_path / "b.yaml").exists()


def test_json_prints_one_document_with_every_law(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    result = fit(str(capture), "--formula", FORMULA, "--by", "tensor_parallel_degree",
                 "--captured-on", DIGEST, "--out", "a.yaml", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["written"] is True and document["out"] == "a.yaml"
    assert [law["name"] for law in document["laws"]] == [
        "schedule_median[1]", "schedule_median[2]", "schedule_median[4]"]
    assert document["laws"][0]["where"] == {"tensor_parallel_degree": 1}
    assert document["laws"][0]["fit"]["n"] == 26
    assert document["records"] == 78


# -- an existing file -----------------------------------------------------------------------

EXISTING = """\
# hand-written header comment
schema: lawkit/1
labels: {cell: "a100"}
host:
  key:
    atom: "59e9ff5a"   # the key
  laws:
    # the first law, kept as it is
    - name: other
      target: host_s
      where: {phase: "prefill"}
      terms: {"1": 0.5, num_seqs: 1.0e-3}   # hand-tuned
    # the law fitted again
    - name: schedule_median
      target: schedule_median
      terms: {"1": 0.0, batch_size: 0.0}
  provenance:
    - {adopt: {digest: "59e9ff5a", at: "2026-01-01T00:00:00Z", why: "hand-written", body: "x"}}
device: {gpu: a100}   # an unknown section
"""


def test_an_existing_out_keeps_its_other_laws_comments_and_sections(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    path = tmp_path / "laws.yaml"
    path.write_text(EXISTING)
    output = ok(str(capture), "--formula", FORMULA, "--formula", "sampler_e2e_median ~ "
                "batch_size", "--where", "model_name == 'microsoft/phi-2'", "--captured-on",
                DIGEST, "--out", "laws.yaml", "--why", "other does not read the scheduler")
    assert "(1 added, 1 replaced, 1 kept" in output
    assert "re-keyed 1 kept law: 59e9ff5a -> 68ad8fc6" in output
    new = path.read_text()
    old_lines, new_lines = EXISTING.splitlines(), new.splitlines()
    removed = [ln for ln in difflib.ndiff(old_lines, new_lines) if ln.startswith("- ")]
    added = [ln for ln in difflib.ndiff(old_lines, new_lines) if ln.startswith("+ ")]
    assert [ln[2:].strip() for ln in removed] == [
        'atom: "59e9ff5a"   # the key', "- name: schedule_median", "target: schedule_median",
        'terms: {"1": 0.0, batch_size: 0.0}']
    assert added[0] == '+     atom: "68ad8fc6"   # the key'
    assert added[-2].startswith("+     - {fit: {digest: \"68ad8fc6\", at: ")
    assert added[-1].startswith("+     - {rekey: {from: \"59e9ff5a\", to: \"68ad8fc6\", at: ")
    law_file = lawfile.load(path)
    assert [law.name for law in law_file.host.laws] == ["other", "schedule_median",
                                                       "sampler_e2e_median"]
    assert law_file.host.laws[0].terms == {"1": 0.5, "num_seqs": 1.0e-3}
    assert law_file.host.laws[1].where == {"model_name": "microsoft/phi-2"}
    assert [e.kind for e in law_file.host.provenance] == ["adopt", "fit", "rekey"]
    assert law_file.host.provenance[1].body == law_file.body_hash()
    assert law_file.host.provenance[2].rekey is not None
    assert law_file.host.provenance[2].rekey.laws == ["other"]
    assert law_file.model_extra == {"device": {"gpu": "a100"}}
    for kept in ("# hand-written header comment", "# the first law, kept as it is",
                 "# the law fitted again", "# hand-tuned", "# an unknown section"):
        assert kept in new


def test_a_crlf_file_stays_crlf_and_a_missing_provenance_is_added(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    text = EXISTING.replace("  provenance:\n    - {adopt: {digest: \"59e9ff5a\", at: "
                            "\"2026-01-01T00:00:00Z\", why: \"hand-written\", body: \"x\"}}\n", "")
    assert "provenance" not in text
    path = tmp_path / "laws.yaml"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    ok(str(capture), "--formula", FORMULA, "--captured-on", DIGEST, "--out", "laws.yaml",
       "--why", "w")
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")
    law_file = lawfile.load(path)
    assert [e.kind for e in law_file.host.provenance] == ["fit", "rekey"]
    assert [law.name for law in law_file.host.laws] == ["other", "schedule_median"]
    assert law_file.host.laws[1].fit is not None and law_file.host.laws[1].fit["n"] == 78


def test_refit_with_no_formula_refits_every_law_from_its_own_selection(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    ok(str(capture), "--formula", FORMULA, "--by", "model_name,tensor_parallel_degree",
       "--captured-on", DIGEST, "--out", "a.yaml")
    ok(str(capture), "--formula", "sampler_e2e_median ~ batch_size", "--where",
       "batch_size <= 64", "--method", "huber", "--captured-on", DIGEST, "--out", "a.yaml")
    before = (tmp_path / "a.yaml").read_text()
    output = ok(str(capture), "--captured-on", DIGEST, "--out", "a.yaml")
    assert "(7 replaced; digest 68ad8fc6, 78 records)" in output
    after = (tmp_path / "a.yaml").read_text()
    changed = [ln for ln in difflib.ndiff(before.splitlines(), after.splitlines())
               if ln[:2] in ("- ", "+ ")]
    assert len(changed) == 1 and changed[0].startswith("+     - {fit: ")
    laws = lawfile.load(tmp_path / "a.yaml").host.laws
    assert laws[-1].fit is not None and laws[-1].fit["method"] == "huber"


def test_refit_with_a_method_refits_every_law_with_it(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    ok(str(capture), "--formula", FORMULA, "--by", "model_name,tensor_parallel_degree",
       "--captured-on", DIGEST, "--out", "a.yaml")
    ok(str(capture), "--captured-on", DIGEST, "--out", "a.yaml", "--method", "robust")
    laws = lawfile.load(tmp_path / "a.yaml").host.laws
    assert {law.fit["method"] for law in laws if law.fit} == {"robust"}


def test_flags_that_need_a_formula_are_refused_on_a_refit(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    for flag, value in (("--by", "model_name"), ("--where", "batch_size > 8"),
                        ("--name", "x")):
        result = fit(str(capture), flag, value, "--captured-on", DIGEST, "--out", "a.yaml")
        assert result.exit_code == 2
        assert f"{flag} needs --formula" in result.output
    result = fit(str(capture), "--captured-on", DIGEST, "--out", "a.yaml")
    assert result.exit_code == 2
    assert "no --formula and a.yaml does not exist" in result.output


# -- formats and streaming -------------------------------------------------------------------


def _as_format(tmp_path: Path, name: str) -> Path:
    rows = table().to_pylist()
    path = tmp_path / name
    if ".csv" in name:
        data = DATA.read_bytes()
    elif ".jsonl" in name:
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    else:
        sink = pa.BufferOutputStream()
        pq.write_table(table(), sink)
        data = sink.getvalue().to_pybytes()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


@pytest.mark.parametrize("name", ["c.csv.gz", "c.jsonl", "c.jsonl.gz", "c.parquet",
                                  "c.parquet.gz"])
def test_json_lines_parquet_and_gzip_give_the_same_fit_as_csv(tmp_path: Path,
                                                               name: str) -> None:
    capture = sarathi(tmp_path)
    other = _as_format(tmp_path, name)
    for out, source in (("csv.yaml", capture), ("other.yaml", other)):
        ok(str(source), "--formula", FORMULA, "--by", "model_name,tensor_parallel_degree",
           "--captured-on", DIGEST, "--out", out)
    first = lawfile.load(tmp_path / "csv.yaml").host.laws
    second = lawfile.load(tmp_path / "other.yaml").host.laws
    assert [law.model_dump() for law in first] == [law.model_dump() for law in second]


def _request(tmp_path: Path, **kwargs: object) -> FitRequest:
    base: dict[str, object] = {"captures": [str(sarathi(tmp_path))], "out": tmp_path / "s.yaml",
                               "formulas": [FORMULA, "sampler_e2e_median ~ batch_size"],
                               "by": ["model_name", "tensor_parallel_degree"],
                               "captured_on": DIGEST}
    base.update(kwargs)
    return FitRequest(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("chunk_rows", [1, 5, 7, 40])
def test_streaming_in_tiny_chunks_agrees_with_the_in_memory_fit(tmp_path: Path,
                                                                chunk_rows: int) -> None:
    ws = load_workspace()
    whole = fit_laws(_request(tmp_path), ws)
    streamed = fit_laws(_request(tmp_path, chunk_rows=chunk_rows), ws)
    assert [f.spec.name for f in whole.laws] == [f.spec.name for f in streamed.laws]
    for a, b in zip(whole.laws, streamed.laws, strict=True):
        ca = np.array(list(a.law["terms"].values()))
        cb = np.array(list(b.law["terms"].values()))
        bound = 8 * a.law["fit"]["cond"] * EPS
        assert np.all(np.abs(ca - cb) <= bound * np.abs(ca)), (a.spec.name, ca, cb)
        assert a.law["domain"] == b.law["domain"]
        assert a.n == b.n == 13
        for key in ("r2", "rmse", "mape", "resid_sd"):
            assert math.isclose(a.law["fit"][key], b.law["fit"][key], rel_tol=1e-9)


def test_streaming_needs_no_selection_column(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    pq.write_table(table().replace_schema_metadata({"lawkit.atom": "cafe0123"}), path,
                   row_group_size=10)
    ws = load_workspace()
    base = {"captures": [str(path)], "out": tmp_path / "a.yaml", "formulas": [FORMULA]}
    whole = fit_laws(FitRequest(**base), ws)  # type: ignore[arg-type]
    streamed = fit_laws(FitRequest(**base, chunk_rows=4), ws)  # type: ignore[arg-type]
    assert streamed.records == 78 and streamed.digest == "cafe0123"
    ca = np.array(list(whole.laws[0].law["terms"].values()))
    cb = np.array(list(streamed.laws[0].law["terms"].values()))
    assert np.all(np.abs(ca - cb) <= 8 * whole.laws[0].law["fit"]["cond"] * EPS * np.abs(ca))


@pytest.mark.parametrize("method", ["huber", "robust", "nnls"])
def test_streaming_non_ols_methods_give_the_in_memory_result(tmp_path: Path,
                                                             method: str) -> None:
    # Every method streams now: its IRLS steps fold chunk by chunk, so the in-memory and the
    # streamed fit agree within a small multiple of cond x eps.
    ws = load_workspace()
    whole = fit_laws(_request(tmp_path, method=method), ws)
    streamed = fit_laws(_request(tmp_path, method=method, chunk_rows=3), ws)
    for a, b in zip(whole.laws, streamed.laws, strict=True):
        ca = np.array(list(a.law["terms"].values()))
        cb = np.array(list(b.law["terms"].values()))
        tol = 64 * a.law["fit"]["cond"] * EPS * np.max(np.abs(ca))
        assert np.all(np.abs(ca - cb) <= tol), (ca, cb)
        assert a.law["fit"]["n"] == b.law["fit"]["n"]
        assert a.law["fit"].get("downweighted") == b.law["fit"].get("downweighted")


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**32 - 1))
def test_any_chunking_of_generated_captures_gives_the_one_pass_fit(
        tmp_path_factory: pytest.TempPathFactory, chunk_rows: int, seed: int) -> None:
    folder = tmp_path_factory.mktemp("gen")
    rng = np.random.default_rng(seed)
    n = 60
    a = rng.uniform(1, 100, n)
    b = rng.uniform(0, 1e4, n)
    y = 0.5 + 0.01 * a + 3e-5 * b + 1e-6 * a * b + rng.normal(0, 1e-3, n)
    path = folder / "g.csv"
    path.write_text("a,b,y,atom\n" + "".join(f"{p!r},{q!r},{r!r},abcd1234\n"
                                             for p, q, r in zip(a.tolist(), b.tolist(), y.tolist(),
                                                                strict=True)))
    ws = load_workspace(cwd=folder)
    base = {"captures": [str(path)], "out": folder / "g.yaml",
            "formulas": ["y ~ 1 + a + b + a:b"]}
    one = fit_laws(FitRequest(**base), ws).laws[0]  # type: ignore[arg-type]
    streamed = fit_laws(FitRequest(**base, chunk_rows=chunk_rows), ws).laws[0]  # type: ignore[arg-type]
    ca = np.array(list(one.law["terms"].values()))
    cb = np.array(list(streamed.law["terms"].values()))
    assert np.all(np.abs(ca - cb) <= 16 * one.law["fit"]["cond"] * EPS * np.abs(ca))
    stderr = np.array(list(one.law["fit"]["stderr"].values()))
    truth = np.array([0.5, 0.01, 3e-5, 1e-6])
    assert np.all(np.abs(ca - truth) <= 6 * stderr)


# -- options ---------------------------------------------------------------------------------


def test_holdout_scores_random_rows_with_a_recorded_seed(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    ok(str(capture), "--formula", FORMULA, "--by", "tensor_parallel_degree", "--holdout",
       "0.25", "--captured-on", DIGEST, "--out", "a.yaml")
    laws = lawfile.load(tmp_path / "a.yaml").host.laws
    total = 0
    for law in laws:
        assert law.fit is not None
        hold = law.fit["holdout"]
        assert hold["split"] == "random" and hold["seed"] == 0 and hold["fraction"] == 0.25
        assert set(hold) >= {"n", "r2", "rmse", "mape"}
        total += law.fit["n"] + hold["n"]
    assert total == 78
    again = tmp_path / "b.yaml"
    ok(str(capture), "--formula", FORMULA, "--by", "tensor_parallel_degree", "--holdout",
       "0.25", "--captured-on", DIGEST, "--out", str(again))
    assert [law.terms for law in lawfile.load(again).host.laws] == [law.terms for law in laws]


def test_holdout_with_several_files_holds_out_whole_files(tmp_path: Path) -> None:
    rows = table()
    half = rows.num_rows // 2
    folder = tmp_path / "captures"
    folder.mkdir()
    pacsv.write_csv(rows.slice(0, half), folder / "a.csv")
    pacsv.write_csv(rows.slice(half), folder / "b.csv")
    ok("captures", "--formula", FORMULA, "--holdout", "0.5", "--captured-on", DIGEST,
       "--out", "a.yaml")
    (law,) = lawfile.load(tmp_path / "a.yaml").host.laws
    assert law.fit is not None
    hold = law.fit["holdout"]
    assert hold["split"] == "files" and len(hold["files"]) == 1
    assert law.fit["n"] + hold["n"] == 78
    assert hold["n"] in (half, 78 - half)


def test_drop_invalid_drops_bad_rows_and_counts_them(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    lines = capture.read_text().splitlines()
    header = lines[0].split(",")
    column = header.index("schedule_median")
    for line_no, value in ((2, "abc"), (3, ""), (4, "nan"), (5, "-1.0")):
        cells = lines[line_no].split(",")
        cells[column] = value
        lines[line_no] = ",".join(cells)
    capture.write_text("\n".join(lines) + "\n")
    result = fit(str(capture), "--formula", FORMULA, "--by", "model_name", "--captured-on",
                 DIGEST, "--out", "a.yaml")
    assert result.exit_code == 2
    assert "captures/cpu_overheads.csv: column schedule_median, row 2 (line 3): 'abc' is not a " \
        "number" in result.output
    ok(str(capture), "--formula", FORMULA, "--by", "model_name", "--captured-on", DIGEST,
       "--out", "a.yaml", "--drop-invalid")
    laws = {law.name: law for law in lawfile.load(tmp_path / "a.yaml").host.laws}
    codellama = laws["schedule_median[codellama/CodeLlama-34b-Instruct-hf]"]
    assert codellama.fit is not None
    assert codellama.fit["dropped"] == 4 and codellama.fit["n"] == 9
    assert "dropped" not in (laws["schedule_median[microsoft/phi-2]"].fit or {})


def test_allow_negative_accepts_negative_targets(tmp_path: Path) -> None:
    path = tmp_path / "neg.csv"
    path.write_text("x,y\n1,-1.5\n2,-0.5\n3,0.5\n4,1.5\n")
    result = fit(str(path), "--formula", "y ~ x", "--captured-on", DIGEST, "--out", "a.yaml")
    assert result.exit_code == 2
    assert "neg.csv: column y, row 1 (line 2): -1.5 is negative" in result.output
    ok(str(path), "--formula", "y ~ x", "--captured-on", DIGEST, "--out", "a.yaml",
       "--allow-negative")
    (law,) = lawfile.load(tmp_path / "a.yaml").host.laws
    assert law.terms == pytest.approx({"1": -2.5, "x": 1.0})


def test_weight_fits_weighted_least_squares_and_records_the_column(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("x,y,runs\n1,1.0,1\n2,2.1,10\n3,2.9,10\n4,4.5,1\n5,5.0,5\n")
    ok(str(path), "--formula", "y ~ x", "--weight", "runs", "--captured-on", DIGEST, "--out",
       "a.yaml")
    (law,) = lawfile.load(tmp_path / "a.yaml").host.laws
    x = np.array([1, 2, 3, 4, 5.0])
    y = np.array([1.0, 2.1, 2.9, 4.5, 5.0])
    sw = np.sqrt(np.array([1, 10, 10, 1, 5.0]))
    coef, *_ = np.linalg.lstsq(np.column_stack([sw, sw * x]), sw * y, rcond=None)
    np.testing.assert_allclose(list(law.terms.values()), coef, rtol=1e-12)
    assert law.fit is not None and law.fit["weight"] == "runs"
    ok(str(path), "--captured-on", DIGEST, "--out", "a.yaml")  # the refit keeps the weight
    (again,) = lawfile.load(tmp_path / "a.yaml").host.laws
    assert again.terms == law.terms
    path.write_text("x,y,runs\n1,1.0,1\n2,2.1,-10\n3,2.9,10\n4,4.5,1\n5,5.0,5\n")
    result = fit(str(path), "--formula", "y ~ x", "--weight", "runs", "--captured-on", DIGEST,
                 "--out", "b.yaml", "--allow-negative")
    assert result.exit_code == 2
    assert "w.csv: column runs, row 2 (line 3): -10.0 is negative: a weight is >= 0" \
        in result.output


# -- digests --------------------------------------------------------------------------------


def _with_digest(tmp_path: Path, name: str, digest: str) -> Path:
    rows = table()
    rows = rows.append_column("atom", pa.array([digest] * rows.num_rows))
    path = tmp_path / name
    pacsv.write_csv(rows, path)
    return path


def test_the_digest_comes_from_the_captures_atom_column(tmp_path: Path) -> None:
    capture = _with_digest(tmp_path, "a.csv", "00001234")
    ok(str(capture), "--formula", FORMULA, "--out", "a.yaml")
    law_file = lawfile.load(tmp_path / "a.yaml")
    assert law_file.host.key == {"atom": "00001234"}
    assert '"00001234"' in law_file.text
    ok(str(capture), "--formula", FORMULA, "--out", "a.yaml", "--captured-on", "00001234")


def test_the_digest_comes_from_parquet_metadata(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    pq.write_table(table().replace_schema_metadata({"lawkit.atom": "cafe0123"}), path)
    ok(str(path), "--formula", FORMULA, "--out", "a.yaml")
    assert lawfile.load(tmp_path / "a.yaml").host.key == {"atom": "cafe0123"}


def test_mixed_digests_are_an_error_unless_allowed(tmp_path: Path) -> None:
    a = _with_digest(tmp_path, "a.csv", "aaaa1111")
    b = _with_digest(tmp_path, "b.csv", "bbbb2222")
    result = fit(str(a), str(b), "--formula", FORMULA, "--out", "a.yaml")
    assert result.exit_code == 2
    assert "the captures ran on 2 engine digests: aaaa1111 (a.csv); bbbb2222 (b.csv)" \
        in result.output
    result = fit(str(a), str(b), "--formula", FORMULA, "--out", "a.yaml",
                 "--allow-mixed-digests")
    assert result.exit_code == 2
    assert "pass --captured-on DIGEST" in result.output
    ok(str(a), str(b), "--formula", FORMULA, "--out", "a.yaml", "--allow-mixed-digests",
       "--captured-on", "bbbb2222")
    law_file = lawfile.load(tmp_path / "a.yaml")
    assert law_file.host.key == {"atom": "bbbb2222"}
    entry = law_file.host.provenance[0].fit
    assert entry is not None and entry.model_extra is not None
    assert entry.model_extra["digests"] == ["aaaa1111", "bbbb2222"]
    ok(str(a), str(b), "--formula", FORMULA, "--out", "b.yaml", "--where",
       "atom == 'aaaa1111'")
    assert lawfile.load(tmp_path / "b.yaml").host.key == {"atom": "aaaa1111"}


def test_captured_on_current_is_the_workspace_digest_and_check_passes(tmp_path: Path) -> None:
    engine = tmp_path / "engine" / "atom"
    engine.mkdir(parents=True)
    (engine / "__init__.py").write_text("")
    (tmp_path / "lawkit.toml").write_text('laws = "laws"\n[digest]\nroot = "engine"\n')
    capture = sarathi(tmp_path)
    ok(str(capture), "--formula", FORMULA, "--by", "model_name", "--captured-on", "current",
       "--out", "laws/a100.yaml")
    digest = runner.invoke(app, ["digest"]).stdout.strip()
    assert lawfile.load(tmp_path / "laws" / "a100.yaml").host.key == {"atom": digest}
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output


# -- bad input: exit 2, nothing written ------------------------------------------------------


def _edit_cell(path: Path, row: int, column: str, value: str) -> None:
    lines = path.read_text().splitlines()
    index = lines[0].split(",").index(column)
    cells = lines[row].split(",")
    cells[index] = value
    lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def _bad_cell(value: str, column: str = "schedule_median") -> Callable[[Path], list[str]]:
    def make(tmp_path: Path) -> list[str]:
        capture = sarathi(tmp_path)
        _edit_cell(capture, 17, column, value)
        return [str(capture), "--formula", FORMULA]
    return make


def _truncated(tmp_path: Path) -> list[str]:
    path = tmp_path / "c.csv.gz"
    data = gzip.compress(DATA.read_bytes())
    path.write_bytes(data[: len(data) // 2])
    return [str(path), "--formula", FORMULA]


def _garbage(tmp_path: Path) -> list[str]:
    path = tmp_path / "c.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 40)
    return [str(path), "--formula", FORMULA]


def _unknown(tmp_path: Path) -> list[str]:
    path = tmp_path / "c.xlsx"
    path.write_bytes(b"")
    return [str(path), "--formula", FORMULA]


def _flag(*extra: str) -> Callable[[Path], list[str]]:
    def make(tmp_path: Path) -> list[str]:
        return [str(sarathi(tmp_path)), *extra]
    return make


BAD = {
    "missing column": (_flag("--formula", "schedule_median ~ num_seqs"),
                       "captures/cpu_overheads.csv: no column 'num_seqs' (the file has: \"\", "
                       "schedule_mean"),
    "non-numeric": (_bad_cell("abc"), "captures/cpu_overheads.csv: column schedule_median, "
                                      "row 17 (line 18): 'abc' is not a number"),
    # an empty target cell is a region not entered: left out and counted
    "empty": (_bad_cell("", "batch_size"), "column batch_size, row 17 (line 18): empty value"),
    "NaN": (_bad_cell("NaN"), "column schedule_median, row 17 (line 18): NaN is not a number"),
    "infinity": (_bad_cell("inf"), "column schedule_median, row 17 (line 18): infinity is not "
                                   "a finite number"),
    "negative target": (_bad_cell("-0.5"), "column schedule_median, row 17 (line 18): -0.5 is "
                                           "negative: a target is a duration"),
    "empty selection": (_flag("--formula", FORMULA, "--where", "model_name == 'gpt-5'"),
                        "law schedule_median: no capture row matches where "
                        "'model_name == \"gpt-5\"' (of 78 rows read)"),
    "where type clash": (_flag("--formula", FORMULA, "--where", "tensor_parallel_degree == '4'"),
                         "column tensor_parallel_degree holds numbers, compared with a string"),
    "truncated gzip": (_truncated, "c.csv.gz: truncated gzip file"),
    "unreadable": (_garbage, "c.parquet: cannot read as Parquet"),
    "unknown extension": (_unknown, "c.xlsx: unknown capture format"),
    "missing file": (lambda p: ["nope.csv", "--formula", FORMULA], "nope.csv: cannot read: no "
                                                                    "such file"),
    "bad formula": (_flag("--formula", "schedule_median ~ batch_size *"), "formula "
                    "'schedule_median ~ batch_size *': unexpected character '*'"),
    "bad where": (_flag("--formula", FORMULA, "--where", "batch_size = 8"),
                  "write == to compare"),
    "bad method": (_flag("--formula", FORMULA, "--method", "lasso"),
                   "--method lasso: expected one of ols, huber, robust, nnls"),
    "bad holdout": (_flag("--formula", FORMULA, "--holdout", "1.5"),
                    "--holdout 1.5: a fraction, where 0.1 is 10%: write 0.015 or 1.5%"),
    "collinear": (_flag("--formula", "schedule_median ~ 1 + batch_size + tensor_parallel_degree",
                        "--where", "model_name == 'microsoft/phi-2'"),
                  "law schedule_median (where model_name == \"microsoft/phi-2\"): terms 1 and "
                  "tensor_parallel_degree are collinear"),
    "bad label": (_flag("--formula", FORMULA, "--label", "cell"), "--label 'cell': expected "
                                                                  "KEY=VALUE"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("existing", [False, True])
def test_a_bad_capture_or_flag_exits_2_naming_it_and_writes_nothing(tmp_path: Path, case: str,
                                                                   existing: bool) -> None:
    make, message = BAD[case]
    out = tmp_path / "laws" / "out.yaml"
    if existing:
        out.parent.mkdir()
        out.write_text(EXISTING)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    args = make(tmp_path)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    result = fit(*args, "--captured-on", DIGEST, "--out", "laws/out.yaml")
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    if existing:
        assert out.read_text() == EXISTING
    else:
        assert not out.exists()


def test_a_conflicting_captured_on_is_an_error(tmp_path: Path) -> None:
    capture = _with_digest(tmp_path, "a.csv", "aaaa1111")
    result = fit(str(capture), "--formula", FORMULA, "--out", "a.yaml", "--captured-on",
                 "bbbb2222")
    assert result.exit_code == 2
    assert "--captured-on bbbb2222 conflicts with the captures, which name aaaa1111" \
        in result.output
    assert not (tmp_path / "a.yaml").exists()


def test_captures_without_a_digest_need_captured_on(tmp_path: Path) -> None:
    result = fit(str(sarathi(tmp_path)), "--formula", FORMULA, "--out", "a.yaml")
    assert result.exit_code == 2
    assert "the captures do not say which engine digest they ran on" in result.output
    assert "--captured-on current" in result.output
    result = fit(str(sarathi(tmp_path)), "--formula", FORMULA, "--out", "a.yaml",
                 "--captured-on", "not-hex")
    assert result.exit_code == 2
    assert "--captured-on 'not-hex': expected a digest" in result.output


def test_an_invalid_existing_out_is_refused_untouched(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("schema: lawkit/1\nhost: {}\n")
    result = fit(str(sarathi(tmp_path)), "--formula", FORMULA, "--captured-on", DIGEST,
                 "--out", "a.yaml")
    assert result.exit_code == 2
    assert result.output.startswith("lawkit: error: a.yaml:")
    assert (tmp_path / "a.yaml").read_text() == "schema: lawkit/1\nhost: {}\n"


# -- the command surface ---------------------------------------------------------------------


def test_fit_is_not_in_the_import_path_of_check_and_the_other_fast_commands() -> None:
    code = ("import sys, lawkit.cli, lawkit.keying.check; "
            "heavy = [m for m in ('lawkit.fitting.fit', 'lawkit.fitting.captures', "
            "'lawkit.fitting.solve', 'numpy', 'pandas', 'pyarrow', 'scipy') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_fit_help_names_every_flag() -> None:
    result = runner.invoke(app, ["fit", "--help"])
    assert result.exit_code == 0
    for flag in ("--formula", "--by", "--where", "--method", "--holdout", "--label", "--name",
                 "--captured-on", "--allow-negative", "--allow-mixed-digests", "--drop-invalid",
                 "--weight", "--out", "--json", "--config"):
        assert flag in result.output


def test_fit_help_words_captured_on_by_the_workspace_key_not_atom() -> None:
    """Regression (issue 40): the help said "no 'atom' column" in a workspace keyed `myeng`."""
    result = runner.invoke(app, ["fit", "--help"], terminal_width=400)
    text = " ".join(result.output.replace("│", " ").split())
    assert "no 'atom' column" not in text
    assert "no digest column named after the workspace's key ([digest] key" in text


def test_the_installed_script_fits(tmp_path: Path) -> None:
    capture = sarathi(tmp_path)
    script = Path(sys.executable).parent / "lawkit"
    result = subprocess.run([str(script), "fit", str(capture), "--formula", FORMULA,
                             "--captured-on", DIGEST, "--out", "a.yaml"], capture_output=True,
                            text=True, check=False, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("schedule_median: n=78")


def test_run_fit_is_callable_from_python(tmp_path: Path) -> None:
    report = run_fit(_request(tmp_path, formulas=[FORMULA], by=["tensor_parallel_degree"]),
                     load_workspace())
    assert report.written
    assert [f.spec.name for f in report.laws] == ["schedule_median[1]", "schedule_median[2]",
                                                  "schedule_median[4]"]
    assert report.text == (tmp_path / "s.yaml").read_text()


def test_partitions_fold_and_merge_like_a_distributed_fit(tmp_path: Path) -> None:
    # What a Dask adapter does: per pandas partition, the same validation and rows as a
    # capture file, a partial fit each, merged.
    import pandas as pd

    from lawkit.fitting import runner, solve
    from lawkit.fitting.captures.chunks import ColumnSpec
    from lawkit.fitting.captures.read import chunk_from_columns
    from lawkit.fitting.request import LawSpec
    from lawkit.fitting.rows import law_design, law_rows

    frame = pd.read_csv(DATA)
    law = LawSpec(name="s", target="schedule_median", terms=("1", "batch_size"),
                  where={"model_name": "Qwen/Qwen-72B"}, filter="batch_size <= 96")
    spec = ColumnSpec(numbers=tuple(law.numbers()), labels=("model_name",), digest="atom")
    states = []
    for start in range(0, len(frame), 20):
        part = frame.iloc[start:start + 20]
        chunk = chunk_from_columns(part, spec, shown=f"partition {start // 20}", start=start)
        rows, dropped = law_rows(law, chunk)
        assert dropped == 0
        x, y, w = law_design(law, chunk, rows)
        states.append(solve.fold_chunk(None, x, y, w, terms=law.terms))
    merged = states[0]
    for state in states[1:]:
        merged = solve.merge(merged, state)
    assert merged.n == 11
    clean = frame[(frame.model_name == "Qwen/Qwen-72B") & (frame.batch_size <= 96)]
    one = runner.fit_arrays(np.column_stack([np.ones(len(clean)), clean.batch_size]),
                            clean.schedule_median.to_numpy(), law.terms)
    np.testing.assert_allclose(solve.solve_partial(merged), one.coef, rtol=1e-12)
    bad = frame.iloc[:5].copy()
    bad.loc[bad.index[3], "schedule_median"] = float("inf")
    chunk = chunk_from_columns(bad, spec, shown="partition 9", start=500)
    with pytest.raises(Exception, match=r"partition 9: column schedule_median, row 504: "
                                        "infinity is not a finite number"):
        law_rows(LawSpec(name="t", target="schedule_median", terms=("1", "batch_size")), chunk)


def test_fit_help_says_how_to_use_the_flags_and_leaves_benchmark_figures_to_the_docs() -> None:
    result = CliRunner().invoke(app, ["fit", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Vidur" not in result.output and not re.search(r"\d+\.\d+ / \d+\.\d+", result.output)
    assert "--cv batch_size" in result.output
