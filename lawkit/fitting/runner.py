"""The local runner: a method's passes (`lawkit.fitting.methods`) answered in this process.

`run` answers every request by one pass over ``chunks()`` (a fresh iterator over the same rows
each time: chunks read again from the capture files, so memory does not grow with the rows);
`run_arrays` over rows in memory, split across threads (numpy and LAPACK release the GIL) and
merged in order, the same mergeable replies as a streamed or distributed fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from numpy.typing import ArrayLike

from lawkit.fitting import methods, solve

Array = solve.Array
Chunk = tuple[Array, Array, Array | None]


def drive(steps: methods.Steps, answer_all: Callable[[methods.Request], Any]) -> solve.FitResult:
    """Run a method's passes, ``answer_all(request)`` giving the merged reply over all rows."""
    request = next(steps)
    with solve.one_blas_thread():
        while True:
            reply = answer_all(request)
            try:
                request = steps.send(reply)
            except StopIteration as done:
                result: solve.FitResult = done.value
                return result


def run(steps: methods.Steps, chunks: Callable[[], Iterable[Chunk]]) -> solve.FitResult:
    """The fit, every pass one read of ``chunks()``."""

    def answer_all(request: methods.Request) -> Any:
        reply = None
        for x, y, w in chunks():
            reply = methods.answer(request, reply, x, y, w)
        return reply

    return drive(steps, answer_all)


def run_arrays(steps: methods.Steps, x: Array, y: Array, w: Array | None) -> solve.FitResult:
    """The fit of rows in memory, each pass over row ranges on threads, merged in order."""
    ranges = solve.split_rows(x.shape[0], solve.workers_for(x.shape[0]))

    def answer_all(request: methods.Request) -> Any:
        def one(rng: tuple[int, int]) -> Any:
            a, c = rng
            return methods.answer(request, None, x[a:c], y[a:c], None if w is None else w[a:c])

        replies = solve.map_ranges(one, ranges)
        out = replies[0]
        for other in replies[1:]:
            out = methods.merge(out, other)
        return out

    return drive(steps, answer_all)


def fit_arrays(x: ArrayLike, y: ArrayLike, terms: Sequence[str], method: str = "ols",
               weights: ArrayLike | None = None) -> solve.FitResult:
    """Fit ``y ~ x`` in memory by ``method`` (ols, huber, robust, nnls), optionally weighted."""
    names = tuple(terms)
    steps = methods.passes(method, names)
    xa, ya, wa = solve.as_design(names, x, y, weights)
    return run_arrays(steps, xa, ya, wa)
