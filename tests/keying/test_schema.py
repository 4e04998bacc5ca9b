"""`lawkit schema`: the JSON Schema of law files, from the pydantic models, without numpy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.keying.schema import TERM_PATTERN, law_file_schema
from lawkit.lawfiles.lawfile import load
from testing.samples import GOOD

runner = CliRunner()


def test_schema_prints_one_json_document_describing_law_files() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["required"] == ["schema", "host"]
    assert doc["properties"]["schema"]["const"] == "lawkit/1"
    assert doc["additionalProperties"] is True  # unknown top-level sections are kept
    law = doc["$defs"]["Law"]
    assert law["required"] == ["name", "target", "terms"]
    assert law["additionalProperties"] is False
    assert doc["$defs"]["Host"]["properties"]["key"]["additionalProperties"] == {"type": "string"}
    assert doc == law_file_schema()


def test_the_schema_uses_the_yaml_names_not_the_python_ones() -> None:
    doc = law_file_schema()
    assert "schema" in doc["properties"] and "schema_" not in doc["properties"]
    rekey = doc["$defs"]["RekeyRecord"]["properties"]
    assert "from" in rekey and "from_" not in rekey


def test_the_term_pattern_accepts_what_the_models_accept_and_nothing_else() -> None:
    assert doc_pattern() == TERM_PATTERN
    good = ["1", "num_seqs", "num_seqs:max_context", "a.b:c_d"]
    bad = ["", "2", "num seqs", "a:", ":a", "a*b", "1:a"]
    assert all(re.search(TERM_PATTERN, term) for term in good)
    assert not any(re.search(TERM_PATTERN, term) for term in bad)


def doc_pattern() -> str:
    pattern: str = law_file_schema()["$defs"]["Law"]["properties"]["terms"]["propertyNames"][
        "pattern"]
    return pattern


def test_every_key_of_a_valid_law_file_is_a_property_the_schema_names() -> None:
    data = yaml.safe_load(GOOD)
    doc = law_file_schema()
    assert set(data) - set(doc["properties"]) == {"device"}  # an extra section, allowed
    assert set(data["host"]) <= set(doc["$defs"]["Host"]["properties"])
    for law in data["host"]["laws"]:
        assert set(law) <= set(doc["$defs"]["Law"]["properties"])
        for low_high in law["domain"].values():
            assert len(low_high) == 2


def test_a_law_file_naming_the_schema_on_its_first_line_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "laws.yaml"
    path.write_text("# yaml-language-server: $schema=../lawkit.keying.schema.json\n" + GOOD)
    assert load(path).law("prefill").target == "host_s"
