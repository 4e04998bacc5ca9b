"""The seed's shape end to end (issue 39): an engine whose sampler region calls a helper
distribution installed editable (`pip install -e`, offline) and reads an environment variable,
recorded by `lawkit footprint record`, then judged against `--env current` by `footprint diff`
and `check`: nothing changed is untouched; a comment in the helper's function that ran is
layout only; an edit to a helper function that never ran is untouched; a code edit to the one
that ran, or the variable set to another value, makes the sampler's law `steps` and the
scheduler's `untouched`.

`current` is the environment lawkit runs in: the engine's venv's site-packages go first on
this process's path, as where lawkit is installed beside the engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testing.cli import invoke as lawkit
from testing.installs import measured_env, write_project
from testing.lawrepo import body_of, law_text
from testing.wheels import make_venv, pip, site_packages

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="dependencies by region: sys.monitoring")

HELPER = '''\
def top_k(logits, k):
    return sorted(logits)[-k:]


def never_called(x):
    return x + 1
'''
HARNESS = """
import os
import lawkit.footprint as fp
from atom.runner import Runner
import helper.core

fp.phase("steps")
for _ in range(2):
    Runner().run()
    with fp.region("sample_s"):
        helper.core.top_k([3, 1, 2], int(os.environ.get("ATOM_SAMPLE_K", "1")))
    with fp.region("schedule_s"):
        sorted([3, 2, 1])
"""
LAWS = [{"name": "sampling", "target": "sample_s", "terms": {"1": 0.0011}},
        {"name": "scheduling", "target": "schedule_s", "terms": {"1": 0.0021}}]


@dataclass(frozen=True)
class Seed:
    engine: Path
    helper: Path


@pytest.fixture
def seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Seed]:
    from footprint_engine import copy_engine

    python = make_venv(tmp_path / "venv")
    helper = write_project(tmp_path / "helper", "helper", "0.1", {"helper/core.py": HELPER})
    pip(python, "install", "-e", str(helper))
    engine = copy_engine(tmp_path / "engine")
    (engine / "harness.py").write_text(HARNESS)
    env = {**measured_env(), "ATOM_SAMPLE_K": "2"}
    result = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                             "fp.json", "--", str(python), "harness.py"], cwd=engine,
                            env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    raw = (engine / "fp.json").read_bytes()
    digest = json.loads(raw)["digest"]
    fit = ("fit", {"digest": digest, "at": "2026-12-06T09:00:00Z", "records": 10,
                   "body": body_of(LAWS), "captures": [],
                   "footprint": {"path": "fp.json", "sha256": hashlib.sha256(raw).hexdigest()}})
    (engine / "laws").mkdir()
    (engine / "laws" / "host.yaml").write_text(law_text(digest, "a", laws=LAWS,
                                                        provenance=[fit]))
    monkeypatch.syspath_prepend(str(site_packages(tmp_path / "venv")))
    monkeypatch.setenv("ATOM_SAMPLE_K", "2")
    here = os.getcwd()
    os.chdir(engine)
    yield Seed(engine, helper)
    os.chdir(here)


def _regions() -> dict[str, str]:
    result = lawkit("footprint", "diff", "fp.json", "--json", "--env", "current")
    return dict(json.loads(result.stdout)["regions"])


def test_the_seed_against_current(seed: Seed, monkeypatch: pytest.MonkeyPatch) -> None:
    core = seed.helper / "helper" / "core.py"
    assert _regions() == {"sample_s": "untouched", "schedule_s": "untouched"}
    assert lawkit("check", "--env", "current").exit_code == 0
    core.write_text(HELPER.replace("    return sorted", "    # the k largest\n    return sorted"))
    assert _regions() == {"sample_s": "untouched", "schedule_s": "untouched"}
    core.write_text(HELPER.replace("return x + 1", "return x + 2"))
    assert _regions() == {"sample_s": "untouched", "schedule_s": "untouched"}
    core.write_text(HELPER.replace("sorted(logits)[-k:]", "sorted(logits)[-k - 1:]"))
    assert _regions() == {"sample_s": "steps", "schedule_s": "untouched"}
    checked = lawkit("check", "--env", "current")
    assert checked.exit_code == 1
    assert "helper/core.py top_k changed  ran in steps (regions sample_s)" in checked.stdout
    annotated = lawkit("check", "--env", "current", "--format", "github")
    assert annotated.stdout.startswith("::") and "top_k" in annotated.stdout
    refused = lawkit("rekey", "--accept-env", "--env", "current", "--why", "k",
                     "--require", "untouched")
    assert refused.exit_code == 2 and "sampling (sample_s) steps" in refused.output
    core.write_text(HELPER)
    monkeypatch.setenv("ATOM_SAMPLE_K", "3")
    assert _regions() == {"sample_s": "steps", "schedule_s": "untouched"}
    assert "environ ATOM_SAMPLE_K has another value" in \
        lawkit("footprint", "diff", "fp.json", "--env", "current").stdout


PATCH = ("import json\n\n_dumps = json.dumps\n\n\ndef dumps(obj, **kw):\n"
         "    return _dumps(obj, **kw)\n\n\njson.dumps = dumps\n")


def test_a_distribution_a_pth_file_imports_counts_in_every_region(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39, case 8, judged: a `.pth` imports `patcher` before the recorder starts, and it
    patches json.dumps for every step; an edit to it moves every law, against current."""
    from footprint_engine import copy_engine

    python = make_venv(tmp_path / "venv")
    pip(python, "install", str(write_project(tmp_path / "patcher", "patcher", "1.0", {
        "patcher/__init__.py": PATCH, "patcher.pth": "import patcher\n"})))
    engine = copy_engine(tmp_path / "engine")
    (engine / "harness.py").write_text(
        "import json\nimport lawkit.footprint as fp\nfrom atom.runner import Runner\n\n"
        'fp.phase("steps")\nfor _ in range(2):\n    Runner().run()\n'
        '    with fp.region("schedule_s"):\n        json.dumps({"a": 1})\n'
        '    with fp.region("sample_s"):\n        sorted([2, 1])\n')
    result = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                             "fp.json", "--", str(python), "harness.py"], cwd=engine,
                            env=measured_env(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    site = site_packages(tmp_path / "venv")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(engine)
    assert _regions() == {"sample_s": "untouched", "schedule_s": "untouched"}
    installed = site / "patcher" / "__init__.py"
    installed.write_text(PATCH.replace("_dumps(obj, **kw)", "_dumps(obj, **kw) * 30"))
    assert _regions() == {"sample_s": "steps", "schedule_s": "steps"}
