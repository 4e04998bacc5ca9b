"""Convert Vidur's Sarathi-Serve CPU-overhead profile into lawkit's capture format.

Milliseconds per step become seconds; one column per overhead; `model`, `tp`, `batch_size`.
Standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OVERHEADS = {
    "schedule_s": "schedule_mean",
    "sampler_s": "sampler_e2e_mean",
    "prepare_inputs_s": "prepare_inputs_e2e_mean",
    "process_model_outputs_s": "process_model_outputs_mean",
}


def convert(source: Path, target: Path) -> int:
    """Write `target` from `source`; returns the number of rows."""
    with source.open(newline="") as f:
        rows = list(csv.DictReader(f))
    with target.open("w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["model", "tp", "batch_size", *OVERHEADS])
        for row in rows:
            seconds = [repr(float(row[column]) / 1000.0) for column in OVERHEADS.values()]
            out.writerow([row["model_name"], int(row["tensor_parallel_degree"]),
                          int(row["batch_size"]), *seconds])
    return len(rows)


if __name__ == "__main__":
    n = convert(HERE / "cpu_overheads.csv", HERE / "captures.csv")
    sys.stdout.write(f"wrote {HERE / 'captures.csv'} ({n} rows)\n")
