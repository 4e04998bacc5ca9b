"""`lawkit footprint record` keeps each distribution that ran by content: how it was installed
and from where, each of its files that ran by sha256, and each Python file's units with their
digests, phases and regions, as for a hashed engine file; against real installs that pip makes
offline in the test (from a folder of wheels as from an index, a wheel file, a folder,
editable), an ``.egg-info`` install, a ``.pth`` file that imports a package at start-up, and two
distributions that install the same module."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testing.installs import build_wheel_of, install_egg_info, measured_env, write_project
from testing.wheels import make_venv, pip

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="units of dependencies by region: sys.monitoring")

HELPER = "def used(n):\n    return n + 1\n\n\ndef never():\n    return 0\n"
PATCH = ("import json\n\n_dumps = json.dumps\n\n\ndef dumps(obj, **kw):\n"
         "    return _dumps(obj, **kw) * 30\n\n\njson.dumps = dumps\n")
HARNESS = """
import json
import lawkit.footprint as fp
from atom.runner import Runner
import helper.core, indexed, archived, folder, eggy.core, shared.mod, twice

fp.phase("steps")
for _ in range(2):
    Runner().run()
    with fp.region("sample_s"):
        helper.core.used(1)
        shared.mod.shared()
        eggy.core.egg()
    with fp.region("schedule_s"):
        json.dumps({"a": 1})
        indexed.idx()
with fp.region("sample_s"):
    twice.first()
with fp.region("schedule_s"):
    twice.second()
for region in ("sample_s", "schedule_s"):  # its file ran in both: first fires no more
    with fp.region(region):
        twice.first()
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One recording of HARNESS in a venv holding every kind of install; the footprint's
    environment and the project folder of the editable install."""
    base = tmp_path_factory.mktemp("deps")
    python = make_venv(base / "venv")
    helper = write_project(base / "helper", "helper", "0.1", {"helper/core.py": HELPER})
    pip(python, "install", "-e", str(helper))
    indexed = write_project(base / "indexed", "indexed", "1.0",
                            {"indexed/__init__.py": "def idx():\n    return 1\n"})
    build_wheel_of(indexed, base / "index")
    pip(python, "install", "--find-links", str(base / "index"), "indexed==1.0")
    archived = build_wheel_of(write_project(base / "archived", "archived", "2.0", {}),
                              base / "files")
    pip(python, "install", str(archived))
    pip(python, "install", str(write_project(base / "folder", "folder", "3.0", {})))
    for name in ("alpha", "beta"):  # both install shared/mod.py; beta's is the one on disk
        pip(python, "install", str(write_project(base / name, name, "1.0", {
            "shared/__init__.py": "", "shared/mod.py": f"def shared():\n    return {name!r}\n"})))
    pip(python, "install", str(write_project(base / "patcher", "patcher", "1.0", {
        "patcher/__init__.py": PATCH, "patcher.pth": "import patcher\n"})))
    install_egg_info(python, "eggy", "1.0", {"core.py": "def egg():\n    return 1\n"})
    pip(python, "install", str(write_project(base / "twice", "twice", "1.0", {
        "twice/__init__.py": "def first():\n    return 1\n\n\ndef second():\n    return 2\n"})))
    from footprint_engine import copy_engine

    engine = copy_engine(base / "engine")
    (engine / "harness.py").write_text(HARNESS)
    result = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                             "fp.json", "--", str(python), "harness.py"], cwd=engine,
                            env=measured_env(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads((engine / "fp.json").read_text())
    assert doc["schema"] == "lawkit-footprint/3"
    return doc["environment"], helper


def test_an_editable_install_keeps_its_folder_and_each_unit_where_it_ran(
        recorded: tuple[dict[str, Any], Path]) -> None:
    env, project = recorded
    helper = env["distributions"]["helper"]
    assert (helper["install"], helper["version"]) == ("editable", "0.1")
    assert helper["source"] == project.resolve().as_uri()
    core = helper["files"]["helper/core.py"]
    assert core["sha256"] == hashlib.sha256(HELPER.encode()).hexdigest()
    assert core["native"] is False
    used, never, body = (core["units"][n] for n in ("used", "never", "<module>"))
    assert (used["phases"], used["regions"]) == (["steps"], ["sample_s"])
    assert used["code"] and used["normal"]
    assert never["phases"] == [] and never["regions"] == []
    assert "startup" in body["phases"] and body["startup_regions"] == ["*"]
    assert helper["regions"] == ["sample_s"]


def test_each_install_kind_is_told_apart(recorded: tuple[dict[str, Any], Path]) -> None:
    dists = recorded[0]["distributions"]
    assert (dists["indexed"]["install"], dists["indexed"]["source"]) == ("index", None)
    assert dists["archived"]["install"] == "archive"
    assert dists["archived"]["source"].endswith("archived-2.0-py3-none-any.whl")
    assert dists["folder"]["install"] == "directory"
    assert dists["indexed"]["files"]["indexed/__init__.py"]["units"]["idx"]["regions"] == \
        ["schedule_s"]
    assert len(dists["indexed"]["record"]) == 64


def test_a_module_two_distributions_install_belongs_to_each(
        recorded: tuple[dict[str, Any], Path]) -> None:
    dists = recorded[0]["distributions"]
    for name in ("alpha", "beta"):
        mod = dists[name]["files"]["shared/mod.py"]
        assert mod["units"]["shared"]["regions"] == ["sample_s"], name
    assert dists["alpha"]["files"]["shared/mod.py"]["sha256"] == \
        hashlib.sha256(b"def shared():\n    return 'beta'\n").hexdigest()


def test_a_function_run_again_where_its_file_ran_keeps_that_region(
        recorded: tuple[dict[str, Any], Path]) -> None:
    """The recorder turns a file's code off where the file has run: a function of it that ran
    in one region, then in another where only its neighbour had run, fired nothing there and
    still counts there."""
    units = recorded[0]["distributions"]["twice"]["files"]["twice/__init__.py"]["units"]
    assert units["first"]["regions"] == ["sample_s", "schedule_s"]


def test_an_egg_info_install_is_a_distribution(recorded: tuple[dict[str, Any], Path]) -> None:
    env = recorded[0]
    eggy = env["distributions"]["eggy"]
    assert (eggy["install"], eggy["version"]) == ("egg-info", "1.0")
    assert eggy["files"]["eggy/core.py"]["units"]["egg"]["regions"] == ["sample_s"]
    assert not [p for p in env["unpackaged"] if "eggy" in p]


def test_a_package_a_pth_file_imports_counts_everywhere(
        recorded: tuple[dict[str, Any], Path]) -> None:
    """It patched json.dumps before the recorder started, so where its code runs is unseen:
    every unit of it counts in every phase and region the process was in."""
    env = recorded[0]
    assert "patcher" in env["before_recorder"]
    patcher = env["distributions"]["patcher"]
    init = patcher["files"]["patcher/__init__.py"]
    for unit in ("dumps", "<module>"):
        assert init["units"][unit]["phases"] == ["startup", "steps"], unit
        assert init["units"][unit]["regions"] == ["*", "sample_s", "schedule_s"], unit
