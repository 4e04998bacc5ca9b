"""Chrome Trace Event Format files (`*.json`, `*.json.gz`: torch.profiler's kineto traces,
viztracer, Perfetto's JSON export) read as capture records, by a `TraceMapping`.

A trace is streamed with ijson's C backend (yajl2_c), one event at a time, whatever its size:
only the ranges the mapping names (steps and regions, found by name, with the answer cached by
name) are kept, so a trace of gigabytes of aten ops is read in memory of the order of its
steps (bench/trace_read.py). Events need not be sorted. `X` events are complete ranges; `B`
and `E` events are paired per thread in time order (a `B` of a step or region without its `E`
is an error), so each is kept as a mark until the end (an `E` names no range: some 100 bytes
a mark, the one cost that grows with a trace of `B`/`E` events); `ts` and `dur` are
microseconds.

A step is a range whose name a step kind selects; its row holds the step's number, its rank,
its kind, its features (the named groups of the kind's pattern, and `args` keys), its own time
(`step_s`) and each region's time in it: the sum of the region's outermost ranges inside the
step on the step's thread, in seconds, empty when the step did not enter it. A step whose
name the features pattern does not match is left out and counted in `TraceRows.note`.

Ranks: each process (pid) of each file that holds steps is a rank, numbered in file order and
then by pid. `ranks = "rows"` gives a row per step of each rank; `ranks = "max"` a row per
step with the maximum over ranks of its time, each region and each numeric feature, steps
matched across ranks by their order or by an `args` key (`step_id`); a rank missing a step is
an error naming both.
"""

from __future__ import annotations

import bisect
import gzip
import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lawkit.config import digest_problem
from lawkit.errors import CaptureError
from lawkit.fitting.captures.files import Capture
from lawkit.fitting.captures.tracemap import TraceMapping

US = 1e-6
"""Seconds in a microsecond: `ts` and `dur` are microseconds."""
_EPS_US = 0.002
"""How far a region may stick out of its step and still be in it: traces print `ts` and `dur`
rounded to the nanosecond, so a child's end may pass its parent's by one."""
_NAME_CACHE = 1 << 16
"""Names whose role is remembered; past this the cache starts afresh (a trace of unique
names, such as kernels with their shapes, would otherwise grow it without bound)."""

_NOT_CACHED = object()


@dataclass
class _Step:
    rank: tuple[int, Any]
    """(the file's index, the pid)."""
    tid: Any
    ts: float
    end: float
    name: str
    kind: int
    args: dict[str, Any]


@dataclass
class _File:
    """What one trace file holds of the mapping: its steps, its regions by thread."""

    capture: Capture
    index: int
    steps: list[_Step] = field(default_factory=list)
    regions: dict[tuple[Any, Any], list[tuple[float, float, str]]] = field(default_factory=dict)
    events: int = 0
    categories: dict[Any, int] = field(default_factory=dict)
    digest: str | None = None


@dataclass
class TraceRows:
    """The rows of one trace file: columns as lists, where each row came from, a note."""

    capture: Capture
    columns: dict[str, list[Any]]
    places: list[str]
    digest: str | None
    note: str | None


def read_traces(captures: Sequence[Capture], mapping: TraceMapping, *,
                digest_length: int | None = None) -> list[TraceRows]:
    """The rows of traces read together (the ranks of several files are one set of ranks):
    one `TraceRows` a file, its ranks' rows (for `ranks = "max"`, every row under the first
    file, none under the others)."""
    files = [_read_file(capture, index, mapping, digest_length)
             for index, capture in enumerate(captures)]
    _check_patterns(files, mapping)
    ranks = sorted({step.rank for f in files for step in f.steps}, key=_rank_order)
    number = {rank: i for i, rank in enumerate(ranks)}
    left_out: dict[str, list[str]] = {}
    rows_of: dict[tuple[int, Any], list[dict[str, Any]]] = {rank: [] for rank in ranks}
    for f in files:
        for step, row in _step_rows(f, mapping, left_out):
            row[mapping.rank_column] = number[step.rank]
            rows_of[step.rank].append(row)
    note = _left_out_note(left_out, mapping)
    if mapping.ranks == "max" and len(ranks) > 1:
        rows = _max_over_ranks(rows_of, ranks, files, mapping)
        return [_rows(f, rows if f is files[0] else [], mapping, note if f is files[0] else None)
                for f in files]
    out = []
    for index, f in enumerate(files):
        mine = [row for rank in ranks if rank[0] == index for row in rows_of[rank]]
        out.append(_rows(f, mine, mapping, note if index == 0 else None))
    return out


