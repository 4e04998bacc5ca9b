"""Hypothesis: law files written in many styles go through rekey with every other byte kept.

The generator writes what people write by hand: comments between keys and after values, block
and flow mappings, CRLF, a BOM, plain, single- and double-quoted scalars, trailing spaces,
blank lines, indentation of 2, 3 or 4 spaces, indentless sequences, keys in any order, extra
top-level sections, digests that look like numbers. The check is independent of how rekey
places its edits: take the inserted lines out of the new text and the key's digest back, and
what is left must be the old text exactly.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lawkit.keying.check import integrity_problems
from lawkit.keying.rekey import adopted_bytes, rekeyed_bytes
from lawkit.lawfiles import lawfile, lawwrite
from testing.workspaces import body_of

AT = "2026-11-10T09:12:44Z"
WHY = 'docs only: "quoted" #1'
DIGEST = st.text(alphabet="0123456789abcdef", min_size=8, max_size=8) | st.sampled_from(
    ["00000123", "1e100000", "12345678", "0000e000", "00000000"])
COMMENTS = ["# a comment", "#", "# atom: \"deadbeef\"", "# - {rekey: {from: \"x\"}}",
            "# naïve façade → ✓ 😀", "#provenance:", "# key: {atom: '00000000'}"]


@dataclass
class Styled:
    """A generated law file and what rekey should find in it."""

    raw: bytes
    key: str
    has_provenance: bool
    newline: str


@st.composite
def styled_law_files(draw: st.DrawFn) -> Styled:
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    unit = draw(st.sampled_from([2, 3, 4]))
    # The many small choices (quoting, comments, spaces) come from a seeded generator: as
    # hypothesis draws they made generation 20 times slower than the test itself.
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    lines: list[str] = []

    def ind(level: int) -> str:
        return " " * (unit * level)

    def scalar(text: str, *, plain_ok: bool = True) -> str:
        styles = ["'", '"'] + (["plain"] if plain_ok else [])
        style = rng.choice(styles)
        return text if style == "plain" else f"{style}{text}{style}"

    def digest_text(d: str) -> str:
        return scalar(d, plain_ok=False)

    def flow(mapping: dict[str, str]) -> str:
        pad = rng.choice(["", " "])
        inner = ", ".join(f"{k}: {v}" for k, v in mapping.items())
        return "{" + pad + inner + pad + "}"

    def emit(line: str) -> None:
        if rng.random() < 0.3:  # a comment or a blank line before the line
            if rng.random() < 0.6:
                lines.append(" " * rng.randint(0, 9) + rng.choice(COMMENTS))
            else:
                lines.append(" " * rng.randint(0, 3))
        if rng.random() < 0.3:
            line += " " * rng.randint(1, 3) + rng.choice(COMMENTS)
        lines.append(line + " " * rng.choice([0, 0, 1, 2]))

    law_dicts = []
    for i in range(draw(st.integers(1, 3))):
        law: dict[str, Any] = {"name": f"law{i}", "target": rng.choice(["host_s", "schedule_s"])}
        law["terms"] = {"1": draw(st.floats(1e-6, 1.0)), "num_seqs": draw(st.floats(-1.0, 1.0)),
                        "num_seqs:max_context": draw(st.floats(0.0, 1e-9))}
        if rng.random() < 0.5:
            law["where"] = {"phase": rng.choice(["prefill", "decode"])}
        law_dicts.append(law)
    digests = draw(st.lists(DIGEST, min_size=1, max_size=3))
    has_provenance = draw(st.booleans())
    key = digests[-1] if has_provenance else digests[0]

    def emit_laws(level: int) -> None:
        emit(f"{ind(level)}laws:")
        dash_at = level + rng.choice([0, 1])
        after_dash = " " * rng.randint(1, 2)
        for law in law_dicts:
            first = True
            col = " " * (unit * dash_at + 1 + len(after_dash))
            for field, value in law.items():
                lead = f"{ind(dash_at)}-{after_dash}" if first else col
                first = False
                if field in ("terms", "where"):
                    items = {(scalar(k, plain_ok=k not in ("1", "num_seqs:max_context"))):
                             (lawwrite.format_float(v) if isinstance(v, float) else scalar(v))
                             for k, v in value.items()}
                    if rng.random() < 0.5:
                        emit(f"{lead}{field}: {flow(items)}")
                    else:
                        emit(f"{lead}{field}:")
                        for k, v in items.items():
                            emit(f"{col}{' ' * unit}{k}: {v}")
                else:
                    emit(f"{lead}{field}: {scalar(value)}")

    def emit_key(level: int) -> None:
        fields = {"atom": digest_text(key)}
        if rng.random() < 0.3:
            fields["cuda"] = digest_text("12.4")
        if draw(st.booleans()):
            emit(f"{ind(level)}key: {flow(fields)}")
        else:
            emit(f"{ind(level)}key:")
            for k, v in fields.items():
                emit(f"{ind(level + 1)}{k}: {v}")

    def emit_provenance(level: int) -> None:
        emit(f"{ind(level)}provenance:")
        dash = ind(level + draw(st.sampled_from([0, 1]))) + "-" + " " * rng.randint(1, 2)
        entries = [("fit", {"digest": digest_text(digests[0]), "at": scalar("2026-10-02"),
                            "records": "10", "body": scalar(body_of(law_dicts))})]
        for old, new in itertools.pairwise(digests):
            entries.append(("rekey", {"from": digest_text(old), "to": digest_text(new),
                                      "at": scalar("2026-10-03"), "why": scalar("x y"),
                                      "refs": "[]"}))
        for kind, fields in entries:
            emit(f"{dash}{flow({kind: flow(fields)})}")

    if rng.random() < 0.2:
        emit("---")
    extra = draw(st.sampled_from([[], ["labels"], ["device"], ["labels", "device"]]))
    sections = ["schema", "host", *extra]
    order = draw(st.permutations(sections))
    for section in order:
        if section == "schema":
            emit(f"schema: {scalar('lawkit/1')}")
        elif section == "labels":
            if rng.random() < 0.5:
                emit(f"labels: {flow({'cell': scalar('crs005'), 'tp': '4'})}")
            else:
                emit("labels:")
                emit(f"{ind(1)}cell: {scalar('crs005')}")
        elif section == "device":
            if rng.random() < 0.5:
                emit(f"device: {flow({'gpu': scalar('a100'), 'count': '8'})}")
            else:
                emit("device:")
                emit(f"{ind(1)}gpu: a100")
                emit(f"{ind(1)}sizes: [1, 2, 3]")
        else:
            emit("host:")
            parts = ["key", "laws"] + (["provenance"] if has_provenance else [])
            for part in draw(st.permutations(parts)):
                {"key": emit_key, "laws": emit_laws, "provenance": emit_provenance}[part](1)
    text = nl.join(lines) + (nl if draw(st.booleans()) else "")
    raw = (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + text.encode()
    return Styled(raw, key, has_provenance, nl)


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _assert_two_edits_only(old_raw: bytes, new_raw: bytes, styled: Styled, new_key: str) -> None:
    """Take the inserted lines out and the key back: the old bytes must come back exactly."""
    bom = b"\xef\xbb\xbf"
    assert old_raw.startswith(bom) == new_raw.startswith(bom)
    old, new = old_raw.decode().removeprefix("\ufeff"), new_raw.decode().removeprefix("\ufeff")
    old_lines, new_lines = _lines(old), _lines(new)
    kind = "adopt" if not styled.has_provenance else "rekey"
    inserted = [i for i, line in enumerate(new_lines)
                if re.match(rf" *- +{{{kind}: {{", line) and f'at: "{AT}"' in line]
    assert len(inserted) == 1
    at = inserted[0]
    entry_line = new_lines[at]
    assert entry_line.endswith(styled.newline) and not entry_line.endswith(" " + styled.newline)
    taken = [at]
    if kind == "adopt":
        assert new_lines[at - 1].strip() == "provenance:"
        assert new_lines[at - 1].endswith(styled.newline)
        taken = [at - 1, at]
    else:
        previous = new_lines[at - 1]  # the old last entry: the new one sits under it
        assert previous[:previous.index("{")] == entry_line[:entry_line.index("{")]
    rest = [line for i, line in enumerate(new_lines) if i not in taken]
    expected = list(old_lines)
    if not old.endswith("\n") and at == len(new_lines) - 1:
        expected[-1] += styled.newline  # the file gains the final newline it lacked
    assert len(rest) == len(expected)
    changed = [i for i, (a, b) in enumerate(zip(expected, rest, strict=True)) if a != b]
    if styled.key == new_key:
        assert changed == []
        return
    assert len(changed) == 1
    before, after = expected[changed[0]], rest[changed[0]]
    assert len(before) == len(after)
    differ = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    start = before.index(styled.key, differ[0] - 7)
    assert before[start - 1] in "'\"" and before[start + 8] == before[start - 1]
    assert all(start <= i < start + 8 for i in differ)
    assert after[start:start + 8] == new_key


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(styled=styled_law_files(), target=DIGEST)
def test_rekey_keeps_every_byte_outside_the_two_edits_in_any_style(styled: Styled,
                                                                   target: str) -> None:
    old = lawfile.parse(styled.raw, "law.yaml")
    assert old.host.key["atom"] == styled.key
    if not styled.has_provenance:
        adopted = adopted_bytes(styled.raw, "law.yaml", key="atom", at=AT, why=WHY)
        _assert_two_edits_only(styled.raw, adopted, styled, styled.key)
        styled = Styled(adopted, styled.key, True, styled.newline)
        assert integrity_problems(lawfile.parse(adopted, "law.yaml"), "atom") == []
    if target == styled.key:
        assert rekeyed_bytes(styled.raw, "law.yaml", key="atom", to=target, at=AT,
                             why=WHY) == styled.raw
        return
    new = rekeyed_bytes(styled.raw, "law.yaml", key="atom", to=target, at=AT, why=WHY)
    _assert_two_edits_only(styled.raw, new, styled, target)
    law_file = lawfile.parse(new, "law.yaml")
    assert law_file.host.key["atom"] == target
    entry = law_file.host.provenance[-1].rekey
    assert entry is not None and (entry.from_, entry.to, entry.why) == (styled.key, target, WHY)
    assert integrity_problems(law_file, "atom") == []
    assert law_file.model_dump(exclude={"host"}) == \
        lawfile.parse(styled.raw, "law.yaml").model_dump(exclude={"host"})
