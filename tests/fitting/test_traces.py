"""Chrome Trace Event Format files as captures: real traces (torch.profiler on a GPU engine,
viztracer here) give the laws their run's lawkit.capture CSV gives; ranks, B/E pairs, the
mapping in lawkit.toml, and every malformed trace a one-line error (exit 2)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from lawkit.cli import app
from lawkit.footprint.document import Footprint, encode_footprint

runner = CliRunner()
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "captures.md"
DIGEST = "0123abcd"
MAPPING = """\
[trace]
regions = { schedule_s = "schedule", sample_s = { prefix = "sample" } }

[[trace.steps]]
kind = "decode"
prefix = "decode["
features = 'decode\\[bs=(?P<batch_size>\\d+)\\]'
"""


@pytest.fixture(autouse=True)
def _workspace(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('laws = "."\n\n' + MAPPING)


def lawkit(*args: str) -> Result:
    return runner.invoke(app, list(args))


def fit(*args: str) -> Result:
    return lawkit("fit", *args)


def error_line(result: Result) -> str:
    """The one line of an exit-2 error (no traceback)."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def event(name: str, ts: float, dur: float, *, pid: int = 1, tid: int = 1,
          **extra: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, **extra}


def steps(pid: int = 1, *, count: int = 6, scale: float = 1.0) -> list[dict[str, Any]]:
    """Decode steps of batch sizes 1.., each with a schedule (50 + 10 bs us) and a sample."""
    events = []
    for i in range(count):
        bs, at = i + 1, i * 1000.0
        events += [event(f"decode[bs={bs}]", at, 900, pid=pid, args={"iteration": 10 + i}),
                   event("schedule", at + 10, scale * (50 + 10 * bs), pid=pid),
                   event("sample_tokens", at + 400, 30, pid=pid)]
    return events


def write(path: Path, events: list[dict[str, Any]] | Any, **top: Any) -> Path:
    doc = {"traceEvents": events, **top} if isinstance(events, list) else events
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def laws(path: str) -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(Path(path).read_text())
    return {law["name"]: law for law in document["host"]["laws"]}


def terms(path: str, name: str) -> dict[str, float]:
    return {str(k): float(v) for k, v in laws(path)[name]["terms"].items()}


def predict(coefficients: dict[str, float], **features: float) -> float:
    return sum(v * (1.0 if k == "1" else features[k]) for k, v in coefficients.items())


# -- real traces ------------------------------------------------------------------------------


PROFILER_RANGE_S = 20e-6
"""What torch.profiler spends opening and closing a `record_function` range (8 to 18 us on
the H100 machine): the capture's region around the range holds it, the range does not."""


def test_laws_from_a_torch_profiler_trace_of_a_gpu_engine_predict_as_its_capture_csv() -> None:
    """scripts/gpu_trace.py's trace (ATOM-style labels, kineto, an H100) and the lawkit.capture
    CSV of the same run: laws within 2% of each other over the fitted domain, but for the
    profiler's own cost of a range on the 0.2 ms regions (docs/captures.md#traces)."""
    trace = str(TRACES / "engine.pt.trace.json.gz")
    csv = str(TRACES / "engine.csv")
    mapping = str(TRACES / "engine.toml")
    for target in ("prepare_s", "forward_s", "sample_s"):
        formula = f"{target} ~ 1 + batch_size"
        done = fit(trace, "--trace-map", mapping, "--formula", formula, "--where",
                   'kind == "decode"', "--out", "trace.yaml")
        assert done.exit_code == 0, done.output
        done = fit(csv, "--formula", formula, "--where", "is_prefill == 0", "--out", "csv.yaml")
        assert done.exit_code == 0, done.output
        from_trace, from_csv = terms("trace.yaml", target), terms("csv.yaml", target)
        assert laws("trace.yaml")[target]["fit"]["n"] == laws("csv.yaml")[target]["fit"]["n"] == 18
        for bs in (1, 2, 4, 8, 16, 32):
            a, b = predict(from_trace, batch_size=bs), predict(from_csv, batch_size=bs)
            within = 0.02 * b if target == "forward_s" else max(0.02 * b, PROFILER_RANGE_S)
            assert abs(a - b) <= within, (target, bs, a, b)


