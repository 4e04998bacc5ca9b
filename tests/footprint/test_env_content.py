"""Dependencies judged by content (issue 39), against real installs made offline by pip in the
test: a project with its own build backend installed editable, from its wheel as from an index,
rebuilt at one version; two distributions sharing a module; an egg-info install. The recorded
side is a schema-3 environment as the recorder writes it (each file that ran, its sha256 and
units, where each ran); the judge compares it with `current` (unit by unit), a manifest that
`lawkit env export` writes (file by file) and lock files (versions and sources).

The helper's `sample` ran in steps in the sampler's region; `unused` never ran; its module body
ran at start-up. The laws: sampling (region sample_s) and scheduling (region schedule_s).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from lawkit.footprint.dependencies import FileRuns, distribution_records, installed_path
from lawkit.footprint.distcontent import unit_extent
from lawkit.footprint.document import (
    Configuration,
    DistFile,
    DistRecord,
    EnvironmentRecord,
    EnvRead,
    UnitRecord,
)
from lawkit.footprint.environment import (
    DistInfo,
    Pin,
    Target,
    installed_distributions,
    python_build,
)
from lawkit.footprint.envverdict import EnvClause, EnvSpec, applied, clause_of, compare_env
from lawkit.footprint.errors import FootprintError
from lawkit.footprint.lawverdict import law_verdict
from lawkit.footprint.lockfiles import read_lock
from lawkit.footprint.manifest import (
    current_environment,
    export_manifest,
    read_manifest,
    write_manifest,
)
from lawkit.footprint.measured.markers import Context
from lawkit.footprint.owners import Attribution
from lawkit.footprint.units import MODULE
from testing.installs import build_wheel_of, install_egg_info, write_project
from testing.wheels import make_venv, pip, site_packages

CORE = '''\
import os

TABLE = [1, 2, 3]


def sample(logits):
    return max(logits)


def unused(x):
    return x + 1
'''
# Where the helper's code ran, as the measured process saves it by code object (qualname,
# first line): its module body at start-up with no region open, `sample` in steps in the
# sampler's region; `unused` never.
RAN: dict[tuple[str, int], set[Context]] = {
    ("<module>", 1): {("startup", ())}, ("sample", 6): {("steps", ("sample_s",))}}
REGIONS = ("sample_s", "schedule_s")
LAWS = {"sampling": "sample_s", "scheduling": "schedule_s"}


def _record(info: DistInfo, rel: str) -> DistRecord:
    """The distribution as `record` writes it when its file ``rel`` (CORE) ran as RAN says."""
    path = installed_path(info, rel)
    runs = {path: FileRuns(set().union(*RAN.values()), {k: set(v) for k, v in RAN.items()})}
    attribution = Attribution({path: info.name}, {info.name: info}, ())
    return distribution_records(runs, attribution)[info.name]


def _env(*dists: tuple[str, DistRecord]) -> EnvironmentRecord:
    return EnvironmentRecord(python_build(), dict(dists))


def _verdicts(env: EnvironmentRecord, spec: EnvSpec, clauses: Sequence[EnvClause] = (),
              configuration: Configuration | None = None) -> dict[str, str]:
    comparison = compare_env(env, spec, clauses, configuration=configuration)
    assert comparison is not None
    return {law: law_verdict(REGIONS, [], region, comparison)[1] for law, region in LAWS.items()}


def _current(site: Path) -> EnvSpec:
    return EnvSpec(current_environment([str(site)]))


def _helper_wheels(tmp_path: Path) -> tuple[Path, Path]:
    """helper 1.0 (CORE as helper/core.py): its project folder, and the folder of its wheel."""
    project = write_project(tmp_path / "helper", "helper", "1.0", {"helper/core.py": CORE})
    build_wheel_of(project, tmp_path / "wheels")
    return project, tmp_path / "wheels"


def _index_install(venv: Path, wheels: Path, *requirements: str) -> tuple[Path, Path]:
    """A fresh venv at ``venv`` with ``requirements`` installed from ``wheels`` as from an
    index (no direct URL recorded); its Python and its site-packages."""
    python = make_venv(venv)
    pip(python, "install", "--find-links", str(wheels), *requirements)
    return python, site_packages(venv)


@pytest.fixture
def editable(tmp_path: Path) -> tuple[Path, Path, DistRecord]:
    """helper 0.1 installed editable (`pip install -e`) in a fresh venv; its project folder,
    the venv's site-packages and the recorded distribution."""
    project = write_project(tmp_path / "helper", "helper", "0.1", {"helper/core.py": CORE})
    python = make_venv(tmp_path / "venv")
    pip(python, "install", "-e", str(project))
    site = site_packages(tmp_path / "venv")
    info = installed_distributions([str(site)])["helper"]
    assert info.install == "editable"
    return project, site, _record(info, "helper/core.py")


