"""A measured process saves what it ran on SIGTERM, and a SIGTERM always ends it.

CPython runs a Python signal handler in the main thread, between bytecodes. A SIGTERM that
another thread's C handler takes, or that lands just before the main thread blocks, is not seen
by a main thread waiting on a lock that does not wake for a signal already handled (a pool
worker idle on its queue's lock: `sem_wait`); with the handler in place the process then never
ends, and ``Pool.terminate()`` waits for it for ever. The C handler writes the signal's number
to the wakeup fd whichever thread takes it: a daemon thread (``lawkit-sigterm``) reading it
signals the main thread again until the handler runs (and saves, then ends the process). A
wakeup fd the program sets (asyncio's signal handlers, a forkserver) stands while it is set:
the watch is back once the program resets it (`pipe`, which `patch.wakeup_fd_keeping` sets
back), as a forkserver's worker does right after the fork.

The watch is one `SigtermWatch`, held by the measured process.

Imports nothing after start-up: a forked child or a handler must not import (a module lock
another thread held at fork time is held in the child for ever).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

from lawkit.footprint.measured import patch
from lawkit.footprint.measured.markers import OWN_THREAD

KICK_S = 0.05
"""How long the watch waits for the main thread to run the handler before it signals that
thread again."""


def hold() -> set[int | signal.Signals]:
    """Block SIGTERM on this thread; the mask to restore."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


def restore(mask: set[int | signal.Signals]) -> None:
    """Restore a mask `hold` returned."""
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def release() -> None:
    """Unblock SIGTERM on this thread (a save that `hold` began was undone)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


class SigtermWatch:
    """This process's SIGTERM handler, which saves, and the thread that makes it run."""

    def __init__(self, save: Callable[[], None], saving: Callable[[], bool]) -> None:
        self._save = save
        self._saving = saving
        self._wakeup: tuple[int, int] | None = None
        """The pipe SIGTERM's arrival is written to."""
        self._mask_before_fork: set[int | signal.Signals] = set()
        self._handler = self._on_sigterm
        """The handler as set (one bound method, so that the watch can tell it is still set)."""

    def take(self) -> None:
        """Save on SIGTERM (unless a save is under way: it ends the process), then end the
        process as SIGTERM would; watched so that the handler runs. A SIGTERM the program
        ignores stays ignored."""
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
            signal.signal(signal.SIGTERM, self._handler)
            self._watch()

    def pipe(self) -> int | None:
        """The write end of the watch's wakeup pipe, if it is watching."""
        return self._wakeup[1] if self._wakeup is not None else None

    def before_fork(self) -> None:
        """SIGTERM waits until the child has its marker, its own measurement and this
        handler: a pool may terminate a worker it has only just forked."""
        self._mask_before_fork = hold()

    def after_fork(self) -> None:
        """In the parent, or once the child is set up: SIGTERM as before the fork."""
        restore(self._mask_before_fork)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        if self._saving():
            return  # the save under way ends the process, or the SIGTERM after it will
        self._save()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        os.kill(os.getpid(), signal.SIGTERM)

    def _watch(self) -> None:
        previous = self._wakeup
        read, write = os.pipe()
        os.set_blocking(write, False)
        try:
            old = patch.real_set_wakeup_fd(write, warn_on_full_buffer=False)
        except ValueError:  # not the main thread
            _close(read, write)
            return
        if previous is not None:  # a forked child: the parent's pipe is the parent's
            _close(*previous)
        if old not in (-1, previous[1] if previous is not None else -1):
            patch.real_set_wakeup_fd(old)  # the program's own: it stands until it resets it
        self._wakeup = read, write
        main = threading.get_ident()
        threading.Thread(target=self._kick, args=(read, main), name=OWN_THREAD + "sigterm",
                         daemon=True).start()

    def _kick(self, read: int, main: int) -> None:
        while True:
            try:
                got = os.read(read, 64)
            except OSError:
                return
            if not got:
                return
            if signal.SIGTERM not in got:
                continue
            # The handler is the main thread's to run: give it a moment, then signal that
            # thread again (a signal to the thread interrupts its wait), until it has started
            # saving.
            while not self._saving() and signal.getsignal(signal.SIGTERM) is self._handler:
                time.sleep(KICK_S)
                if self._saving() or signal.getsignal(signal.SIGTERM) is not self._handler:
                    break
                try:
                    signal.pthread_kill(main, signal.SIGTERM)
                except (OSError, ValueError):
                    return


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)
