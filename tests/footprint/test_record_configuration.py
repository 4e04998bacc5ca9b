"""`lawkit footprint record` writes the configuration the engine read: each environment variable
Python code read from outside the recorded command, by name, with its value's sha256 (or
``absent``, or ``hidden`` for a secret's name), where it was read; and the process settings as
its steps began."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lawkit.footprint.measured.configuration import ConfigurationReads
from lawkit.footprint.measured.markers import Markers

READS = """
import os, subprocess, sys
import lawkit.footprint as fp
from atom.runner import Runner

os.getenv("LAWKIT_T_START")
os.environ["LAWKIT_T_SELF"] = "set by the engine"
os.environ["LAWKIT_T_CHILD"] = "set for the child"
fp.phase("steps")
for _ in range(2):
    Runner().run()
    with fp.region("sample_s"):
        os.environ.get("LAWKIT_T_SAMPLE")
        "LAWKIT_T_ABSENT" in os.environ
        os.environ["LAWKIT_T_SELF"]
        os.environb.get(b"LAWKIT_T_BYTES")
        os.getenv("MY_API_TOKEN")
subprocess.run([sys.executable, "-c",
                "import os; os.getenv('LAWKIT_T_CHILD'); os.getenv('LAWKIT_T_OUT')"], check=True)
"""
OUTSIDE = {"LAWKIT_T_START": "a", "LAWKIT_T_SAMPLE": "s", "LAWKIT_T_BYTES": "b",
           "LAWKIT_T_SELF": "outside", "LAWKIT_T_OUT": "o", "MY_API_TOKEN": "hunter2"}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _record(engine: Path, harness: str, env: dict[str, str]) -> dict[str, Any]:
    (engine / "harness.py").write_text(harness)
    environ = {k: v for k, v in os.environ.items() if k != "LAWKIT_T_ABSENT"}
    result = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                             "fp.json", "--", sys.executable, "harness.py"], cwd=engine,
                            env={**environ, **env}, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads((engine / "fp.json").read_text())
    return doc


def test_each_variable_read_from_outside_is_kept_by_name_with_where_it_was_read(
        engine: Path) -> None:
    environ = _record(engine, READS, OUTSIDE)["configuration"]["environ"]
    assert environ["LAWKIT_T_START"] == {"value": _sha("a"), "phases": ["startup"],
                                         "regions": [], "startup_regions": ["*"]}
    assert environ["LAWKIT_T_SAMPLE"] == {"value": _sha("s"), "phases": ["steps"],
                                          "regions": ["sample_s"], "startup_regions": []}
    assert environ["LAWKIT_T_ABSENT"]["value"] == "absent"
    assert environ["LAWKIT_T_ABSENT"]["regions"] == ["sample_s"]
    assert environ["LAWKIT_T_BYTES"]["value"] == _sha("b")  # through os.environb
    # a secret's name keeps no value
    assert environ["MY_API_TOKEN"]["value"] == "hidden"
    # a child counts as steps, no region open; what its parent set for it is the engine's
    assert environ["LAWKIT_T_OUT"] == {"value": _sha("o"), "phases": ["steps"],
                                       "regions": ["*"], "startup_regions": []}
    assert "LAWKIT_T_CHILD" not in environ
    # what the engine set before reading it follows from its code, not from outside
    assert "LAWKIT_T_SELF" not in environ
    # nor do the variables record itself sets for the recording
    assert not [n for n in environ if n.startswith("LAWKIT_FOOTPRINT") or n == "PYTHONPATH"]


WHOLE = """
import os
import lawkit.footprint as fp
from atom.runner import Runner

fp.phase("steps")
Runner().run()
with fp.region("schedule_s"):
    [k for k in os.environ if k.startswith("VLLM_")]
with fp.region("sample_s"):
    os.environ.copy()