def test_against_current_an_editable_install_is_judged_unit_by_unit(
        editable: tuple[Path, Path, DistRecord]) -> None:
    project, site, helper = editable
    env = _env(("helper", helper))
    core = project / "helper" / "core.py"
    assert _verdicts(env, _current(site)) == {"sampling": "untouched", "scheduling": "untouched"}
    core.write_text(CORE.replace("    return max(logits)", "    # the largest\n"
                                 "    return max(logits)"))
    assert _verdicts(env, _current(site)) == {"sampling": "untouched", "scheduling": "untouched"}
    core.write_text(CORE.replace("return x + 1", "return x + 2"))
    assert _verdicts(env, _current(site)) == {"sampling": "untouched", "scheduling": "untouched"}
    core.write_text(CORE.replace("return max(logits)", "return min(logits)"))
    assert _verdicts(env, _current(site)) == {"sampling": "steps", "scheduling": "untouched"}
    comparison = compare_env(env, _current(site))
    assert comparison is not None
    assert comparison.lines() == ["changed  dist helper 0.1 (editable): helper/core.py sample "
                                  "changed  ran in steps (regions sample_s)"]


def test_an_accepted_editable_install_is_still_judged_unit_by_unit(
        editable: tuple[Path, Path, DistRecord]) -> None:
    """Issue 39, case 5: accept, then edit a function that never ran (untouched) and one that
    ran (steps)."""
    project, site, helper = editable
    env = _env(("helper", helper))
    core = project / "helper" / "core.py"
    core.write_text(CORE.replace("return max(logits)", "return sorted(logits)[-1]"))
    comparison = compare_env(env, _current(site))
    assert comparison is not None
    clause = clause_of(comparison)
    accepted = clause["helper"][1]
    assert isinstance(accepted, dict) and accepted["install"] == "editable"
    assert accepted["files"]["helper/core.py"]["sha256"] == \
        hashlib.sha256(core.read_bytes()).hexdigest()
    clauses = [{name: (pair[0], pair[1]) for name, pair in
                json.loads(json.dumps(clause)).items()}]  # as a law file holds it
    assert _verdicts(env, _current(site), clauses) == {"sampling": "untouched",
                                                       "scheduling": "untouched"}
    core.write_text(core.read_text().replace("return x + 1", "return x * 2"))
    assert _verdicts(env, _current(site), clauses) == {"sampling": "untouched",
                                                       "scheduling": "untouched"}
    core.write_text(core.read_text().replace("sorted(logits)[-1]", "max(logits)"))
    assert _verdicts(env, _current(site), clauses) == {"sampling": "steps",
                                                       "scheduling": "untouched"}


def test_a_rebuild_at_the_same_version_from_an_index_is_seen_by_content(tmp_path: Path) -> None:
    """Issue 39, case 1: the same version of other code, installed as from an index."""
    project, wheels = _helper_wheels(tmp_path)
    python, site = _index_install(tmp_path / "venv", wheels, "helper==1.0")
    info = installed_distributions([str(site)])["helper"]
    assert (info.install, info.source) == ("index", None)
    env = _env(("helper", _record(info, "helper/core.py")))
    assert _verdicts(env, _current(site)) == {"sampling": "untouched", "scheduling": "untouched"}
    (project / "helper" / "core.py").write_text(CORE.replace("max(", "min("))
    for old in wheels.iterdir():
        old.unlink()
    build_wheel_of(project, wheels)
    pip(python, "install", "--force-reinstall", "--find-links", str(wheels), "helper==1.0")
    assert installed_distributions([str(site)])["helper"].version == "1.0"
    assert _verdicts(env, _current(site)) == {"sampling": "steps", "scheduling": "untouched"}


