"""Every process, or none: an audit hook in each measured process sees the
commands it starts (``subprocess.Popen``, ``os.posix_spawn``, ``os.exec*``, ``os.spawn*``,
``os.system``) and notes each Python child; it passes code about to run on to the recorder
(the ``exec`` event, and a code object a function gets later: ``function.__new__``, or
``object.__setattr__`` of ``__code__``), so that the process pays for one audit hook.

A child is Python when its executable is a Python interpreter (``python``, ``python3.12``,
``pypy3``, or this process's own), directly, as a command of a shell (``sh -c``, ``os.system``:
each simple command of the string, after ``&&``, ``;``, ``|``...; or of the script file a shell
runs, ``bash steps.sh``), as the interpreter a script's ``#!`` line names (``./steps.sh``,
``./run.py``), or as the command a wrapper runs (``env``, ``timeout``, ``nice``...; a path to an
interpreter among the words of any other command but those that only read their files,
``file``, ``ldd``, ``cat``...). A script file's name is taken from the
child's working directory, after any ``cd DIR`` of the line that runs it. A Python child
started with an environment that lacks the recording's variables, or with ``-I``, ``-E`` or
``-S``, cannot be measured: it is noted with the reason, and `record` refuses. Every other
Python child must check in (its marker names this process as its spawner); `record` refuses
one that did not. Which environment a wrapper passes on is not judged here: its Python child
checks in, or is refused. Non-Python children are not asked to.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import shlex
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from lawkit.footprint.measured.markers import Context, current_phase, open_regions
from lawkit.footprint.measured.recorder import Recorder

_PYTHON = re.compile(r"(python|pypy)[0-9.]*[tdm]?(\.exe)?")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"}
_PREFIXES = {"exec", "nohup", "time", "command", "builtin", "then", "do", "else", "elif", "if",
             "while", "until", "!", "{", "}"}
"""Words before a shell's command that pass the environment on as it is."""
_WRAPPERS = {"env", "timeout", "nice", "ionice", "stdbuf", "taskset", "numactl", "chrt",
             "setsid", "sudo", "doas", "su", "runuser", "setpriv", "chroot", "nsenter",
             "unshare", "prlimit", "flock", "unbuffer", "xargs", "parallel", "strace", "ltrace",
             "valgrind", "perf", "gdb", "catchsegv", "mpirun", "mpiexec", "srun", "systemd-run",
             "firejail", "uv", "watch", "script", "faketime", "fakeroot", "proot"}
"""Commands that run another command, maybe with another environment."""
_READERS = {"file", "ldd", "readelf", "objdump", "nm", "strings", "stat", "ls", "cat", "head",
            "tail", "du", "wc", "cmp", "diff", "sha1sum", "sha256sum", "md5sum", "cksum",
            "which", "realpath", "readlink", "basename", "dirname", "test", "[", "cp", "ln",
            "chmod", "touch", "grep", "echo", "printf"}
"""Commands that only read, name or copy the files they are given, never run them: a path
to an interpreter among their words is not a Python child (torch's compiler runs
``file -b /usr/bin/python3.12``)."""
_OPERATORS = "();<>|&\n"
_DEPTH = 8  # shells, script files and #! lines within one another
_SCRIPT_BYTES = 1 << 20
"""The most of a script file read for the commands it runs."""
_CODE_SUFFIXES = tuple(importlib.machinery.all_suffixes())
"""Files read as Python code (source, bytecode, extension modules), never as data."""
_CODE_EVENTS = {"exec", "object.__setattr__", "function.__new__", "code.__new__"}
_THREAD_EVENTS = {"_thread.start_new_thread", "_thread.start_joinable_thread"}
"""A thread started from Python (the second is 3.13's, for ``threading.Thread``)."""
_EVENTS = {"subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.system", "open",
           *_CODE_EVENTS, *_THREAD_EVENTS}