def test_the_digest_of_a_trace_comes_from_its_mapped_metadata_key() -> None:
    result = fit(str(TRACES / "engine.pt.trace.json.gz"), "--trace-map",
                 str(TRACES / "engine.toml"), "--formula", "forward_s ~ 1 + num_tokens",
                 "--out", "a.yaml")
    assert result.exit_code == 0, result.output
    assert "digest 0123abcd" in result.output
    assert yaml.safe_load(Path("a.yaml").read_text())["host"]["key"]["atom"] == DIGEST


def test_a_trace_profiled_from_the_main_thread_says_why_it_holds_no_step() -> None:
    """Measured (scripts/gpu_trace.py): a profiler started in the main thread while the engine's
    steps run in its own thread records the GPU kernels and none of the steps' labels."""
    line = error_line(fit(str(TRACES / "mainthread.pt.trace.json.gz"), "--trace-map",
                          str(TRACES / "engine.toml"), "--formula", "forward_s ~ 1",
                          "--out", "a.yaml"))
    assert "mainthread.pt.trace.json.gz: no range matches the steps" in line
    assert "only on the thread that started it" in line
    assert line.endswith("needs the profiler started in that thread"), line
    assert not Path("a.yaml").exists()


def test_the_docs_show_the_gpu_engines_atom_mapping_as_the_tests_read_it() -> None:
    mapping = (TRACES / "engine.toml").read_text().split("\n", 1)[1]
    assert mapping in DOCS.read_text()


