"""Workspace discovery and the `[tool.lawkit]` config (docs/adopting.md#config)."""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lawkit.errors import ConfigError, LawkitError, printable

CONFIG_NAME = "lawkit.toml"
_TOP_KEYS = {"laws", "digest", "score", "environment", "python", "rekey", "trace", "footprint"}
_DIGEST_KEYS = {"root", "packages", "include", "exclude", "length", "key"}
_SCORE_KEYS = {"max_mape"}
_FOOTPRINT_KEYS = {"environ"}
_REKEY_KEYS = {"require"}
REQUIRE_LEVELS = ("untouched", "startup")
"""The values of `--require` and `[rekey] require`, strictest first (`lawkit.footprint.require`)."""
_KEY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_LOWER_HEX = re.compile(r"[0-9a-f]*\Z")


def digest_problem(value: object, length: int) -> str | None:
    """Why `value` is not a digest lawkit may write for a key of `length` characters, or None:
    the one rule for every digest lawkit writes (`--captured-on`, `--to`, `--from`, a digest
    column or metadata of the captures), lowercase hex of exactly that length, as `lawkit
    digest` prints it."""
    if isinstance(value, str) and len(value) == length and _LOWER_HEX.match(value):
        return None
    return f"expected a digest of {length} lowercase hex characters, as lawkit digest prints it"


def key_problem(key: str) -> str | None:
    """Why `key` cannot name the field of `host.key` a digest fills, or None."""
    if _KEY_NAME.match(key):
        return None
    return ("expected a field name like 'atom' (letters, digits, _ and -, not starting with a "
            "digit)")


def require_digest(value: str, shown: str, length: int) -> str:
    """`value` when it is a digest (see `digest_problem`), else a LawkitError naming `shown`
    (the flag, or the file and column the value came from)."""
    problem = digest_problem(value, length)
    if problem is not None:
        raise LawkitError(f"{shown} {printable(repr(value))}: {problem}")
    return value


@dataclass(frozen=True)
class ConfigSource:
    """Where a workspace's settings came from: its config file, or the folders walked in vain
    looking for one (then the documented defaults apply: docs/adopting.md#config)."""

    path: Path | None
    searched: tuple[Path, ...] = ()

    def advice(self, text: str) -> str:
        """`text`, advice naming config keys as pyproject.toml spells them (`check
        [tool.lawkit.digest] root and packages`), as this config spells them; outside any
        workspace, instead, that no config was found, where lawkit looked and what to create,
        since keys of a file that does not exist are no way on."""
        if self.path is None:
            return no_config_advice(self.searched)
        if self.path.name != "pyproject.toml":
            text = text.replace("[tool.lawkit.digest] ", "[digest] ").replace(
                "[tool.lawkit] ", "")
        return f"{text} (in {self.path.name})"


@dataclass(frozen=True)
class DigestConfig:
    """What `src_digest` hashes and which `host.key` field the digest fills."""

    root: Path
    packages: tuple[str, ...] = ("atom",)
    include: tuple[str, ...] = ("*.py",)
    exclude: tuple[str, ...] = ()
    length: int = 8
    key: str = "atom"
    source: ConfigSource | None = field(default=None, compare=False)
    """Where these settings came from (None: given in code, not read from a workspace)."""

    def explain(self, exc: Exception) -> str:
        """The message of a `src_digest.DigestError`, its advice on config keys (`config_keys`)
        as `ConfigSource.advice` gives it."""
        keys = getattr(exc, "config_keys", None)
        if keys is None or self.source is None:
            return str(exc)
        return f"{getattr(exc, 'reason', exc)}: {self.source.advice(f'check {keys}')}"


@dataclass(frozen=True)
class Workspace:
    """A workspace: its root folder, the config file (if any), the laws folder and the digest."""

    root: Path
    config_path: Path | None
    laws: Path
    digest: DigestConfig
    max_mape: float | None = None
    """`lawkit score`'s threshold when `--max-mape` is not given (`[score] max_mape`)."""
    environment: str | None = None
    """The target environment footprints are compared with (``current`` or a lock file,
    relative to the root): every command's default for ``--env``; None: not compared."""
    python: str | None = None
    """The exact Python version compared with a footprint's (a lock file names none)."""
    footprint_environ: tuple[str, ...] = ()
    """Secrets' names (``*TOKEN*``...) whose value's sha256 a footprint keeps anyway
    (`[footprint] environ`)."""
    require: str | None = None
    """The workspace's policy for re-keys (`[rekey] require`): every command's default for
    ``--require``; None: no policy."""
    trace: dict[str, Any] | None = None
    """The `[trace]` table as written: how a Chrome-format trace becomes capture records,
    checked where a trace is read (`lawkit.fitting.captures.tracemap`; docs/captures.md)."""

    def advice(self, text: str) -> str:
        """`text`, advice naming config keys, as `ConfigSource.advice` gives it."""
        return (self.digest.source or ConfigSource(self.config_path)).advice(text)

    def rel(self, path: Path | str) -> str:
        """A path as shown to the user: relative to the workspace root where it lies inside it,
        on one printable line (a file name may hold line breaks or undecodable bytes)."""
        absolute = os.path.abspath(path)
        root = os.path.abspath(self.root)
        if absolute == root:
            return "."
        inside = root if root.endswith(os.sep) else root + os.sep
        if absolute.startswith(inside):
            return printable(absolute[len(inside):].replace(os.sep, "/"))
        return printable(str(path))


