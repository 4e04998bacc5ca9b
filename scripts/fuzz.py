"""Fuzz lawkit's parsers and readers: a long run, with counts per target and outcome.

Run: .venv/bin/python scripts/fuzz.py [--seconds S | --cases N] [--target NAME]... [--jobs J]
     .venv/bin/python scripts/fuzz.py --list
     .venv/bin/python scripts/fuzz.py --atheris --seconds 60   (coverage-guided, if installed)

Every target takes generated input (arbitrary bytes or text, or structured mutations of valid
law files, expressions, formulas and capture files) and may end only two ways: a result, or a
LawkitError whose message is one printable line. Anything else is a finding: another exception
("other"), a bad message, a crash (the process dies of a signal, e.g. pyarrow's SIGSEGV), a
hang (no progress for --hang-seconds) or a blown memory limit (RLIMIT_AS, --memory-mb).

Each target runs in a child process, so that a crash or a hang is caught, reported with the
input that caused it (saved under --findings), and the run goes on with a fresh child. The
table at the end gives, per target: cases, results, LawkitErrors, findings, the slowest case
and the child's peak memory. Exit 1 when there is any finding.

The same targets run in CI at a few hundred cases each: tests/reliability/test_fuzz.py loads
this file. Generation is hypothesis's (its strategies, run in batches with fresh seeds, no
shrinking); with --atheris, libFuzzer's coverage-guided mutation feeds the byte-level targets.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # testing/: the sample law files, shared with the tests

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lawkit.errors import LawkitError  # noqa: E402

OUTCOMES = ("result", "LawkitError")
HANG_SECONDS = 60.0
BATCH = 200


# -- inputs ---------------------------------------------------------------------------------


def _law_seeds() -> list[bytes]:
    from testing.samples import GOOD
    from testing.workspaces import OLD, law_text, laws

    seeds = [GOOD.encode(), law_text(key=OLD).encode(),
             law_text(key=OLD, law_dicts=laws(1), provenance="none").encode(),
             law_text(key=OLD, labels={"cell": "a", "tp": 4}).encode().replace(b"\n", b"\r\n")]
    seeds += [p.read_bytes() for p in sorted((REPO / "laws").glob("*.yaml"))[:2]]
    return seeds


_LAW_TOKENS = [
    b"&a ", b"*a", b"!!python/object/apply:os.system ", b"!!binary ", b"!!set ", b"!x ", b"{",
    b"}", b"[", b"]", b",", b"\n", b"- ", b": ", b"'", b'"', b"#", b"\t", b"? ", b"<<: ", b"1e10",
    b".nan", b".inf", b"~", b"\xef\xbb\xbf", b"\r\n", b"\r", b"%YAML 1.1\n", b"---\n", b"...\n",
    b"|\n", b">-\n", b"null", b"true", b"0x1F", b"0o17", b"1_000", b"2026-13-45", b"1:2:3",
    b"\x00", b"\xff", b'"\\e"', b'"\\ud800"', b"!!str ", b"!!int ", b"!!float ", b"!!map ",
    b"&x [*x]", b"    ", b"  ", b"host:", b"laws:", b"provenance:", b"key:", b"atom:",
    b"terms:", b"where:", b"filter:", b"domain:", b"name:", b"target:", b"rekey:", b"fit:",
    b"adopt:", b"digest:", b"schema: lawkit/1\n", b'"59e9ff5a"', b"59e9ff5a", b"9" * 5000,
    b'- {rekey: {from: "59e9ff5a", to: "68ad8fc6", at: "x", why: "y", refs: []}}\n',
    b"[" * 70, b"\xe2\x80\xa8", b"\x85", b"\x1b[31m",
]
_WHERE_TOKENS = [
    "and", "or", "not", "in", "true", "false", "==", "!=", "<", "<=", ">", ">=", "(", ")",
    "[", "]", ",", "-", "`", "'", '"', "\\", "num_seqs", "phase", "a.b", "1e999", "9" * 5000,
    "0.5", "\n", "\t", "\x00", "\u2028", "é", "=", "&", "!", " ",
]
_FORMULA_TOKENS = ["~", "+", "-", ":", "0", "1", "2", "*", "num_seqs", "host_s", "x", "y.z",
                   "(", ")", " ", "\n", "\x00", "é", "9" * 50]


@st.composite
def _mutated(draw: st.DrawFn, seeds: list[Any], tokens: list[Any]) -> Any:
    """A seed with 1 to 8 edits: token insertions, deletions, duplications, byte flips and
    line moves (bytes or str, as the seeds are)."""
    data = draw(st.sampled_from(seeds))
    empty = data[:0]
    newline = b"\n" if isinstance(data, bytes) else "\n"
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "delete", "duplicate", "flip", "lines", "cut"]))
        if kind == "insert":
            data = data[:at] + draw(st.sampled_from(tokens)) + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 40)):]
        elif kind == "duplicate":
            end = draw(st.integers(at, min(len(data), at + 200)))
            data = data[:end] + data[at:end] + data[end:]
        elif kind == "flip" and data:
            i = min(at, len(data) - 1)
            if isinstance(data, bytes):
                data = data[:i] + bytes([draw(st.integers(0, 255))]) + data[i + 1:]
            else:
                data = data[:i] + draw(st.characters()) + data[i + 1:]
        elif kind == "lines":
            lines = data.split(newline)
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            data = newline.join(lines)
        elif kind == "cut":
            data = data[:at] if draw(st.booleans()) else data[at:]
    return data if data is not None else empty


def _where_grammar() -> st.SearchStrategy[str]:
    column = st.sampled_from(["num_seqs", "phase", "tp", "model", "`model/name`", "a.b",
                              "host_s", "flag", "missing"])
    number = st.one_of(st.integers(-10**6, 10**6).map(str),
                       st.floats(allow_nan=False, allow_infinity=False).map(repr),
                       st.sampled_from(["1e3", ".5", "0", "-0.0"]))
    string = st.text(max_size=6).map(lambda s: '"' + s.replace("\\", "\\\\")
                                      .replace('"', '\\"') + '"')
    literal = st.one_of(number, string, st.sampled_from(["true", "false"]))
    op = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    test = st.one_of(
        st.tuples(column, op, st.one_of(literal, column)).map(" ".join),
        st.tuples(literal, op, column).map(" ".join),
        st.tuples(column, st.sampled_from(["in", "not in"]),
                  st.lists(literal, max_size=4).map(lambda v: "[" + ", ".join(v) + "]"))
        .map(" ".join))
    return st.recursive(test, lambda inner: st.one_of(
        inner.map(lambda x: f"not {x}"), inner.map(lambda x: f"({x})"),
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(" ".join)), max_leaves=10)


def _formula_grammar() -> st.SearchStrategy[str]:
    column = st.sampled_from(["num_seqs", "num_tokens", "max_context", "a.b", "host_s", "x"])
    term = st.one_of(st.sampled_from(["1", "0"]),
                     st.lists(column, min_size=1, max_size=3).map(":".join))
    terms = st.lists(st.tuples(st.sampled_from(["+", "-"]), term), min_size=1, max_size=6)
    return st.tuples(column, terms).map(
        lambda t: f"{t[0]} ~ " + " ".join(f"{s} {x}" for s, x in t[1]).lstrip("+ "))


_CAPTURE_ROWS = [
    {"model": "a", "tp": 1, "bs": 8, "host_s": 0.3, "atom": "0001abcd"},
    {"model": "b", "tp": 2, "bs": 16, "host_s": 1e-07, "atom": "0001abcd"},
    {"model": None, "tp": None, "bs": 24, "host_s": 2.5, "atom": "0001abcd"},
]
_CAPTURE_TOKENS = [b",", b"\n", b'"', b"\r", b"{", b"}", b"[", b"]", b"null", b"NaN", b"-1",
                   b"1e999", b"\xef\xbb\xbf", b"\x00", b'"host_s":', b"true", b"PAR1", b"\xff",
                   b'""', b"1_0", b" ", b"inf", b"\x1f\x8b"]


def _capture_seeds() -> list[tuple[str, bytes]]:
    import gzip
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    csv = b"model,tp,bs,host_s,atom\na,1,8,0.3,0001abcd\nb,2,16,1e-07,0001abcd\n,,24,2.5,0001abcd\n"
    jsonl = b"".join(json.dumps(row).encode() + b"\n" for row in _CAPTURE_ROWS)
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(_CAPTURE_ROWS).replace_schema_metadata(
        {"lawkit.atom": "0001abcd"}), sink, row_group_size=2)
    parquet = sink.getvalue()
    seeds = [(".csv", csv), (".jsonl", jsonl), (".parquet", parquet)]
    return seeds + [(suffix + ".gz", gzip.compress(data, mtime=0)) for suffix, data in seeds]


_SPECS: list[Any] = []


def _specs() -> list[Any]:
    if not _SPECS:
        from lawkit.fitting.captures.chunks import ColumnSpec

        _SPECS.extend([
            ColumnSpec(numbers=("host_s", "bs"), labels=("model", "tp"), digest="atom",
                       nonnegative=("host_s",)),
            ColumnSpec(numbers=("host_s",), labels=(), digest=None),
            ColumnSpec(numbers=("bs",), labels=("model",), digest="atom", weights=("bs",)),
        ])
    return _SPECS


# -- what each target does with its input ----------------------------------------------------


def run_law_file(raw: bytes) -> object:
    """Parse and validate the bytes of a law file; exercise the parsed result."""
    from lawkit.lawfiles import lawfile

    law_file = lawfile.parse(raw, "fuzz.yaml")
    law_file.body_hash()
    for law in law_file.host.laws:
        law.columns()
    return law_file.line("host", "laws")


def run_rekey(raw: bytes) -> object:
    """Re-key a law file by text edits; a result must read back with the new key."""
    from lawkit.keying import rekey
    from lawkit.lawfiles import lawfile

    new = rekey.rekeyed_bytes(raw, "fuzz.yaml", key="atom", to="0badc0de",
                              at="2026-01-01T00:00:00Z", why="fuzz", refs=["#7"])
    if new != raw:
        again = lawfile.parse(new, "fuzz.yaml")
        assert again.host.key["atom"] == "0badc0de", "rekey result names another key"
        assert again.host.provenance[-1].kind == "rekey"
    return new


def run_where(text: str) -> object:
    """Parse a --where expression, render it, parse the rendering, and evaluate it."""
    from lawkit.lawfiles import where

    expr = where.parse_where(text)
    rendered = expr._render()
    again = where.parse_where(rendered)
    assert again._render() == rendered, f"{rendered!r} renders as {again._render()!r}"
    expr.as_mapping()
    expr.columns()
    mask = expr.mask(_where_data())
    assert mask.shape == (4,) and mask.dtype == bool
    return mask


_DATA: dict[str, Any] = {}


def _where_data() -> dict[str, Any]:
    if not _DATA:
        import numpy as np

        _DATA.update({
            "num_seqs": np.array([1, 2, 256, 0]),
            "phase": np.array(["prefill", "decode", None, "é"], dtype=object),
            "tp": np.array([1, None, 4, 8], dtype=object),
            "model": np.array(["a", "b", float("nan"), "model/name"], dtype=object),
            "model/name": np.array(["x", "y", "z", "w"], dtype=object),
            "a.b": np.array([0.5, float("nan"), float("inf"), -1.0]),
            "host_s": np.array([0.1, 0.2, 0.3, 0.4]),
            "flag": np.array([True, False, True, False]),
        })
    return _DATA


def run_formula(text: str) -> object:
    """Parse a formula; its rendering must parse to the same terms."""
    from lawkit.fitting.formula import parse_formula

    formula = parse_formula(text)
    again = parse_formula(str(formula))
    assert again.terms == formula.terms, f"{formula} parses back as {again.terms}"
    return formula.columns()


def run_capture(case: tuple[str, bytes, int, int]) -> object:
    """Read a capture file's bytes (as the suffix says) through validation, as fit does."""
    from lawkit.fitting.captures.files import find_captures
    from lawkit.fitting.captures.read import read_captures

    suffix, data, spec_index, chunk_rows = case
    spec = _specs()[spec_index % len(_specs())]
    with tempfile.TemporaryDirectory(prefix="lawkit-fuzz-") as folder:
        path = Path(folder) / f"capture{suffix}"
        path.write_bytes(data)
        rows = 0
        for chunk in read_captures(find_captures([path]), spec, chunk_rows=chunk_rows or None):
            rows += chunk.size
            chunk.digests_of(chunk.valid(spec.names()))
            bad = chunk.first_invalid(spec.names())
            if bad is not None:
                raise chunk.error(*bad)
        return rows


