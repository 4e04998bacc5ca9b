"""GitHub workflow annotations (`::error file=...,line=...::message`), written once for check
and review.

A workflow command ends at the line break, and its properties at `,` and `::`; GitHub decodes
`%25`, `%0D`, `%0A` (and in properties `%3A`, `%2C`), so those characters are escaped as such.
"""

from __future__ import annotations


def escape_data(text: str) -> str:
    """A message as an annotation's data: `%`, CR and LF percent-encoded."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file, title): `escape_data` and `:` and `,` percent-encoded."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, file: str | None = None, line: int | None = None,
               title: str | None = None) -> str:
    """One workflow command line: `::LEVEL file=F,line=N,title=T::MESSAGE`."""
    props = []
    if file is not None:
        props.append(f"file={escape_property(file)}")
        if line is not None:
            props.append(f"line={line}")
    if title is not None:
        props.append(f"title={escape_property(title)}")
    return f"::{level} {','.join(props)}::{escape_data(message)}" if props else \
        f"::{level}::{escape_data(message)}"