def test_every_mapping_the_docs_show_is_one_lawkit_reads(tmp_path: Path) -> None:
    import re
    import tomllib

    from lawkit.fitting.captures.tracemap import trace_mapping

    section = DOCS.read_text().split("## Traces", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3
    for block in blocks:
        assert trace_mapping(tomllib.loads(block)["trace"], "docs").steps
    profiler_steps = tomllib.loads(blocks[1])["trace"]
    (tmp_path / "p.toml").write_text(blocks[1])
    events = [e | {"name": f"ProfilerStep#{int(e['name'][10:-1]) + 40}"} if e["name"].startswith(
        "decode[") else e | {"name": "sample"} if e["name"] == "sample_tokens" else e
        for e in steps()]
    write(tmp_path / "t.json", events)
    result = fit("t.json", "--trace-map", "p.toml", "--formula",
                 "schedule_s ~ 1 + profiler_step", "--captured-on", DIGEST, "--out", "a.yaml")
    assert result.exit_code == 0, result.output
    assert terms("a.yaml", "schedule_s")["profiler_step"] == pytest.approx(1e-5)
    assert profiler_steps["steps"][0]["kind"] == "step"


VIZ_HARNESS = r'''
import sys, time
from viztracer import VizTracer
from lawkit import capture

def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass

def schedule(bs):
    busy(0.0006 + 0.00002 * bs)

def sample(bs):
    busy(0.0003 + 0.00004 * bs)

tracer = VizTracer(output_file=sys.argv[1], verbose=0, include_files=[__file__],
                   ignore_c_function=True)
cap = capture.open(sys.argv[2], features=("batch_size",), regions=("schedule_s", "sample_s"),
                   digest="0123abcd", key="atom")
with cap:
    cap.steps()
    tracer.start()
    for bs in (1, 2, 4, 8, 16, 32) * 3:
        with cap.step(batch_size=bs), tracer.log_event(f"step[bs={bs}]"):
            with cap.region("schedule_s"):
                schedule(bs)
            with cap.region("sample_s"):
                sample(bs)
    tracer.stop()
tracer.save()
'''
VIZ_MAPPING = """\
[trace]
steps = [{ kind = "step", regex = 'step\\[bs=(?P<batch_size>\\d+)\\] \\(.*\\)' }]
regions = { schedule_s = { glob = "schedule (*" }, sample_s = { glob = "sample (*" } }
"""


def test_laws_from_a_viztracer_trace_predict_as_the_same_runs_capture_csv(tmp_path: Path) -> None:
    pytest.importorskip("viztracer")
    (tmp_path / "harness.py").write_text(VIZ_HARNESS)
    (tmp_path / "viz.toml").write_text(VIZ_MAPPING)
    subprocess.run([sys.executable, "harness.py", "run.json", "run.csv"], check=True,
                   cwd=tmp_path, capture_output=True)
    fp = tmp_path / "fp.json"  # a footprint of the run: its regions carry the mapped names
    fp.write_bytes(encode_footprint(Footprint(
        key="atom", digest=DIGEST, command=("python", "harness.py"), processes=1, files={},
        regions=("sample_s", "schedule_s"))))
    # robust: a busy loop preempted on a loaded machine is an outlier in both files alike
    formulas = ("--formula", "schedule_s ~ 1 + batch_size", "--formula",
                "sample_s ~ 1 + batch_size", "--method", "robust")
    done = fit("run.json", "--trace-map", "viz.toml", *formulas, "--captured-on", DIGEST,
               "--footprint", "fp.json", "--out", "trace.yaml")
    assert done.exit_code == 0, done.output
    done = fit("run.csv", *formulas, "--out", "csv.yaml")
    assert done.exit_code == 0, done.output
    for target in ("schedule_s", "sample_s"):
        for bs in (1, 32):
            a = predict(terms("trace.yaml", target), batch_size=bs)
            b = predict(terms("csv.yaml", target), batch_size=bs)
            assert abs(a - b) <= 0.02 * b, (target, bs, a, b)
    text = Path("trace.yaml").read_text()
    assert "fp.json" in text and f'atom: "{DIGEST}"' in text


# -- the mapping ------------------------------------------------------------------------------


def test_a_trace_gives_a_row_per_step_with_features_regions_and_the_steps_time(
        tmp_path: Path) -> None:
    events = steps()
    events.append(event("decode[bs=1]", 0, 5, pid=0, tid=7, cat="gpu_user_annotation"))
    events.reverse()  # events need not be sorted
    write(tmp_path / "t.json.gz", events)
    result = fit("t.json.gz", "--formula", "schedule_s ~ 1 + batch_size", "--formula",
                 "sample_s ~ 1", "--formula", "step_s ~ 1", "--captured-on", DIGEST,
                 "--out", "a.yaml")
    assert result.exit_code == 0, result.output
    schedule = terms("a.yaml", "schedule_s")
    assert schedule["1"] == pytest.approx(50e-6) and schedule["batch_size"] == pytest.approx(1e-5)
    assert terms("a.yaml", "sample_s")["1"] == pytest.approx(30e-6)
    assert terms("a.yaml", "step_s")["1"] == pytest.approx(900e-6)
    assert laws("a.yaml")["schedule_s"]["fit"]["n"] == 6  # the GPU's copy is no rank


def test_a_bare_array_of_b_and_e_events_pairs_them_per_thread(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    for i in range(4):
        at = i * 100.0
        for tid in (1, 2):  # the other thread's ranges interleave
            events += [{"ph": "B", "name": f"decode[bs={i + 1}]", "ts": at, "pid": 1,
                        "tid": tid},
                       {"ph": "B", "name": "schedule", "ts": at + 1, "pid": 1, "tid": tid},
                       {"ph": "B", "name": "schedule", "ts": at + 2, "pid": 1, "tid": tid},
                       {"ph": "E", "ts": at + 3, "pid": 1, "tid": tid},
                       {"ph": "E", "ts": at + 11 + tid, "pid": 1, "tid": tid},
                       {"ph": "B", "name": "sample", "ts": at + 20, "pid": 1, "tid": tid},
                       {"ph": "E", "ts": at + 25, "pid": 1, "tid": tid},
                       {"ph": "E", "ts": at + 50, "pid": 1, "tid": tid}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events)[:-1])  # the array form may end without its ]
    result = fit("t.json", "--formula", "schedule_s ~ 1", "--captured-on", DIGEST, "--out",
                 "a.yaml")
    assert result.exit_code == 0, result.output
    # a region entered inside itself is timed once, from the outside: 11 or 12 us
    assert terms("a.yaml", "schedule_s")["1"] == pytest.approx(11.5e-6)
    assert laws("a.yaml")["schedule_s"]["fit"]["n"] == 8


def test_steps_whose_name_does_not_match_their_features_are_left_out_and_counted(
        tmp_path: Path) -> None:
    events = [*steps(), event("decode[bs=7 spec=2]", 9000, 900)]
    write(tmp_path / "t.json", events)
    result = fit("t.json", "--formula", "schedule_s ~ 1 + batch_size", "--captured-on", DIGEST,
                 "--out", "a.yaml")
    assert result.exit_code == 0, result.output
    assert "1 of kind 'decode' (e.g. 'decode[bs=7 spec=2]')" in result.output
    assert laws("a.yaml")["schedule_s"]["fit"]["n"] == 6


def test_several_ranks_give_a_row_per_rank_or_the_max_over_ranks(tmp_path: Path) -> None:
    write(tmp_path / "r0.json", steps(pid=11))
    write(tmp_path / "r1.json", steps(pid=12, scale=2.0))
    result = fit("r0.json", "r1.json", "--formula", "schedule_s ~ 1 + batch_size", "--by",
                 "rank", "--captured-on", DIGEST, "--out", "rows.yaml")
    assert result.exit_code == 0, result.output
    assert terms("rows.yaml", "schedule_s[1]")["batch_size"] == pytest.approx(2e-5)
    mapping = MAPPING.replace("[trace]\n", '[trace]\nranks = "max"\nstep_id = "iteration"\n')
    (tmp_path / "max.toml").write_text(mapping)
    result = fit("r0.json", "r1.json", "--trace-map", "max.toml", "--formula",
                 "schedule_s ~ 1 + batch_size", "--captured-on", DIGEST, "--out", "max.yaml")
    assert result.exit_code == 0, result.output
    assert terms("max.yaml", "schedule_s")["batch_size"] == pytest.approx(2e-5)
    assert laws("max.yaml")["schedule_s"]["fit"]["n"] == 6


def test_several_pids_in_one_file_are_ranks_too(tmp_path: Path) -> None:
    write(tmp_path / "t.json", steps(pid=3) + steps(pid=4, scale=3.0))
    (tmp_path / "max.toml").write_text(MAPPING.replace("[trace]\n", '[trace]\nranks = "max"\n'))
    result = fit("t.json", "--trace-map", "max.toml", "--formula",
                 "schedule_s ~ 1 + batch_size", "--captured-on", DIGEST, "--out", "a.yaml")
    assert result.exit_code == 0, result.output
    assert terms("a.yaml", "schedule_s")["batch_size"] == pytest.approx(3e-5)


def test_a_rank_missing_a_step_is_an_error_naming_it(tmp_path: Path) -> None:
    write(tmp_path / "r0.json", steps(pid=11))
    write(tmp_path / "r1.json", steps(pid=12)[3:])
    mapping = MAPPING.replace("[trace]\n", '[trace]\nranks = "max"\nstep_id = "iteration"\n')
    (tmp_path / "max.toml").write_text(mapping)
    line = error_line(fit("r0.json", "r1.json", "--trace-map", "max.toml", "--formula",
                          "schedule_s ~ 1", "--captured-on", DIGEST, "--out", "a.yaml"))
    assert line.endswith("r1.json: rank pid 12 of r1.json has no step with args 'iteration' "
                         "10, which rank pid 11 of r0.json has: give every rank's trace the "
                         "same steps (or ranks = \"rows\" in the mapping)"), line


def test_features_come_from_args_too_and_pyproject_names_its_table(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").unlink()
    table = MAPPING.replace("[trace]", "[tool.lawkit.trace]").replace(
        "[[trace.steps]]", "[[tool.lawkit.trace.steps]]")
    (tmp_path / "pyproject.toml").write_text('[tool.lawkit]\nlaws = "."\n\n' + table +
                                             'args = { iteration = "iteration" }\n')
    write(tmp_path / "t.json", steps())
    result = fit("t.json", "--formula", "schedule_s ~ 1 + iteration", "--captured-on", DIGEST,
                 "--out", "a.yaml")
    assert result.exit_code == 0, result.output
    assert terms("a.yaml", "schedule_s")["iteration"] == pytest.approx(1e-5)
    (tmp_path / "pyproject.toml").write_text('[tool.lawkit]\nlaws = "."\n[tool.lawkit.trace]\n')
    line = error_line(fit("t.json", "--formula", "schedule_s ~ 1", "--captured-on", DIGEST,
                          "--out", "a.yaml"))
    assert "pyproject.toml [tool.lawkit.trace]: steps: expected one" in line, line


def test_a_trace_is_not_read_on_a_dask_cluster(tmp_path: Path) -> None:
    write(tmp_path / "t.json", steps())
    line = error_line(fit("t.json", "--formula", "schedule_s ~ 1", "--captured-on", DIGEST,
                          "--dask", "local:1", "--out", "a.yaml"))
    assert "a trace is read in this process, not on a Dask cluster: drop --dask" in line


def test_score_reads_a_trace_by_the_workspaces_mapping(tmp_path: Path) -> None:
    write(tmp_path / "t.json", steps())
    assert fit("t.json", "--formula", "schedule_s ~ 1 + batch_size", "--captured-on", DIGEST,
               "--out", "a.yaml").exit_code == 0
    write(tmp_path / "slow.json", steps(scale=2.0))
    result = lawkit("score", "a.yaml", "slow.json", "--max-mape", "10%")
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output


def test_fit_plot_reads_a_trace_again_by_the_mapping_it_was_fitted_by(tmp_path: Path) -> None:
    """The plot read the captures again with no mapping: the law written, then exit 2."""
    pytest.importorskip("matplotlib")
    write(tmp_path / "t.json", steps())
    result = fit("t.json", "--formula", "schedule_s ~ 1 + batch_size", "--captured-on", DIGEST,
                 "--out", "a.yaml", "--plot", "a.png")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "a.png").stat().st_size > 0


def test_the_python_api_fits_and_scores_a_trace_by_the_workspaces_mapping(tmp_path: Path) -> None:
    import lawkit

    write(tmp_path / "t.json", steps())
    report = lawkit.fit("t.json", out="a.yaml", formula="schedule_s ~ 1 + batch_size",
                        captured_on=DIGEST, workspace=tmp_path)
    assert report.laws[0].law["terms"]["batch_size"] == pytest.approx(1e-5)
    assert lawkit.score("a.yaml", ["t.json"], max_mape=0.01, workspace=tmp_path).exit_code == 0


def test_fit_help_names_the_trace_format() -> None:
    result = lawkit("fit", "--help")
    text = " ".join(result.output.replace("│", " ").split())
    assert "Chrome Trace Event Format" in text and "--trace-map" in text


# -- malformed traces and mappings: one line, exit 2 ----------------------------------------


BAD_TRACES: dict[str, tuple[bytes, str]] = {
    "not JSON": (b"PK\x03\x04 zip", "t.json: not a JSON trace: expected a Chrome Trace Event "
                 "Format file (an object with \"traceEvents\", or an array of events)"),
    "no events": (b'{"schemaVersion": 1}', "t.json: no trace events: expected a Chrome Trace"),
    "cut short": (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}',
                  "t.json: not valid JSON: parse error: premature EOF: is the trace whole?"),
    "B without E": (json.dumps([*steps(), {"ph": "B", "name": "schedule", "ts": 5, "pid": 1,
                                           "tid": 1}]).encode(),
                    "t.json: the B event of 'schedule' at ts 5.0 (pid 1, tid 1) has no E event"),
    "no step": (json.dumps([event("step", 0, 1)]).encode(),
                "t.json: no range matches the steps (prefix 'decode[' in lawkit.toml [trace]): "
                "fix the pattern"),
    "a region never entered": (json.dumps([e for e in steps() if e["name"] != "schedule"])
                               .encode(), "t.json: no range matches region 'schedule_s' (name "
                               "'schedule' in lawkit.toml [trace]): fix the pattern, or drop "
                               "the region"),
    "an event that is no object": (b'{"traceEvents": [1]}', "t.json: event 1 is not an "
                                   "object"),
    "a number beyond a float": (b'[{"ph": "X", "name": "decode[bs=1]", "ts": 1e400, "dur": 1}]',
                                "t.json: not valid JSON: parse error: numeric (floating point) "
                                "overflow"),
    "a bad ts": (json.dumps([event("decode[bs=1]", "soon", 1)]).encode(),  # type: ignore[arg-type]
                 "t.json: the X event 'decode[bs=1]' has ts 'soon': expected a number of "
                 "microseconds"),
}