def test_a_version_accepted_from_a_lock_shows_no_content_so_current_counts_it_changed(
        tmp_path: Path) -> None:
    """A lock file shows versions only: after `rekey --accept-env` against one, the same
    version rebuilt with other code and installed as from an index is not read as unchanged
    against current; accepting against current records the content again."""
    project, wheels = _helper_wheels(tmp_path)
    python, site = _index_install(tmp_path / "venv", wheels, "helper==1.0")
    env = _env(("helper", _record(installed_distributions([str(site)])["helper"],
                                  "helper/core.py")))
    clauses: list[EnvClause] = [{"helper": ("1.0", "1.0")}]  # what a lock's acceptance keeps
    (project / "helper" / "core.py").write_text(CORE.replace("return x + 1", "return x + 2"))
    for old in wheels.iterdir():
        old.unlink()
    build_wheel_of(project, wheels)
    pip(python, "install", "--force-reinstall", "--find-links", str(wheels), "helper==1.0")
    # its content is unknown since the lock's acceptance: every unit that ran counts as
    # changed where it ran (the function in sample_s, the module body at start-up)
    assert _verdicts(env, _current(site), clauses) == {"sampling": "steps",
                                                       "scheduling": "startup"}
    comparison = compare_env(env, _current(site), clauses)
    assert comparison is not None
    clauses.append({name: (old, new) for name, (old, new) in json.loads(json.dumps(
        clause_of(comparison))).items()})
    assert _verdicts(env, _current(site), clauses) == {"sampling": "untouched",
                                                       "scheduling": "untouched"}


def test_a_lock_shows_versions_and_sources_only(editable: tuple[Path, Path, DistRecord],
                                                tmp_path: Path) -> None:
    """Issue 39, cases 2 and 3, and what a lock file could not show, said in one line."""
    _project, _site, helper = editable
    index = dataclasses.replace(helper, install="index", source=None)
    env = _env(("helper", index))
    exact = tmp_path / "pylock.toml"
    exact.write_text('lock-version = "1.0"\n[[packages]]\nname = "helper"\nversion = "0.1"\n'
                     'wheels = [{ url = "https://example.org/helper.whl", hashes = { sha256 = '
                     '"00" } }]\n')
    spec = EnvSpec(read_lock(exact))
    assert _verdicts(env, spec) == {"sampling": "untouched", "scheduling": "untouched"}
    comparison = compare_env(env, spec)
    assert comparison is not None and comparison.lines()[-1] == (
        "environment: pylock.toml shows versions and sources only: the content of the "
        "distributions that ran, and the configuration (a lock file carries none), were not "
        "compared").replace("pylock.toml", str(exact))
    assert comparison.lines()[-2] == (f"environment: {exact} names no Python: it was not "
                                      'compared (set python = "X.Y.Z" in the config)')
    given = compare_env(env, EnvSpec(read_lock(exact), python="3.12.3"))
    assert given is not None and not any("names no Python" in line for line in given.lines())
    vcs = tmp_path / "vcs" / "pylock.toml"
    vcs.parent.mkdir()
    vcs.write_text('lock-version = "1.0"\n[[packages]]\nname = "helper"\nversion = "0.1"\n'
                   'vcs = { type = "git", url = "https://example.org/h.git", commit-id = "a" }\n')
    # every unit of it changed, its module body included: start-up for every law
    assert _verdicts(env, EnvSpec(read_lock(vcs))) == {"sampling": "steps",
                                                        "scheduling": "startup"}
    admits = tmp_path / "requirements.txt"
    admits.write_text("helper==0.1\n")
    assert _verdicts(env, EnvSpec(read_lock(admits))) == {"sampling": "steps",
                                                           "scheduling": "startup"}
    # the recorded install was editable: no lock can say its code is the same
    assert _verdicts(_env(("helper", helper)), spec) == {"sampling": "steps",
                                                         "scheduling": "startup"}


