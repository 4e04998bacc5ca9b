"""Which units of a file ran, and in which phases, from the arcs coverage.py measured.

A function ran when a line of its body ran, or when the code object starting at its first line
was entered or left (the only sign that a one-line function ran: ``def f(): return 1``); such an
arc counts for the function alone, even on its def line. Its def and decorator lines run at
import, as part of the body that holds it: they count for the class shell or module body around
it, as a class statement's header counts for its holder too. A shell or module body ran when
one of its own lines ran; a module body also when its code object was entered or left (an empty
``__init__.py`` runs no line).

Two code objects can start on one line: a one-line function on a file's first line and the
module, or a lambda in a decorator and the function it decorates. Such an arc counts for the
function (and the module): a wrong "ran" costs a refit, a wrong "did not run" could hide one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from lawkit.footprint.units import MODULE, Unit


def phases_of_units(
    units: Sequence[Unit], arcs_by_phase: Mapping[str, Iterable[tuple[int, int]]]
) -> dict[str, set[str]]:
    """The phases in which each unit of one file ran, by qualified name (empty: never ran)."""
    ran: dict[str, set[str]] = {u.qualname: set() for u in units}
    owners = _line_owners(units)
    starts = {u.first: u for u in units if u.kind == "function"}
    for phase, arcs in arcs_by_phase.items():
        hit: set[str] = set()
        for a, b in arcs:
            if a >= 0 and b >= 0:
                for line in (a, b):
                    hit.update(owners.get(line, ()))
                continue
            # An arc entering (-N, line) or leaving (line, -N) the code object starting at N.
            start, line = (-a, b) if a < 0 else (-b, a)
            if start == 1 or line == 0:
                hit.add(MODULE)  # a module's code object (an empty file's runs line 0)
            f = starts.get(start)
            if f is not None and line in f.lines:
                hit.add(f.qualname)  # the function's own arc, even on its def line
            elif line > 0:
                hit.update(owners.get(line, ()))
        for name in hit:
            ran[name].add(phase)
    return ran


def _line_owners(units: Sequence[Unit]) -> dict[int, tuple[str, ...]]:
    """For each line, the units that ran when it ran."""
    owners: dict[int, list[str]] = {}
    for u in units:
        if u.kind == "function":
            for line in u.body:
                owners.setdefault(line, []).append(u.qualname)
            for line in u.header:
                if u.holder is not None:
                    owners.setdefault(line, []).append(u.holder)
        else:
            for line in u.lines:
                owners.setdefault(line, []).append(u.qualname)
            if u.holder is not None:
                for line in u.header:
                    owners.setdefault(line, []).append(u.holder)
    return {line: tuple(names) for line, names in owners.items()}
