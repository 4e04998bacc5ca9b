"""The workspace config at each revision a review reads, from git objects, so that review
reads evidence it can stand on (docs/footprints.md, soundness limits).

Each side of a review (base, head, the merge) is digested with its own settings: the config
file as git holds it at that revision (`lawkit.toml`, or `pyproject.toml` with `[tool.lawkit]`,
found in the config's folder as discovery finds it there), the defaults where that revision has
none. `--engine` and `--laws`, when given, hold for every side. A config that git holds at no
side (untracked, or given with `--config` from outside the repository) is not part of the change:
every side uses it as the work tree has it. A change to a digest field or to `laws` between base
and head is a finding, listed first with both values.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit.config import (
    REQUIRE_LEVELS,
    ConfigSource,
    DigestConfig,
    Workspace,
    workspace_from_bytes,
)
from lawkit.errors import ConfigError
from lawkit.keying.review import gitobjects
from lawkit.keying.review.lawchange import Finding

if TYPE_CHECKING:
    from lawkit.footprint.require import Require

CONFIG_NAMES = ("lawkit.toml", "pyproject.toml")
"""The files discovery looks for in a folder, in the order it prefers them."""
MAX_CONFIG_BYTES = 1 << 20
"""A config blob larger than this is refused unread."""


@dataclass(frozen=True)
class SideConfig:
    """The workspace at one revision, and the config file its settings came from."""

    ws: Workspace
    file: str | None
    """The config file (workspace-relative), or None where the revision has none (defaults)."""


@dataclass(frozen=True)
class ConfigChange:
    """One setting that differs between base and head, with both values as shown."""

    field: str
    base: Any
    head: Any

    def text(self) -> str:
        """`digest.exclude: [] at base, ["atom/sampler.py"] at head`."""
        return (f"{self.field}: {json.dumps(self.base, ensure_ascii=False)} at base, "
                f"{json.dumps(self.head, ensure_ascii=False)} at head")

    def to_json(self) -> dict[str, Any]:
        """The change as one JSON object."""
        return {"field": self.field, "base": self.base, "head": self.head}


def at_revisions(ws: Workspace, top: str, treeishes: Mapping[str, str]
                 ) -> dict[str, SideConfig]:
    """The workspace at each named revision (commit or tree id), read from git objects."""
    plain = _without_overrides(ws)
    candidates = [p for p in _candidates(ws) if _repo_path(top, p) is not None]
    named = [(treeish, _repo_path(top, p) or "") for treeish in treeishes.values()
             for p in candidates]
    found = gitobjects.blobs_at(top, named)
    if not any(found.values()):
        return {side: SideConfig(ws, ws.rel(ws.config_path) if ws.config_path else None)
                for side in treeishes}
    too_big = {blob[0]: blob[1] for blob in found.values()
               if blob is not None and blob[1] > MAX_CONFIG_BYTES}
    blobs = gitobjects.read_blobs(top, [blob[0] for blob in found.values()
                                        if blob is not None and blob[0] not in too_big])
    out = {}
    for side, treeish in treeishes.items():
        chosen: SideConfig | None = None
        for path in candidates:
            blob = found[treeish, _repo_path(top, path) or ""]
            if blob is None:
                continue
            oid = blob[0]
            shown = ws.rel(path)
            if oid in too_big:
                raise ConfigError(f"at {side} ({treeish[:10]}): {too_big[oid]:,} bytes, over "
                                  f"the {MAX_CONFIG_BYTES >> 20} MiB a config file may hold",
                                  path=shown)
            try:
                parsed = workspace_from_bytes(blobs[oid], path)
            except ConfigError as exc:
                raise ConfigError(f"at {side} ({treeish[:10]}): {exc.detail}: lawkit review "
                                  "digests each side with its own config; fix the config, or "
                                  "review from a revision where it parses",
                                  path=shown) from None
            if parsed is not None:
                chosen = SideConfig(_overridden(parsed, ws, plain), shown)
                break
        out[side] = chosen or SideConfig(_overridden(_defaults(_folder(ws)), ws, plain), None)
    return out


def repo_paths(ws: Workspace, top: str) -> set[str]:
    """Where a revision's config may be, as repository paths (to tell a conflicted one)."""
    return {path for p in _candidates(ws) if (path := _repo_path(top, p)) is not None}


def changes(base: Workspace, head: Workspace) -> list[ConfigChange]:
    """The digest fields and `laws` that differ between two sides, in config order."""
    out = []
    for name in ("root", "packages", "include", "exclude", "length", "key"):
        old, new = _shown(base, getattr(base.digest, name)), _shown(head, getattr(head.digest,
                                                                                  name))
        if old != new:
            out.append(ConfigChange(f"digest.{name}", old, new))
    if _shown(base, base.laws) != _shown(head, head.laws):
        out.append(ConfigChange("laws", _shown(base, base.laws), _shown(head, head.laws)))
    return out


