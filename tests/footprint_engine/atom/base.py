"""The stand-in engine's base runner: start-up code, step code and code that never runs."""

import functools

LIMIT = 3


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


class Base:
    """What every runner shares."""

    kind = "base"

    def prepare(self):
        """Say what kind of runner this is."""
        return self.kind

    def idle(self):
        return None


def one(): return 1


def only_defined():
    return "defined, imported, never called"
