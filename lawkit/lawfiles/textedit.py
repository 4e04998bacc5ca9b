"""The two text edits of a rekey, placed by the parser's positions (docs/commands.md, rekey).

Round-trip YAML libraries re-dump a file and move bytes a reviewer then has to read, so lawkit
edits text instead: it replaces the quoted scalar of `host.key.<key>` and inserts one
provenance line after the last item of `host.provenance` (or, for an adoption where there is
none, a `provenance:` key and its item at the end of `host`). Every other character is kept:
comments, quoting, spacing, blank lines, CRLF or LF. Whatever this module cannot place with
certainty it refuses, naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from lawkit.errors import RefusalError
from lawkit.lawfiles import yamlsafe
from lawkit.lawfiles.lawfile import LawFile, LawText

_ITEM_PREFIX = re.compile(r" *- +\Z")
_REST_OF_LINE = re.compile(r"[ \t]*(#[^\r\n]*)?")
_BREAK = re.compile(r"\r\n|\n|\r")


@dataclass(frozen=True)
class Edit:
    """Replace `text[start:end]` with `new` (an insertion where start == end)."""

    start: int
    end: int
    new: str


def key_edit(law_file: LawFile | LawText, key: str, digest: str) -> Edit:
    """Replace the quoted scalar of `host.key.<key>` with `digest`, in the same quotes."""
    node = law_file.document.nodes[("host", "key", key)]
    text = law_file.text
    start, end = node.start_mark.index, node.end_mark.index
    quote = node.style if isinstance(node, yaml.ScalarNode) else None
    span = text[start:end]
    if quote not in ("'", '"') or len(span) < 2 or span[0] != quote or span[-1] != quote \
            or _BREAK.search(span):
        raise RefusalError(f"host.key.{key}: expected a quoted digest on one line, like "
                           f"{key}: \"{digest}\"; write it so, then run again",
                           path=law_file.path, line=node.start_mark.line + 1)
    return Edit(start, end, f"{quote}{digest}{quote}")


def provenance_edit(law_file: LawFile | LawText, entry: str, *more: str) -> Edit:
    """Insert `- {entry}` as a new last line of `host.provenance`, adding the key if missing
    (and a line for each of `more` after it)."""
    nodes = law_file.document.nodes
    host = nodes[("host",)]
    if isinstance(host, yaml.MappingNode) and host.flow_style:
        raise RefusalError("host is a flow mapping ({...}): lawkit adds provenance one line at a "
                           "time to a block mapping; write host as a block mapping",
                           path=law_file.path, line=host.start_mark.line + 1)
    provenance = nodes.get(("host", "provenance"))
    if provenance is None:
        return _new_provenance(law_file, host, entry, more)
    return _appended_item(law_file, provenance, entry, more)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """`text` with the (non-overlapping) edits made."""
    out, at = [], 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < at:
            raise ValueError("overlapping edits")
        out += [text[at:edit.start], edit.new]
        at = edit.end
    out.append(text[at:])
    return "".join(out)


def only_these_edits(old: str, new: str, edits: list[Edit]) -> bool:
    """Whether `new` is `old` with exactly these edits, every other character where it was.

    Walks both texts side by side, independently of how `new` was made: between the edits the
    two must agree character for character, and each edit's text must sit where it says.
    """
    at_new, at_old = 0, 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        gap = edit.start - at_old
        if gap < 0 or new[at_new:at_new + gap] != old[at_old:edit.start]:
            return False
        at_new += gap
        if new[at_new:at_new + len(edit.new)] != edit.new:
            return False
        at_new += len(edit.new)
        at_old = edit.end
    return new[at_new:] == old[at_old:]


def newline_of(text: str) -> str:
    """The file's line break: that of its first line ("\\n" for a file of one line)."""
    found = _BREAK.search(text)
    return found.group() if found else "\n"


