"""Which units of a file ran, from what a recorder saw: code objects (sys.monitoring) or the
arcs coverage.py measured (Python 3.11).

Attribution: a code object's run is a run of the innermost unit that holds
it. A function's own code object is that function; nested functions, lambdas, comprehensions
and generator expressions belong to the unit that holds them; a class body's code object is the
class shell; a module's is the module body. A code object is found by its ``co_qualname`` (the
part before the first ``.<locals>.``, without trailing ``<lambda>``/``<genexpr>`` parts) and its
``co_firstlineno`` (which of ``C.x`` and ``C.x#2``). Executing a ``def`` or ``class`` statement
runs the body that holds it, never the function defined.

From arcs: a function ran when a line of its body ran, or when the code object starting at its
first line was entered or left (the only sign that a one-line function ran: ``def f(): return
1``). Its def and decorator lines run with the body that holds it. A shell or module body ran
when one of its own lines ran; a module body also when its code object was entered or left (an
empty ``__init__.py`` runs no line). A function whose code object starts on line 1 shares that
start with the module: only a line of its body, or (a one-line function) leaving line 1, counts
for it, so that importing the module does not credit it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from lawkit.footprint.measured.markers import ANY_REGION, Context
from lawkit.footprint.units import MODULE, Unit

K = TypeVar("K")
_ORDINAL = re.compile(r"#\d+$")


def unit_of_code(units: Sequence[Unit], qualname: str, firstlineno: int) -> str:
    """The qualified name of the unit a code object's run counts for."""
    holder = qualname.split(".<locals>.", 1)[0]
    parts = holder.split(".")
    while parts and parts[-1].startswith("<"):  # <module>, <lambda>, <genexpr>, <listcomp>
        parts.pop()
    if not parts:
        return MODULE
    name = ".".join(parts)
    named = [u for u in units if u.kind != "module" and _ORDINAL.sub("", u.qualname) == name]
    for u in named:
        if firstlineno in _span(u):
            return u.qualname
    if len(named) == 1:
        return named[0].qualname
    # Not found by name (never for the unchanged file it was recorded on): the innermost unit
    # around its first line.
    around = [u for u in units if u.kind != "module" and firstlineno in _span(u)]
    return min(around, key=lambda u: len(_span(u))).qualname if around else MODULE


def regions_in(ran: Iterable[Context], phase: str) -> tuple[str, ...]:
    """The regions of the contexts ``ran`` in ``phase``, sorted (``"*"``: no region open)."""
    return tuple(sorted({r for p, names in ran if p == phase for r in names or (ANY_REGION,)}))


def _span(u: Unit) -> range:
    return range(u.first, max(u.lines | u.header | {u.first}) + 1)


def phases_of_units(
    units: Sequence[Unit], arcs_by_context: Mapping[K, Iterable[tuple[int, int]]]
) -> dict[str, set[K]]:
    """The phases (or contexts: a phase and its regions) in which each unit of one file ran,
    from coverage.py arcs by phase or context, by qualified name (empty: never ran)."""
    ran: dict[str, set[K]] = {u.qualname: set() for u in units}
    owners = _line_owners(units)
    starts = {u.first: u for u in units if u.kind == "function"}
    for context, arcs in arcs_by_context.items():
        hit: set[str] = set()
        for a, b in arcs:
            if a >= 0 and b >= 0:
                for line in (a, b):
                    hit.update(owners.get(line, ()))
                continue
            # An arc entering (-N, line) or leaving (line, -N) the code object starting at N.
            start, line = (-a, b) if a < 0 else (-b, a)
            f = starts.get(start)
            if f is not None and _arc_of_function(f, start, line, leaving=b < 0):
                hit.add(f.qualname)  # the function's own arc, even on its def line
                if start == 1 and line not in f.body:
                    hit.add(MODULE)  # leaving line 1: the module's exit as well as f's
                continue
            if start == 1 or line == 0:
                hit.add(MODULE)  # a module's code object (an empty file's runs line 0)
            if line > 0:
                hit.update(owners.get(line, ()))
        for name in hit:
            ran[name].add(context)
    return ran


def _arc_of_function(f: Unit, start: int, line: int, *, leaving: bool) -> bool:
    """Whether an arc of the code object starting at ``f``'s first line is ``f``'s own."""
    if start != 1:
        return line in f.lines
    # The module's code object starts on line 1 too: its entry (-1, 1) is not f's.
    return line in f.body or (leaving and not f.body and line in f.header)


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