class ChildWatch:
    """The Python children this process started: ``[{"command": [...], "problem": str|None,
    "via": str}]``; ``command`` is the interpreter's argv, ``via`` (when a shell or wrapper
    started it) the command this process started."""

    def __init__(self, env_needed: Mapping[str, str], site: str,
                 recorder: Recorder | None = None,
                 hashed: Callable[[str], bool] | None = None) -> None:
        self._needed = dict(env_needed)
        self._recorder = recorder
        self._hashed = hashed
        self.opened: dict[str, set[Context]] = {}
        """The hashed files that are not Python opened by this process, with the phase and
        regions of each open (such a file ran where it was opened)."""
        self._site = site
        self._own = os.path.realpath(sys.executable) if sys.executable else ""
        self._local = threading.local()
        self.children: list[dict[str, Any]] = []

    def install(self) -> None:
        """Add the audit hook (it cannot be removed: it lasts as long as the process). It is
        the recorder's too: each audit hook costs every audited event (``frame.f_code``
        included), so a process has one."""
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _EVENTS:
            return
        recorder = self._recorder
        if event == "open":
            if self._hashed is not None:
                self._open(args[0])
            return
        if event in _THREAD_EVENTS:
            if recorder is not None:
                recorder.thread_started(args)
        elif event in _CODE_EVENTS:  # code that may run: the recorder's, not a child
            if recorder is None:
                pass
            elif event == "code.__new__":  # types.CodeType(...), code.replace(...)
                recorder.code_copied(args[1])
            elif event != "object.__setattr__":  # exec, types.FunctionType(code, ...)
                recorder.executing(args[0])
            elif args[1] == "__code__":  # fn.__code__ = code.replace(...)
                recorder.executing(args[2])
        else:
            try:
                self._saw(event, args)
            except Exception:  # an audit hook must never break the engine
                self.children.append({"command": [event],
                                      "problem": "lawkit could not read it"})

    def _open(self, path: object) -> None:
        """A file is being opened: note it where it is a hashed file that is not Python."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or path.endswith(_CODE_SUFFIXES):
            return  # a descriptor, or Python code read (an import, a traceback): it runs
        if not os.path.isabs(path):
            path = os.path.join(os.getcwd(), path)
        assert self._hashed is not None
        if self._hashed(path):
            self.opened.setdefault(path, set()).add((current_phase(), open_regions()))

    def opened_files(self) -> list[list[Any]]:
        """``[path, phase, regions]`` for each file `opened` and context it was opened in
        (`record` keeps the hashed ones)."""
        return [[path, phase, list(regions)]
                for path, contexts in self.opened.items() for phase, regions in contexts]

    def exec(self, path: Any, argv: Any, env: Mapping[Any, Any] | None) -> int:
        """Note the image an exec is about to start (before this one saves); how many
        children were noted, for `forget` if the exec fails."""
        before = len(self.children)
        self._saw("os.exec", (path, argv, env))
        self._local.exec_noted = True  # the os.exec audit event it raises next: noted here
        return len(self.children) - before

    def forget(self, noted: int) -> None:
        """Forget the last ``noted`` children (an exec that failed)."""
        self._local.exec_noted = False
        del self.children[len(self.children) - noted:]

    def _saw(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "subprocess.Popen":
            executable, argv, cwd, env = args
            argv = [os.fsdecode(a) for a in argv]
            self._local.popen = argv  # subprocess may go on to os.posix_spawn: one child
            self._child(os.fsdecode(executable), argv, env, cwd)
        elif event == "os.posix_spawn":
            path, argv, env = args
            argv = [os.fsdecode(a) for a in argv]
            if getattr(self._local, "popen", None) == argv:
                self._local.popen = None
                return
            self._child(os.fsdecode(path), argv, env)
        elif event == "os.exec":
            if getattr(self._local, "exec_noted", False):  # noted by `exec`, before the save
                self._local.exec_noted = False
                return
            path, argv, env = args
            self._child(os.fsdecode(path), [os.fsdecode(a) for a in argv], env)
        elif event == "os.spawn":
            _, path, argv, env = args
            self._child(os.fsdecode(path), [os.fsdecode(a) for a in argv], env)
        else:  # os.system
            command = os.fsdecode(args[0])
            self._note(self._in_script(command, 0, True, ""), None, command)

    def starts(self, argv: Sequence[str], env: Mapping[Any, Any] | None,
               cwd: str | None = None) -> None:
        """Note the Python interpreters a command run without this hook starts (`record`'s
        COMMAND: ``sh -c "python a; env -i python b"``, ``./steps.sh``), through shells,
        scripts and wrappers."""
        self._child(argv[0], argv, env, cwd)

    def _child(self, executable: str, argv: Sequence[str], env: Mapping[Any, Any] | None,
               cwd: Any = None) -> None:
        if self._is_python(executable):
            self._python(list(argv), env, None)
            return
        words = [executable, *argv[1:]]
        where = "" if cwd is None else os.fsdecode(cwd)  # "": this process's directory
        self._note(self._in_command(words, 0, True, where), env, " ".join(argv))

    def _note(self, found: Iterator[tuple[list[str], bool]], env: Mapping[Any, Any] | None,
              via: str) -> None:
        for argv, direct in found:
            self._python(argv, env if direct else None, via, judge_env=direct)

    def _in_command(self, words: Sequence[str], depth: int, direct: bool,
                    cwd: str) -> Iterator[tuple[list[str], bool]]:
        """The Python interpreters one simple command, run in ``cwd``, starts: each one's argv,
        and whether it gets the environment as it is (no wrapper between)."""
        wrapped = False
        for i, word in enumerate(words):
            if _ASSIGNMENT.fullmatch(word):  # NAME=value: before a command, or env's
                continue
            if self._is_python(word):
                yield list(words[i:]), direct and not wrapped
                return
            name = os.path.basename(word)
            if name in _SHELLS:
                script = _shell_script(words[i:], cwd) if depth < _DEPTH else None
                if script is not None:
                    yield from self._in_script(script, depth + 1, direct and not wrapped, cwd)
                return
            line = None if depth >= _DEPTH or word.startswith("-") or name in _WRAPPERS \
                or name in _PREFIXES else _interpreter_line(word, cwd)
            if line is not None:  # a script file run by the interpreter its #! line names
                yield from self._in_command([*line, *words[i:]], depth + 1,
                                            direct and not wrapped, cwd)
                return
            if name in _WRAPPERS:
                wrapped = True
            elif wrapped:
                if not word.startswith("-") and shutil.which(word):
                    return  # the wrapped command, and it is not Python
                # else a wrapper's option, its value, or an assignment (env FOO=1)
            elif name in _PREFIXES:
                continue
            elif name in _READERS:
                return
            else:  # another command: Python where one of its words is an interpreter's path
                for j in range(i + 1, len(words)):
                    if (os.sep in words[j] and self._is_python(words[j])
                            and os.path.isfile(words[j])):
                        yield list(words[j:]), False
                        return
                return

    def _in_script(self, script: str, depth: int, direct: bool,
                   cwd: str) -> Iterator[tuple[list[str], bool]]:
        """The Python interpreters a shell command line started in ``cwd`` starts, one simple
        command at a time (split at ``&&``, ``||``, ``;``, ``|``, ``&``, parentheses, new
        lines), each ``cd DIR`` taken as the directory of the commands after it."""
        lexer = shlex.shlex(script, posix=True, punctuation_chars=_OPERATORS)
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        lexer.commenters = ""
        try:
            tokens = list(lexer)
        except ValueError:  # unbalanced quotes: the shell refuses it too
            return
        command: list[str] = []
        redirect = False
        for token in [*tokens, ";"]:
            if redirect:
                redirect = False
            elif token and all(c in _OPERATORS for c in token):
                if "<" in token or ">" in token:  # the next word is a file, not a command
                    redirect = True
                    if command and command[-1].isdigit():
                        command.pop()  # 2>&1: a descriptor
                    continue
                if len(command) == 2 and command[0] == "cd":
                    cwd = os.path.join(cwd, os.path.expanduser(command[1]))
                else:
                    yield from self._in_command(command, depth, direct, cwd)
                command = []
            else:
                command.append(token)

    def _is_python(self, executable: str) -> bool:
        if _PYTHON.fullmatch(os.path.basename(executable)):
            return True
        try:
            return bool(self._own) and os.path.realpath(executable) == self._own
        except (OSError, ValueError):
            return False

    def _python(self, argv: list[str], env: Mapping[Any, Any] | None, via: str | None, *,
                judge_env: bool = True) -> None:
        child: dict[str, Any] = {"command": argv,
                                 "problem": self._problem(argv, env, judge_env)}
        if via is not None:
            child["via"] = via
        self.children.append(child)

    def _problem(self, argv: list[str], env: Mapping[Any, Any] | None,
                 judge_env: bool) -> str | None:
        flag = _isolating_flag(argv[1:])
        if flag:
            return f"started with {flag}, which keeps the recording's start-up hook out"
        if not judge_env:
            return None
        seen = os.environ if env is None else {os.fsdecode(k): os.fsdecode(v)
                                               for k, v in env.items()}
        for name, value in self._needed.items():
            if seen.get(name) != value:
                return f"started with an environment that lacks {name}"
        if self._site not in seen.get("PYTHONPATH", "").split(os.pathsep):
            return "started with a PYTHONPATH that lacks the recording's start-up hook"
        return None


def _shell_script(words: Sequence[str], cwd: str) -> str | None:
    """What a shell runs: the command string of ``sh -c STRING`` (``bash -lc``, ``sh -e -c``),
    or the text of its script file (``sh -e steps.sh``, taken from ``cwd``); None when it
    reads its standard input or the file cannot be read (the shell fails on it too)."""
    command = False
    i = 1
    while i < len(words) and words[i][:1] in ("-", "+") and words[i] not in ("-", "--"):
        option = words[i]
        if not option.startswith("--") and "c" in option[1:]:
            command = True
        if option in ("-o", "+o", "-O", "+O"):
            i += 1
        i += 1
    if i < len(words) and words[i] == "--":
        i += 1
    if i == len(words):
        return None
    return words[i] if command else _script_text(os.path.join(cwd, words[i]))


def _script_text(path: str) -> str | None:
    """The text of the script file at ``path`` (its first `_SCRIPT_BYTES`), if it can be read."""
    head = _head(path, _SCRIPT_BYTES)
    return None if head is None else head.decode("utf-8", "replace")


def _interpreter_line(word: str, cwd: str) -> list[str] | None:
    """The interpreter and its argument a script file's ``#!`` line names (``#!/bin/sh -e``:
    ``["/bin/sh", "-e"]``; ``env -S`` options split), when ``word`` names such a file: a path
    (taken from ``cwd``) or a command found on PATH."""
    path = os.path.join(cwd, word) if os.sep in word else shutil.which(word)
    head = None if path is None else _head(path, 256)
    if head is None or not head.startswith(b"#!"):
        return None
    return os.fsdecode(head[2:].split(b"\n", 1)[0]).split()


def _head(path: str, size: int) -> bytes | None:
    """The first ``size`` bytes of ``path`` when it is a regular file: never a pipe or device
    (``bash /dev/fd/63``), whose bytes are the child's to read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


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