def test_a_file_installed_by_two_distributions_is_judged_under_each(tmp_path: Path) -> None:
    """Issue 39, case 4: the other distribution's upgrade replaced the file that ran."""
    shared = {"shared/__init__.py": "", "shared/mod.py": CORE}
    first = write_project(tmp_path / "first", "first", "1.0", shared)
    second = write_project(tmp_path / "second", "second", "1.0", shared)
    wheels = tmp_path / "wheels"
    build_wheel_of(first, wheels)
    build_wheel_of(second, wheels)
    python, site = _index_install(tmp_path / "venv", wheels, "first==1.0", "second==1.0")
    found = installed_distributions([str(site)])
    env = _env(*((name, _record(found[name], "shared/mod.py"))
                 for name in ("first", "second")))
    assert _verdicts(env, _current(site)) == {"sampling": "untouched", "scheduling": "untouched"}
    (second / "shared" / "mod.py").write_text(CORE.replace("max(", "min("))
    (second / "pyproject.toml").write_text((second / "pyproject.toml").read_text()
                                           .replace('version = "1.0"', 'version = "2.0"'))
    build_wheel_of(second, tmp_path / "wheels2")
    pip(python, "install", "--find-links", str(tmp_path / "wheels2"), "second==2.0")
    comparison = compare_env(env, _current(site))
    assert comparison is not None
    assert {u.change.name for u in comparison.changes} == {"first", "second"}
    assert _verdicts(env, _current(site)) == {"sampling": "steps", "scheduling": "untouched"}


def test_an_egg_info_install_is_a_distribution_judged_by_content(tmp_path: Path) -> None:
    """Issue 39, case 7."""
    python = make_venv(tmp_path / "venv")
    package = install_egg_info(python, "legacylib", "1.0", {"core.py": CORE})
    site = site_packages(tmp_path / "venv")
    info = installed_distributions([str(site)])["legacylib"]
    assert (info.install, info.version) == ("egg-info", "1.0")
    env = _env(("legacylib", _record(info, "legacylib/core.py")))
    assert _verdicts(env, _current(site)) == {"sampling": "untouched", "scheduling": "untouched"}
    manifest = tmp_path / "env.json"
    write_manifest(export_manifest([str(site)]), manifest)
    assert _verdicts(env, EnvSpec(read_manifest(manifest))) == {"sampling": "untouched",
                                                                "scheduling": "untouched"}
    (package / "core.py").write_text(CORE.replace("max(", "min("))
    assert _verdicts(env, _current(site)) == {"sampling": "steps", "scheduling": "untouched"}


def test_a_module_body_that_ran_in_steps_counts_for_every_region() -> None:
    """Issue 39, case 11: a table built at import inside one region, read in another."""
    body = UnitRecord("d", ("steps",), ("sample_s",), ())
    assert unit_extent(MODULE, body, True).regions == ("*",)
    assert unit_extent("sample", body, False).regions == ("sample_s",)


def test_an_accepted_absence_means_the_distribution_must_stay_absent(
        editable: tuple[Path, Path, DistRecord], tmp_path: Path) -> None:
    """Issue 39, case 6: `env: {helper: ["0.1", null]}` never drops helper."""
    _project, site, helper = editable
    env = _env(("helper", helper))
    clauses = [{"helper": ("0.1", None)}]
    assert "helper" in applied(env, clauses).absent
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _verdicts(env, _current(empty), clauses) == {"sampling": "untouched",
                                                        "scheduling": "untouched"}
    lock = tmp_path / "requirements.txt"
    lock.write_text("helper===9.9\n")
    assert _verdicts(env, EnvSpec(read_lock(lock)), clauses) == {"sampling": "steps",
                                                                 "scheduling": "startup"}
    assert _verdicts(env, _current(site), clauses)["sampling"] == "steps"


def test_a_manifest_exported_in_one_venv_judges_a_footprint_of_another(
        tmp_path: Path) -> None:
    """`lawkit env export`'s manifest shows content by file: a file that differs counts all
    its units, one the same counts nothing."""
    _project, wheels = _helper_wheels(tmp_path)
    _python, site = _index_install(tmp_path / "recorded", wheels, "helper==1.0")
    env = _env(("helper", _record(installed_distributions([str(site)])["helper"],
                                  "helper/core.py")))
    _python, image = _index_install(tmp_path / "image", wheels, "helper==1.0")
    manifest = tmp_path / "env.json"
    write_manifest(export_manifest([str(image)]), manifest)
    spec = EnvSpec(read_manifest(manifest))
    assert _verdicts(env, spec) == {"sampling": "untouched", "scheduling": "untouched"}
    core = image / "helper" / "core.py"
    core.write_text(CORE.replace("return x + 1", "return x + 2"))  # a function that never ran
    write_manifest(export_manifest([str(image)]), manifest)
    # by file: the module body ran at start-up, `sample` in steps: every unit counts
    assert _verdicts(env, EnvSpec(read_manifest(manifest))) == {"sampling": "steps",
                                                               "scheduling": "startup"}


