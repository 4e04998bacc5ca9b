"""The text of a law file's change: which lines moved, and whether only a re-key moved them.

A reviewer reads the diff, not the model, so a rekey or adopt is also checked on the text: every
line identical but the key's and the inserted entries'. Lines are split where YAML counts them,
so that line numbers agree with the parser's.
"""

from __future__ import annotations

import copy
import difflib
import re

from lawkit.lawfiles import lawfile

# The line breaks YAML counts lines by (PyYAML and libyaml alike), so line numbers agree.
_LINES = re.compile(r"(?<=[\n\x85\u2028\u2029])|(?<=\r)(?!\n)")
# Characters str.splitlines breaks at but YAML does not (or does, where splitlines agrees).
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e]")
_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
_PROVENANCE_KEY = re.compile(r"[ \t]*provenance[ \t]*:[ \t]*(#.*)?\s*\Z")
_ITEM_LEAD = re.compile(r"[ \t]*-[ \t]+\Z")
_SIMPLE_QUOTED = re.compile(r"""(["'])([0-9A-Za-z_.+-]*)\1\Z""")
_MAX_SPANS = 6


def only_key_and_entries(key: str, base_text: str, base_file: lawfile.LawFile, head_text: str,
                         head_file: lawfile.LawFile, kept: int) -> str | None:
    """Why a rekey/adopt change is more than the key line and appended entries, or None."""
    # The model: the base's data with the head's key and the head's new entries is the head's.
    expected = copy.deepcopy(base_file.document.data)
    head_data = head_file.document.data
    expected["host"]["key"][key] = head_data["host"]["key"][key]
    expected["host"]["provenance"] = [*(expected["host"].get("provenance") or []),
                                      *head_data["host"]["provenance"][kept:]]
    if expected != head_data:
        return "more than the key and the new provenance entries changed"
    a, b = _split(_with_final_newline(base_text)), _split(head_text)
    nodes = head_file.document.nodes
    entry_lines = set()
    for i in range(kept, len(head_file.host.provenance)):
        node = nodes[("host", "provenance", i)]
        if node.start_mark.line != node.end_mark.line:
            return f"provenance entry {i + 1} is not one line"
        entry_lines.add(node.start_mark.line)
    allowed = set(entry_lines)
    if "provenance" not in base_file.document.data["host"] and entry_lines:
        above = min(entry_lines) - 1
        if above >= 0 and _PROVENANCE_KEY.match(b[above]):
            allowed.add(above)
    base_key = base_file.document.nodes[("host", "key", key)].start_mark.line
    head_key = nodes[("host", "key", key)].start_mark.line
    inserted: set[int] = set()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and (i1, i2, j1, j2) == (base_key, base_key + 1, head_key,
                                                     head_key + 1):
            continue
        if tag == "insert" and allowed.issuperset(range(j1, j2)):
            inserted.update(range(j1, j2))
            continue
        return "lines other than the key and the new provenance entries changed"
    if not entry_lines <= inserted:
        return "the new provenance entries are not new lines"
    return None


