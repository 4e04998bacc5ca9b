"""The environment in the footprint, end to end on the tutorial's workspace (docs/tutorial.md,
docs/footprints.md "The environment"): the stand-in engine's harness recorded with real wheels
installed, the tutorial's laws fitted with that footprint and committed, then a lock file
bumped the way an upgrade would, through `footprint diff`, `check`, `rekey` and `review`.

The copy of the engine is changed in two places only: the sampler imports and calls `pickfast`
(so its code runs only inside `sampler_s`), and the harness imports `spare` at start-up (never
calling it) and loads `nativelib`'s shared object by ctypes. `unused` is installed and pinned,
never imported. One recording serves every test; each test works on its own copy of it.

The harness (engine/run_steps.py) is outside the hashed package but inside the workspace: the
workspace's own code, versioned by the laws' repository, so it is not recorded as code from no
distribution (`unpackaged`), which under `--require untouched` would make every law `unknown`
(docs/footprints.md). A module from a folder outside the workspace on PYTHONPATH still is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testing.cli import invoke as lawkit
from testing.environments import write_lock
from testing.lawrepo import commit, init_repo
from testing.wheels import build_wheel, stdlib_shared_object, unpack_wheels

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="per-region attribution: sys.monitoring")

REPO = Path(__file__).resolve().parents[2]

SAMPLER_LAW = "sampler_s[microsoft/phi-2,1] (sampler_s)"
SCHEDULER_LAWS = [f"schedule_s[{group}] (schedule_s)" for group in (
    "Qwen/Qwen-72B,4", "codellama/CodeLlama-34b-Instruct-hf,2", "internlm/internlm-20b,2",
    "meta-llama/Llama-2-70b-hf,4", "meta-llama/Llama-2-7b-hf,1", "microsoft/phi-2,1")]
LAWS = [*SCHEDULER_LAWS, SAMPLER_LAW]
PINS = {"pickfast": "1.0", "spare": "1.0", "nativelib": "1.0", "unused": "1.0"}
CONFIG = 'environment = "requirements.txt"\nlaws = "laws"\n\n[digest]\nroot = "engine"\n' \
         'packages = ["atom"]\n'
EDITS = {  # the smallest edits of the copy that give each distribution its place
    "engine/atom/sampler.py": [(
        "    return [max(range(len(row)), key=row.__getitem__) for row in logits]\n",
        "    import pickfast.core  # imported and called only here: inside sampler_s\n\n"
        "    return [pickfast.core.argmax(row) for row in logits]\n")],
    "engine/run_steps.py": [
        ("import sys\n", "import ctypes\nimport importlib.util\nimport os\nimport sys\n\n"
                         "import spare.core  # imported at start-up, never called\n"),
        ("def main(steps: int, path: str) -> None:\n",
         "def main(steps: int, path: str) -> None:\n"
         "    lib = os.path.join(os.path.dirname(importlib.util.find_spec('nativelib').origin),\n"
         "                       'libnative.so')\n"
         "    if os.path.exists(lib):  # the wheel ships one where the platform has one\n"
         "        ctypes.CDLL(lib)\n")],
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tutorial's workspace with the wheels installed: recorded, fitted as the tutorial
    fits (seven laws bound to footprint.json), its lock pinning every installed wheel, and
    committed; then a second commit that moves nothing, so that review has a base."""
    base = tmp_path_factory.mktemp("envstory")
    wheels, lib = base / "wheels", stdlib_shared_object()
    site = unpack_wheels(base / "site", *[
        build_wheel(wheels, "pickfast", "1.0", {"core.py": b"def argmax(row):\n"
                    b"    return max(range(len(row)), key=row.__getitem__)\n"}),
        build_wheel(wheels, "spare", "1.0", {"core.py": b"def never():\n    return 0\n"}),
        build_wheel(wheels, "nativelib", "1.0", {"libnative.so": lib.read_bytes()}
                    if lib is not None else {}),
        build_wheel(wheels, "unused", "1.0")])
    ws = base / "ws"
    shutil.copytree(REPO / "examples" / "engine", ws / "engine")
    for rel, edits in EDITS.items():
        text = (ws / rel).read_text()
        for old, new in edits:
            assert text.count(old) == 1, f"{rel} no longer holds {old!r}"
            text = text.replace(old, new)
        (ws / rel).write_text(text)
    (ws / "lawkit.toml").write_text(CONFIG)
    shutil.copy(REPO / "examples" / "sarathi-a100" / "captures.csv", ws / "fit.csv")
    write_lock(ws, PINS)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ws)
        mp.setenv("HOME", str(base))
        record_and_fit(ws, site)
    init_repo(ws, config=None)
    commit(ws, {}, "host laws, fitted with the footprint of their capture run")
    commit(ws, {"notes.txt": "nothing that moves host time\n"}, "a note")
    return ws


