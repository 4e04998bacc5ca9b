"""The environment against real installed distributions: two tiny wheels (alpha, beta) at two
versions each, installed by pip into two venvs, offline."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import packaging
import pytest

import lawkit
from lawkit.footprint.envdiff import compare
from lawkit.footprint.environment import (
    STDLIB,
    Environment,
    PythonBuild,
    canonical_name,
    installed_distributions,
    python_build,
)
from lawkit.footprint.manifest import current_environment
from lawkit.footprint.measured.loaded import native_libraries
from lawkit.footprint.owners import distributions_of
from testing.wheels import build_wheel, make_venv, pip_install, site_packages, stdlib_shared_object

ROOT = Path(lawkit.__file__).resolve().parent.parent


@dataclass(frozen=True)
class Venvs:
    old: Path
    """alpha 1.0 and beta 1.0"""
    new: Path
    """alpha 2.0 and beta 2.0"""

    def site(self, venv: Path) -> Path:
        return site_packages(venv)


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Venvs:
    """Two venvs, built once for the module: the old one's alpha ships a shared object."""
    base = tmp_path_factory.mktemp("venvs")
    wheels = base / "wheels"
    lib = stdlib_shared_object()
    native = {"libnative.so": lib.read_bytes()} if lib is not None else {}
    for version in ("1.0", "2.0"):
        build_wheel(wheels, "alpha", version, native)
        build_wheel(wheels, "Beta_Lib", version)
    old, new = base / "old", base / "new"
    pip_install(make_venv(old), wheels, "alpha==1.0", "Beta_Lib==1.0")
    pip_install(make_venv(new), wheels, "alpha==2.0", "Beta_Lib==2.0")
    return Venvs(old, new)


def test_python_build_describes_this_interpreter() -> None:
    build = python_build()
    v = sys.version_info
    assert build.version.startswith(f"{v.major}.{v.minor}.{v.micro}")
    assert build.implementation == sys.implementation.name
    assert build.abiflags == getattr(sys, "abiflags", "")
    assert build.to_json() == {"version": build.version, "implementation": build.implementation,
                               "abiflags": build.abiflags, "gil_disabled": build.gil_disabled}
    assert PythonBuild.from_json(build.to_json()) == build


def test_a_python_object_missing_a_key_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"python\.gil_disabled: expected a bool"):
        PythonBuild.from_json({"version": "3.12.3", "implementation": "cpython",
                               "abiflags": ""})


def test_canonical_names_follow_pep_503() -> None:
    assert canonical_name("Beta_Lib") == "beta-lib"
    assert canonical_name("zope.Interface") == "zope-interface"
    assert canonical_name("a-_.b") == "a-b"


def test_installed_distributions_read_name_version_record_and_how_installed(
        venvs: Venvs) -> None:
    site = venvs.site(venvs.old)
    found = installed_distributions([str(site)])
    assert sorted(found) == ["alpha", "beta-lib"]
    alpha = found["alpha"]
    assert (alpha.version, alpha.install, alpha.source) == ("1.0", "index", None)
    record = (site / "alpha-1.0.dist-info" / "RECORD").read_bytes()
    assert alpha.record == hashlib.sha256(record).hexdigest()
    assert found["beta-lib"].record != alpha.record


def test_files_map_to_their_distribution_the_standard_library_and_unpackaged(
        venvs: Venvs, tmp_path: Path) -> None:
    site = venvs.site(venvs.old)
    stray = site / "stray.py"  # in site-packages, in no RECORD
    stray.write_text("x = 1\n")
    mine = tmp_path / "script.py"
    mine.write_text("x = 1\n")
    paths = [str(site / "alpha" / "__init__.py"), str(site / "beta_lib" / "__init__.py"),
             os.__file__, json.__file__, "<frozen importlib._bootstrap>", "<string>",
             str(stray), str(mine), lawkit.__file__]
    found = distributions_of(paths, [str(site)])
    assert found.owners == {paths[0]: "alpha", paths[1]: "beta-lib", os.__file__: STDLIB,
                            json.__file__: STDLIB, paths[4]: STDLIB}
    assert found.unpackaged == tuple(sorted([os.path.realpath(stray),
                                             os.path.realpath(mine)]))
    assert {n: d.version for n, d in found.distributions.items()} == \
        {"alpha": "1.0", "beta-lib": "1.0"}
    stray.unlink()


def test_a_file_reached_through_a_symlinked_folder_maps_to_its_distribution(
        venvs: Venvs, tmp_path: Path) -> None:
    site = venvs.site(venvs.old)
    link = tmp_path / "lib64"
    link.symlink_to(site, target_is_directory=True)
    path = str(link / "alpha" / "__init__.py")
    assert distributions_of([path], [str(site)]).owners == {path: "alpha"}


def test_lawkit_itself_is_left_out_even_from_its_editable_root(venvs: Venvs) -> None:
    """lawkit's packages are no distribution and not unpackaged; its editable install's root
    (the repository) does not swallow a file beside them."""
    beside = ROOT / "testing" / "wheels.py"
    script = Path(sys.prefix) / "bin" / "lawkit"  # in lawkit's RECORD, outside its packages
    assert script.exists()
    found = distributions_of([lawkit.__file__, str(ROOT / "src_digest" / "__init__.py"),
                              str(beside), str(script)])
    assert "lawkit" not in found.distributions
    assert found.owners == {}
    assert found.unpackaged == (str(beside.resolve()),)


