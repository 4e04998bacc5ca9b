"""Engine code compiled by the real ``torch.compile`` (TorchDynamo's frame evaluator runs a
transformed copy of the function's code, its original never starting) counts for its unit in
the region it ran in, and an edit of it is never `untouched`. torch is not in the suite's
install: these tests run where torch is (the GPU machine's checks) and are skipped elsewhere;
tests/footprint/test_soundness_gaps.py covers the same path with ctypes standing in for the
frame evaluator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from footprint_engine import edit, lawkit, recorded

torch = pytest.importorskip("torch")

ENGINE = """\
import torch

SCALE = 2.0


def sample(x):
    return torch.argmax(x * SCALE + 1.0, dim=-1)


def sample_broken(x):
    y = x * SCALE
    torch._dynamo.graph_break()
    return torch.argmax(y + 1.0, dim=-1)
"""

HARNESS = """\
import sys
import torch
import lawkit.footprint as fp
from atom import kernels
backend, device, name = sys.argv[1], sys.argv[2], sys.argv[3]
fn = torch.compile(getattr(kernels, name), backend=backend)
x = torch.ones(4, 8, device=device)
fn(x)  # compiled at start-up: in steps only the compiled copy runs
fp.phase("steps")
for _ in range(3):
    with fp.region("sample_s"):
        fn(x)
"""


def _backends() -> list[tuple[str, str]]:
    found = [("eager", "cpu"), ("aot_eager", "cpu")]
    if torch.cuda.is_available():
        found.append(("inductor", "cuda"))
    return found


@pytest.mark.skipif(not hasattr(__import__("sys"), "monitoring"),
                    reason="regions of a compiled copy need sys.monitoring (Python 3.12+)")
@pytest.mark.parametrize("name", ["sample", "sample_broken"])
@pytest.mark.parametrize(("backend", "device"), _backends())
def test_a_function_under_torch_compile_counts_in_its_region_and_its_edit_is_steps(
        engine: Path, backend: str, device: str, name: str) -> None:
    (engine / "atom" / "kernels.py").write_text(ENGINE)
    doc = recorded(engine, HARNESS.replace("sys.argv[1], sys.argv[2], sys.argv[3]",
                                           f"{backend!r}, {device!r}, {name!r}"))
    unit = doc["files"]["atom/kernels.py"]["units"][name]
    assert "steps" in unit["phases"]
    assert set(unit["regions"]) & {"sample_s", "*"}, unit
    old = {"sample": "x * SCALE + 1.0", "sample_broken": "y + 1.0"}[name]
    edit(engine / "atom" / "kernels.py", old, old.replace("1.0", "2.0"))
    result = lawkit("footprint", "diff", "fp.json", "--json", cwd=engine)
    assert result.returncode in (0, 1), result.stderr
    assert json.loads(result.stdout)["verdict"] == "steps"
