"""Keying laws to the engine: digest, check (and its cache), rekey, show, schema, init, review,
and the footprint verdicts of law files (`footprints`).

Light: these run in every pre-commit hook and CI job, so they start fast.

May import: the standard library, PyYAML, pydantic, `src_digest`, `lawkit.lawfiles`,
`lawkit.footprint` and the top-level helpers `lawkit.errors`, `lawkit.config`, `lawkit.fsio`
and `lawkit.workers`. Never `lawkit.fitting`, `lawkit.api`, `lawkit.capture`, `lawkit.cli`,
numpy, pandas, scipy or pyarrow. Inside, a piece two modules share lies below both (`facts`:
the problems `check` finds and its cache keeps), and no import cycle, lazy or for types only.
"""
