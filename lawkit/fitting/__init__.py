"""Fitting and scoring laws: captures, formulas, least squares, the methods, the local and Dask
runners, statistics, score and plots.

A fit reads top-down (`fit`, which holds only the order): `request` (what was asked), `plan`
(which laws), `scan` (the first pass; `source` and `spill` keep the rows for the others),
`local` or `distributed` (each law's passes: `methods` driven by `runner`, over `solve`),
`stats` and `provenance` (what the law file records), `report`, then `lawmerge` writes.

Heavy: numpy, scipy, pandas and pyarrow (the `lawkit[fit]` extra), imported only by `fit`,
`score` and array prediction.

May import: anything in `lawkit` except `lawkit.cli`.
"""

import importlib.util

from lawkit.errors import LawkitError

_FIT_EXTRA = ("numpy", "scipy", "pandas", "pyarrow")
_missing = [name for name in _FIT_EXTRA if importlib.util.find_spec(name) is None]
if _missing:
    # the light core (check, rekey, review, ...) installs none of these: say which extra to add
    raise LawkitError(f"fitting and scoring need {', '.join(_FIT_EXTRA)} (missing: "
                      f"{', '.join(_missing)}): pip install 'lawkit[fit]'")
