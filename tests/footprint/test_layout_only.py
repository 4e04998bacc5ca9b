"""Layout-only changes, decided from the footprint alone (docs/footprints.md): each unit keeps
the sha256 of its code in a normal form (`units.codes_of`, version `units.NORMAL`), the same on
every Python lawkit supports; a changed unit with the same code counts as `layout only` and
moves no verdict, with no git history. A footprint of another normal form, or none, falls back
to the recorded file found in history, and to a change of code without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lawkit.footprint.document import FileRecord, Footprint, UnitRecord
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import MODULE, NORMAL, codes_of, units_of
from lawkit.footprint.verdict import FootprintDiff, diff_footprint

REPO = Path(__file__).resolve().parents[2]
SAMPLE = '''\
"""A module docstring."""
# -*- a comment -*-
from __future__ import annotations

import functools

LIMIT: int = 3


@functools.lru_cache(maxsize=None)
def cached(n: int, *args, key=lambda x: x, **kw) -> int:
    """Doc."""
    label = f"{n!r:>{LIMIT}} {n=} {'nested'} {n:{'<'}{LIMIT}}"
    total = sum(i * i for i in range(n) if (j := i) % 2)
    return len(label) + total + j


class Runner(object, metaclass=type):
    u"""Shell docstring."""

    kind = u"runner"
    raw = rb"\\d" b"x"

    if LIMIT > 2:
        def big(self):
            "Under an if."
            return {**{}, "k": [1, 2.5, 3j, -4, ..., None, True]}
    else:
        async def big(self):
            async with self as s:
                return [x async for x in s]

    try:
        import json
    except ImportError:
        json = None
    finally:
        pass

    class Inner:
        def deep(self, /, a, *, b=1):
            def inner():
                """Nested docstring."""
                return a
            match a:
                case [1, *rest] if rest:
                    return inner
                case {"k": v}:
                    return v
                case Runner(kind="x") | None:
                    return None
            return b


def one(): return 1
'''


def _codes_on(python: Path, source: str) -> dict[str, str]:
    script = ("import json, sys; from lawkit.footprint.units import codes_of; "
              "print(json.dumps(dict(codes_of(sys.stdin.buffer.read()))))")
    out = subprocess.run([str(python), "-c", script], input=source.encode(), check=True,
                         capture_output=True, cwd=REPO).stdout
    codes: dict[str, str] = json.loads(out)
    return codes


@pytest.mark.parametrize("venv", [".venv", ".venv-3.12", ".venv-3.13"])
def test_the_normal_form_gives_the_same_codes_on_every_supported_python(venv: str) -> None:
    python = REPO / venv / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no {venv} here")
    here = codes_of(SAMPLE.encode())
    assert here is not None
    assert _codes_on(python, SAMPLE) == dict(here)
    assert set(here) == {u.qualname for u in units_of(SAMPLE.encode())}


def test_the_normal_form_is_pinned_so_a_change_to_it_bumps_normal() -> None:
    # Changing what `codes_of` hashes makes every recorded "code" disagree: bump NORMAL (and
    # the docs) with it, then pin the new digest here.
    codes = codes_of(SAMPLE.encode())
    assert codes is not None and NORMAL == 2
    assert codes[MODULE] == PINNED_MODULE, sys.version


PINNED_MODULE = "c1fd0c0d1f44a97258069c5e97054a7df32fce2edb253f665d8023f3823c901f"


def test_comments_blank_lines_docstrings_and_positions_leave_the_code_alone() -> None:
    base = codes_of(SAMPLE.encode())
    edited = SAMPLE.replace('"""Doc."""', '"""Another doc,\n    on two lines."""  # note') \
        .replace("kind = u", "\n\n    kind = u").replace('"Under an if."', "# no docstring") \
        .replace("def one(): return 1", "def one():\n    return (1)")
    assert codes_of(edited.encode()) == base


@pytest.mark.parametrize(("old", "new", "unit"), [
    ('f"{n!r:>{LIMIT}}', 'f"{n!s:>{LIMIT}}', "cached"),
    ('"""Doc."""', 'f"""Doc."""', "cached"),  # an f-string is no docstring
    ('return len(label)', '"a statement"\n    return len(label)', "cached"),
    ('kind = u"runner"', 'kind = "runner!"', "Runner"),
    ("LIMIT: int = 3", "LIMIT: int = 4", MODULE),
    ("maxsize=None", "maxsize=8", MODULE),  # a decorator runs where the body runs
    ("b=1", "b=2", "Runner.Inner"),  # a default runs where the class body runs
    ('"""Nested docstring."""', '"""Nested docstring."""\n                print()',
     "Runner.Inner.deep"),
])
def test_an_edit_of_code_changes_the_units_code(old: str, new: str, unit: str) -> None:
    assert SAMPLE.count(old) == 1
    base = codes_of(SAMPLE.encode())
    edited = codes_of(SAMPLE.replace(old, new).encode())
    assert base is not None and edited is not None
    assert base[unit] != edited[unit]


def test_a_file_that_is_not_python_has_no_code() -> None:
    assert codes_of(b"def f(:\n") is None
    assert codes_of(b"x = 1\0\n") is None


STEP = b'def step(batch):\n    """One step."""\n    return batch\n'
STEP_DOC = b'def step(batch):\n    """One step of the engine."""\n    return batch\n'
STEP_FSTRING = b'def step(batch):\n    f"""One step of the engine."""\n    return batch\n'


def _footprint(code: str | None, normal: int | None) -> Footprint:
    tree = SourceTree("d1", {"atom/step.py": STEP}, "recorded")
    units = {u.qualname: UnitRecord(u.digest, ("steps",), ("*",),
                                    code=code if u.qualname == "step" else None, normal=normal)
             for u in units_of(STEP)}
    return Footprint("atom", "d1", ("python", "run.py"), 1,
                     {"atom/step.py": FileRecord(tree.sha256("atom/step.py"), units)},
                     python="3.12.1", regions=("*", "step_s"))


def _diff(fp: Footprint, source: bytes, history: bytes | None = None) -> FootprintDiff:
    return diff_footprint(fp, SourceTree("d2", {"atom/step.py": source}, "edited"),
                          None if history is None else lambda _path, _sha: history)


def test_a_docstring_edit_in_a_step_function_is_layout_only_with_no_git_history() -> None:
    codes = codes_of(STEP)
    assert codes is not None
    diff = _diff(_footprint(codes["step"], NORMAL), STEP_DOC)
    [unit] = diff.units
    assert (unit.change, unit.layout_only, unit.counts_as) == ("changed", True, "layout only")
    assert unit.to_json()["counts_as"] == "layout only"
    assert diff.verdict == "untouched" and diff.law("step_s") == ("step_s", "untouched")
    assert "layout only" in diff.summary()


def test_an_f_string_in_the_docstrings_place_is_code() -> None:
    codes = codes_of(STEP)
    assert codes is not None
    diff = _diff(_footprint(codes["step"], NORMAL), STEP_FSTRING)
    assert [(u.layout_only, u.counts_as) for u in diff.units] == [(False, "steps")]
    assert diff.verdict == "steps"


@pytest.mark.parametrize("code", [None, "f" * 64])
def test_another_normal_or_no_code_falls_back_to_history_then_to_code(code: str | None) -> None:
    fp = _footprint(code, None if code is None else NORMAL + 1)
    assert [u.counts_as for u in _diff(fp, STEP_DOC, history=STEP).units] == ["layout only"]
    assert [u.counts_as for u in _diff(fp, STEP_DOC).units] == ["steps"]


LATIN = b"# -*- coding: latin-1 -*-\nLIMIT = 3\n\n\ndef label():\n    return '\xa4 per step'\n"
EURO = LATIN.replace(b"latin-1", b"iso-8859-15")  # the same bytes: \xa4 is now the euro sign


def _coded(source: bytes, normal: int = NORMAL) -> Footprint:
    """A footprint of one file whose body ran at start-up and whose `label` ran in step_s."""
    tree = SourceTree("d1", {"atom/label.py": source}, "recorded")
    codes = codes_of(source)
    assert codes is not None
    ran = {MODULE: (("startup",), ()), "label": (("steps",), ("step_s",))}
    units = {u.qualname: UnitRecord(u.digest, *ran[u.qualname], code=codes[u.qualname],
                                    normal=normal) for u in units_of(source)}
    return Footprint("atom", "d1", ("python", "run.py"), 1,
                     {"atom/label.py": FileRecord(tree.sha256("atom/label.py"), units)},
                     python="3.12.1", regions=("step_s",))


def test_a_changed_coding_declaration_is_code_in_the_units_whose_literals_it_decodes() -> None:
    diff = diff_footprint(_coded(LATIN), SourceTree("d2", {"atom/label.py": EURO}, "edited"))
    changed = {u.unit: (u.change, u.layout_only, u.counts_as) for u in diff.units}
    assert changed == {MODULE: ("changed", False, "startup"),
                       "label": ("changed", False, "steps")}
    assert diff.law("step_s") == ("step_s", "steps") and diff.note() is None


def test_units_recorded_under_the_older_normal_form_are_changed_only_where_their_bytes_are(
) -> None:
    diff = diff_footprint(_coded(LATIN, normal=1), SourceTree("d2", {"atom/label.py": EURO},
                                                              "edited"),
                          lambda _path, _sha: LATIN)
    assert [(u.unit, u.counts_as) for u in diff.units] == [(MODULE, "startup")]
    note = diff.note()
    assert note is not None and "\n" not in note
    assert note.startswith("this footprint's units were recorded under normal form 1 "
                           f"(lawkit's is {NORMAL})")
