"""`lawkit init`: a new workspace, a `lawkit.toml` naming the engine's packages and the key its
digest fills, and the laws folder, in a folder that has no config yet."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from lawkit.config import CONFIG_NAME, config_in, key_problem, workspace_from_bytes
from lawkit.errors import ConfigError, RefusalError, printable

LAWS = "laws"


@dataclass(frozen=True)
class NewWorkspace:
    """What `init_workspace` wrote: the config, the laws folder, the key and the packages."""

    config: Path
    laws: Path
    key: str
    packages: tuple[str, ...]
    root: str
    """The engine root as the config names it (relative to the config's folder)."""

    def lines(self) -> list[str]:
        """What `lawkit init` prints: what it wrote, then the next steps, from timing the
        engine's steps to a first law bound to the footprint of the run that timed them."""
        packages = ", ".join(self.packages)
        return [f"lawkit: wrote {self.config.name} (digest of {packages} under {self.root}, "
                f"key {self.key}) and {LAWS}/",
                "next:",
                "  lawkit digest",
                "  # time the engine's steps with lawkit.capture in a harness,",
                "  # and record which engine code that run executes:",
                "  lawkit footprint record --out footprint.json -- python HARNESS.py",
                "  pip install 'lawkit[fit]'  # fit and score need numpy, pandas and scipy",
                "  lawkit fit CAPTURE --formula 'TARGET ~ 1 + FEATURE' --footprint footprint.json "
                f"--out {LAWS}/TARGET.yaml",
                "  lawkit check"]


def key_for(package: str) -> str:
    """The key named after a package: its last path part, lower-cased, `-` and `.` as `_`."""
    name = package.replace("\\", "/").rstrip("/").rpartition("/")[2]
    return name.lower().replace("-", "_").replace(".", "_")


def init_workspace(folder: Path, *, engine: Path | None = None, packages: tuple[str, ...] = (),
                   key: str | None = None) -> NewWorkspace:
    """Write `lawkit.toml` in `folder` and create its laws folder; refuse (nothing written)
    where `folder` holds a config already. `engine` is the digest root (default: `folder`);
    with no `packages`, the one Python package (a folder with `__init__.py`) found in it."""
    folder = folder.absolute()
    existing = config_in(folder)
    if existing is not None:
        raise RefusalError("this folder's workspace config exists already: edit it, or run "
                           "lawkit init in another folder", path=existing.name)
    root = (folder / engine).absolute() if engine is not None else folder
    if not root.is_dir():
        raise ConfigError(f"--engine {printable(str(engine))}: not a folder: pass the engine's "
                          "source root")
    chosen = packages or (_only_package(root),)
    for package in chosen:
        if not package.strip() or "\0" in package:
            raise ConfigError(f"--package {printable(repr(package))}: expected a folder name")
        if not (root / package).is_dir():
            raise ConfigError(f"--package {printable(package)}: no such folder in "
                              f"{printable(str(root))}: pass the folder the engine's code is in")
    name = key if key is not None else key_for(chosen[0])
    problem = key_problem(name)
    if problem is not None:
        flag = "--key" if key is not None else f"the key named after {chosen[0]}"
        raise ConfigError(f"{flag} {printable(repr(name))}: {problem}: pass --key NAME")
    shown_root = Path(os.path.relpath(root, folder)).as_posix()
    config = folder / CONFIG_NAME
    text = _config_text(shown_root, chosen, name)
    workspace_from_bytes(text.encode("utf-8"), config)  # what it writes, it reads back
    laws = folder / LAWS
    made_laws = not laws.exists()
    try:
        if laws.exists() and not laws.is_dir():
            raise ConfigError(f"{LAWS} exists and is not a folder: move it, or run lawkit "
                              "init in another folder", path=str(laws))
        laws.mkdir(exist_ok=True)
        with open(config, "x", encoding="utf-8") as file:  # never over a file made meanwhile
            file.write(text)
    except FileExistsError:
        if made_laws:
            laws.rmdir()
        raise RefusalError(f"{CONFIG_NAME} appeared while lawkit init ran: nothing written",
                           path=str(config)) from None
    except OSError as exc:
        if made_laws and laws.is_dir():
            laws.rmdir()
        raise ConfigError(f"cannot write: {exc.strerror or exc}", path=str(config)) from None
    return NewWorkspace(config=config, laws=laws, key=name, packages=chosen, root=shown_root)


def _only_package(root: Path) -> str:
    """The one Python package (a folder holding `__init__.py`) in `root`."""
    found = sorted(p.name for p in root.iterdir()
                   if p.is_dir() and (p / "__init__.py").is_file() and p.name != "tests")
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(f"no Python package (a folder with __init__.py) in "
                          f"{printable(str(root))}: pass --package NAME for the folder the "
                          "engine's code is in (and --engine ROOT for the folder holding it)")
    raise ConfigError(f"several packages in {printable(str(root))} ({', '.join(found)}): pass "
                      "--package NAME for each one the engine's code is in")


def _config_text(root: str, packages: tuple[str, ...], key: str) -> str:
    listed = ", ".join(_quoted(p) for p in packages)
    return (
        "# The lawkit workspace, written by lawkit init: paths are relative to this file.\n"
        "# The folder of law files (every *.yaml below it):\n"
        f"laws = {_quoted(LAWS)}\n"
        "\n"
        "[digest]\n"
        "# The engine source root, and the folders below it that the digest hashes:\n"
        f"root = {_quoted(root)}\n"
        f"packages = [{listed}]\n"
        "# The field of host.key the digest fills (and the captures' digest column):\n"
        f"key = {_quoted(key)}\n"
        "\n"
        "[rekey]\n"
        "# What a re-key may rest on: startup lets rekey --why through where only code the\n"
        "# capture runs ran at start-up changed (you judge); steps and unknown need a refit:\n"
        'require = "startup"\n'
        "\n"
        "[score]\n"
        "# lawkit score fails (exit 1) a law whose MAPE exceeds this fraction:\n"
        "# max_mape = 0.1\n")


def _quoted(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


__all__ = ["NewWorkspace", "init_workspace", "key_for"]
