"""Writing fitted laws: a new law file, or text edits of an existing one.

An existing file is edited, never re-dumped (as `rekey` does; docs/law-files.md): each law
fitted again replaces the lines of its own list item (found by the parser's node positions),
new laws go after the last item at the same indentation, the key's quoted scalar takes the new
digest, `--label` rewrites the `labels` flow mapping (or adds one after `schema`), and one
`fit` line is appended to `host.provenance` (then one `rekey` line for the laws the fit kept,
when it moves their key: `FitReport.rekey`). Every other line stays as it was: comments
between laws, other laws, unknown sections, CRLF or LF. A comment inside a replaced law's lines
goes with it. The result is parsed again and compared with the intended file before anything
is written; the write is atomic, under the laws' advisory lock.
"""

from __future__ import annotations

import contextlib
import glob
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from lawkit import fsio
from lawkit.config import Workspace
from lawkit.errors import RefusalError
from lawkit.lawfiles import lawfile, lawwrite, textedit
from lawkit.lawfiles.textedit import Edit

if TYPE_CHECKING:
    from lawkit.fitting.report import FitReport

_LAW_KEYS = ("name", "target", "where", "filter", "terms", "fit", "domain")
_ITEM_PREFIX = re.compile(r" *- +\Z")
_REST_OF_LINE = re.compile(r"[ \t]*(#[^\r\n]*)?")
_BREAK = re.compile(r"\r\n|\n|\r")
LOCK_TIMEOUT = 60.0


def write(report: FitReport, ws: Workspace) -> None:
    """Write the report's laws to its `out` file atomically; `report.text` is what was written."""
    out = report.out
    out.parent.mkdir(parents=True, exist_ok=True)
    with fsio.locked(_lock_folder(out, ws), timeout=LOCK_TIMEOUT, shown=report.out_shown):
        _remove_own_temps(out)
        text = file_text(report, ws)
        fsio.replace_files([(out, text.encode("utf-8"))], shown={out: report.out_shown})
    report.text = text
    report.written = True


def file_text(report: FitReport, ws: Workspace) -> str:
    """The text of the law file after the fit: new, or the existing one edited (verified)."""
    key = ws.digest.key
    fitted = {f.spec.name: ordered_law(f.law) for f in report.laws}
    out = report.out
    if not out.exists() and not out.is_symlink():
        laws = list(fitted.values())
        body = lawfile.body_hash([lawfile.Law.model_validate(law) for law in laws])
        text = lawwrite.law_file_text(labels=report.labels or None, key_name=key,
                                      key=report.digest, laws=laws,
                                      provenance=[("fit", report.provenance(body))])
        _verify(text, report, key, laws, [], None, body)
        return text
    existing = lawfile.load(out, key=key, shown_as=report.out_shown)
    laws = [fitted.get(law.name) or law.model_dump(exclude_none=True)
            for law in existing.host.laws]
    laws += [law for name, law in fitted.items()
             if all(old.name != name for old in existing.host.laws)]
    body = lawfile.body_hash([lawfile.Law.model_validate(law) for law in laws])
    edits = _law_edits(existing, fitted)
    labels_edit = _labels_edit(existing, report.labels)
    if labels_edit is not None:
        edits.append(labels_edit)
    if existing.host.key.get(key) != report.digest:
        edits.append(textedit.key_edit(existing, key, report.digest))
    entry = lawwrite.provenance_entry("fit", report.provenance(body))
    then = [] if report.rekey is None else [lawwrite.provenance_entry("rekey", report.rekey)]
    edits.append(textedit.provenance_edit(existing, entry, *then))
    text = textedit.apply_edits(existing.text, edits)
    _verify(text, report, key, laws, [e.model_dump(by_alias=True, exclude_none=True)
                                      for e in existing.host.provenance], existing, body)
    return text


def ordered_law(law: Mapping[str, Any]) -> dict[str, Any]:
    """A law mapping with its keys in the order lawkit writes them, None values left out."""
    out = {k: law[k] for k in _LAW_KEYS if law.get(k) is not None}
    out.update({k: v for k, v in law.items() if k not in out and v is not None})
    return out


def _lock_folder(out: Path, ws: Workspace) -> Path:
    """The laws folder when the file lies below it (the lock `rekey` takes), else its folder."""
    absolute = out.absolute()
    try:
        absolute.relative_to(ws.laws)
        return ws.laws
    except ValueError:
        return absolute.parent


def _remove_own_temps(out: Path) -> None:
    for stray in out.parent.glob(f"{glob.escape(fsio.TEMP_PREFIX + out.name)}.*"):
        with contextlib.suppress(OSError):
            stray.unlink()


