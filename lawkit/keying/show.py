"""`lawkit show`: a validated law file, as text or as its JSON data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lawkit.config import Workspace
from lawkit.lawfiles import lawfile


def load_for_show(ws: Workspace, path: Path) -> lawfile.LawFile:
    """Load a law file given on the command line, named in messages relative to the workspace."""
    return lawfile.load(path, key=ws.digest.key, shown_as=ws.rel(path))


def as_json(law_file: lawfile.LawFile) -> dict[str, Any]:
    """The file's data with the YAML's keys, defaults filled in."""
    return law_file.model_dump(mode="json", by_alias=True)


def as_text(law_file: lawfile.LawFile, ws: Workspace) -> str:
    """A summary a person reads: the key, each law's formula, fit figures and domain."""
    host = law_file.host
    lines = [f"{law_file.path}: schema {law_file.schema_}"]
    if law_file.labels:
        lines.append("labels: " + ", ".join(f"{k}={v}" for k, v in law_file.labels.items()))
    lines.append("key: " + ", ".join(f"{k}={v}" for k, v in host.key.items()))
    for law in host.laws:
        formula = " + ".join(f"{coef!r}" if term == "1" else f"{coef!r}*{term.replace(':', '*')}"
                             for term, coef in law.terms.items())
        lines.append(f"law {law.name}: {law.target} = {formula}")
        if law.where:
            lines.append(f"  where {law.where}")
        if law.filter:
            lines.append(f"  filter {law.filter}")
        if law.fit:
            lines.append("  fit " + ", ".join(f"{k}={v}" for k, v in law.fit.items()
                                              if not isinstance(v, (dict, list))))
        if law.domain:
            lines.append("  domain " + ", ".join(f"{k} in [{lo:g}, {hi:g}]"
                                                 for k, (lo, hi) in law.domain.items()))
    for entry in host.provenance:
        lines.append(f"provenance {entry.kind} -> {entry.names_digest}")
    extra = sorted((law_file.model_extra or {}).keys())
    if extra:
        lines.append("other sections: " + ", ".join(extra))
    return "\n".join(lines) + "\n"
