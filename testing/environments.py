"""A git repository of laws fitted with a footprint that recorded its environment, written by
hand as the recorder writes it (the engine of `testing.lawrepo` plus a sampler), for the
tests of environment verdicts in `footprint diff`, `check`, `rekey` and `review`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lawkit.footprint.document import (
    DistRecord,
    EnvironmentRecord,
    FileRecord,
    Footprint,
    UnitRecord,
    encode_footprint,
)
from lawkit.footprint.environment import PythonBuild
from lawkit.footprint.units import NORMAL, codes_of, units_of
from testing.lawrepo import (
    ENGINE,
    commit_fitted_with_footprint,
    engine_digest,
    init_repo,
)

SAMPLER = {"atom/sampler.py": "def sample(logits):\n    return logits[0]\n"}
BASE = {**ENGINE, **SAMPLER}
DIGEST = engine_digest(BASE)
LAWS: list[dict[str, Any]] = [
    {"name": "sampling", "target": "sample_s", "terms": {"1": 0.0011}},
    {"name": "scheduling", "target": "schedule_s", "terms": {"1": 0.0021}},
]


def footprint_bytes(dists: Mapping[str, DistRecord], unpackaged: tuple[str, ...] = (), *,
                    environment: bool = True) -> bytes:
    """The footprint of BASE in which no unit ran and `dists` ran as their records say."""
    engine = {k: v for k, v in BASE.items()
              if v is not None and k.startswith("atom/") and k.endswith(".py")}
    files = {rel: FileRecord(hashlib.sha256(text.encode()).hexdigest(), {
        u.qualname: UnitRecord(u.digest, (), (), (),
                               code=(codes_of(text.encode()) or {})[u.qualname], normal=NORMAL)
        for u in units_of(text.encode())}) for rel, text in engine.items()}
    env = EnvironmentRecord(PythonBuild("3.12.1", "cpython"), dict(dists), unpackaged)
    return encode_footprint(Footprint("atom", DIGEST, ("python", "run.py"), 1, files,
                                      python="3.12.1", regions=("sample_s", "schedule_s"),
                                      environment=env if environment else None))


def write_lock(root: Path, pins: Mapping[str, str]) -> None:
    """A requirements file pinning each distribution of `pins` to its version, its artifact
    pinned by hash (a bare ``==V`` admits ``V+local``: ambiguous)."""
    (root / "requirements.txt").write_text("".join(f"{n}=={v} --hash=sha256:{'0' * 64}\n"
                                                   for n, v in pins.items()))


EnvRepo = Callable[[Mapping[str, DistRecord], Mapping[str, str]], Path]
"""The `env_repo` fixture (tests/conftest.py): `make_env_repo` in the test's folder, entered."""


def make_env_repo(root: Path, dists: Mapping[str, DistRecord], pins: Mapping[str, str]) -> Path:
    """LAWS fitted on DIGEST with `fp.json` naming `dists`, committed; the lock `pins` beside
    them, not committed."""
    root = init_repo(root)
    commit_fitted_with_footprint(root, BASE, DIGEST, LAWS, footprint_bytes(dists))
    write_lock(root, pins)
    return root
