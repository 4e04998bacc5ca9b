"""`map_in_workers`: a list comprehension shared with forked worker processes; `usable_cpus`.

Parsing dominates `check`, `rekey` and `review` on a large workspace (nearly all of it in PyYAML
and pydantic, under the GIL), so a long list of files is split among processes forked from this
one: no pickling of the work, no start-up cost but the fork.

Why not `concurrent.futures.ProcessPoolExecutor` with a fork context: measured against this
pool on `lawkit check` of 1,000 law files, it was slower. The work here is a closure over the
workspace, which the executor would pickle, so it has to be handed over through a module global
instead; and what the executor adds around the same one fork per worker (importing
`multiprocessing`, its manager thread, its queues and their locks) costs more than the fork
itself, on the path of every `lawkit check` in a pre-commit hook, for nothing this pool lacks:
each worker sends its results back pickled, and a worker that fails has its chunk redone here.
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

    The items are split into contiguous chunks, one for this process and one per forked
    worker; each worker sends its results back pickled. A worker that fails in any way has its
    chunk redone here, so that a bug raises with its real traceback. Workers are forked only
    from a single-threaded process, where `fork` is safe.
    """
    todo = list(items)
    with _collector_paused():
        return _mapped(fn, todo)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the duration (and in the workers).

    Parsing a law file allocates many objects that reference counting frees, yet the
    allocations trigger collections that walk every object pydantic and PyYAML built at
    import, so `check` and `rekey` spend markedly less CPU time with it paused. What little
    cyclic garbage the loop makes is collected once it ends.
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
