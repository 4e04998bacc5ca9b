"""`map_in_workers`: a list comprehension shared with forked worker processes.

Parsing dominates `check`, `rekey` and `review` on a large workspace (about a millisecond a law
file, nearly all of it in PyYAML and pydantic, under the GIL), so a long list of files is split
among processes forked from this one: no pickling of the work, no start-up cost but the fork.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn, TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_FILES_PER_WORKER = 150  # below this a fork costs more than it saves


def map_in_workers(fn: Callable[[_Item], _Result], items: Iterable[_Item]) -> list[_Result]:
    """`[fn(item) for item in items]`, shared with forked worker processes when there are many.

    Parsing dominates `check` and `rekey` on a large workspace (about 1 ms a law file, nearly
    all of it in PyYAML and pydantic, under the GIL), so the items are split into contiguous
    chunks, one for this process and one per forked worker; each worker sends its results back
    pickled. A worker that fails in any way has its chunk redone here, so that a bug raises
    with its real traceback. Workers are forked only from a single-threaded process, where
    `fork` is safe.
    """
    todo = list(items)
    with _collector_paused():
        return _mapped(fn, todo)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the duration (and in the workers).

    Parsing a law file allocates about a thousand objects that reference counting frees, yet
    the allocations trigger collections that walk every object pydantic and PyYAML built at
    import: with it paused, `check` and `rekey` spend about a quarter less CPU time (measured
    with `time.process_time`, 1,000 files, serial). What little cyclic garbage the loop makes
    is collected once it ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _mapped(fn: Callable[[_Item], _Result], todo: list[_Item]) -> list[_Result]:
    workers = min(usable_cpus(), 4, len(todo) // _FILES_PER_WORKER)
    if workers < 2 or not hasattr(os, "fork") or threading.active_count() > 1:
        return [fn(item) for item in todo]
    size = -(-len(todo) // workers)
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    children: list[tuple[int, int, list[_Item]]] = []
    try:
        for chunk in chunks[1:]:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover  (the worker: it never returns)
                _work(fn, chunk, read_end, write_end)
            os.close(write_end)
            children.append((pid, read_end, chunk))
        results = [fn(item) for item in chunks[0]]
        for pid, read_end, chunk in children:
            results += _gather(fn, pid, read_end, chunk)
    finally:
        for pid, read_end, _chunk in children:
            with contextlib.suppress(OSError):
                os.close(read_end)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return results


def _work(fn: Callable[[_Item], _Result], chunk: list[_Item], read_end: int,
          write_end: int) -> NoReturn:
    code = 1
    try:
        os.close(read_end)
        data = pickle.dumps([fn(item) for item in chunk], protocol=pickle.HIGHEST_PROTOCOL)
        with open(write_end, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)


def _gather(fn: Callable[[_Item], _Result], pid: int, read_end: int, chunk: list[_Item],
            ) -> list[_Result]:
    with open(read_end, "rb", closefd=False) as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status == 0:
        with contextlib.suppress(Exception):
            part: list[_Result] = pickle.loads(data)
            if len(part) == len(chunk):
                return part
    return [fn(item) for item in chunk]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