def _law_edits(existing: lawfile.LawFile, fitted: Mapping[str, dict[str, Any]]) -> list[Edit]:
    text = existing.text
    nodes = existing.document.nodes
    newline = textedit.newline_of(text)
    laws_node = nodes[("host", "laws")]
    if not isinstance(laws_node, yaml.SequenceNode) or laws_node.flow_style:
        raise RefusalError("host.laws is a flow-style list ([...]): lawkit replaces laws one "
                           "list item at a time; write it as a block list ('- name: ...')",
                           path=existing.path, line=laws_node.start_mark.line + 1)
    edits = []
    names = [law.name for law in existing.host.laws]
    last_stop, last_indent = 0, "    "
    for i, name in enumerate(names):
        start, stop, indent = _item_span(existing, i)
        last_stop, last_indent = stop, indent
        if name in fitted:
            lines = lawwrite.law_lines(fitted[name], indent)
            edits.append(Edit(start, stop, "".join(line + newline for line in lines)))
    added = [law for name, law in fitted.items() if name not in names]
    if added:
        lines = [line for law in added for line in lawwrite.law_lines(law, last_indent)]
        lead = newline if last_stop == len(text) and not text.endswith(("\n", "\r")) else ""
        edits.append(Edit(last_stop, last_stop, lead + "".join(ln + newline for ln in lines)))
    return edits


def _item_span(existing: lawfile.LawFile, i: int) -> tuple[int, int, str]:
    """(first character of the item's line, end of its last line, the indent before '-')."""
    text = existing.text
    nodes = existing.document.nodes
    node = nodes[("host", "laws", i)]
    line = node.start_mark.line + 1
    start = _line_start(text, node.start_mark.index)
    prefix = text[start:node.start_mark.index]
    if not _ITEM_PREFIX.match(prefix):
        raise RefusalError(f"host.laws[{i}] does not start its own '- name: ...' line: lawkit "
                           "replaces a law by its lines; put each law item on lines of its own",
                           path=existing.path, line=line)
    # The end of the item is the end of its last scalar or flow collection: a block
    # collection's end mark lies after the comments and blank lines that follow it.
    end = max(n.end_mark.index for path, n in nodes.items()
              if path[:3] == ("host", "laws", i) and
              (isinstance(n, yaml.ScalarNode) or getattr(n, "flow_style", False)))
    if end > 0 and text[end - 1] in "\r\n":  # a block scalar ends at the next line's start
        return start, end, prefix[:prefix.index("-")]
    rest = _REST_OF_LINE.match(text, end)
    assert rest is not None
    brk = _BREAK.match(text, rest.end())
    if brk is None and rest.end() != len(text):
        raise RefusalError(f"host.laws[{i}]: something follows the law on its last line: "
                           "lawkit replaces a law by its lines; put the next item on its own line",
                           path=existing.path, line=line)
    return start, brk.end() if brk else len(text), prefix[:prefix.index("-")]


def _labels_edit(existing: lawfile.LawFile, labels: Mapping[str, Any]) -> Edit | None:
    if dict(existing.labels or {}) == dict(labels) or not labels:
        return None
    text = existing.text
    node = existing.document.nodes.get(("labels",))
    flow = lawwrite.flow_mapping(labels)
    if node is not None:
        if not (isinstance(node, yaml.MappingNode) and node.flow_style):
            raise RefusalError("labels is not a flow mapping ({key: value, ...}): --label "
                               "rewrites it as one; write it so, or edit the labels by hand",
                               path=existing.path, line=node.start_mark.line + 1)
        return Edit(node.start_mark.index, node.end_mark.index, flow)
    schema = existing.document.nodes[("schema",)]
    rest = _REST_OF_LINE.match(text, schema.end_mark.index)
    assert rest is not None
    brk = _BREAK.match(text, rest.end())
    newline = textedit.newline_of(text)
    if brk is None:
        raise RefusalError("cannot add labels after the schema line: put 'schema: lawkit/1' on "
                           "a line of its own", path=existing.path,
                           line=schema.start_mark.line + 1)
    return Edit(brk.end(), brk.end(), f"labels: {flow}{newline}")


def _verify(text: str, report: FitReport, key: str, laws: Sequence[Mapping[str, Any]],
            provenance: list[dict[str, Any]], existing: lawfile.LawFile | None,
            body: str) -> None:
    """Refuse unless the text reads back as exactly the intended file."""
    parsed = lawfile.parse(text.encode("utf-8"), report.out_shown, key=key)
    intended = [lawfile.Law.model_validate(law).model_dump() for law in laws]
    problems = []
    if [law.model_dump() for law in parsed.host.laws] != intended:
        problems.append("laws")
    if parsed.host.key.get(key) != report.digest:
        problems.append(f"host.key.{key}")
    entries = [e.model_dump(by_alias=True, exclude_none=True) for e in parsed.host.provenance]
    new = [lawfile.ProvenanceEntry.model_validate({"fit": report.provenance(body)})]
    if report.rekey is not None:
        new.append(lawfile.ProvenanceEntry.model_validate({"rekey": report.rekey}))
    if entries != [*provenance, *(e.model_dump(by_alias=True, exclude_none=True) for e in new)]:
        problems.append("host.provenance")
    if parsed.body_hash() != body:
        problems.append("body")
    if dict(parsed.labels or {}) != dict(report.labels or {}):
        problems.append("labels")
    if existing is not None and (parsed.model_extra or {}) != (existing.model_extra or {}):
        problems.append("other sections")
    if existing is not None and parsed.host.key != {**existing.host.key, key: report.digest}:
        problems.append("host.key")
    if problems:
        raise RefusalError(f"the written file would not read back as intended "
                           f"({', '.join(problems)} differ); nothing was written: please report "
                           "this with the file",
                           path=report.out_shown)


def _line_start(text: str, index: int) -> int:
    return max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1