@pytest.mark.parametrize("case", BAD_TRACES)
def test_a_malformed_trace_is_one_line_naming_the_file_and_the_fix(tmp_path: Path,
                                                                   case: str) -> None:
    data, expected = BAD_TRACES[case]
    (tmp_path / "t.json").write_bytes(data)
    line = error_line(fit("t.json", "--formula", "schedule_s ~ 1", "--captured-on", DIGEST,
                          "--out", "a.yaml"))
    assert expected in line, line
    assert not (tmp_path / "a.yaml").exists()


BAD_MAPPINGS = {
    "no steps": ("[trace]\nregions = {}\n", "steps: expected one [[trace.steps]] entry or more"),
    "two selectors": ('[[trace.steps]]\nname = "a"\nglob = "b*"\n',
                      "steps[0]: expected one of name, prefix, glob, regex"),
    "bad regex": ('[[trace.steps]]\nregex = "a(("\n',
                  "steps[0].regex: not a valid regular expression"),
    "unknown key": ('[trace]\nrank = "max"\n[[trace.steps]]\nname = "a"\n',
                    "unknown key 'rank' (known: categories, digest,"),
    "bad ranks": ('[trace]\nranks = "sum"\n[[trace.steps]]\nname = "a"\n',
                  "ranks: expected 'rows' or 'max', got 'sum'"),
}