def run_cli_show(raw: bytes) -> object:
    """`lawkit show` on a law file's bytes: exit 0, or exit 2 with one line on stderr."""
    from typer.testing import CliRunner

    from lawkit.cli import app

    with tempfile.TemporaryDirectory(prefix="lawkit-fuzz-") as folder:
        path = Path(folder) / "fuzz.yaml"
        path.write_bytes(raw)
        result = CliRunner().invoke(app, ["show", str(path)])
    return _cli_outcome(result)


def run_cli_fit(case: tuple[str, bytes, int, int]) -> object:
    """`lawkit fit` on a capture file's bytes: exit 0, or exit 2 with one line on stderr."""
    from typer.testing import CliRunner

    from lawkit.cli import app

    suffix, data, _spec, _rows = case
    with tempfile.TemporaryDirectory(prefix="lawkit-fuzz-") as folder:
        path = Path(folder) / f"capture{suffix}"
        path.write_bytes(data)
        (Path(folder) / "lawkit.toml").write_text('laws = "."\n')
        result = CliRunner().invoke(app, [
            "fit", str(path), "--formula", "host_s ~ 1 + bs", "--captured-on", "0001abcd",
            "--out", str(Path(folder) / "out.yaml"), "--config",
            str(Path(folder) / "lawkit.toml")])
    return _cli_outcome(result)


