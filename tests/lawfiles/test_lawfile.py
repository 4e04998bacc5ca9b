"""Loading and validating law files, and writing their values."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from lawkit.errors import LawFileError
from lawkit.lawfiles import lawfile
from lawkit.lawfiles.lawwrite import format_float, law_file_text
from testing.samples import GOOD


def _error(text: str) -> str:
    with pytest.raises(LawFileError) as info:
        lawfile.parse(text.encode(), "laws/x.yaml")
    return str(info.value)


def test_a_valid_file_loads_with_its_laws_history_and_unknown_sections() -> None:
    law_file = lawfile.parse(GOOD.encode(), "laws/x.yaml")
    law = law_file.law("prefill")
    assert law.terms["num_seqs:max_context"] == 1.0e-12
    assert law.columns() == ["num_seqs", "num_tokens", "max_context"]
    assert [e.kind for e in law_file.host.provenance] == ["fit", "rekey"]
    assert law_file.host.provenance[-1].names_digest == "68ad8fc6"
    assert law_file.model_extra == {"device": {"gpu": "a100"}}
    assert law_file.line("host", "key", "atom") == 6


def test_the_body_hash_covers_what_determines_a_prediction_only() -> None:
    base = lawfile.parse(GOOD.encode(), "x").body_hash()
    assert lawfile.parse(GOOD.replace("n: 9120", "n: 1").encode(), "x").body_hash() == base
    assert lawfile.parse(GOOD.replace("0.00012", "0.00013").encode(), "x").body_hash() != base
    assert lawfile.parse(GOOD.replace("<= 256", "<= 255").encode(), "x").body_hash() != base


@pytest.mark.parametrize(("old", "new", "expected"), [
    ('"68ad8fc6"', "1e10", 'laws/x.yaml:6: host.key.atom: expected a quoted string, got 1e10 '
                           '(a float)'),
    ('"68ad8fc6"', "00000123", "laws/x.yaml:6: host.key.atom: expected a quoted string, got "
                               "00000123 (an integer)"),
    ('to: "68ad8fc6"', "to: 68ad8fc6", "laws/x.yaml:17: host.provenance[1].rekey.to: expected a "
                                       "quoted string"),
    ("0.00012", '"x"', "laws/x.yaml:12: host.laws[0].terms.num_seqs: expected a valid number"),
    ("num_seqs: 0.00012", "num_seqs: .inf", "laws/x.yaml:12: host.laws[0].terms: coefficient of "
                                            "'num_seqs' is inf"),
    ('"1": 0.0021', '"a::b": 0.0021', "laws/x.yaml:12: host.laws[0].terms: malformed term "
                                      "'a::b'"),
    ("target: host_s", "targt: host_s", "laws/x.yaml:9: host.laws[0].targt: unknown key, and "
                                        "host.laws[0].target is missing: rename targt to target"),
    ("schema: lawkit/1", "schema: lawkit/2", "laws/x.yaml:2: schema: expected 'lawkit/1'"),
    ("device:", "host:", "laws/x.yaml:18: duplicate key 'host'"),
    ("    atom:", "    atomic:", "host.key.atom: missing"),
    ("num_tokens: [1, 16384]", "num_tokens: [9, 1]", "host.laws[0].domain: num_tokens must be"),
    ("    - name: prefill", "    - name: prefill\n      nme: x", "host.laws[0].nme: unknown key"),
    ("num_tokens: 3.1e-08", "num_tokens: 3.1e-08, num_seqs: 1.0", "laws/x.yaml:12: duplicate key "
                                                                   "'num_seqs'"),
    ("where: {phase: \"prefill\"}", "where: !!python/object:os.system {}", "tag "),
    ("device: {gpu: a100}", "device: &a [1]\nalso: *a", "aliases"),
])
def test_a_malformed_file_gets_one_line_naming_file_line_and_key(old: str, new: str,
                                                                   expected: str) -> None:
    assert old in GOOD
    message = _error(GOOD.replace(old, new))
    assert expected in message
    assert "\n" not in message


def test_two_laws_with_one_name_are_an_error() -> None:
    law = "    - {name: a, target: t, terms: {\"1\": 1.0}}\n"
    text = ('schema: lawkit/1\nhost:\n  key: {atom: "00000000"}\n  laws:\n' + law + law)
    assert "two laws are named 'a'" in _error(text)


def test_non_utf8_bytes_and_empty_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(LawFileError, match=r"x.yaml:2: not UTF-8"):
        lawfile.parse(b"schema: lawkit/1\nhost: \xff\n", "x.yaml")
    with pytest.raises(LawFileError, match="the file is empty"):
        lawfile.parse(b"", "x.yaml")
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(LawFileError, match="not a regular file"):
        lawfile.load(tmp_path / "dir.yaml")


def test_a_bom_is_accepted() -> None:
    assert lawfile.parse(b"\xef\xbb\xbf" + GOOD.encode(), "x").host.key["atom"] == "68ad8fc6"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_are_written_to_read_back_bit_for_bit_as_floats_under_yaml_1_1(x: float) -> None:
    text = format_float(x)
    mantissa = text.partition("e")[0]
    assert "." in mantissa
    loaded = yaml.safe_load(f"v: {text}")["v"]  # PyYAML implements YAML 1.1's float rule
    assert isinstance(loaded, float)
    assert loaded == x and math.copysign(1, loaded) == math.copysign(1, x)


def test_a_written_file_reads_back_to_the_same_model() -> None:
    text = law_file_text(
        labels={"model": "Qwen/Qwen-72B", "tp": 4, "on": "yes"}, key_name="atom",
        key="1e100000", provenance=[("fit", {"digest": "1e100000", "at": "2026-01-01T00:00:00Z",
                                             "records": 3, "body": "b", "captures": []})],
        laws=[{"name": "s[Qwen/Qwen-72B,4]", "target": "schedule_s",
               "where": {"model": "Qwen/Qwen-72B", "tp": 4}, "filter": None,
               "terms": {"1": 4e-05, "batch_size": 1.5e-05, "a:b": 1e-300},
               "fit": {"n": 3, "y": 1.0}, "domain": {"batch_size": [8.0, 128.0]}}])
    loaded = lawfile.parse(text.encode(), "x")
    assert loaded.host.key["atom"] == "1e100000"
    assert loaded.labels == {"model": "Qwen/Qwen-72B", "tp": 4, "on": "yes"}
    assert loaded.host.laws[0].terms == {"1": 4e-05, "batch_size": 1.5e-05, "a:b": 1e-300}
    assert loaded.host.laws[0].fit == {"n": 3, "y": 1.0}
    assert yaml.safe_load(text)["host"]["laws"][0]["fit"] == {"n": 3, "y": 1.0}


@pytest.mark.parametrize("plain", [
    "1_000", "017", "0x1F", "-0", "0", "+5", "1.0e+10", "1_0.5", ".5", "-.inf", ".NaN", "1:30",
    "190:20:30.15", "yes", "No", "~", "null", "1e10", "+1.5E-3", "0.", "-1_2.0_1", "y", "Off",
    "a b", "0b101", "0o17", "-0x1f", "+0", "-0.0", "68ad8fc6", "00000123",
])
def test_plain_scalars_read_as_pyyaml_reads_them(plain: str) -> None:
    from lawkit.lawfiles import yamlsafe

    ours = yamlsafe.load(f"v: {plain}\n", "x").data["v"]
    theirs = yaml.safe_load(f"v: {plain}\n")["v"]
    assert type(ours) is type(theirs)
    if isinstance(ours, float) and math.isnan(ours):
        assert math.isnan(theirs)
    else:
        assert ours == theirs
        assert str(ours) == str(theirs)  # the sign of -0.0 too


@given(st.lists(st.one_of(
    st.sampled_from(["1_000", "017", "0x1F", ".inf", "1:30", "yes", "~", "null", "", "<<", "=",
                     "!", "2001-12-14", "1e10", "-.5", "y", "Off", "0b1", "NULL", "&", "*"]),
    st.text(alphabet="0123456789+-._:eExXoObBaNnyYtTfF~<=", max_size=8)), min_size=1,
    max_size=20))
def test_lawkits_loader_tags_every_node_as_pyyamls_safe_loader_does(plains: list[str]) -> None:
    from lawkit.lawfiles import yamlsafe

    text = "".join(f"k{i}: {p!s}\n" if p.strip(" ") and p[0] not in "!&*" else f"k{i}: {p}x\n"
                   for i, p in enumerate(plains))
    text += f"l: [{', '.join(repr(p) for p in plains)}]\n"
    try:
        theirs = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return
    ours = yaml.compose(text, Loader=yamlsafe.Loader)

    def walk(node: yaml.Node) -> list[tuple[str, str]]:
        if isinstance(node, yaml.ScalarNode):
            return [(node.tag, node.value)]
        children = [c for pair in node.value for c in pair] if isinstance(
            node, yaml.MappingNode) else node.value
        return [(node.tag, "")] + [t for child in children for t in walk(child)]

    assert walk(ours) == walk(theirs)