def no_config_advice(searched: tuple[Path, ...]) -> str:
    """That no config was found, where lawkit looked, and the one next step: `lawkit init`."""
    looked = ", ".join(str(p) for p in searched[:3]) + (", ..." if len(searched) > 3 else "")
    start = searched[0] if searched else Path.cwd()
    return ("no lawkit.toml, nor a pyproject.toml with [tool.lawkit], was found (looked in "
            f"{looked}), so the defaults apply (packages [\"atom\"], key atom): run lawkit "
            f"init --package YOURENGINE in {start} to write one (or pass --config)")


def config_in(folder: Path) -> Path | None:
    """The config `folder` itself holds: its `lawkit.toml`, else its `pyproject.toml` when that
    has `[tool.lawkit]`."""
    candidate = folder / CONFIG_NAME
    if candidate.is_file():
        return candidate
    candidate = folder / "pyproject.toml"
    if candidate.is_file() and "tool" in (doc := _read_toml(candidate)) and \
            isinstance(doc["tool"], dict) and "lawkit" in doc["tool"]:
        return candidate
    return None


def find_config(start: Path) -> Path | None:
    """The first `lawkit.toml` or `pyproject.toml` with `[tool.lawkit]` walking up from `start`."""
    for folder in (start, *start.parents):
        found = config_in(folder)
        if found is not None:
            return found
    return None


def load_workspace(
    *,
    config: Path | None = None,
    engine: Path | None = None,
    laws: Path | None = None,
    cwd: Path | None = None,
) -> Workspace:
    """The workspace for a command: `--config` or discovery, then `--engine`/`--laws` overrides."""
    here = (cwd or Path.cwd()).absolute()
    if config is not None:
        config_path: Path | None = (here / config).absolute()
        assert config_path is not None
        if not config_path.is_file():
            raise ConfigError(f"config file {config} not found: pass an existing lawkit.toml or "
                              "pyproject.toml to --config")
    else:
        config_path = find_config(here)
    if config_path is None:
        source = ConfigSource(None, searched=(here, *here.parents))
        ws = Workspace(root=here, config_path=None, laws=here / "laws",
                       digest=DigestConfig(root=here, source=source))
    else:
        ws = _parse_config(config_path)
    if engine is not None:
        ws = replace(ws, digest=replace(ws.digest, root=(here / engine).absolute()))
    if laws is not None:
        ws = replace(ws, laws=(here / laws).absolute())
    return ws


def workspace_from_bytes(data: bytes, path: Path) -> Workspace | None:
    """The workspace a config file's bytes describe, read as if they were the file at `path`
    (relative values from its folder); None for a `pyproject.toml` without `[tool.lawkit]`.
    `lawkit review` reads the config at each revision from git objects this way."""
    doc = _toml_of(data, path)
    if path.name == "pyproject.toml" and not (
            isinstance(doc.get("tool"), dict) and "lawkit" in doc["tool"]):
        return None
    return _workspace_of(doc, path)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=str(path)) from None
    return _toml_of(data, path)


def _toml_of(data: bytes, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid TOML: not UTF-8 (byte {exc.start}): TOML files are UTF-8",
                          path=str(path)) from None
    except RecursionError:
        raise ConfigError("not valid TOML: nested too deep for a config file",
                          path=str(path)) from None


def _parse_config(path: Path) -> Workspace:
    return _workspace_of(_read_toml(path), path)


def _workspace_of(doc: dict[str, Any], path: Path) -> Workspace:
    if path.name == "pyproject.toml":
        section, prefix = doc.get("tool", {}).get("lawkit"), "tool.lawkit"
    else:
        section, prefix = doc, ""
    if not isinstance(section, dict):
        raise ConfigError(f"{prefix or 'the file'}: expected a table", path=str(path))
    base = path.parent
    _reject_unknown(section, _TOP_KEYS, prefix, path)
    laws = base / _get(section, "laws", str, "laws", prefix, path)
    digest_section, dprefix = _table(section, "digest", _DIGEST_KEYS, prefix, path)
    length = _get(digest_section, "length", int, 8, dprefix, path)
    if not 4 <= length <= 64:
        raise ConfigError(f"{dprefix}.length: expected 4..64 hex characters, got {length}",
                          path=str(path))
    key = _get(digest_section, "key", str, "atom", dprefix, path)
    if key_problem(key) is not None:
        raise ConfigError(f"{dprefix}.key: expected a field name like 'atom', got {key!r}",
                          path=str(path))
    digest = DigestConfig(
        root=(base / _get(digest_section, "root", str, ".", dprefix, path)).absolute(),
        packages=_get_list(digest_section, "packages", ("atom",), dprefix, path),
        include=_get_list(digest_section, "include", ("*.py",), dprefix, path),
        exclude=_get_list(digest_section, "exclude", (), dprefix, path),
        length=length,
        key=key,
        source=ConfigSource(path),
    )
    if not digest.packages or not digest.include:
        raise ConfigError(f"{dprefix}: packages and include must not be empty", path=str(path))
    return Workspace(root=base.absolute(), config_path=path, laws=laws.absolute(), digest=digest,
                     max_mape=_score_threshold(section, prefix, path),
                     environment=_optional(section, "environment", prefix, path),
                     python=_python_version(section, prefix, path),
                     require=_rekey_require(section, prefix, path),
                     trace=_trace_table(section, prefix, path),
                     footprint_environ=_footprint_environ(section, prefix, path))