class BadMessage(Exception):
    """A LawkitError whose message is not one printable line of bounded length."""


def _cli_outcome(result: Any) -> object:
    if result.exit_code == 0:
        return "exit 0"
    if result.exit_code == 2 and isinstance(result.exception, SystemExit):
        message = result.stderr.rstrip("\n")
        if not message.startswith("lawkit: error: "):
            raise BadMessage(f"exit 2 without the error line: {result.stderr!r}")
        raise LawkitError(message.removeprefix("lawkit: error: "))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    raise BadMessage(f"exit {result.exit_code}: {result.stderr!r}")


def check_message(message: str) -> None:
    """Raise BadMessage unless a LawkitError message is one line of bounded size, with no
    control or format character nor lone surrogate."""
    import unicodedata

    if len(message.splitlines()) != 1 or len(message) > 2100 or any(
            c != "\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
            for c in message):
        raise BadMessage(f"not one printable line of at most 2,100 characters: "
                         f"{message[:300]!r} ({len(message)} characters)")


# -- targets --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A function of generated input that may return or raise LawkitError, and nothing else."""

    name: str
    strategy: Callable[[], st.SearchStrategy[Any]]
    run: Callable[[Any], object]
    cost: float = 1.0
    """How much slower a case is than a law file's (CI gives it fewer cases)."""


