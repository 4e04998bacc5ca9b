"""The local runner: a method's passes (`lawkit.fitting.methods`) answered in this process.

`run` answers every request by one pass over the rows, ``each`` (`Each`): every chunk answered
on its own, read again each time (from the captures, `in_turn`, or from a law's design spill
on worker threads, `lawkit.fitting.spill.DesignSpill.each`), so memory does not grow with the
rows; `run_arrays` over rows in memory, split across threads (numpy and LAPACK release the
GIL). Either way the replies merge in the order of the rows, the same mergeable replies as a
distributed fit, so a fit does not depend on which thread answered first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from numpy.typing import ArrayLike

from lawkit.fitting import methods, solve

Array = solve.Array
Chunk = tuple[Array, Array, Array | None]
Each = Callable[[Callable[[Array, Array, Array | None], Any]], Iterable[Any]]
"""A pass over a law's rows: ``each(fn)`` gives ``fn(x, y, w)`` of every chunk, in the order of
the rows."""


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


def run(steps: methods.Steps, each: Each) -> solve.FitResult:
    """The fit, every pass one call of ``each``: each chunk answered on its own and the replies
    merged in the order of the rows, so that the result does not depend on which thread
    answered which chunk first."""

    def answer_all(request: methods.Request) -> Any:
        reply = None
        for part in each(functools.partial(methods.answer, request, None)):
            reply = methods.absorb(reply, part)
        return reply

    return drive(steps, answer_all)


def in_turn(chunks: Callable[[], Iterable[Chunk]]) -> Each:
    """The pass ``each`` over ``chunks()`` (a fresh iterator over the same rows each time),
    every chunk answered on this thread as it is read."""
    return lambda fn: (fn(x, y, w) for x, y, w in chunks())


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
