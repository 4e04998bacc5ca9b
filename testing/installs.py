"""Real installs of a real local package, made offline by pip in a test: a project folder with its
own build backend (PEP 517 and PEP 660, in the folder itself: ``backend-path``), so that pip
builds a wheel of it, installs it from a folder, from that wheel, from a folder of wheels as
from an index, or editable (``pip install -e``), with no setuptools and no network; and an
``.egg-info`` install as distro packages ship them.

`measured_env` runs a command in such a venv under `lawkit footprint record`: lawkit's own
packages are importable there (the start-up hook needs them), nothing else of this venv is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lawkit
from testing.wheels import site_packages

BACKEND = '''"""A build backend of one package, for lawkit's tests (PEP 517, PEP 660)."""
import base64
import hashlib
import os
import tomllib
import zipfile


def _project():
    with open("pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    return project["name"], project["version"]


def _wheel(directory, files):
    name, version = _project()
    package = name.replace("-", "_")
    info = f"{package}-{version}.dist-info"
    files = {**files,
             f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n\\n"
                                 .encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: lawkit-tests\\n"
                              b"Root-Is-Purelib: true\\nTag: py3-none-any\\n"}
    lines = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(data)}\\n")
    wheel = f"{package}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel), "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/RECORD", "".join(lines) + f"{info}/RECORD,,\\n")
    return wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for top in sorted(os.listdir(".")):
        if top.endswith(".pth"):
            with open(top, "rb") as f:
                files[top] = f.read()
        if not os.path.isfile(os.path.join(top, "__init__.py")):
            continue
        for folder, _, names in os.walk(top):
            for n in sorted(names):
                if n.endswith(".py"):
                    path = os.path.join(folder, n)
                    with open(path, "rb") as f:
                        files[path.replace(os.sep, "/")] = f.read()
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name, _ = _project()
    return _wheel(wheel_directory, {f"{name.replace('-', '_')}.pth":
                                    (os.path.abspath(".") + "\\n").encode()})


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []
'''


def write_project(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A project folder holding package ``name`` with its own build backend; ``files`` are
    relative to the folder (``name/core.py``, another package's ``shared/mod.py``, a
    ``name.pth`` installed beside the packages); the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(
        f'[build-system]\nrequires = []\nbuild-backend = "lawkit_test_backend"\n'
        f'backend-path = ["."]\n\n[project]\nname = "{name}"\nversion = "{version}"\n')
    (folder / "lawkit_test_backend.py").write_text(BACKEND)
    package = name.replace("-", "_")
    for rel, text in {f"{package}/__init__.py": "", **files}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def build_wheel_of(project: Path, wheels: Path) -> Path:
    """The wheel pip builds of ``project`` into ``wheels``."""
    wheels.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-index",
                    "--no-build-isolation", "--no-deps", "--no-cache-dir", "-w", str(wheels),
                    str(project.resolve())], check=True, env=env, capture_output=True)
    return next(wheels.glob("*.whl"))


def install_egg_info(python: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """Package ``name`` installed as distro packages ship one (an ``.egg-info`` folder beside it
    in site-packages, with ``PKG-INFO`` and ``top_level.txt``); the package's folder."""
    site = site_packages(python.parent.parent)
    package = site / name
    package.mkdir(parents=True)
    for rel, text in {"__init__.py": "", **files}.items():
        (package / rel).write_text(text)
    info = site / f"{name}-{version}.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text(f"Metadata-Version: 1.2\nName: {name}\nVersion: {version}\n")
    (info / "top_level.txt").write_text(f"{name}\n")
    return package


def measured_env(extra_path: list[Path] | None = None) -> dict[str, str]:
    """The environment a venv's command runs in under `lawkit footprint record`: lawkit's own
    packages importable (the start-up hook imports them), the caller's other paths first."""
    root = str(Path(lawkit.__file__).resolve().parent.parent)
    return {**os.environ,
            "PYTHONPATH": os.pathsep.join([*(str(p) for p in extra_path or []), root])}