def _capture_cases(mutate: bool) -> st.SearchStrategy[tuple[str, bytes, int, int]]:
    suffixes = [".csv", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz", ".parquet.gz"]
    if mutate:
        seeds = _capture_seeds()
        data = st.sampled_from(range(len(seeds))).flatmap(
            lambda i: _mutated([seeds[i][1]], _CAPTURE_TOKENS).map(
                lambda b, i=i: (seeds[i][0], b)))
    else:
        data = st.tuples(st.sampled_from(suffixes), st.binary(max_size=1024))
    return st.tuples(data, st.integers(0, 2), st.sampled_from([0, 1, 2, 1000])).map(
        lambda t: (t[0][0], t[0][1], t[1], t[2]))


TARGETS = {t.name: t for t in [
    Target("law_bytes", lambda: st.binary(max_size=2048), run_law_file),
    Target("law_mutations", lambda: _mutated(_law_seeds(), _LAW_TOKENS), run_law_file),
    Target("rekey_mutations", lambda: _mutated(_law_seeds(), _LAW_TOKENS), run_rekey, 2.0),
    Target("where_text", lambda: st.one_of(
        st.text(max_size=60), st.lists(st.sampled_from(_WHERE_TOKENS), max_size=16).map(
            " ".join)), run_where),
    Target("where_mutations", lambda: _where_grammar().flatmap(
        lambda text: st.one_of(st.just(text), _mutated([text], _WHERE_TOKENS))), run_where),
    Target("formula_text", lambda: st.one_of(
        st.text(max_size=60), st.lists(st.sampled_from(_FORMULA_TOKENS), max_size=16).map(
            " ".join)), run_formula),
    Target("formula_mutations", lambda: _formula_grammar().flatmap(
        lambda text: st.one_of(st.just(text), _mutated([text], _FORMULA_TOKENS))), run_formula),
    Target("capture_bytes", lambda: _capture_cases(mutate=False), run_capture, 5.0),
    Target("capture_mutations", lambda: _capture_cases(mutate=True), run_capture, 5.0),
    Target("cli_show", lambda: _mutated(_law_seeds(), _LAW_TOKENS), run_cli_show, 3.0),
    Target("cli_fit", lambda: _capture_cases(mutate=True), run_cli_fit, 20.0),
]}


def outcome_of(target: Target, case: Any) -> str:
    """`result` or `LawkitError`, else raise (the finding)."""
    try:
        target.run(case)
    except LawkitError as exc:
        check_message(str(exc))
        return "LawkitError"
    return "result"


# -- the long run: a worker per target, watched by the parent --------------------------------


@dataclass
class Tally:
    """What a target's cases came to."""

    counts: dict[str, int] = field(default_factory=dict)
    slowest: float = 0.0
    peak_mb: float = 0.0
    findings: list[str] = field(default_factory=list)

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    @property
    def cases(self) -> int:
        return sum(self.counts.values())

    def merge(self, other: Tally) -> None:
        for key, value in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + value
        self.slowest = max(self.slowest, other.slowest)
        self.peak_mb = max(self.peak_mb, other.peak_mb)
        self.findings += other.findings


def _describe(case: Any) -> bytes:
    if isinstance(case, bytes):
        return case
    if isinstance(case, str):
        return case.encode("utf-8", "surrogatepass")
    if isinstance(case, tuple) and len(case) == 4:
        return f"{case[0]} spec={case[2]} chunk_rows={case[3]}\n".encode() + case[1]
    return repr(case).encode()


def worker(name: str, seconds: float, cases: int, state: Path) -> None:
    """Run one target until its budget is spent, writing the tally after every batch and each
    input before it runs (so that the parent can name what crashed or hung)."""
    target = TARGETS[name]
    tally = Tally()
    current = state / f"{name}.current"
    findings = state / "findings"
    deadline = time.monotonic() + seconds
    strategy = target.strategy()

    def one(case: Any) -> None:
        if time.monotonic() > deadline or tally.cases >= cases:
            return
        raw = _describe(case)
        current.write_bytes(raw)
        start = time.perf_counter()
        try:
            outcome = outcome_of(target, case)
        except Exception as exc:  # a finding: keep the input and go on
            outcome = f"other: {type(exc).__name__}"
            findings.mkdir(exist_ok=True)
            stem = f"{name}-{len(tally.findings) + 1}"
            (findings / f"{stem}.input").write_bytes(raw)
            (findings / f"{stem}.txt").write_text(traceback.format_exc())
            tally.findings.append(f"{outcome}: {str(exc)[:200]!r} ({findings / stem}.input)")
        tally.slowest = max(tally.slowest, time.perf_counter() - start)
        tally.add(outcome)

    run_batch = settings(max_examples=BATCH, database=None, deadline=None,
                         phases=[Phase.generate], suppress_health_check=list(HealthCheck),
                         )(given(strategy)(one))
    while time.monotonic() < deadline and tally.cases < cases:
        run_batch()
        tally.peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        _save(tally, state / f"{name}.json")


def _save(tally: Tally, path: Path) -> None:
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(tally.__dict__))
    os.replace(temp, path)


