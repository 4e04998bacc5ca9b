"""Cutting a source file into units, and telling layout from code."""

from __future__ import annotations

import contextlib
import hashlib
import sys
from pathlib import Path

from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, write_footprint
from lawkit.footprint.ran import phases_of_units
from lawkit.footprint.units import MODULE, layout_only, units_of
from testing.cli import invoke

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


def test_a_shell_keeps_each_member_in_its_place_as_a_mark_and_its_header() -> None:
    units = {u.qualname: u for u in units_of(SOURCE)}
    assert units["C"].data == (b"class C(Base):\n    attr = 1\n\n"
                               b"\0def m\n    def m(self): \n\n"
                               b"\0def p\n    @property\n    def p(self):\n\n"
                               b"\0def p#2\n    @p.setter\n    def p(self, v):\n\n"
                               b"\0class D\n    class D:\n")
    assert units["C.D"].data == b"    class D:\n\0def m\n        def m(self):\n"
    module = units[MODULE].data
    assert module.startswith(b'"""A module."""\nimport os\n\nX = 1\n\n\n'
                             b"\0def f\n@deco\n@other(\n    1)\ndef f(a,\n      b=2):\n")
    assert module.endswith(b"if X:\n\0def g\n    def g(): \nelse:\n\0def g#2\n    def g(): \n")


def test_a_schema_1_shell_is_its_lines_without_its_members_then_their_names() -> None:
    units = {u.qualname: u for u in units_of(SOURCE, schema=1)}
    assert units["C"].data == b"class C(Base):\n    attr = 1\n\n\n\n\n\0m\np\np#2\nD"
    assert units["C.D"].data == b"    class D:\n\0m"
    module = units[MODULE].data
    assert module.startswith(b'"""A module."""\nimport os\n\nX = 1\n')
    assert module.endswith(b"if X:\nelse:\n\0f\nC\ng\ng#2")
    assert units["f"].data == {u.qualname: u for u in units_of(SOURCE)}["f"].data


SAMPLER = b"""REGISTRY = {}
def register(name):
    def deco(fn):
        REGISTRY[name] = fn
        return fn
    return deco
@register("greedy")
def sample(logits, top_k=TOP_K):
    return logits[:top_k]
TOP_K = 50
class Sampler:
    def pick(self, k=LIMIT):
        return k
    LIMIT = 3
"""
"""Compact, so that a statement moved across a def leaves a body's own lines the same."""


def _digests(source: bytes, schema: int = 2) -> dict[str, str]:
    return {u.qualname: u.digest for u in units_of(source, schema)}


def _changed(before: bytes, after: bytes, schema: int = 2) -> set[str]:
    old, new = _digests(before, schema), _digests(after, schema)
    return {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}


def test_a_constant_moved_above_a_def_whose_default_reads_it_changes_the_module_body() -> None:
    moved = SAMPLER.replace(b"TOP_K = 50\n", b"").replace(b'@register("greedy")',
                                                         b'TOP_K = 50\n@register("greedy")')
    assert _changed(SAMPLER, moved) == {MODULE}
    assert _changed(SAMPLER, moved, schema=1) == set()  # what schema 1 cannot see


def test_a_class_attribute_moved_above_a_method_whose_default_reads_it_changes_the_shell(
) -> None:
    moved = SAMPLER.replace(b"    LIMIT = 3\n", b"").replace(
        b"class Sampler:\n", b"class Sampler:\n    LIMIT = 3\n")
    assert _changed(SAMPLER, moved) == {"Sampler"}
    assert _changed(SAMPLER, moved, schema=1) == set()


def test_a_changed_decorator_or_default_changes_its_function_and_the_body_that_ran_it() -> None:
    retagged = SAMPLER.replace(b'@register("greedy")', b'@register("top_k")')
    assert _changed(SAMPLER, retagged) == {MODULE, "sample"}
    assert _changed(SAMPLER, retagged, schema=1) == {"sample"}
    defaulted = SAMPLER.replace(b"def pick(self, k=LIMIT)", b"def pick(self, k=LIMIT + 1)")
    assert _changed(SAMPLER, defaulted) == {"Sampler", "Sampler.pick"}
    annotated = SAMPLER.replace(b"def pick(self, k=LIMIT)", b"def pick(self, k: int = LIMIT)")
    assert _changed(SAMPLER, annotated) == {"Sampler", "Sampler.pick"}


def test_a_changed_body_changes_only_its_function_one_line_definitions_too() -> None:
    assert _changed(SAMPLER, SAMPLER.replace(b"return logits[:top_k]",
                                             b"return logits[top_k:]")) == {"sample"}
    one_line = b"def one(): return 1\n\nclass K: x = 1\n"
    assert _changed(one_line, one_line.replace(b"return 1", b"return 2")) == {"one"}
    assert _changed(one_line, one_line.replace(b"x = 1", b"x = 2")) == {"K"}


