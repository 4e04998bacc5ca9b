"""The law-file format: the model, safe YAML reading with positions, writing, and text edits.

Holds `lawfile` (the validated model and `load`), `yamlsafe` (the positioned safe loader),
`lawbytes` (the size cap), `lawwrite` (YAML text lawkit writes), `textedit` (byte-exact edits),
`where` (the selection grammar of `where` and `filter`), `terms` (the term grammar: columns,
`step(COL,K)`, `hinge(COL,K)`), `compiled` (a law as a plain Python function of one row),
`predict` (evaluating a law on arrays), `lawtypes` (what those two read of a law, so that
neither imports `lawfile`), `predicterrors` (the warning and errors both raise) and `fixes`
(the commands messages name as fixes).

May import: the standard library, PyYAML, pydantic, `lawkit.errors`, `lawkit.fsio`,
`lawkit.config` and `src_digest`; numpy only inside array prediction. Never `lawkit.keying`,
`lawkit.fitting`, `lawkit.footprint` or `lawkit.cli`.
"""