def _load(path: Path) -> Tally:
    try:
        return Tally(**json.loads(path.read_text()))
    except (OSError, ValueError):
        return Tally()


def run_target(name: str, seconds: float, cases: int, state: Path, *, memory_mb: int,
               hang_seconds: float, atheris: bool) -> Tally:
    """Run a target in child processes until its budget is spent; a child that crashes or
    hangs is a finding, and a new child takes over the rest of the budget."""
    total = Tally()
    deadline = time.monotonic() + seconds
    restarts = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or total.cases >= cases or restarts > 20:
            return total
        json_path, current = state / f"{name}.json", state / f"{name}.current"
        json_path.unlink(missing_ok=True)
        current.write_bytes(b"")
        args = [sys.executable, __file__, "--worker", name, "--seconds", f"{left:.1f}",
                "--cases", str(cases - total.cases), "--state", str(state)]
        if atheris:
            args.append("--atheris")

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

        # One BLAS/OpenMP thread: each reserves address space, which the limit counts.
        threads = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        proc = subprocess.Popen(args, preexec_fn=limit, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env={**os.environ, **threads})
        hung = False
        while proc.poll() is None:
            time.sleep(0.2)
            if time.time() - current.stat().st_mtime > hang_seconds:
                hung = True
                proc.kill()
                proc.wait()
        stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        part = _load(json_path)
        if hung or proc.returncode != 0:
            kind = "hang" if hung else "crash" if proc.returncode < 0 else "worker error"
            detail = f"signal {signal.Signals(-proc.returncode).name}" \
                if proc.returncode < 0 and not hung else f"exit {proc.returncode}"
            findings = state / "findings"
            findings.mkdir(exist_ok=True)
            stem = findings / f"{name}-{kind}-{restarts + 1}"
            stem.with_suffix(".input").write_bytes(current.read_bytes())
            stem.with_suffix(".txt").write_text(stderr)
            part.add(kind)
            part.findings.append(f"{kind} ({detail}): {stem}.input")
            restarts += 1
        total.merge(part)
        if not hung and proc.returncode == 0:
            return total