def test_layout_only_sees_comments_between_members_but_not_members_swapped() -> None:
    units = {u.qualname: u.data for u in units_of(SAMPLER)}
    commented = {u.qualname: u.data for u in units_of(
        SAMPLER.replace(b"TOP_K = 50\n", b"# the default\nTOP_K = 50  # tokens\n"))}
    assert layout_only(units[MODULE], commented[MODULE])
    swapped = SAMPLER.replace(b"class Sampler:", b"class Sampler:\n    def a(self): pass\n"
                              b"    def b(self): pass").replace(b"LIMIT = 3", b"LIMIT = 3")
    other = swapped.replace(b"    def a(self): pass\n    def b(self): pass",
                            b"    def b(self): pass\n    def a(self): pass")
    before = {u.qualname: u.data for u in units_of(swapped)}["Sampler"]
    after = {u.qualname: u.data for u in units_of(other)}["Sampler"]
    assert before != after and not layout_only(before, after)
    schema_1 = {u.qualname: u.data for u in units_of(SAMPLER, schema=1)}
    assert layout_only(schema_1[MODULE], {u.qualname: u.data for u in units_of(
        SAMPLER.replace(b"TOP_K = 50\n", b"TOP_K = 50  # c\n"), schema=1)}[MODULE], schema=1)


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


def test_an_f_string_or_bytes_first_statement_is_code_not_a_docstring() -> None:
    assert not layout_only(b'f"{x}"\nx = 1\n', b'f"{y}"\nx = 1\n')
    assert not layout_only(b'F"a"\nx = 1\n', b"x = 1\n")
    assert not layout_only(b'    def m(self):\n        rf"{x}"\n        return 1\n',
                           b"    def m(self):\n        return 1\n")
    assert not layout_only(b'def m(): f"{x}"\n', b"def m(): pass\n")
    assert not layout_only(b'b"raw"\nx = 1\n', b"x = 1\n")
    assert layout_only(b'r"""Doc."""\nx = 1\n', b'u"Other"\nx = 1\n')


def test_a_function_ran_when_its_body_ran_its_def_line_counts_for_its_holder() -> None:
    units = units_of(b"import x\n\ndef f():\n    return 1\n\ndef one(): return 1\n")
    # importing: the module's lines, the def lines; nothing inside f or one
    imported = phases_of_units(units, {"startup": [(-1, 1), (1, 3), (3, 6), (6, -1)]})
    assert imported == {MODULE: {"startup"}, "f": set(), "one": set()}
    called = phases_of_units(units, {"steps": [(-3, 4), (4, -3), (-6, 6), (6, -6)]})
    assert called == {MODULE: set(), "f": {"steps"}, "one": {"steps"}}


def test_a_source_too_deep_for_the_parser_is_a_one_line_error_naming_it_in_footprint_diff(
        tmp_path: Path) -> None:
    (tmp_path / "atom").mkdir()
    (tmp_path / "atom" / "__init__.py").write_bytes(b"")
    deep = tmp_path / "atom" / "deep.py"
    deep.write_bytes(b"X = 1\n")
    (tmp_path / "lawkit.toml").write_text('[digest]\npackages = ["atom"]\n')
    files = {rel: FileRecord(hashlib.sha256(data).hexdigest(),
                             {u.qualname: UnitRecord(u.digest, ("startup",), ())
                              for u in units_of(data)})
             for rel, data in (("atom/__init__.py", b""), ("atom/deep.py", b"X = 1\n"))}
    write_footprint(Footprint("atom", "0" * 8, ("python",), 1, files), tmp_path / "fp.json")
    for depth in (b"1+" * 200_000 + b"1", b"-" * 200_000 + b"1"):  # out of stack, of memory
        deep.write_bytes(b"X = " + depth + b"\n")
        with contextlib.chdir(tmp_path):
            result = invoke("footprint", "diff", "fp.json")
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("lawkit: error: atom/deep.py: nested too deep for "
                                         "Python's parser ("), result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_record_names_a_hashed_source_too_deep_for_the_parser(tmp_path: Path) -> None:
    (tmp_path / "atom").mkdir()
    (tmp_path / "atom" / "__init__.py").write_bytes(b"")
    (tmp_path / "atom" / "deep.py").write_bytes(b"X = " + b"1+" * 200_000 + b"1\n")
    (tmp_path / "lawkit.toml").write_text('[digest]\npackages = ["atom"]\n')
    (tmp_path / "run.py").write_text("import atom\n")
    with contextlib.chdir(tmp_path):
        result = invoke("footprint", "record", "--out", "fp.json", "--", sys.executable,
                        "run.py")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1].startswith(
        "lawkit: error: atom/deep.py: nested too deep for Python's parser (")
    assert not (tmp_path / "fp.json").exists()