@pytest.mark.parametrize("case", BAD_MAPPINGS)
def test_a_bad_mapping_is_one_line_naming_its_key(tmp_path: Path, case: str) -> None:
    text, expected = BAD_MAPPINGS[case]
    (tmp_path / "lawkit.toml").write_text('laws = "."\n\n' + text)
    write(tmp_path / "t.json", steps())
    line = error_line(fit("t.json", "--formula", "schedule_s ~ 1", "--captured-on", DIGEST,
                          "--out", "a.yaml"))
    assert "lawkit.toml [trace]" in line and expected in line, line


def test_pids_and_tids_of_any_json_type_are_threads_not_a_crash(tmp_path: Path) -> None:
    events = steps()
    for e in events:
        e["pid"], e["tid"] = [e["pid"]], {"stream": 7}
    write(tmp_path / "t.json", events)
    result = fit("t.json", "--formula", "schedule_s ~ 1 + batch_size", "--captured-on", DIGEST,
                 "--out", "a.yaml")
    assert result.exit_code == 0, result.output
    assert terms("a.yaml", "schedule_s")["batch_size"] == pytest.approx(1e-5)


def test_a_trace_without_a_mapping_says_where_to_write_one(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('laws = "."\n')
    write(tmp_path / "t.json", steps())
    line = error_line(fit("t.json", "--formula", "schedule_s ~ 1", "--captured-on", DIGEST,
                          "--out", "a.yaml"))
    assert line.endswith("t.json: a trace needs a mapping from its ranges to steps, features "
                         "and regions: write a [trace] table (steps = [...], regions = [...]) "
                         "in lawkit.toml or pass one as --trace-map FILE (trace_map= from "
                         "Python)"), line


def test_a_csv_fit_beside_host_files_and_a_bad_mapping_reads_no_json(tmp_path: Path) -> None:
    """A folder's .json files are traces only when named *.trace.json; a capture's host file
    is never one; a CSV fit never reads the [trace] table."""
    (tmp_path / "lawkit.toml").write_text('laws = "."\n[trace]\nranks = 3\n')
    folder = tmp_path / "caps"
    folder.mkdir()
    (folder / "run.csv").write_text("batch_size,schedule_s\n1,0.1\n2,0.2\n3,0.3\n")
    (folder / "run.csv.host.json").write_text("{}")
    (folder / "notes.json").write_text("{}")
    result = fit("caps", "--formula", "schedule_s ~ 1 + batch_size", "--captured-on", DIGEST,
                 "--out", "a.yaml")
    assert result.exit_code == 0, result.output
