"""The footprint file as one pydantic model: schema 3 read whole (distributions by file, the
configuration), older schemas still read, a malformed key named as law files' are, and its
JSON Schema printed by `lawkit schema footprint`."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lawkit.footprint.document import (
    UnitRecord,
    decode_footprint,
    encode_footprint,
    normal_forms,
)
from lawkit.footprint.errors import FootprintError
from testing.cli import invoke as lawkit

UNIT = {"digest": "d1", "phases": ["startup", "steps"], "regions": ["sample_s"],
        "startup_regions": ["*"], "code": "c1", "normal": 1}


def _doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "lawkit-footprint/3", "key": "atom", "digest": "a" * 16,
        "command": ["python", "run.py"], "processes": 1, "recorder": "sys.monitoring",
        "python": "3.12.3", "regions": ["*", "sample_s"], "unhashed": [],
        "files": {"engine/core.py": {"sha256": "s1", "units": {"<module>": UNIT}}},
        "environment": {
            "python": {"version": "3.12.3", "implementation": "cpython", "abiflags": "",
                       "gil_disabled": False},
            "distributions": {"helper": {
                "version": "0.1", "install": "editable", "source": "file:///src/helper",
                "commit": None, "record": None, "phases": ["steps"], "regions": ["sample_s"],
                "startup_regions": [],
                "files": {"helper/core.py": {"sha256": "f1", "native": False,
                                             "phases": ["steps"], "regions": ["sample_s"],
                                             "startup_regions": [],
                                             "units": {"sample": UNIT}}}}},
            "unpackaged": [], "before_recorder": ["sitecustom"]},
        "configuration": {"environ": {"ATOM_GC_THRESHOLD": {
            "value": "e" * 64, "phases": ["steps"], "regions": ["sample_s"],
            "startup_regions": []}},
            "settings": {"gc_threshold": [700, 10, 10], "gc_enabled": True,
                         "switch_interval": 0.005, "hash_seed": "random", "cpus": [0, 1]}},
    }
    doc.update(over)
    return copy.deepcopy(doc)


def _read(doc: dict[str, Any]) -> Any:
    return decode_footprint(json.dumps(doc).encode(), shown="fp.json")


def test_a_schema_3_footprint_reads_its_distributions_by_file_and_its_configuration() -> None:
    fp = _read(_doc())
    assert (fp.file_schema, fp.schema) == (3, 2)  # unit digests stay schema 2's
    helper = fp.environment.distributions["helper"]
    assert (helper.kind, helper.source) == ("editable", "file:///src/helper")
    assert helper.files["helper/core.py"].units["sample"].code == "c1"
    assert fp.environment.before_recorder == ("sitecustom",)
    assert fp.configuration.environ["ATOM_GC_THRESHOLD"].regions == ("sample_s",)
    assert fp.configuration.settings["gc_threshold"] == [700, 10, 10]
    again = decode_footprint(encode_footprint(fp), shown="again.json")
    assert again == fp


def test_units_turned_into_records_on_first_use_are_the_units_recorded() -> None:
    doc = _doc()
    doc["files"]["engine/core.py"]["units"]["f"] = {
        "digest": "d2", "phases": [], "regions": [], "normal": 3}  # no code: no normal form
    units = _read(doc).files["engine/core.py"].units
    assert (len(units), "f" in units, normal_forms(units)) == (2, True, {1})
    assert dict(units) == {
        "<module>": UnitRecord("d1", ("startup", "steps"), ("sample_s",), ("*",), code="c1",
                               normal=1),
        "f": UnitRecord("d2")}


def test_a_schema_2_distribution_is_read_by_its_direct_url() -> None:
    env = _doc()["environment"]
    env["distributions"] = {"six": {"version": "1.17.0", "record": "r", "phases": ["steps"],
                                    "regions": ["*"], "startup_regions": [],
                                    "direct_url": {"url": "file:///w/six.whl",
                                                   "editable": False}}}
    fp = _read(_doc(schema="lawkit-footprint/2", environment=env, configuration=None))
    six = fp.environment.distributions["six"]
    assert (fp.file_schema, six.kind, six.info("six").source, six.files) == \
        (2, "archive", "file:///w/six.whl", {})


@pytest.mark.parametrize(("change", "says"), [
    (lambda d: d.update(processes="1"), "processes: expected a valid integer, got '1' (str)"),
    (lambda d: d["files"]["engine/core.py"]["units"]["<module>"].update(phases=["later"]),
     "files.engine/core.py.units.<module>.phases.0: expected 'startup' or 'steps', got "
     "'later' (str)"),
    (lambda d: d["environment"]["distributions"]["helper"].update(install="pipx"),
     "environment.distributions.helper.install: expected 'index', 'archive', 'vcs', "
     "'directory', 'editable', 'egg-info' or 'legacy', got 'pipx' (str)"),
    (lambda d: d.pop("digest"), "digest: missing: record the footprint again"),
])
def test_a_malformed_key_is_one_line_naming_its_path_and_what_was_expected(
        change: Any, says: str) -> None:
    doc = _doc()
    change(doc)
    with pytest.raises(FootprintError) as info:
        _read(doc)
    assert str(info.value).startswith("fp.json: " + says), str(info.value)
    assert "\n" not in str(info.value)


def test_lawkit_schema_footprint_prints_the_json_schema_of_the_file() -> None:
    result = lawkit("schema", "footprint")
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["schema"]["enum"][-1] == "lawkit-footprint/3"
    assert "configuration" in schema["properties"]
    assert json.loads(lawkit("schema").stdout)["title"].startswith("lawkit law file")
