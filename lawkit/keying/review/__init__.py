"""`lawkit review`, from git objects alone: `verify` runs it, `gitobjects` reads the objects,
`configs` reads the workspace config at each revision, `lawchange` classifies one law file's
change, `textchange` checks the text of a re-key, `footprints` gives the units and verdicts
behind it and checks the evidence it rests on, and `formats` prints a report as text, GitHub
annotations or Markdown.

May import: what `lawkit.keying` may, that is the standard library, PyYAML, pydantic,
`src_digest`, `lawkit.lawfiles`, `lawkit.footprint`, `lawkit.errors`, `lawkit.config`,
`lawkit.fsio`, `lawkit.workers` and the rest of `lawkit.keying`. Never `lawkit.fitting` or
`lawkit.cli`.
"""