# -- one file, streamed -----------------------------------------------------------------------


def _rank_order(rank: tuple[int, Any]) -> tuple[int, int, Any]:
    """Ranks in file order, then by pid (numbers before text)."""
    return (rank[0], 0, rank[1]) if isinstance(rank[1], int) else (rank[0], 1, str(rank[1]))


def _read_file(capture: Capture, index: int, mapping: TraceMapping,
               digest_length: int | None) -> _File:
    out = _File(capture, index)
    roles: dict[Any, Any] = {}
    open_ranges: dict[tuple[Any, Any], list[tuple[float, int, str, Any, Any]]] = {}
    order = itertools.count()
    wants = mapping.wants_category
    for event in _events(capture):
        out.events += 1
        if not isinstance(event, dict):
            raise CaptureError(f"event {out.events} is not an object: a trace event is "
                               "{\"ph\": ..., \"name\": ..., \"ts\": ...}", path=capture.shown)
        ph = event.get("ph")
        if ph == "X" or ph == "B":
            name = event.get("name")
            role = roles.get(name, _NOT_CACHED)
            if role is _NOT_CACHED:
                if len(roles) >= _NAME_CACHE:
                    roles.clear()
                role = roles[name] = _role(name, mapping)
            category = event.get("cat")
            out.categories[category] = out.categories.get(category, 0) + 1
            if ph == "B":  # every B kept, as the E events name none: a mark, or the range's
                kept = role is not None and wants(category)
                thread = _thread(event)
                open_ranges.setdefault(thread, []).append(
                    (_time(event, "ts", capture), next(order), "B", name if kept else None,
                     event.get("args") if kept else None))
                continue
            if role is None or not wants(category):
                continue
            ts = _time(event, "ts", capture)
            _add(out, role, event, name, ts, ts + _time(event, "dur", capture))
        elif ph == "E":
            thread = _thread(event)
            open_ranges.setdefault(thread, []).append(
                (_time(event, "ts", capture), next(order), "E", None, None))
    if not out.events:
        raise CaptureError("no trace events: expected a Chrome Trace Event Format file (an "
                           "object with \"traceEvents\", or an array of events)",
                           path=capture.shown)
    for thread, marks in open_ranges.items():
        _pair(out, thread, marks, roles, mapping)
    for ranges in out.regions.values():
        ranges.sort()
    if mapping.digest is not None:
        out.digest = _metadata_digest(capture, mapping.digest, digest_length)
    return out


def _role(name: Any, mapping: TraceMapping) -> tuple[int, tuple[str, ...]] | None:
    """Which step kind (or -1) and regions a range of this name is; None when neither."""
    if not isinstance(name, str):
        return None
    kind = next((i for i, step in enumerate(mapping.steps)
                 if step.select.regex.fullmatch(name)), -1)
    regions = tuple(column for column, selector in mapping.regions.items()
                    if selector.regex.fullmatch(name))
    return (kind, regions) if kind >= 0 or regions else None


def _thread(event: dict[str, Any]) -> tuple[Any, Any]:
    """An event's (pid, tid); a value that is no number or text as its JSON text (a key)."""
    pid, tid = event.get("pid"), event.get("tid")
    if not isinstance(pid, (int, str)) or isinstance(pid, bool):
        pid = json.dumps(pid)
    if not isinstance(tid, (int, str)) or isinstance(tid, bool):
        tid = json.dumps(tid)
    return pid, tid


