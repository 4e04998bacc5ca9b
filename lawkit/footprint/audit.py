"""Every process, or none (DESIGN section 11): an audit hook in each measured process sees the
commands it starts (``subprocess.Popen``, ``os.posix_spawn``, ``os.exec*``, ``os.spawn*``,
``os.system``) and notes each Python child; it passes the ``exec`` event (code about to
run) on to the recorder, so that the process pays for one audit hook.

A child is Python when its executable is a Python interpreter (``python``, ``python3.12``,
``pypy3``, or this process's own), directly or as the command of a shell (``sh -c``,
``os.system``). A Python child started with an environment that lacks the recording's
variables, or with ``-I``, ``-E`` or ``-S``, cannot be measured: it is noted with the reason,
and `record` refuses. Every other Python child must check in (its marker names this process as
its spawner); `record` refuses one that did not. Non-Python children are not asked to.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_PYTHON = re.compile(r"(python|pypy)[0-9.]*[tdm]?(\.exe)?")
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
_EVENTS = {"subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.system", "exec"}


class ChildWatch:
    """The Python children this process started: ``[{"command": [...], "problem": str|None}]``."""

    def __init__(self, env_needed: Mapping[str, str], site: str,
                 executing: Callable[[object], None] | None = None) -> None:
        self._needed = dict(env_needed)
        self._executing = executing
        self._site = site
        self._own = os.path.realpath(sys.executable) if sys.executable else ""
        self._local = threading.local()
        self.children: list[dict[str, Any]] = []

    def install(self) -> None:
        """Add the audit hook (it cannot be removed: it lasts as long as the process)."""
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _EVENTS:
            return
        if event == "exec":  # code about to run: the recorder's, not a child
            if self._executing is not None:
                self._executing(args[0])
            return
        try:
            self._saw(event, args)
        except Exception:  # an audit hook must never break the engine
            self.children.append({"command": [event], "problem": "lawkit could not read it"})

    def exec(self, path: Any, argv: Any, env: Mapping[Any, Any] | None) -> int:
        """Note the image an exec is about to start (before this one saves); how many
        children were noted, for `forget` if the exec fails."""
        before = len(self.children)
        self._saw("os.exec", (path, argv, env))
        return len(self.children) - before

    def forget(self, noted: int) -> None:
        """Forget the last ``noted`` children (an exec that failed)."""
        del self.children[len(self.children) - noted:]

    def _saw(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "subprocess.Popen":
            executable, argv, _, env = args
            argv = [os.fsdecode(a) for a in argv]
            self._local.popen = argv  # subprocess may go on to os.posix_spawn: one child
            self._child(os.fsdecode(executable), argv, env)
        elif event == "os.posix_spawn":
            path, argv, env = args
            argv = [os.fsdecode(a) for a in argv]
            if getattr(self._local, "popen", None) == argv:
                self._local.popen = None
                return
            self._child(os.fsdecode(path), argv, env)
        elif event == "os.exec":
            path, argv, env = args
            self._child(os.fsdecode(path), [os.fsdecode(a) for a in argv], env)
        elif event == "os.spawn":
            _, path, argv, env = args
            self._child(os.fsdecode(path), [os.fsdecode(a) for a in argv], env)
        else:  # os.system
            self._shell(os.fsdecode(args[0]), None)

    def _child(self, executable: str, argv: Sequence[str], env: Mapping[Any, Any] | None) -> None:
        name = os.path.basename(executable)
        if name in _SHELLS and len(argv) >= 3 and argv[1] == "-c":
            self._shell(argv[2], env)
        elif self._is_python(executable):
            self._python(list(argv), env)

    def _shell(self, command: str, env: Mapping[Any, Any] | None) -> None:
        try:
            words = shlex.split(command)
        except ValueError:
            return
        while words and (("=" in words[0] and not words[0].startswith("="))
                         or words[0] in ("exec", "env", "nohup", "time")):
            words.pop(0)
        if words and self._is_python(words[0]):
            self._python(words, env)

    def _is_python(self, executable: str) -> bool:
        if _PYTHON.fullmatch(os.path.basename(executable)):
            return True
        try:
            return bool(self._own) and os.path.realpath(executable) == self._own
        except (OSError, ValueError):
            return False

    def _python(self, argv: list[str], env: Mapping[Any, Any] | None) -> None:
        self.children.append({"command": argv, "problem": self._problem(argv, env)})

    def _problem(self, argv: list[str], env: Mapping[Any, Any] | None) -> str | None:
        flag = _isolating_flag(argv[1:])
        if flag:
            return f"started with {flag}, which keeps the recording's start-up hook out"
        seen = os.environ if env is None else {os.fsdecode(k): os.fsdecode(v)
                                               for k, v in env.items()}
        for name, value in self._needed.items():
            if seen.get(name) != value:
                return f"started with an environment that lacks {name}"
        if self._site not in seen.get("PYTHONPATH", "").split(os.pathsep):
            return "started with a PYTHONPATH that lacks the recording's start-up hook"
        return None


def _isolating_flag(args: Sequence[str]) -> str | None:
    """The first of ``-I``, ``-E``, ``-S`` among an interpreter's options, if any."""
    it = iter(args)
    for arg in it:
        if not arg.startswith("-") or arg in ("-", "--"):
            return None
        if arg.startswith("--"):
            if arg in ("--check-hash-based-pycs",):
                next(it, None)
            continue
        for i, letter in enumerate(arg[1:]):
            if letter in "IES":
                return f"-{letter}"
            if letter in "cm":
                return None  # the rest is the command or module
            if letter in "XW":
                if i == len(arg) - 2:
                    next(it, None)
                break
    return None