def test_a_variable_read_counts_where_it_was_read_and_a_setting_for_every_law(
        editable: tuple[Path, Path, DistRecord], monkeypatch: pytest.MonkeyPatch) -> None:
    _project, site, helper = editable
    env = _env(("helper", helper))
    monkeypatch.setenv("ATOM_GC_THRESHOLD", "50000")
    digest = hashlib.sha256(b"50000").hexdigest()
    spec = _current(site)
    settings = dict(spec.target.settings or {})  # type: ignore[union-attr]
    read = {"ATOM_GC_THRESHOLD": EnvRead(digest, ("steps",), ("sample_s",), ())}
    same = Configuration(read, settings)
    assert _verdicts(env, spec, configuration=same) == {"sampling": "untouched",
                                                        "scheduling": "untouched"}
    monkeypatch.setenv("ATOM_GC_THRESHOLD", "700")
    assert _verdicts(env, _current(site), configuration=same) == {"sampling": "steps",
                                                                  "scheduling": "untouched"}
    monkeypatch.setenv("ATOM_GC_THRESHOLD", "50000")
    secret = Configuration({**read, "HF_TOKEN": EnvRead("hidden", ("startup",), (), ("*",))},
                           settings)
    comparison = compare_env(env, _current(site), configuration=secret)
    assert comparison is not None and not comparison.changes
    assert comparison.lines()[-1].startswith("environment: HF_TOKEN kept no value")
    other = Configuration(read, {**settings, "switch_interval": 0.5})
    assert _verdicts(env, _current(site), configuration=other) == {"sampling": "steps",
                                                                   "scheduling": "steps"}
    comparison = compare_env(env, _current(site), configuration=other)
    assert comparison is not None and comparison.lines()[0].startswith(
        "changed  setting switch_interval 0.5 -> ")