def _add(out: _File, role: Any, event: dict[str, Any], name: Any, ts: float,
         end: float) -> None:
    """A range the mapping names: a step, a region's range, or both."""
    kind, regions = role
    thread = _thread(event)
    if kind >= 0:
        args = event.get("args")
        out.steps.append(_Step(rank=(out.index, thread[0]), tid=thread[1],
                               ts=ts, end=end, name=name, kind=kind,
                               args=args if isinstance(args, dict) else {}))
    for column in regions:
        out.regions.setdefault(thread, []).append((ts, end, column))


def _pair(out: _File, thread: tuple[Any, Any], marks: list[tuple[float, int, str, Any, Any]],
          roles: dict[Any, Any], mapping: TraceMapping) -> None:
    """B and E events of one thread, in time order (file order at equal times), as ranges."""
    marks.sort(key=lambda m: (m[0], m[1]))
    stack: list[tuple[float, int, str, Any, Any]] = []
    for mark in marks:
        if mark[2] == "B":
            stack.append(mark)
        elif stack:
            begin = stack.pop()
            name = begin[3]
            if name is not None:
                role = roles.get(name) or _role(name, mapping)
                event = {"pid": thread[0], "tid": thread[1], "args": begin[4]}
                _add(out, role, event, name, begin[0], mark[0])
    for begin in stack:
        if begin[3] is not None:
            raise CaptureError(f"the B event of {begin[3]!r} at ts {begin[0]} (pid {thread[0]}, "
                               f"tid {thread[1]}) has no E event: a trace cut short? Take the "
                               "trace again, or stop the profiler after the range has ended",
                               path=out.capture.shown)


def _time(event: dict[str, Any], key: str, capture: Capture) -> float:
    value = event.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value)
    raise CaptureError(f"the {event.get('ph')} event {event.get('name')!r} has {key} "
                       f"{value!r}: expected a number of microseconds", path=capture.shown)


def _events(capture: Capture) -> Iterator[Any]:
    """The trace's events, streamed: `traceEvents` of an object, or a bare array's items (the
    array form may end without its `]`, as Chrome's format allows for a trace cut short)."""
    import ijson  # type: ignore[import-untyped]

    with _open(capture) as f:
        first = _first_byte(f, capture)
        bare = first == b"["
        try:
            yield from ijson.items(f, "item" if bare else "traceEvents.item", use_float=True)
        except ijson.IncompleteJSONError as exc:
            cut = "premature EOF" in str(exc)
            if not (bare and cut):
                whole = ": is the trace whole?" if cut else ""
                raise CaptureError(f"not valid JSON: {_first_line(exc)}{whole}",
                                   path=capture.shown) from None
        except ijson.JSONError as exc:
            raise CaptureError(f"not valid JSON: {_first_line(exc)}",
                               path=capture.shown) from None
        except (OSError, EOFError) as exc:
            raise CaptureError(f"cannot read: {exc}", path=capture.shown) from None


def _open(capture: Capture) -> Any:
    """The file's bytes, decompressed: a reader with `peek`."""
    try:
        if capture.compressed:
            return gzip.GzipFile(capture.path, "rb")
        return capture.path.open("rb")
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror}", path=capture.shown) from None


def _first_byte(f: Any, capture: Capture) -> bytes:
    """The first byte that is not white space (the reader is put back before it)."""
    try:
        head = f.peek(64)
    except (OSError, EOFError) as exc:
        raise CaptureError("not a valid gzip file (named .gz): decompress it or fix its name"
                           if capture.compressed else f"cannot read: {exc}",
                           path=capture.shown) from None
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if text not in (b"[", b"{"):
        raise CaptureError("not a JSON trace: expected a Chrome Trace Event Format file (an "
                           "object with \"traceEvents\", or an array of events)",
                           path=capture.shown)
    return bytes(text)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _metadata_digest(capture: Capture, key: str, length: int | None) -> str:
    """The digest at the trace's top-level `key` (kineto writes `prof.add_metadata` keys
    before the events, so the scan stops early)."""
    import ijson

    with _open(capture) as f:
        try:
            value = next(ijson.items(f, key), None)
        except ijson.JSONError:
            value = None
    if not isinstance(value, str):
        raise CaptureError(f"no digest at the trace's top-level key {key!r} ([trace] digest): "
                           f"add it (torch.profiler: prof.add_metadata({key!r}, DIGEST)) or "
                           "pass --captured-on", path=capture.shown)
    problem = None if length is None else digest_problem(value, length)
    if problem is not None:
        raise CaptureError(f"top-level key {key!r} {value[:60]!r}: {problem}",
                           path=capture.shown)
    return value


