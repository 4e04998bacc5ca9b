"""The environment from the command line: `lawkit env export` writes a manifest that `--env
FILE.json` reads; `rekey --accept-env` accepts a Python build change once, and `check` passes
after (issue 39, case 12); a schema-2 footprint says in one line to record it again."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lawkit.footprint.environment import python_build
from testing.cli import invoke as lawkit
from testing.environments import BASE, DIGEST, LAWS, footprint_bytes
from testing.lawrepo import body_of, commit, init_repo, law_text


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """Laws fitted with a footprint recorded by a debug build of this Python (abiflags "d"):
    the same version, another build."""
    doc = json.loads(footprint_bytes({}))
    doc["environment"]["python"] = {**python_build().to_json(), "abiflags": "d"}
    raw = json.dumps(doc, sort_keys=True).encode()
    root = init_repo(tmp_path / "repo")
    fit = ("fit", {"digest": DIGEST, "at": "2026-11-10T09:12:44Z", "records": 100,
                   "body": body_of(LAWS), "captures": [],
                   "footprint": {"path": "fp.json", "sha256": hashlib.sha256(raw).hexdigest()}})
    commit(root, {**BASE, "fp.json": raw,
                  "laws/host.yaml": law_text(DIGEST, "a", laws=LAWS, provenance=[fit])},
           "fitted with a footprint")
    here = os.getcwd()
    os.chdir(root)
    yield root
    os.chdir(here)


def test_rekey_accept_env_accepts_a_python_build_change_once_and_check_passes_after(
        repo: Path) -> None:
    assert lawkit("check", "--env", "current").exit_code == 1
    done = lawkit("rekey", "--accept-env", "--env", "current", "--why", "a release build")
    assert done.exit_code == 0, done.output
    after = (repo / "laws/host.yaml").read_text()
    assert after.count("env:") == 1 and "abiflags" in after
    checked = lawkit("check", "--env", "current")
    assert checked.exit_code == 0, checked.output
    again = lawkit("rekey", "--accept-env", "--env", "current", "--why", "again")
    assert again.exit_code == 0 and (repo / "laws/host.yaml").read_text() == after


def test_env_export_writes_a_manifest_that_env_reads_back(repo: Path) -> None:
    result = lawkit("env", "export", "--out", "env.json.gz")
    assert result.exit_code == 0, result.output
    manifest = json.loads(gzip.decompress((repo / "env.json.gz").read_bytes()))
    assert manifest["schema"] == "lawkit-environment/1"
    assert manifest["python"] == python_build().to_json()
    pydantic = manifest["distributions"]["pydantic"]
    assert pydantic["install"] == "index" and "pydantic/main.py" in pydantic["files"]
    assert set(manifest["configuration"]["settings"]) >= {"gc_threshold", "flags", "cpus"}
    diffed = lawkit("footprint", "diff", "fp.json", "--env", "env.json.gz")
    assert diffed.exit_code == 1
    assert "changed  python" in diffed.stdout  # the debug build differs from this one
    assert "env.json.gz shows each file's sha256" in diffed.stdout


def test_env_export_hides_a_secrets_value_and_keeps_others_as_sha256(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("ATOM_GC_THRESHOLD", "50000")
    out = lawkit("env", "export")
    assert out.exit_code == 0, out.output
    environ = json.loads(out.stdout)["configuration"]["environ"]
    assert environ["HF_TOKEN"] == "hidden" and "hf_secret" not in out.stdout
    assert environ["ATOM_GC_THRESHOLD"] == hashlib.sha256(b"50000").hexdigest()


def test_a_bad_manifest_is_one_line_naming_it_and_exit_2(repo: Path) -> None:
    (repo / "env.json").write_text('{"schema": "lawkit-environment/1", "python": 3}')
    result = lawkit("footprint", "diff", "fp.json", "--env", "env.json")
    assert result.exit_code == 2
    assert result.stderr.startswith("lawkit: error: env.json: python: expected")
    assert result.stderr.count("\n") == 1


def test_a_schema_2_footprint_says_in_one_line_to_record_it_again(repo: Path) -> None:
    doc = json.loads((repo / "fp.json").read_text())
    doc["schema"] = "lawkit-footprint/2"
    (repo / "old.json").write_text(json.dumps(doc))
    text = lawkit("footprint", "diff", "old.json", "--env", "current").stdout
    assert ("environment: recorded before lawkit-footprint/3: record it again to judge "
            "dependencies by content and compare the configuration") in text