def rekey_shape(key: str, base_text: str, head_text: str,
                 head_file: lawfile.LawFile) -> tuple[str, int] | None:
    """(the key at base, the entries kept) when the base is the head without its newest entries
    and with another quoted key on the key's line, every other line the same; else None.

    The proof is on the text: the head parses, its newest entries are whole lines of a block
    sequence (with the `provenance:` line above them when they are all there is), and removing
    those lines and swapping the key's quoted scalar on its line gives the base exactly. Such a
    base parses to the head's data less those entries and with the other key, so it need not be
    parsed (a review of 1,000 re-keyed files parses each file once).
    """
    a, b = _split(_with_final_newline(base_text)), _split(head_text)
    entries = head_file.host.provenance
    nodes = head_file.document.nodes
    sequence = nodes.get(("host", "provenance"))
    extra = len(b) - len(a)
    if sequence is None or getattr(sequence, "flow_style", False) or extra < 1:
        return None
    if extra == len(entries) + 1:  # every entry is new: `provenance:` came with them
        kept, with_key_line = 0, True
    elif extra < len(entries):
        kept, with_key_line = len(entries) - extra, False
    else:
        return None  # a base with an empty `provenance:`: leave it to the parsers
    inserted = set()
    for i in range(kept, len(entries)):
        node = nodes[("host", "provenance", i)]
        line = node.start_mark.line
        if node.end_mark.line != line or line >= len(b):
            return None
        text = b[line]
        rest = text[node.end_mark.column:].rstrip("\r\n\x85\u2028\u2029").lstrip(" \t")
        if not _ITEM_LEAD.match(text[:node.start_mark.column]) or rest[:1] not in ("", "#"):
            return None
        inserted.add(line)
    if with_key_line:
        above = min(inserted) - 1
        if above < 0 or above in inserted or not _PROVENANCE_KEY.match(b[above]):
            return None
        inserted.add(above)
    if len(inserted) != extra:
        return None
    key_node = nodes[("host", "key", key)]
    key_line = key_node.start_mark.line
    if key_line in inserted or key_node.end_mark.line != key_line:
        return None
    remaining = [line for j, line in enumerate(b) if j not in inserted]
    at = key_line - sum(1 for j in inserted if j < key_line)
    if remaining[:at] != a[:at] or remaining[at + 1:] != a[at + 1:]:
        return None
    if remaining[at] == a[at]:
        return head_file.host.key[key], kept
    new = remaining[at]
    lead, tail = new[:key_node.start_mark.column], new[key_node.end_mark.column:]
    old = a[at]
    if not (old.startswith(lead) and old.endswith(tail) and len(old) >= len(lead) + len(tail)):
        return None
    scalar = _SIMPLE_QUOTED.match(old[len(lead):len(old) - len(tail)])
    return (scalar.group(2), kept) if scalar else None


def _with_final_newline(text: str) -> str:
    """`text` ending in a line break, as `lawkit rekey` leaves a file that had none."""
    if text and not text.endswith(_BREAKS):
        text += "\r\n" if "\r\n" in text else "\n"
    return text


def _split(text: str) -> list[str]:
    """The lines of `text`, each with its break, split where YAML counts lines."""
    if _OTHER_BREAKS.search(text) is None:  # str.splitlines agrees: the common, fast case
        return text.splitlines(keepends=True)
    return [line for line in _LINES.split(text) if line]


def explained_lines(key: str, head_file: lawfile.LawFile, kept: int) -> frozenset[int]:
    """The head's lines (0-based) a rekey or adopt may change: the key's and the new entries'."""
    nodes = head_file.document.nodes
    lines = {nodes[("host", "key", key)].start_mark.line}
    lines.update(nodes[("host", "provenance", i)].start_mark.line
                 for i in range(kept, len(head_file.host.provenance)))
    if kept == 0 and len(lines) > 1:
        lines.add(min(lines - {nodes[("host", "key", key)].start_mark.line}) - 1)
    return frozenset(lines)


def changed_spans(base_text: str, head_text: str, explained: frozenset[int] = frozenset()
           ) -> tuple[int | None, str]:
    """The first changed line at head and a description of every changed span of lines.

    Spans that only change `explained` head lines (a replaced key line, inserted entries) are
    left out, so that a hand-edit names the lines no provenance explains.
    """
    matcher = difflib.SequenceMatcher(None, _split(base_text), _split(head_text), autojunk=False)
    spans = []
    first: int | None = None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if explained.issuperset(range(j1, j2)) and (
                tag == "insert" or (tag == "replace" and i2 - i1 == j2 - j1 == 1)):
            continue
        first = j1 + 1 if first is None else first
        if tag == "delete":
            spans.append(f"{_count(i2 - i1)} removed after line {j1}" if j1 else
                         f"{_count(i2 - i1)} removed at the top")
        else:
            spans.append(f"{_lines(j1, j2)} {'changed' if tag == 'replace' else 'added'}")
    if not spans:
        return None, "no line changed"
    more = len(spans) - _MAX_SPANS
    return first, ", ".join(spans[:_MAX_SPANS]) + (f" and {more} more" if more > 0 else "")


def _count(n: int) -> str:
    return f"{n} line{'s' if n != 1 else ''}"


def _lines(j1: int, j2: int) -> str:
    return f"line {j1 + 1}" if j2 - j1 == 1 else f"lines {j1 + 1}-{j2}"
