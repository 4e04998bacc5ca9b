"""Reading a big torch.profiler trace as captures: time and memory against a plain json.load.

Run: python bench/trace_read.py [--mb 1024] [--keep FILE]

It writes a synthetic kineto-like trace of about --mb MB (an object with `traceEvents`: each
step a `decode[bs=... tok=...]` user_annotation range with three region ranges on the engine
thread, about 400 aten `cpu_op`s with kineto's args, their `cuda_runtime` launches, GPU
`kernel`s on the device's pid and `ac2g` flow events; in kineto's order, ranges by end time),
then in a fresh process each:

- `json.load`: the whole document parsed into memory (the reference);
- `lawkit`: `lawkit.fitting.captures.trace.read_traces`, the rows of every step (ijson's C
  backend, streamed).

It prints each one's wall time and peak RSS growth over the process's start (after imports),
and the ratio lawkit/json.load. Targets: no slower than 2x json.load; a 1 GB trace
read with a peak RSS growth under 256 MiB, the rows aside. What it measured is in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAPPING = {
    "steps": [{"kind": "decode", "prefix": "decode[",
               "features": r"decode\[bs=(?P<batch_size>\d+) tok=(?P<num_tokens>\d+)\]"}],
    "regions": {"prepare_s": "prepare", "forward_s": "forward", "sample_s": "sample"},
}
OPS = ("aten::empty", "aten::to", "aten::_to_copy", "aten::copy_", "aten::linear",
       "aten::matmul", "aten::mm", "aten::add", "aten::mul", "aten::silu", "aten::view",
       "aten::reshape", "aten::transpose", "aten::cat", "aten::softmax", "aten::argmax")


def write_trace(path: Path, megabytes: int) -> int:
    """A kineto-like trace of about `megabytes` MB; its step count."""
    rng = random.Random(0)
    target = megabytes << 20
    external = 0
    at = 5_680_758_045_700.0
    steps = 0
    with path.open("w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "bench"}],\n'
                '"traceEvents": [\n')
        first = True
        while f.tell() < target:
            bs = rng.choice((1, 2, 4, 8, 16, 32, 64))
            events = []
            start = at
            for region in ("prepare", "forward", "sample"):
                region_start = at
                for _ in range(130):
                    external += 1
                    name = rng.choice(OPS)
                    events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 603,
                                   "tid": 665, "ts": round(at, 3), "dur": 4.125,
                                   "args": {"External id": external, "Record function id": 0,
                                            "Ev Idx": external}})
                    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                   "pid": 603, "tid": 665, "ts": round(at + 1, 3), "dur": 2.5,
                                   "args": {"External id": external, "cbid": 211,
                                            "correlation": external}})
                    events.append({"ph": "X", "cat": "kernel", "name": f"void {name}_kernel<4>",
                                   "pid": 0, "tid": 7, "ts": round(at + 30, 3), "dur": 3.0,
                                   "args": {"External id": external, "device": 0, "stream": 7,
                                            "correlation": external, "grid": [132, 1, 1],
                                            "block": [128, 1, 1]}})
                    events.append({"ph": "s", "id": external, "pid": 603, "tid": 665,
                                   "ts": round(at + 1, 3), "cat": "ac2g", "name": "ac2g"})
                    at += 5.0
                events.append({"ph": "X", "cat": "user_annotation", "name": region, "pid": 603,
                               "tid": 665, "ts": round(region_start, 3),
                               "dur": round(at - region_start, 3), "args": {}})
            events.append({"ph": "X", "cat": "user_annotation",
                           "name": f"decode[bs={bs} tok={bs}]", "pid": 603, "tid": 665,
                           "ts": round(start, 3), "dur": round(at - start + 1, 3),
                           "args": {"External id": external}})
            at += 20.0
            steps += 1
            text = ",\n".join(json.dumps(e, separators=(", ", ": ")) for e in events)
            f.write(text if first else ",\n" + text)
            first = False
        f.write('\n], "traceName": "bench"}\n')
    return steps


MEASURE = r'''
import json, resource, sys, time
from pathlib import Path

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

what, path, mapping = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
from lawkit.fitting.captures.files import find_captures
from lawkit.fitting.captures.trace import read_traces
from lawkit.fitting.captures.tracemap import trace_mapping
import ijson
start_mib = peak_mib()
started = time.perf_counter()
if what == "json.load":
    with open(path, "rb") as f:
        rows = len(json.load(f)["traceEvents"])
else:
    traces = read_traces(find_captures([path]), trace_mapping(mapping, "bench"))
    rows = len(traces[0].places)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "growth_mib": peak_mib() - start_mib, "rows": rows}))
'''


def measure(what: str, path: Path) -> dict[str, float]:
    """One reading in a fresh process: its seconds, peak RSS growth and row (event) count."""
    out = subprocess.run([sys.executable, "-c", MEASURE, what, str(path), json.dumps(MAPPING)],
                         check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=256, help="the trace's size in MB")
    parser.add_argument("--keep", type=Path, help="write the trace here and keep it")
    parser.add_argument("--skip-json-load", action="store_true",
                        help="measure lawkit only (json.load of 1 GB needs some 10 GB)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep or Path(folder) / "bench.pt.trace.json"
        started = time.perf_counter()
        steps = write_trace(path, args.mb)
        size = os.path.getsize(path) / (1 << 20)
        print(f"wrote {size:.0f} MiB, {steps} steps in {time.perf_counter() - started:.0f} s",
              flush=True)
        lawkit = measure("lawkit", path)
        print(f"lawkit     {lawkit['seconds']:7.2f} s  peak RSS +{lawkit['growth_mib']:6.0f} MiB"
              f"  ({lawkit['rows']:.0f} rows)", flush=True)
        if args.skip_json_load:
            return
        reference = measure("json.load", path)
        print(f"json.load  {reference['seconds']:7.2f} s  peak RSS "
              f"+{reference['growth_mib']:6.0f} MiB  ({reference['rows']:.0f} events)")
        print(f"lawkit / json.load: {lawkit['seconds'] / reference['seconds']:.2f}x time, "
              f"{lawkit['growth_mib'] / reference['growth_mib']:.3f}x peak memory growth")


if __name__ == "__main__":
    main()