def test_a_file_replaced_keeping_its_size_and_mtime_is_hashed_again(
        editable: tuple[Path, Path, DistRecord], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The hash cache of `current` is sound: `cp -p` keeps the mtime, never the ctime."""
    project, site, helper = editable
    monkeypatch.setenv("LAWKIT_CACHE_DIR", str(tmp_path / "cache"))
    env = _env(("helper", helper))
    core = project / "helper" / "core.py"
    time.sleep(2.1)  # a file changed within 2 s of its hashing is not kept
    assert _verdicts(env, _current(site)) == {"sampling": "untouched", "scheduling": "untouched"}
    assert (tmp_path / "cache" / "file-hashes.json").is_file()
    other = tmp_path / "core.py"
    other.write_text(CORE.replace("max(logits)", "min(logits)"))  # the same size
    st = core.stat()
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    shutil.copy2(other, core)
    assert (core.stat().st_size, core.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert _verdicts(env, _current(site)) == {"sampling": "steps", "scheduling": "untouched"}


def _manifest_of(files: dict[str, str], settings: dict[str, object] | None = None) -> EnvSpec:
    """A manifest's target (shown by file): helper 1.0 from an index with ``files``."""
    return EnvSpec(Target("env.json", python_build(), {"helper": Pin(
        ("1.0",), source="index", files=files)}, "files", {}, settings or {}))


def _accept(env: EnvironmentRecord, spec: EnvSpec, clauses: Sequence[EnvClause] = (),
            configuration: Configuration | None = None) -> list[EnvClause]:
    """``clauses`` and the clause `rekey --accept-env` appends against ``spec`` (through JSON,
    as a law file keeps it)."""
    comparison = compare_env(env, spec, clauses, configuration=configuration)
    assert comparison is not None and comparison.changes
    return [*clauses, {name: (old, new) for name, (old, new) in json.loads(json.dumps(
        clause_of(comparison))).items()}]


RAN_CORE = {"helper": DistRecord("1.0", phases=("startup", "steps"), regions=("sample_s",),
                                 startup_regions=("*",), install="index", files={
    "helper/core.py": DistFile("a" * 64, False, ("startup", "steps"), ("sample_s",), ("*",), {
        MODULE: UnitRecord("m", ("startup",), (), ("*",)),
        "sample": UnitRecord("s", ("steps",), ("sample_s",), ())})})}


def test_a_file_accepted_as_gone_counts_as_changed_where_it_is_back() -> None:
    """An accepted difference never removes a file that ran from later comparisons: accepted
    gone, it must stay gone; an identity that shows no files (a lock's, from a source it does
    not name) leaves their content unknown."""
    env = _env(*RAN_CORE.items())
    gone = _manifest_of({})
    assert _verdicts(env, gone) == {"sampling": "steps", "scheduling": "startup"}
    clauses = _accept(env, gone)
    assert _verdicts(env, gone, clauses) == {"sampling": "untouched", "scheduling": "untouched"}
    back = _manifest_of({"helper/core.py": "b" * 64})
    assert _verdicts(env, back, clauses) == {"sampling": "steps", "scheduling": "startup"}
    assert _verdicts(env, back, _accept(env, back, clauses)) == {"sampling": "untouched",
                                                                 "scheduling": "untouched"}
    unnamed = EnvSpec(Target("uv.lock", None, {"helper": Pin(("1.0",), source="")}))
    clauses = _accept(env, unnamed)
    assert _verdicts(env, back, clauses) == {"sampling": "steps", "scheduling": "startup"}


def test_a_setting_the_target_does_not_show_counts_as_changed() -> None:
    """A manifest without a setting the footprint recorded (written before lawkit recorded
    it) cannot say it is the same: steps for every law until accepted, and accepted, a
    target that shows it again is compared."""
    env = _env(*RAN_CORE.items())
    same = {"helper/core.py": "a" * 64}
    recorded = Configuration({}, {"switch_interval": 0.005, "gc_enabled": True})
    older = _manifest_of(same, {"gc_enabled": True})
    assert _verdicts(env, older, configuration=recorded) == {"sampling": "steps",
                                                             "scheduling": "steps"}
    clauses = _accept(env, older, configuration=recorded)
    assert _verdicts(env, older, clauses, recorded) == {"sampling": "untouched",
                                                        "scheduling": "untouched"}
    shown = _manifest_of(same, {"gc_enabled": True, "switch_interval": 0.5})
    assert _verdicts(env, shown, clauses, recorded) == {"sampling": "steps",
                                                        "scheduling": "steps"}


def test_a_manifest_without_its_configuration_is_refused(tmp_path: Path) -> None:
    """Without its environ and settings a manifest cannot show a variable unset nor a setting:
    one line naming the key and what to do, not a comparison that reads them unchanged."""
    manifest = tmp_path / "env.json"
    doc = export_manifest([str(tmp_path)])
    del doc["configuration"]["environ"]
    write_manifest(doc, manifest)
    with pytest.raises(FootprintError) as caught:
        read_manifest(manifest)
    assert str(caught.value) == (f"{manifest}: configuration: expected its environ and "
                                 "settings: write the manifest again with lawkit env export")


def test_a_manifest_missing_a_key_says_to_export_it_again(tmp_path: Path) -> None:
    """Its one line named `lawkit footprint record`, which writes no manifest."""
    manifest = tmp_path / "env.json"
    doc = export_manifest([str(tmp_path)])
    del doc["distributions"]
    write_manifest(doc, manifest)
    with pytest.raises(FootprintError) as caught:
        read_manifest(manifest)
    assert str(caught.value) == (f"{manifest}: distributions: missing: write it again with "
                                 "lawkit env export")


def test_an_accepted_ambiguity_counts_against_every_later_target() -> None:
    """`env: {helper: ["1.0", {"ambiguous": [...]}]}`: accepted, a lock that still allows
    several versions, and even one that pins the recorded version, count it changed; accepting
    the pinned one records its version, which ends it."""
    env = _env(*RAN_CORE.items())
    loose = EnvSpec(Target("requirements.txt", None, {"helper": Pin(("1.0",), exact=False)}))
    clauses = _accept(env, loose)
    assert clauses[-1]["helper"] == ("1.0", {"ambiguous": ["1.0"]})
    assert _verdicts(env, loose, clauses) == {"sampling": "steps", "scheduling": "startup"}
    pinned = EnvSpec(Target("pylock.toml", None, {"helper": Pin(("1.0",))}))
    assert _verdicts(env, pinned, clauses) == {"sampling": "steps", "scheduling": "startup"}
    clauses = _accept(env, pinned, clauses)  # accepting the pinned lock ends the ambiguity
    assert clauses[-1]["helper"] == ("1.0", "1.0")
    assert _verdicts(env, pinned, clauses) == {"sampling": "untouched",
                                               "scheduling": "untouched"}