# -- steps into rows ------------------------------------------------------------------------


def _check_patterns(files: Sequence[_File], mapping: TraceMapping) -> None:
    """Every step kind and region selects some range; else one line on what to fix."""
    shown = ", ".join(f.capture.shown for f in files)
    kinds = {step.kind for f in files for step in f.steps}
    if not kinds:
        raise CaptureError(_no_steps(files, mapping), path=shown)
    for i, step in enumerate(mapping.steps):
        if i not in kinds:
            raise CaptureError(f"no range matches step kind {step.kind!r} ({step.select.shown()} "
                               f"in {mapping.where}): fix the pattern, or drop the entry",
                               path=shown)
    seen = {column for f in files for ranges in f.regions.values() for _, _, column in ranges}
    for column, selector in mapping.regions.items():
        if column not in seen:
            raise CaptureError(f"no range matches region {column!r} ({selector.shown()} in "
                               f"{mapping.where}): fix the pattern, or drop the region",
                               path=shown)


def _no_steps(files: Sequence[_File], mapping: TraceMapping) -> str:
    """Why a trace holds no step, in one line."""
    selectors = " or ".join(step.select.shown() for step in mapping.steps)
    categories: dict[str, int] = {}
    for f in files:
        for category, count in f.categories.items():
            categories[str(category)] = categories.get(str(category), 0) + count
    if "kernel" in categories and not categories.get("user_annotation"):
        return (f"no range matches the steps ({selectors}), and the trace holds GPU kernels but "
                "no record_function range: torch.profiler records CPU ops, record_function "
                "ranges included, only on the thread that started it, so an engine whose steps "
                "run in a background thread needs the profiler started in that thread")
    return (f"no range matches the steps ({selectors} in {mapping.where}): fix the pattern (the "
            "trace's range names are in its \"name\" fields)")


def _step_rows(f: _File, mapping: TraceMapping,
               left_out: dict[str, list[str]]) -> Iterator[tuple[_Step, dict[str, Any]]]:
    """Each step of a file with its row (features, times), in time order per rank."""
    starts = {thread: [r[0] for r in ranges] for thread, ranges in f.regions.items()}
    counters: dict[tuple[int, Any], int] = {}
    for step in sorted(f.steps, key=lambda s: (_rank_order(s.rank), s.ts)):
        kind = mapping.steps[step.kind]
        row: dict[str, Any] = {}
        if kind.features is not None:
            match = kind.features.fullmatch(step.name)
            if match is None:
                left_out.setdefault(kind.kind, []).append(step.name)
                continue
            for column, value in match.groupdict().items():
                row[column] = _value(value) if value is not None else kind.defaults.get(column)
        for column, key in kind.args.items():
            row[column] = step.args.get(key, kind.defaults.get(column))
        for column, value in kind.defaults.items():
            row.setdefault(column, value)
        number = counters.get(step.rank, 0)
        counters[step.rank] = number + 1
        row["step"] = number
        row[mapping.kind_column] = kind.kind
        row[mapping.step_column] = (step.end - step.ts) * US
        row.update(_region_times(f, step, starts, mapping))
        row["_place"] = (f"step {step.name[:60]!r} at ts {step.ts:.3f} us, pid "
                         f"{step.rank[1]} tid {step.tid}")
        row["_id"] = step.args.get(mapping.step_id) if mapping.step_id else number
        yield step, row