def record_and_fit(ws: Path, *search: Path) -> None:
    """Record the harness with ``search`` on PYTHONPATH, and fit the tutorial's laws with that
    footprint as the tutorial does (seven laws), from the working directory ``ws``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [*map(str, search), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                           "footprint.json", "--", sys.executable, "engine/run_steps.py"],
                          cwd=ws, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    for args in (["--formula", "schedule_s ~ 1 + batch_size", "--by", "model,tp",
                  "--method", "robust", "--label", "gpu=a100"],
                 ["--formula", "sampler_s ~ 1 + batch_size", "--where",
                  'model == "microsoft/phi-2" and tp == 1',
                  "--name", "sampler_s[microsoft/phi-2,1]"]):
        fitted = lawkit("fit", "fit.csv", "--out", "laws/a100.yaml", "--captured-on", "current",
                        "--footprint", "footprint.json", *args)
        assert fitted.exit_code == 0, fitted.output


@pytest.fixture
def ws(recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own copy of the recorded workspace, as the working directory."""
    root = shutil.copytree(recorded, tmp_path / "ws", symlinks=True)
    monkeypatch.chdir(root)
    return root


def bump(root: Path, **versions: str) -> None:
    write_lock(root, {**PINS, **versions})


def check_verdicts(message: str) -> dict[str, str]:
    """Each law's verdict in one `environment` problem of check: `NAME (TARGET) VERDICT, ...`
    after the difference's own line."""
    listed = message.rsplit(": ", 1)[1]
    return dict(item.rsplit(" ", 1) for item in listed.split(", "))