def test_an_editable_install_owns_the_files_under_its_project(tmp_path: Path) -> None:
    site = tmp_path / "site"
    meta = site / "proj-0.3.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: Proj\nVersion: 0.3\n")
    (meta / "RECORD").write_text("proj-0.3.dist-info/METADATA,,\n")
    project = tmp_path / "src" / "proj"
    project.mkdir(parents=True)
    (meta / "direct_url.json").write_text(json.dumps(
        {"url": project.parent.as_uri(), "dir_info": {"editable": True}}))
    path = str(project / "core.py")
    found = distributions_of([path], [str(site)])
    assert found.owners == {path: "proj"}
    dist = found.distributions["proj"]
    assert (dist.version, dist.install, dist.source) == ("0.3", "editable",
                                                         project.parent.as_uri())


def test_the_distribution_of_a_shared_object_named_in_proc_maps(venvs: Venvs,
                                                                tmp_path: Path) -> None:
    site = venvs.site(venvs.old)
    lib = site / "alpha" / "libnative.so"
    if not lib.exists():
        pytest.skip("no shared object in the standard library to ship")
    maps = tmp_path / "maps"
    maps.write_text(
        f"7f68c1ca3000-7f68c1ca5000 r--p 00000000 fe:00 2163211   {lib}\n"
        f"7f68c1ca5000-7f68c1cb2000 r-xp 00002000 fe:00 2163211   {lib}\n"
        "7f68c1cb6000-7f68c1cb8000 r-xp 00000000 fe:00 77   /usr/lib/libc.so.6 (deleted)\n"
        "7f68c1cb9000-7f68c1cba000 r--p 00000000 fe:00 78   /data/weights.bin\n"
        "7ffd5a1f2000-7ffd5a1f4000 r-xp 00000000 00:00 0    [vdso]\n")
    libraries = native_libraries(str(maps))
    assert libraries == [str(lib), "/usr/lib/libc.so.6"]
    found = distributions_of(libraries, [str(site)])
    assert found.owners == {str(lib): "alpha"}
    assert native_libraries(str(tmp_path / "no-such-file")) == []


_IN_VENV = """
import ctypes, json, os, sys
import alpha, beta_lib
from lawkit.footprint.measured.loaded import native_libraries
from lawkit.footprint.owners import distributions_of
from lawkit.footprint.environment import installed_distributions
if "--load" in sys.argv:
    ctypes.CDLL(os.path.join(os.path.dirname(alpha.__file__), "libnative.so"))
code = distributions_of([alpha.__file__, beta_lib.__file__, os.__file__])
native = distributions_of(native_libraries())
env = installed_distributions()
print(json.dumps({"code": code.owners, "native": sorted(native.distributions),
                  "env": {n: [d.version] for n, d in env.items()}}))
"""


def _in_venv(venv: Path, *args: str) -> dict[str, object]:
    """Run the recorder's end-of-run look-up inside the venv's own Python (lawkit by
    PYTHONPATH, as a measured process finds it)."""
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # lawkit's one dependency the look-up needs (packaging) beside it, without its dist-info:
    # the venv's distributions stay the venv's own
    shelf = venv / "lawkit-deps"
    if not shelf.exists():
        shelf.mkdir()
        (shelf / "packaging").symlink_to(Path(packaging.__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(shelf)])}
    out = subprocess.run([str(python), "-c", _IN_VENV, *args], capture_output=True,
                         text=True, check=True, env=env, cwd=venv)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_in_the_venvs_own_python_the_code_that_ran_maps_from_sys_path(venvs: Venvs) -> None:
    found = _in_venv(venvs.new)
    assert sorted(found["code"].values()) == ["alpha", "beta-lib", STDLIB]  # type: ignore[attr-defined]
    assert found["env"] == {"alpha": ["2.0"], "beta-lib": ["2.0"]}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_distribution_loaded_only_by_ctypes_is_found_in_the_mapped_files(
        venvs: Venvs) -> None:
    if stdlib_shared_object() is None:
        pytest.skip("no shared object in the standard library to ship")
    assert "alpha" not in _in_venv(venvs.old)["native"]  # type: ignore[operator]
    assert "alpha" in _in_venv(venvs.old, "--load")["native"]  # type: ignore[operator]


def test_compare_sees_the_version_bump_of_the_distribution_that_ran(venvs: Venvs) -> None:
    """alpha ran in the recording; beta did not: both are bumped, only alpha is a change."""
    site = str(venvs.site(venvs.old))
    ran = distributions_of([str(venvs.site(venvs.old) / "alpha" / "__init__.py")], [site])
    recorded = Environment(python_build(), ran.distributions)
    target = current_environment([str(venvs.site(venvs.new))])
    changes = compare(recorded, target)
    assert [(c.name, c.kind, c.old, c.new) for c in changes] == [("alpha", "version", "1.0",
                                                                   "2.0")]
    assert compare(recorded, current_environment([site])) == []