def findings(changed: list[ConfigChange], base: SideConfig, head: SideConfig) -> list[Finding]:
    """One finding per setting the change edits, on the config file at head (or at base)."""
    where = head.file or base.file
    return [Finding("config", f"the change edits the workspace config: {c.text()}; each side "
                    "is digested with its own settings, so the laws' keys now vouch for other "
                    "files than they did: land the config change on its own, then re-key or "
                    "refit the laws in a change of their own", where) for c in changed]


def policy(base: Workspace, head: Workspace) -> Require | None:
    """The stricter of the base's and the head's `[rekey] require`: a change that relaxes
    the policy is not judged by its own."""
    from lawkit.footprint.require import Require

    found = [p for p in (Require.of(None, base), Require.of(None, head)) if p is not None]
    return min(found, key=lambda p: REQUIRE_LEVELS.index(p.level), default=None)


def environment_findings(policy: Require, top: str, base: SideConfig, head: SideConfig,
                         commits: tuple[str, str]) -> list[Finding]:
    """Under a policy, one finding per change to the evidence the environment's verdicts
    stand on: the config's ``environment`` or ``python`` (deleted, re-pointed or set), and the
    lock file or manifest it names at base or at head, changed by the change (a change never
    vouches for itself)."""
    where = head.file or base.file
    out = []
    for name in ("environment", "python"):
        old, new = getattr(base.ws, name), getattr(head.ws, name)
        if old != new:
            out.append(Finding("environment", f"{policy.said()}: the change edits the "
                               f"workspace config's {name}: {json.dumps(old)} at base, "
                               f"{json.dumps(new)} at head; the environment's verdicts stand "
                               "on it, and a change cannot vouch for itself: land it in a "
                               "change of its own", where))
    named = {side.ws.root / side.ws.environment for side in (base, head)
             if side.ws.environment not in (None, "current")}
    paths = sorted(p for path in named if (p := _repo_path(top, path)) is not None)
    found = gitobjects.blobs_at(top, [(commit, p) for commit in commits for p in paths])
    for path in paths:
        old, new = (found[commit, path] for commit in commits)
        if (old[0] if old else None) != (new[0] if new else None):
            out.append(Finding("environment", f"{policy.said()}: the change edits {path}, the "
                               "environment the config names: the environment's verdicts "
                               "stand on it, and a change cannot vouch for itself: land it in "
                               "a change of its own", base.ws.rel(Path(top) / path)))
    return out


def _shown(ws: Workspace, value: Any) -> Any:
    """A setting as compared and shown: a path from the workspace root, a list, or the value."""
    if isinstance(value, Path):
        return os.path.relpath(value, ws.root).replace(os.sep, "/")
    return list(value) if isinstance(value, tuple) else value


def _candidates(ws: Workspace) -> list[Path]:
    """Where a revision's config may be: the config's own file when it has another name (given
    with `--config`), else each name discovery looks for, in the config's folder."""
    if ws.config_path is not None and ws.config_path.name not in CONFIG_NAMES:
        return [ws.config_path]
    return [_folder(ws) / name for name in CONFIG_NAMES]


def _folder(ws: Workspace) -> Path:
    return ws.config_path.parent if ws.config_path is not None else ws.root


def _repo_path(top: str, path: Path) -> str | None:
    """A path from the repository's top level, or None outside it."""
    try:
        return path.absolute().relative_to(Path(top)).as_posix()
    except ValueError:
        try:
            return path.resolve().relative_to(Path(top).resolve()).as_posix()
        except ValueError:
            return None


def _defaults(folder: Path) -> Workspace:
    """The workspace of a folder without a config (the defaults of docs/adopting.md, Config)."""
    return Workspace(root=folder, config_path=None, laws=folder / "laws",
                     digest=DigestConfig(root=folder, source=ConfigSource(None, (folder,))))


def _without_overrides(ws: Workspace) -> Workspace:
    """The workspace as its work-tree config alone says, without `--engine` or `--laws`."""
    if ws.config_path is None:
        return _defaults(ws.root)
    try:
        return workspace_from_bytes(ws.config_path.read_bytes(), ws.config_path) or ws
    except (OSError, ConfigError):
        return ws


def _overridden(side: Workspace, ws: Workspace, plain: Workspace) -> Workspace:
    """`side` with the engine root and laws folder the command line gave (`ws` differs from
    its own config there), so that a flag holds for every side."""
    if ws.digest.root != plain.digest.root:
        side = replace(side, digest=replace(side.digest, root=ws.digest.root))
    if ws.laws != plain.laws:
        side = replace(side, laws=ws.laws)
    return side