def _region_times(f: _File, step: _Step, starts: dict[tuple[Any, Any], list[float]],
                  mapping: TraceMapping) -> dict[str, float | None]:
    """Each region's time in the step: its outermost ranges inside the step, summed."""
    times: dict[str, float | None] = dict.fromkeys(mapping.regions)
    thread = (step.rank[1], step.tid)
    ranges = f.regions.get(thread)
    if not ranges:
        return times
    ends: dict[str, float] = {}
    at = bisect.bisect_left(starts[thread], step.ts - _EPS_US)
    while at < len(ranges) and ranges[at][0] <= step.end + _EPS_US:
        ts, end, column = ranges[at]
        at += 1
        if end > step.end + _EPS_US or ts < ends.get(column, -1.0):
            continue  # past the step, or inside a range of its own region already counted
        ends[column] = end
        times[column] = (times[column] or 0.0) + (end - ts) * US
    return times


def _value(text: str) -> Any:
    """A named group's text as a number where it is one (`117`, `0.5`), else as text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _left_out_note(left_out: dict[str, list[str]], mapping: TraceMapping) -> str | None:
    if not left_out:
        return None
    parts = [f"{len(names)} of kind {kind!r} (e.g. {names[0][:60]!r})"
             for kind, names in left_out.items()]
    return (f"steps left out, their name not matching their kind's features pattern "
            f"({mapping.where}): {'; '.join(parts)}")


def _max_over_ranks(rows_of: dict[tuple[int, Any], list[dict[str, Any]]],
                    ranks: list[tuple[int, Any]], files: Sequence[_File],
                    mapping: TraceMapping) -> list[dict[str, Any]]:
    """A row per step: each time and numeric feature the maximum over ranks."""
    by_id = []
    for rank in ranks:
        ids: dict[Any, dict[str, Any]] = {}
        for row in rows_of[rank]:
            if row["_id"] in ids:
                raise CaptureError(f"rank {_rank_name(rank, files)} has two steps with "
                                   f"{_id_name(mapping)} {row['_id']!r}: a step id names one "
                                   "step", path=files[rank[0]].capture.shown)
            ids[row["_id"]] = row
        by_id.append(ids)
    first = by_id[0]
    for rank, ids in zip(ranks[1:], by_id[1:], strict=True):
        for missing, have, named in ((set(first) - set(ids), ranks[0], rank),
                                      (set(ids) - set(first), rank, ranks[0])):
            if missing:
                step = min(missing, key=str)
                raise CaptureError(f"rank {_rank_name(named, files)} has no step "
                                   f"{_id_name(mapping)} {step!r}, which rank "
                                   f"{_rank_name(have, files)} has: give every rank's trace "
                                   "the same steps (or ranks = \"rows\" in the mapping)",
                                   path=files[named[0]].capture.shown)
    rows = []
    for key, row in first.items():
        merged = dict(row)
        for ids in by_id[1:]:
            other = ids[key]
            for column, value in other.items():
                mine = merged.get(column)
                if column == mapping.kind_column and value != mine:
                    merged[column] = "+".join(sorted({*str(mine).split("+"), str(value)}))
                elif _is_number(value) and (mine is None or (_is_number(mine) and value > mine)):
                    merged[column] = value
        merged[mapping.rank_column] = None
        rows.append(merged)
    return rows


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _id_name(mapping: TraceMapping) -> str:
    return f"with args {mapping.step_id!r}" if mapping.step_id else "number"


def _rank_name(rank: tuple[int, Any], files: Sequence[_File]) -> str:
    return f"pid {rank[1]} of {files[rank[0]].capture.shown}"


def _rows(f: _File, rows: list[dict[str, Any]], mapping: TraceMapping,
          note: str | None) -> TraceRows:
    columns: dict[str, list[Any]] = {c: [row.get(c) for row in rows] for c in mapping.columns()}
    if all(v is None for v in columns[mapping.rank_column]):
        del columns[mapping.rank_column]
    return TraceRows(capture=f.capture, columns=columns,
                     places=[row["_place"] for row in rows], digest=f.digest, note=note)


__all__ = ["US", "TraceRows", "read_traces"]
