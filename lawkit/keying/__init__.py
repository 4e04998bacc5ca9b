"""Keying laws to the engine: digest, check (and its cache), rekey, show, schema and review.

Light: these run in every pre-commit hook and CI job, so they start fast.

May import: the standard library, PyYAML, pydantic, `src_digest`, `lawkit.lawfiles`,
`lawkit.footprint` and the top-level helpers (`errors`, `config`, `fsio`, `workers`). Never
`lawkit.fitting`, `lawkit.cli`, numpy, pandas, scipy or pyarrow.
"""