def _appended_item(law_file: LawFile | LawText, provenance: yaml.Node, entry: str,
                   more: tuple[str, ...] = ()) -> Edit:
    text = law_file.text
    line = provenance.start_mark.line + 1
    if not isinstance(provenance, yaml.SequenceNode) or provenance.flow_style \
            or not provenance.value:
        raise RefusalError(
            "host.provenance is a flow-style list ([...]): lawkit appends one line per entry "
            "to a block list; write it as 'provenance:' then one '- {kind: {...}}' line per "
            "entry (an empty 'provenance: []' can simply be removed)",
            path=law_file.path, line=line)
    last = provenance.value[-1]
    last_line = last.start_mark.line + 1
    prefix = text[_line_start(text, last.start_mark.index):last.start_mark.index]
    if not (isinstance(last, yaml.MappingNode) and last.flow_style) \
            or not _ITEM_PREFIX.match(prefix):
        raise RefusalError(
            "the last provenance entry is not a '- {kind: {...}}' line: lawkit appends one "
            "such line per entry; write each entry as one flow mapping on its own line",
            path=law_file.path, line=last_line)
    return _insert_after_line(law_file, last.end_mark.index,
                              [prefix + line for line in (entry, *more)], last_line)


def _new_provenance(law_file: LawFile | LawText, host: yaml.Node, entry: str,
                    more: tuple[str, ...] = ()) -> Edit:
    assert isinstance(host, yaml.MappingNode)
    text = law_file.text
    indent = " " * host.value[0][0].start_mark.column
    item = indent + "  - "
    # The new item is indented under its key as the laws are under theirs.
    for key_node, laws in host.value:
        if key_node.value == "laws" and isinstance(laws, yaml.SequenceNode) \
                and not laws.flow_style and laws.value:
            first = laws.value[0].start_mark.index
            law_prefix = text[_line_start(text, first):first]
            if _ITEM_PREFIX.match(law_prefix):
                dash = len(law_prefix) - len(law_prefix.lstrip(" "))
                item = indent + " " * max(dash - key_node.start_mark.column, 0) + "- "
    # The end of host's content is the end of its last scalar or flow collection: a block
    # collection's end mark lies after the comments and blank lines that follow it.
    end = max(node.end_mark.index for path, node in law_file.document.nodes.items()
              if path[:1] == ("host",) and len(path) > 1
              and (isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False)))
    lines = [f"{indent}provenance:", *(item + line for line in (entry, *more))]
    if end > 0 and text[end - 1] in "\r\n":  # a block scalar ends at the next line's start
        newline = "\r\n" if text.endswith("\r\n", 0, end) else text[end - 1]
        return Edit(end, end, "".join(line + newline for line in lines))
    return _insert_after_line(law_file, end, lines, host.start_mark.line + 1)


def _insert_after_line(law_file: LawFile | LawText, index: int, lines: list[str], line: int,
                       ) -> Edit:
    text = law_file.text
    rest = _REST_OF_LINE.match(text, index)
    assert rest is not None
    brk = _BREAK.match(text, rest.end())
    if brk is None and rest.end() != len(text):
        raise RefusalError("cannot place the new provenance line after this line: it goes on "
                           "after the entry; put the entry on a line of its own",
                           path=law_file.path, line=line)
    if brk is None:  # the last line has no line break: it gets one, as a file should
        newline = newline_of(text)
        return Edit(len(text), len(text), "".join(newline + ln for ln in lines) + newline)
    newline = brk.group()
    return Edit(brk.end(), brk.end(), "".join(ln + newline for ln in lines))


def _line_start(text: str, index: int) -> int:
    return max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1


def reread(text: str, shown: str) -> yaml.Node:
    """The node tree of an edited text (what `reads_as_intended` compares)."""
    try:
        root = yaml.compose(text, Loader=yamlsafe.Loader)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RefusalError(f"the edited file would not read back as YAML ({problem}): edit it by "
                           "hand, or report it with this file", path=shown) from None
    if not isinstance(root, yaml.Node):
        raise RefusalError("the edited file would be empty", path=shown)
    return root


def reads_as_intended(old: yaml.Node, new: yaml.Node, *, key: str, digest: str,
                      entry: dict[str, Any]) -> str | None:
    """None when `new` is `old` with `host.key.<key>` = `digest` and `entry` appended to
    `host.provenance`; otherwise the first place where they differ.

    Node trees are compared (tags, scalar texts and quoting, structure, order), which is
    stricter than comparing the data or the validated model: `1.0` spelt `1.00` differs too.
    """
    if not _same_shell(old, new) or len(old.value) != len(new.value):
        return "the top-level keys"
    for (old_name, old_value), (new_name, new_value) in zip(old.value, new.value, strict=True):
        if not same_nodes(old_name, new_name):
            return "the top-level keys"
        if old_name.value == "host":
            where = _host_differs(old_value, new_value, key, digest, entry)
            if where:
                return where
        elif not same_nodes(old_value, new_value):
            return str(old_name.value)
    return None