def diff_regions(*args: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    result = lawkit("footprint", "diff", "footprint.json", "--json", *args)
    doc = json.loads(result.stdout)
    return result.exit_code, doc["regions"], doc


def test_the_recording_places_each_distribution_and_the_laws_name_it(recorded: Path) -> None:
    doc = json.loads((recorded / "footprint.json").read_text())
    dists = doc["environment"]["distributions"]
    pick = dists["pickfast"]
    assert (pick["phases"], pick["regions"], pick["startup_regions"]) == (
        ["steps"], ["sampler_s"], [])
    spare = dists["spare"]
    assert (spare["phases"], spare["regions"]) == (["startup"], [])
    assert "unused" not in dists
    assert {name: d["version"] for name, d in dists.items()}.items() <= PINS.items()
    # the harness is the workspace's own code (engine/run_steps.py), not code of no distribution
    assert doc["environment"]["unpackaged"] == []
    laws = (recorded / "laws" / "a100.yaml").read_text()
    assert laws.count("footprint: {path: \"footprint.json\"") == 2  # each fit names it


def test_a_lock_bump_of_a_distribution_first_imported_in_a_region_moves_every_law(
        ws: Path) -> None:
    """pickfast is imported inside the sampler's region: its module bodies ran in steps, which
    count as "*"; a lock file shows no content, so every unit of it counts as changed."""
    bump(ws, pickfast="1.1")
    moved = ("changed  dist pickfast 1.0 -> 1.1  ran in steps (regions *, sampler_s); in steps "
             "with no region open: every law")
    code, regions, doc = diff_regions("--env", "requirements.txt")
    assert code == 1
    assert set(regions.values()) == {"steps"}
    assert [(c["name"], c["old"], c["new"]) for c in doc["environment"]["changes"]] == [
        ("pickfast", "1.0", "1.1")]
    assert moved in lawkit("footprint", "diff", "footprint.json", "--env",
                           "requirements.txt").stdout.splitlines()

    result = lawkit("check")
    assert result.exit_code == 1, result.output
    problem, fix = result.stdout.splitlines()
    assert problem.startswith(f"laws/a100.yaml: environment: {moved}: ")
    assert check_verdicts(problem) == dict.fromkeys(LAWS, "steps")
    assert fix == ("fix: lawkit fit CAPTURE... --out laws/a100.yaml, or if the laws still hold: "
                   "lawkit rekey --accept-env --env requirements.txt --why TEXT laws/a100.yaml")
    as_json = json.loads(lawkit("check", "--json").stdout)
    assert [(p["kind"], p["path"]) for p in as_json["problems"]] == [
        ("environment", "laws/a100.yaml")]
    assert f"laws/a100.yaml: environment: {as_json['problems'][0]['message']}" == problem
    # each law's verdict, as for a digest change: the file's is the worst of its laws'
    verdicts = as_json["verdicts"]
    assert list(verdicts) == ["laws/a100.yaml"] and verdicts["laws/a100.yaml"]["verdict"] == "steps"
    assert {f'{law["name"]} ({law["target"]})': law["verdict"]
            for law in verdicts["laws/a100.yaml"]["laws"]} == dict.fromkeys(LAWS, "steps")
    github = lawkit("check", "--format", "github").stdout.splitlines()
    assert github[0] == f"::error file=laws/a100.yaml::{problem.split(': ', 1)[1]}"

    before = (ws / "laws" / "a100.yaml").read_bytes()
    refused = lawkit("rekey", "--accept-env", "--why", "pickfast 1.1", "--require", "untouched")
    assert refused.exit_code == 2, refused.output
    assert SAMPLER_LAW in refused.output and "nothing was written" in refused.output
    assert (ws / "laws" / "a100.yaml").read_bytes() == before

    review = lawkit("review", "--base", "HEAD~1", "--env", "requirements.txt", "--json")
    assert review.exit_code == 0, review.output
    assert {f'{law["name"]} ({law["target"]})': law["verdict"]
            for law in json.loads(review.stdout)["laws"]} == dict.fromkeys(LAWS, "steps")
    review = lawkit("review", "--base", "HEAD~1", "--env", "requirements.txt", "--require",
                    "untouched")
    assert review.exit_code == 1, review.output
    assert any(f"law {SAMPLER_LAW} is steps in the environment requirements.txt: {moved}" in
               line for line in review.stdout.splitlines())


def test_require_untouched_names_only_the_law_the_environment_moves(
        ws: Path, recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against the installed environment (current), a change to pickfast's function that ran
    in the sampler's region moves the sampler's law alone."""
    site = shutil.copytree(recorded.parent / "site", tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    accepted = lawkit("rekey", "--accept-env", "--env", "current", "--why", "nothing",
                      "--require", "untouched")
    assert accepted.exit_code == 0, accepted.output
    review = lawkit("review", "--base", "HEAD~1", "--env", "current", "--require",
                    "untouched", "--json")
    assert (review.exit_code, json.loads(review.stdout)["findings"]) == (0, [])
    core = site / "pickfast" / "core.py"
    core.write_text(core.read_text().replace("return max(", "return min("))
    refused = lawkit("rekey", "--accept-env", "--env", "current", "--why", "pickfast",
                     "--require", "untouched")
    assert refused.exit_code == 2, refused.output
    assert f"{SAMPLER_LAW} steps" in refused.output
    assert not any(law in refused.output for law in SCHEDULER_LAWS)
    # the reason is the environment, not the engine's code
    assert ("the environment current differs from the footprint's: changed  dist pickfast 1.0 "
            "(index): pickfast/core.py argmax changed  ran in steps (regions sampler_s): refit "
            "from captures taken there") in " ".join(refused.output.split("\n"))
    assert "touches code" not in refused.output
    review = lawkit("review", "--base", "HEAD~1", "--env", "current", "--require",
                    "untouched", "--json")
    assert [f["kind"] for f in json.loads(review.stdout)["findings"]] == ["environment"]


def test_code_from_outside_the_workspace_and_any_distribution_makes_every_law_unknown(
        ws: Path, recorded: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"  # beside the workspace, not in it
    outside.mkdir()
    (outside / "stray.py").write_text("def tick():\n    return 1\n")
    edit = ("import spare.core  # imported at start-up, never called\n",
            "import spare.core  # imported at start-up, never called\nimport stray\n")
    harness = ws / "engine" / "run_steps.py"
    assert harness.read_text().count(edit[0]) == 1
    harness.write_text(harness.read_text().replace(*edit))
    record_and_fit(ws, recorded.parent / "site", outside)
    stray = os.path.realpath(outside / "stray.py")
    assert json.loads((ws / "footprint.json").read_text())["environment"]["unpackaged"] == [
        stray]
    commit(ws, {}, "refit with the stray module")
    commit(ws, {"notes.txt": "a second note\n"}, "a note")
    assert lawkit("check").exit_code == 0  # no difference to list; a re-key says unknown

    refused = lawkit("rekey", "--accept-env", "--why", "nothing", "--require", "untouched")
    assert refused.exit_code == 2, refused.output
    text = " ".join(refused.output.split("\n"))
    assert all(f"{law} unknown" in text for law in LAWS), text
    assert (f"code from no distribution ran: {stray}: no environment pins it, so every law "
            "counts as unknown; install it as a distribution, or move "
            "it into the workspace or the hashed files") in text
    review = lawkit("review", "--base", "HEAD~1", "--env", "requirements.txt", "--require",
                    "untouched", "--json")
    findings = json.loads(review.stdout)["findings"]
    assert review.exit_code == 1 and {f["kind"] for f in findings} == {"environment"}
    assert all(f"code from no distribution ran: {stray}:" in f["message"] for f in findings)


def test_a_distribution_never_imported_moves_nothing_one_imported_only_moves_startup(
        ws: Path) -> None:
    bump(ws, unused="2.0")
    assert lawkit("check").exit_code == 0
    code, regions, doc = diff_regions("--env", "requirements.txt")
    assert (code, doc["environment"]["changes"]) == (0, [])
    assert set(regions.values()) == {"untouched"}
    bump(ws, spare="2.0")  # its module bodies ran at import, outside any region
    result = lawkit("check")
    assert result.exit_code == 1, result.output
    assert check_verdicts(result.stdout.splitlines()[0]) == dict.fromkeys(LAWS, "startup")


def test_a_python_that_differs_moves_every_law(ws: Path) -> None:
    major, minor, micro = sys.version_info[:3]
    (ws / "lawkit.toml").write_text(f'python = "{major}.{minor}.{micro + 1}"\n' + CONFIG)
    assert set(diff_regions()[1].values()) == {"steps"}
    result = lawkit("check")
    assert result.exit_code == 1, result.output
    problem = result.stdout.splitlines()[0]
    assert f"changed  python {major}.{minor}.{micro} -> {major}.{minor}.{micro + 1}" in problem
    assert check_verdicts(problem) == dict.fromkeys(LAWS, "steps")


@pytest.mark.skipif(not sys.platform.startswith("linux") or stdlib_shared_object() is None,
                    reason="reads /proc/self/maps; needs a shared object to ship")
def test_a_library_loaded_only_by_ctypes_moves_every_law(ws: Path) -> None:
    bump(ws, nativelib="1.1")
    assert set(diff_regions()[1].values()) == {"steps"}
    result = lawkit("check")
    assert result.exit_code == 1, result.output
    assert check_verdicts(result.stdout.splitlines()[0]) == dict.fromkeys(LAWS, "steps")


def test_rekey_env_appends_one_line_and_check_passes_on_the_new_baseline(ws: Path) -> None:
    bump(ws, pickfast="1.1")
    before = (ws / "laws" / "a100.yaml").read_bytes()
    done = lawkit("rekey", "--accept-env", "--why", "pickfast 1.1 moves no host time")
    assert done.exit_code == 0, done.output
    assert "accepted the environment in laws/a100.yaml: pickfast 1.0 -> 1.1" in done.stdout
    assert [line for line in done.stdout.splitlines() if line.startswith("  laws/")] == [
        f"  laws/a100.yaml  {law}  steps" for law in LAWS]
    after = (ws / "laws" / "a100.yaml").read_bytes()
    added = after[len(before):].decode()
    assert after.startswith(before) and added.count("\n") == 1, added
    assert added.startswith("    - {rekey: {") and 'env: {pickfast: ["1.0", "1.1"]}' in added, added
    assert lawkit("check").exit_code == 0
    assert lawkit("rekey", "--accept-env", "--why", "again").exit_code == 0
    assert (ws / "laws" / "a100.yaml").read_bytes() == after
