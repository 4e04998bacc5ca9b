"""Writing law-file YAML text that reads back the same under YAML 1.1 and 1.2 loaders.

lawkit never re-dumps a file it edits (see `rekey`); it writes new text from these pieces:
floats as the shortest round-trip digits with a '.' and a signed exponent (`3.0e-05`: a plain
`3e-05` is a string to YAML 1.1), strings always double-quoted, flow mappings one per line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lawkit.errors import LawkitError, printable

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Words YAML 1.1 reads as booleans or null: never written plain, even as keys.
_YAML11_WORDS = {"y", "yes", "n", "no", "true", "false", "on", "off", "null"}


def format_float(value: float) -> str:
    """Shortest round-trip digits, with a '.' in the mantissa and a signed exponent."""
    if not math.isfinite(value):
        raise ValueError(f"cannot write the non-finite number {value!r} to a law file")
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if not e:
        return mantissa
    sign = exponent[0] if exponent[0] in "+-" else "+"
    return f"{mantissa}e{sign}{exponent.lstrip('+-')}"


def format_key(key: str) -> str:
    """A mapping key: plain where every YAML loader reads it as that string, else quoted."""
    if _PLAIN_KEY.match(key) and key.lower() not in _YAML11_WORDS:
        return key
    return quote(key)


def quote(text: str) -> str:
    """A double-quoted YAML string that every YAML 1.1 and 1.2 loader reads back as `text`:
    every character outside YAML's printable set, and those YAML 1.1 reads as line breaks or
    a byte order mark, escaped."""
    if "\\" not in text and '"' not in text and _LITERAL.fullmatch(text):
        return f'"{text}"'
    return '"' + "".join(_quoted_char(c) for c in text) + '"'


# Written as they are inside double quotes: YAML's printable set (YAML 1.2 section 5.1) less
# '"' and '\\', less U+0085, U+2028, U+2029 (line breaks to YAML 1.1, folded by a loader) and
# U+FEFF (a byte order mark). Everything else is escaped; a lone surrogate has no escape that
# libyaml accepts and no UTF-8 encoding, so it is refused.
_LITERAL = re.compile("[\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd"
                      "\U00010000-\U0010ffff]*")
_SHORT_ESCAPES = {"\0": "\\0", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                  "\v": "\\v", "\f": "\\f", "\r": "\\r", "\x1b": "\\e", '"': '\\"',
                  "\\": "\\\\"}


def _quoted_char(char: str) -> str:
    escaped = _SHORT_ESCAPES.get(char)
    if escaped is not None:
        return escaped
    if _LITERAL.fullmatch(char):
        return char
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        raise LawkitError(f"cannot write {printable(char)} to a law file: a lone surrogate is "
                          "not a character (an argument or value that is not valid UTF-8?)")
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def format_value(value: Any) -> str:
    """A scalar, list or mapping in flow style."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, Mapping):
        return flow_mapping(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a law file")


def flow_mapping(mapping: Mapping[str, Any]) -> str:
    """`{key: value, ...}` on one line."""
    return "{" + ", ".join(f"{format_key(k)}: {format_value(v)}" for k, v in mapping.items()) + "}"


def provenance_entry(kind: str, fields: Mapping[str, Any]) -> str:
    """One provenance line's flow mapping, e.g. `{rekey: {from: "a", to: "b", ...}}`."""
    return flow_mapping({kind: dict(fields)})


def law_lines(law: Mapping[str, Any], indent: str) -> list[str]:
    """A law as a block-sequence item at `indent`: `- name: ...` then one key a line."""
    lines = []
    for i, (key, value) in enumerate(law.items()):
        if value is None:
            continue
        lead = f"{indent}- " if i == 0 else f"{indent}  "
        lines.append(f"{lead}{format_key(key)}: {format_value(value)}")
    return lines


def law_file_text(
    *,
    labels: Mapping[str, Any] | None,
    key_name: str,
    key: str,
    laws: Sequence[Mapping[str, Any]],
    provenance: Sequence[tuple[str, Mapping[str, Any]]],
    extra: Mapping[str, Any] | None = None,
    header: str = "",
) -> str:
    """A whole new law file (schema, labels, host.key, host.laws, host.provenance, extras)."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines.append("schema: lawkit/1")
    if labels:
        lines.append(f"labels: {flow_mapping(labels)}")
    lines += ["host:", "  key:", f"    {format_key(key_name)}: {quote(key)}", "  laws:"]
    for law in laws:
        lines += law_lines(law, "    ")
    lines.append("  provenance:")
    lines += [f"    - {provenance_entry(kind, fields)}" for kind, fields in provenance]
    for name, value in (extra or {}).items():
        lines.append(f"{format_key(name)}: {format_value(value)}")
    return "\n".join(lines) + "\n"