def same_nodes(a: yaml.Node, b: yaml.Node) -> bool:
    """Whether two node trees are equal in kind, tag, scalar text and quoting, and order."""
    # An explicit stack, not recursion: this runs over every node of every file rekey edits.
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        kind = x.__class__
        if kind is not y.__class__ or x.tag != y.tag:
            return False
        if kind is yaml.ScalarNode:
            if x.value != y.value or x.style != y.style:
                return False
        elif x.flow_style != y.flow_style or len(x.value) != len(y.value):
            return False
        elif kind is yaml.MappingNode:
            for (kx, vx), (ky, vy) in zip(x.value, y.value, strict=True):
                stack.append((kx, ky))
                stack.append((vx, vy))
        else:
            stack.extend(zip(x.value, y.value, strict=True))
    return True


def same_data(a: Any, b: Any) -> bool:
    """Equal in type and value, recursively, mapping order included (1 is not 1.0 or True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_data(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_data(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)  # nan is nan; 0.0 is not -0.0
    return bool(a == b)


def _same_shell(a: yaml.Node, b: yaml.Node) -> bool:
    if type(a) is not type(b) or a.tag != b.tag:
        return False
    if isinstance(a, yaml.ScalarNode):
        return bool(a.value == b.value and a.style == getattr(b, "style", None))
    return bool(isinstance(a, yaml.CollectionNode)
                and a.flow_style == getattr(b, "flow_style", None))


def _host_differs(old: yaml.Node, new: yaml.Node, key: str, digest: str,
                  entry: dict[str, Any]) -> str | None:
    if not _same_shell(old, new) or not isinstance(old, yaml.MappingNode):
        return "host"
    adds = not any(name.value == "provenance" for name, _ in old.value)
    if len(new.value) != len(old.value) + adds:
        return "the keys of host"
    for (old_name, old_value), (new_name, new_value) in zip(old.value, new.value,
                                                            strict=False):
        if not same_nodes(old_name, new_name):
            return "the keys of host"
        if old_name.value == "key":
            if not _key_differs_only_in(old_value, new_value, key, digest):
                return "host.key"
        elif old_name.value == "provenance":
            if not (_same_shell(old_value, new_value)
                    and len(new_value.value) == len(old_value.value) + 1
                    and all(same_nodes(x, y) for x, y in
                            zip(old_value.value, new_value.value, strict=False))
                    and _is_entry(new_value.value[-1], entry)):
                return "host.provenance"
        elif not same_nodes(old_value, new_value):
            return f"host.{old_name.value}"
    if adds:
        name, value = new.value[-1]
        if not (isinstance(name, yaml.ScalarNode) and name.value == "provenance"
                and isinstance(value, yaml.SequenceNode) and not value.flow_style
                and len(value.value) == 1 and _is_entry(value.value[0], entry)):
            return "host.provenance"
    return None


def _key_differs_only_in(old: yaml.Node, new: yaml.Node, key: str, digest: str) -> bool:
    if not _same_shell(old, new) or len(old.value) != len(new.value):
        return False
    for (old_name, old_value), (new_name, new_value) in zip(old.value, new.value, strict=True):
        if not same_nodes(old_name, new_name):
            return False
        if old_name.value == key:
            if not (isinstance(new_value, yaml.ScalarNode) and new_value.value == digest
                    and new_value.style == old_value.style and new_value.tag == old_value.tag):
                return False
        elif not same_nodes(old_value, new_value):
            return False
    return True


def _is_entry(node: yaml.Node, entry: dict[str, Any]) -> bool:
    if not (isinstance(node, yaml.MappingNode) and node.flow_style):
        return False
    try:
        data = yaml.constructor.SafeConstructor().construct_document(node)
    except yaml.YAMLError:
        return False
    return same_data(data, entry)
