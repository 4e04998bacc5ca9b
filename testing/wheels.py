"""Real distributions for the environment's tests: tiny wheels built here and installed by pip
into a fresh venv, offline (``--no-index``, from a folder of wheels).

A wheel holds the package (its name in lower case with ``_``): ``__init__.py`` with its
``VERSION`` and any other files given, and ``package-VERSION.dist-info/{METADATA,WHEEL,RECORD}``
as a build backend writes them.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path


def build_wheel(folder: Path, name: str, version: str,
                files: dict[str, bytes] | None = None) -> Path:
    """A pure-Python wheel of ``name`` at ``version`` in ``folder``; ``files`` adds files under
    the package (``{"libnative.so": b"..."}``)."""
    folder.mkdir(parents=True, exist_ok=True)
    package = re.sub(r"[-.]+", "_", name).lower()
    info = f"{package}-{version}.dist-info"
    contents = {
        f"{package}/__init__.py": f'VERSION = "{version}"\n'.encode(),
        **{f"{package}/{rel}": data for rel, data in (files or {}).items()},
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"
                            f"{name}, a distribution the tests install.\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lawkit-tests\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = "".join(f"{path},sha256={_urlsafe_sha256(data)},{len(data)}\n"
                     for path, data in contents.items()) + f"{info}/RECORD,,\n"
    wheel = folder / f"{package}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in contents.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/RECORD", record)
    return wheel


def unpack_wheels(target: Path, *wheels: Path) -> Path:
    """Install pure-Python ``wheels`` into the folder ``target`` by unpacking them (what an
    installer does for a purelib wheel), faster than pip; ``target`` goes on the measured
    command's ``PYTHONPATH``."""
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(target)
    return target


def make_venv(folder: Path) -> Path:
    """A venv without pip at ``folder`` for this Python; its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def pip(python: Path, *args: str) -> None:
    """Run this Python's pip on the venv of ``python``, offline: no index, no build isolation
    (the projects' backends need nothing), no cache, no config."""
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_FIND_LINKS": ""}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "--quiet", *args,
                    "--no-index", "--no-build-isolation", "--no-deps", "--no-cache-dir"],
                   check=True, env=env, capture_output=True)


def pip_install(python: Path, wheels: Path, *requirements: str) -> None:
    """Install ``requirements`` (``alpha==1.0``) from the wheels in ``wheels`` into the venv of
    ``python``, from no index, so that no direct URL is recorded (as from an index)."""
    pip(python, "install", "--find-links", str(wheels), *requirements)


def site_packages(venv: Path) -> Path:
    """The site-packages folder of a venv made by `make_venv` for this Python."""
    if os.name == "nt":
        return venv / "Lib" / "site-packages"
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"


def _urlsafe_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def stdlib_shared_object() -> Path | None:
    """A real shared object of the standard library (an extension module), to load by ctypes."""
    for name in ("_bz2", "_json", "_struct", "_ctypes", "select", "math"):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin and origin.endswith(".so"):
            return Path(origin)
    return None
