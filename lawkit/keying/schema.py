"""The JSON Schema of law files, from the pydantic models, for editors that validate YAML; and
of footprint files (docs/footprint-file.md), from theirs.

An editor with a YAML language server validates a law file as it is typed when the file starts
with `# yaml-language-server: $schema=<path or URL of the schema>`; `lawkit schema > FILE`
writes the schema. What the models check beyond JSON types (term syntax, domain ranges) is
added where JSON Schema can say it, so the editor flags a malformed term before `lawkit check`.
"""

from __future__ import annotations

from typing import Any

from lawkit.footprint.filemodel import footprint_schema
from lawkit.lawfiles.lawfile import SCHEMA, LawFile
from lawkit.lawfiles.terms import TERM_PATTERN

DIALECT = "https://json-schema.org/draft/2020-12/schema"
__all__ = ["DIALECT", "TERM_PATTERN", "footprint_file_schema", "law_file_schema"]


def law_file_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a `lawkit/1` law file."""
    schema = LawFile.model_json_schema(by_alias=True)
    law = schema["$defs"]["Law"]["properties"]
    law["terms"]["propertyNames"] = {"pattern": TERM_PATTERN}
    law["terms"]["description"] = ("term -> coefficient; a term is \"1\" (the intercept), a "
                                   "factor, or factors joined by ':'; a factor is a column, "
                                   "step(COL,K) or hinge(COL,K), K spelt as Python's repr of "
                                   "the float without a trailing '.0' (quote such keys)")
    for branch in law["domain"]["anyOf"]:
        if branch.get("type") == "object":
            branch["additionalProperties"].update(minItems=2, maxItems=2)
    law["where"]["description"] = "the capture rows the law applies to: column -> value or [values]"
    law["filter"]["description"] = "a --where expression, ANDed with `where`"
    schema["properties"]["host"]["description"] = "the key, the laws and their history"
    return {"$schema": DIALECT,
            "title": f"lawkit law file ({SCHEMA})", **{k: v for k, v in schema.items()
                                                         if k != "title"}}


def footprint_file_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a footprint file (``lawkit-footprint/1`` to ``/3``)."""
    return {"$schema": DIALECT, **footprint_schema()}
