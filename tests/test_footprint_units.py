"""Cutting a source file into units (DESIGN section 11), and telling layout from code."""

from __future__ import annotations

import hashlib

from lawkit.footprint.ran import phases_of_units
from lawkit.footprint.units import MODULE, layout_only, units_of

SOURCE = b'''"""A module."""
import os

X = 1


@deco
@other(
    1)
def f(a,
      b=2):
    def inner():
        return 1
    return inner


class C(Base):
    attr = 1

    def m(self): return 2

    @property
    def p(self):
        return 3

    @p.setter
    def p(self, v):
        self._p = v

    class D:
        def m(self):
            pass


if X:
    def g(): pass
else:
    def g(): return 1
'''


def _units() -> dict[str, object]:
    return {u.qualname: u for u in units_of(SOURCE)}


def test_units_are_the_module_body_class_shells_and_functions_by_qualified_name() -> None:
    names = [u.qualname for u in units_of(SOURCE)]
    assert names == [MODULE, "f", "C", "C.m", "C.p", "C.p#2", "C.D", "C.D.m", "g", "g#2"]


def test_a_function_runs_from_its_first_decorator_to_its_last_line_nested_ones_inside() -> None:
    [f] = [u for u in units_of(SOURCE) if u.qualname == "f"]
    lines = SOURCE.splitlines(keepends=True)
    assert f.data == b"".join(lines[6:14])
    assert sorted(f.header) == [7, 8, 9, 10, 11]  # decorators and the signature
    assert f.digest == hashlib.sha256(f.data).hexdigest()


def test_a_shell_is_its_lines_without_its_members_then_their_names() -> None:
    units = {u.qualname: u for u in units_of(SOURCE)}
    assert units["C"].data == b"class C(Base):\n    attr = 1\n\n\n\n\n\0m\np\np#2\nD"
    assert units["C.D"].data == b"    class D:\n\0m"
    module = units[MODULE].data
    assert module.startswith(b'"""A module."""\nimport os\n\nX = 1\n')
    assert module.endswith(b"if X:\nelse:\n\0f\nC\ng\ng#2")


def test_a_method_added_to_a_class_changes_the_class_shell_and_nothing_else() -> None:
    before = {u.qualname: u.digest for u in units_of(SOURCE)}
    after = {u.qualname: u.digest for u in units_of(SOURCE.replace(
        b"    class D:", b"    def added(self):\n        pass\n\n    class D:"))}
    changed = {n for n in before if before[n] != after[n]}
    assert changed == {"C"} and set(after) - set(before) == {"C.added"}


def test_bytes_are_kept_as_stored_crlf_included() -> None:
    crlf = SOURCE.replace(b"\n", b"\r\n")
    units = {u.qualname: u for u in units_of(crlf)}
    assert units["C.D.m"].data == b"        def m(self):\r\n            pass\r\n"
    assert units["C.D.m"].digest != {u.qualname: u for u in units_of(SOURCE)}["C.D.m"].digest
    assert layout_only(dict((u.qualname, u.data) for u in units_of(SOURCE))["C.D.m"],
                       units["C.D.m"].data)


def test_a_file_that_is_not_python_is_one_module_unit() -> None:
    [unit] = units_of(b"def broken(:\n    pass\n")
    assert (unit.qualname, unit.data, sorted(unit.lines)) == (MODULE, b"def broken(:\n    pass\n",
                                                               [1, 2])
    assert [u.qualname for u in units_of(b"x = 1\0\n")] == [MODULE]


def test_layout_only_allows_comments_blank_lines_and_docstrings_not_code() -> None:
    old = b'    def m(self):\n        """Doc."""\n        return 1\n'
    assert layout_only(old, b'    def m(self):\n        """Other\n        doc."""\n\n'
                            b'        return 1  # why\n')
    assert layout_only(old, b"    def m(self):\n        return 1\n")
    assert not layout_only(old, b'    def m(self):\n        """Doc."""\n        return 2\n')
    assert not layout_only(old, b'    def m(self):\n        """Doc."""\n        return (1)\n')
    assert not layout_only(b"x = 1\n\0f", b"x = 1\n\0f\ng")  # a member added
    assert layout_only(b'"""Module doc."""\nx = 1\n\0', b"x = 1  # c\n\0")
    assert not layout_only(b'x = 1\n"""not a docstring"""\n\0', b"x = 1\n\0")
    assert not layout_only(b"def f(:\n", b"def f(: # c\n")  # not Python: never layout only


def test_a_function_ran_when_its_body_ran_its_def_line_counts_for_its_holder() -> None:
    units = units_of(b"import x\n\ndef f():\n    return 1\n\ndef one(): return 1\n")
    # importing: the module's lines, the def lines; nothing inside f or one
    imported = phases_of_units(units, {"startup": [(-1, 1), (1, 3), (3, 6), (6, -1)]})
    assert imported == {MODULE: {"startup"}, "f": set(), "one": set()}
    called = phases_of_units(units, {"steps": [(-3, 4), (4, -3), (-6, 6), (6, -6)]})
    assert called == {MODULE: set(), "f": {"steps"}, "one": {"steps"}}
