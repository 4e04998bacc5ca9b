"""Where captures were taken (docs/captures.md): beside a text capture in
`<name>.host.json`, in a Parquet capture's metadata, read once at open."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

import lawkit.capture
from lawkit import capture
from lawkit.capture import CaptureError


def _steps(path: Path, count: int) -> None:
    with capture.open(path, features=("n",)) as cap:
        cap.steps()
        for i in range(count):
            with cap.step(n=i):
                pass


def _is_this_host(host: dict[str, object]) -> None:
    assert set(host) == {"cpu_model", "logical_cpus", "platform", "python"}
    assert isinstance(host["cpu_model"], str) and host["cpu_model"]
    assert host["logical_cpus"] == os.cpu_count()
    assert host["platform"] == f"{os.uname().sysname}-{os.uname().release}-{os.uname().machine}"
    assert host["python"] == platform.python_version()


@pytest.mark.parametrize("name", ["run.csv", "run.jsonl"])
def test_a_text_capture_has_its_host_in_a_json_file_named_after_it(
        tmp_path: Path, workspace: str, name: str) -> None:
    _steps(tmp_path / name, 2)
    _is_this_host(json.loads((tmp_path / f"{name}.host.json").read_text()))


def test_a_parquet_capture_has_its_host_in_its_file_metadata(
        tmp_path: Path, workspace: str) -> None:
    import pyarrow.parquet as pq

    _steps(tmp_path / "run.parquet", 2)
    _is_this_host(json.loads(pq.read_schema(tmp_path / "run.parquet").metadata[b"lawkit.host"]))
    assert not (tmp_path / "run.parquet.host.json").exists()


def test_the_cpu_model_comes_from_proc_cpuinfo_where_there_is_one(
        tmp_path: Path, workspace: str) -> None:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo here")
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")]
    _steps(tmp_path / "run.csv", 1)
    host = json.loads((tmp_path / "run.csv.host.json").read_text())
    assert host["cpu_model"] == (names[0] if names else os.uname().machine)


def test_appending_rows_taken_on_another_host_is_refused_and_changes_nothing(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    _steps(path, 2)
    host_file = tmp_path / "run.csv.host.json"
    host = json.loads(host_file.read_text())
    host_file.write_text(json.dumps({**host, "cpu_model": "Another CPU"}))
    before = path.read_bytes()
    with pytest.raises(CaptureError, match=r"run.csv: exists with rows taken on another host "
                                           r"\(cpu_model 'Another CPU', here '.+', says "
                                           r"run.csv.host.json\)"):
        capture.open(path, features=("n",))
    assert path.read_bytes() == before
    host_file.write_text(json.dumps(host))
    _steps(path, 1)  # the same host appends
    assert len(path.read_text().splitlines()) == 4


def test_rows_of_an_unknown_host_get_no_host_file_when_appended_to(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    path.write_text(f"step,n,atom\n0,1,{workspace}\n")  # written before hosts were kept
    _steps(path, 1)
    assert not (tmp_path / "run.csv.host.json").exists()


def test_the_host_is_read_once_at_open_never_per_step(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = lawkit.capture.this_host

    def counted() -> dict[str, str | int | None]:
        calls.append(1)
        return real()

    monkeypatch.setattr(lawkit.capture, "this_host", counted)
    _steps(tmp_path / "run.jsonl", 50)
    assert calls == [1]