def atheris_worker(name: str, seconds: float, cases: int, state: Path) -> None:
    """Coverage-guided: libFuzzer mutates bytes, decoded into the target's input."""
    import atheris  # type: ignore[import-not-found]

    target = TARGETS[name]
    tally = Tally()
    current = state / f"{name}.current"

    def decode(data: bytes) -> Any:
        if name in ("law_bytes", "law_mutations", "rekey_mutations", "cli_show"):
            return data
        if name.startswith(("where", "formula")):
            return data.decode("utf-8", "replace")
        suffixes = [".csv", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz", ".parquet.gz"]
        head = data[:1][0] if data else 0
        return (suffixes[head % 6], data[1:], head // 6 % 3, (0, 1, 2, 1000)[head // 18 % 4])

    def one(data: bytes) -> None:
        case = decode(data)
        current.write_bytes(_describe(case))
        start = time.perf_counter()
        try:
            outcome = outcome_of(target, case)
        except Exception as exc:
            outcome = f"other: {type(exc).__name__}"
            tally.findings.append(f"{outcome}: {str(exc)[:200]!r}")
        tally.slowest = max(tally.slowest, time.perf_counter() - start)
        tally.add(outcome)
        if tally.cases % 100 == 0:
            tally.peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            _save(tally, state / f"{name}.json")

    with atheris.instrument_imports(include=["lawkit", "src_digest", "yaml"]):
        import lawkit.cli
        import lawkit.fitting.captures.read
        import lawkit.fitting.formula
        import lawkit.keying.rekey
        import lawkit.lawfiles.lawfile
        import lawkit.lawfiles.where  # noqa: F401  (instrumented: coverage guides the mutations)
    corpus = state / f"corpus-{name}"  # the valid inputs the mutations start from
    corpus.mkdir(exist_ok=True)
    if name in ("law_mutations", "rekey_mutations", "cli_show"):
        seeds = _law_seeds()
    elif name.startswith(("capture", "cli_fit")):
        suffixes = [".csv", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz", ".parquet.gz"]
        seeds = [bytes([suffixes.index(suffix)]) + data for suffix, data in _capture_seeds()]
    else:
        seeds = []
    for i, seed in enumerate(seeds):
        (corpus / f"seed-{i}").write_bytes(seed)
    atheris.Setup([sys.argv[0], f"-max_total_time={max(1, int(seconds))}",
                   f"-runs={cases}", "-print_final_stats=0", str(corpus)], one)
    with contextlib.suppress(SystemExit):
        atheris.Fuzz()
    _save(tally, state / f"{name}.json")


def _table(tallies: dict[str, Tally], seconds: float) -> str:
    columns = ["result", "LawkitError"]
    head = f"{'target':<18} {'cases':>8} {'result':>8} {'LawkitError':>11} {'findings':>8} " \
           f"{'slowest s':>9} {'peak MB':>8}"
    lines = [head, "-" * len(head)]
    for name, tally in tallies.items():
        found = sum(n for k, n in tally.counts.items() if k not in columns)
        lines.append(f"{name:<18} {tally.cases:>8} {tally.counts.get('result', 0):>8} "
                     f"{tally.counts.get('LawkitError', 0):>11} {found:>8} "
                     f"{tally.slowest:>9.3f} {tally.peak_mb:>8.0f}")
    total = sum(t.cases for t in tallies.values())
    lines.append(f"{total} cases in {seconds:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="budget per target")
    parser.add_argument("--cases", type=int, default=10**9, help="budget per target")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS),
                        help="a target to run (repeatable; default: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="targets run at once")
    parser.add_argument("--memory-mb", type=int, default=4096, help="RLIMIT_AS of a worker")
    parser.add_argument("--hang-seconds", type=float, default=HANG_SECONDS)
    parser.add_argument("--findings", type=Path, default=None,
                        help="where inputs of findings go (default: a temp folder)")
    parser.add_argument("--atheris", action="store_true", help="coverage-guided with atheris")
    parser.add_argument("--list", action="store_true", help="list the targets")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.list:
        for name, target in TARGETS.items():
            print(f"{name:<18} {(target.run.__doc__ or '').splitlines()[0]}")
        return 0
    if args.worker:
        if args.atheris:
            atheris_worker(args.worker, args.seconds, args.cases, args.state)
        else:
            worker(args.worker, args.seconds, args.cases, args.state)
        return 0
    if args.atheris:
        try:
            import atheris  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            print("atheris is not installed: pip install atheris (into .venv), or run "
                  "without --atheris", file=sys.stderr)
            return 2
    state = args.findings or Path(tempfile.mkdtemp(prefix="lawkit-fuzz-"))
    state.mkdir(parents=True, exist_ok=True)
    names = args.target or list(TARGETS)
    start = time.monotonic()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {name: pool.submit(run_target, name, args.seconds, args.cases, state,
                                     memory_mb=args.memory_mb, hang_seconds=args.hang_seconds,
                                     atheris=args.atheris) for name in names}
        tallies = {name: future.result() for name, future in futures.items()}
    print(_table(tallies, time.monotonic() - start))
    findings = [f"{name}: {f}" for name, t in tallies.items() for f in t.findings]
    for line in findings:
        print(line)
    print(f"inputs and tracebacks of findings: {state / 'findings'}" if findings else
          "no findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