def _optional(section: dict[str, Any], name: str, prefix: str, path: Path) -> str | None:
    """A string key that may be left out; a non-empty string when set."""
    if name not in section:
        return None
    value = _get(section, name, str, "", prefix, path)
    if not value.strip():
        where = f"{prefix}.{name}" if prefix else name
        raise ConfigError(f"{where}: expected \"current\" or a lock file (pylock.toml, uv.lock, "
                          "requirements.txt), got an empty string", path=str(path))
    return str(value)


def _python_version(section: dict[str, Any], prefix: str, path: Path) -> str | None:
    """`python`: an exact version such as "3.12.3", None when not set."""
    if "python" not in section:
        return None
    value = str(_get(section, "python", str, "", prefix, path))
    if not re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", value):
        where = f"{prefix}.python" if prefix else "python"
        raise ConfigError(f"{where}: expected an exact Python version such as \"3.12.3\", got "
                          f"{value!r}", path=str(path))
    return value


def _rekey_require(section: dict[str, Any], prefix: str, path: Path) -> str | None:
    """`[rekey] require`: one of `REQUIRE_LEVELS`, None when not set."""
    rekey, rprefix = _table(section, "rekey", _REKEY_KEYS, prefix, path)
    value = rekey.get("require")
    if value is not None and value not in REQUIRE_LEVELS:
        raise ConfigError(f"{rprefix}.require: expected \"untouched\" or \"startup\", got "
                          f"{value!r}", path=str(path))
    return value


def _trace_table(section: dict[str, Any], prefix: str, path: Path) -> dict[str, Any] | None:
    """`[trace]`: a table, None when not set (its keys are checked where a trace is read)."""
    if "trace" not in section:
        return None
    if not isinstance(section["trace"], dict):
        where = f"{prefix}.trace" if prefix else "trace"
        raise ConfigError(f"{where}: expected a table", path=str(path))
    return dict(section["trace"])


def _footprint_environ(section: dict[str, Any], prefix: str, path: Path) -> tuple[str, ...]:
    """`[footprint] environ`: the secrets' names whose value a footprint keeps."""
    table, fprefix = _table(section, "footprint", _FOOTPRINT_KEYS, prefix, path)
    return _get_list(table, "environ", (), fprefix, path)


def _score_threshold(section: dict[str, Any], prefix: str, path: Path) -> float | None:
    """`[score] max_mape`: a fraction (0.1 is 10%), None when not set."""
    score, sprefix = _table(section, "score", _SCORE_KEYS, prefix, path)
    value = score.get("max_mape")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or not 0 <= value <= 1:
        raise ConfigError(f"{sprefix}.max_mape: expected a fraction from 0 to 1 (0.1 is 10%), "
                          f"got {value!r}", path=str(path))
    return float(value)


def _table(section: dict[str, Any], name: str, known: set[str], prefix: str,
           path: Path) -> tuple[dict[str, Any], str]:
    """The sub-table ``name`` (empty when not set), its keys checked against ``known``, and
    its key path for messages."""
    table = section.get(name, {})
    where = f"{prefix}.{name}" if prefix else name
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table", path=str(path))
    _reject_unknown(table, known, where, path)
    return table, where


def _reject_unknown(section: dict[str, Any], known: set[str], prefix: str, path: Path) -> None:
    for name in section:
        if name not in known:
            where = f"{prefix}.{name}" if prefix else name
            raise ConfigError(f"{where}: unknown key (known: {', '.join(sorted(known))})",
                              path=str(path))


def _get(section: dict[str, Any], name: str, kind: type, default: Any, prefix: str,
         path: Path) -> Any:
    value = section.get(name, default)
    where = f"{prefix}.{name}" if prefix else name
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}", path=str(path))
    if isinstance(value, str) and "\0" in value:
        raise ConfigError(f"{where}: a NUL character cannot be in a path or name, got "
                          f"{value!r}", path=str(path))
    return value


def _get_list(section: dict[str, Any], name: str, default: tuple[str, ...], prefix: str,
              path: Path) -> tuple[str, ...]:
    value = section.get(name, list(default))
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{prefix}.{name}: expected a list of non-empty strings, got {value!r}",
                          path=str(path))
    if any("\0" in v for v in value):
        raise ConfigError(f"{prefix}.{name}: a NUL character cannot be in a path or pattern, "
                          f"got {value!r}", path=str(path))
    return tuple(value)
