"""Fitting and scoring laws: captures, formulas, least squares, the methods, the local and Dask
runners, statistics, score and plots.

Heavy: numpy, scipy, pandas and pyarrow (the `lawkit[fit]` extra), imported only by `fit`,
`score` and array prediction.

May import: anything in `lawkit` except `lawkit.cli`.
"""
