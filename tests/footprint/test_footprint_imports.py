"""`lawkit footprint record` and `footprint diff` import no numpy, pandas or scipy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from footprint_engine import copy_engine

CHECK = """
import sys
from lawkit.cli import app
try:
    app({args!r})
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("numpy", "pandas", "scipy", "pyarrow", "matplotlib")
               if m in sys.modules)
print("exit", code, "heavy", heavy, file=sys.stderr)
"""


def _run(args: list[str], cwd: Path) -> str:
    result = subprocess.run([sys.executable, "-c", CHECK.format(args=args)], cwd=cwd,
                            capture_output=True, text=True, check=False)
    return result.stderr.strip().splitlines()[-1]


def test_record_and_diff_import_no_numpy_pandas_or_scipy(tmp_path: Path) -> None:
    engine = copy_engine(tmp_path / "engine")
    record = ["footprint", "record", "--out", "fp.json", "--", sys.executable, "run.py"]
    assert _run(record, engine) == "exit 0 heavy []"
    assert _run(["footprint", "diff", "fp.json"], engine) == "exit 0 heavy []"
    assert _run(["footprint", "diff", "fp.json", "--json"], engine) == "exit 0 heavy []"