"""


def test_an_iteration_or_a_copy_reads_every_variable(engine: Path) -> None:
    environ = _record(engine, WHOLE, {"LAWKIT_T_LISTED": "l"})["configuration"]["environ"]
    assert environ["LAWKIT_T_LISTED"] == {"value": _sha("l"), "phases": ["steps"],
                                          "regions": ["sample_s", "schedule_s"],
                                          "startup_regions": []}


def test_a_secret_listed_in_the_config_keeps_its_value(engine: Path) -> None:
    config = engine / "lawkit.toml"
    config.write_text(config.read_text() + '\n[footprint]\nenviron = ["MY_API_TOKEN"]\n')
    environ = _record(engine, READS, OUTSIDE)["configuration"]["environ"]
    assert environ["MY_API_TOKEN"]["value"] == _sha("hunter2")


SETTINGS = """
import gc, sys
import lawkit.footprint as fp
from atom.runner import Runner

gc.set_threshold(1000, 20, 30)
sys.setswitchinterval(0.002)
fp.phase("steps")
gc.set_threshold(1, 1, 1)  # after the steps began: not what they began with
Runner().run()
"""


def test_the_process_settings_it_was_given_are_taken_as_the_steps_begin(engine: Path) -> None:
    settings = _record(engine, SETTINGS, {"PYTHONHASHSEED": "7"})["configuration"]["settings"]
    # what the engine's own code set follows from that code (and the variables it read)
    assert "gc_threshold" not in settings and "switch_interval" not in settings
    assert settings["gc_enabled"] is True
    assert settings["hash_seed"] == "7"
    assert settings["flags"]["optimize"] == sys.flags.optimize
    if hasattr(os, "sched_getaffinity"):
        assert settings["cpus"] == sorted(os.sched_getaffinity(0))


CAPTURED = """
import gc
from lawkit import capture
from atom.runner import Runner

with capture.open("captures/run.csv", features=("n",), regions=("sample_s",)) as cap:
    cap.steps()
    gc.set_threshold(5000, 50, 50)  # after the steps began: not what they began with
    for n in range(2):
        with cap.step(n=n), cap.region("sample_s"):
            Runner().run()
"""


def test_a_capture_takes_the_settings_at_its_steps(engine: Path) -> None:
    settings = _record(engine, CAPTURED, {})["configuration"]["settings"]
    given = subprocess.run([sys.executable, "-c", "import gc; print(list(gc.get_threshold()))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    # the Python's own default (700 before 3.13, 2000 since), not the 5000 set after cap.steps()
    assert (str(settings["gc_threshold"]), settings["gc_enabled"]) == (given, True)


def test_reads_are_noted_by_kind_and_the_mapping_is_given_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAWKIT_T_ONE", "1")
    monkeypatch.delenv("LAWKIT_T_NONE", raising=False)
    markers = Markers()
    markers.phase = "steps"
    reads = ConfigurationReads(markers)
    environ, cls = os.environ, type(os.environ)
    reads.install()
    try:
        assert os.environ is environ and isinstance(os.environ, cls)
        assert os.getenv("LAWKIT_T_ONE") == "1" and os.getenv("LAWKIT_T_NONE") is None
        markers.local.regions = ("sample_s",)
        assert "LAWKIT_T_NONE" not in os.environ
        assert os.environ.copy()["LAWKIT_T_ONE"] == "1"
        reads.switched_phase("steps")
    finally:
        reads.uninstall()
    assert type(os.environ) is cls
    saved = reads.to_json()
    assert saved["settings"]["gc_enabled"] is gc.isenabled()
    by = {(name, tuple(regions)): digest for name, _, regions, digest in saved["environ"]}
    assert by[("LAWKIT_T_ONE", ())] == _sha("1")
    assert by[("LAWKIT_T_NONE", ())] is None
    assert by[("LAWKIT_T_NONE", ("sample_s",))] is None
    assert by[("LAWKIT_T_ONE", ("sample_s",))] == _sha("1")  # the copy read it there
