"""The footprint file's shape as pydantic validates it and `lawkit schema footprint` prints it
(docs/footprint-file.md). One shape reads all three schemas: what a schema lacks is left
out (a schema-1 unit has no ``regions``; a schema-2 distribution has ``direct_url``, not
``install`` and ``files``; only schema 3 has ``configuration``). Keys the model does not know
are ignored, so a file a later lawkit wrote with more in it still reads.

`explain` words pydantic's first error as law files' are worded: ``key.path: expected ...,
got ...``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

Phase = Literal["startup", "steps"]
InstallKind = Literal["index", "archive", "vcs", "directory", "editable", "egg-info", "legacy"]
_STRICT = ConfigDict(strict=True, extra="ignore")

# TypedDicts, not models: validating a footprint of 130,000 units into dicts takes half the time
# of building a model instance for each (a footprint is read in every `check`).


@with_config(_STRICT)
class UnitDoc(TypedDict):
    """One unit: a module body, a class shell, or a function or method by qualified name."""

    digest: Annotated[str, Field(description="sha256 of the unit's bytes")]
    phases: Annotated[list[Phase], Field(description="the phases it ran in (empty: it did "
                                                     "not run)")]
    regions: NotRequired[Annotated[list[str], Field(
        description='the regions it ran in during steps ("*": none open)')]]
    startup_regions: NotRequired[Annotated[list[str] | None, Field(
        description='the regions it ran in at start-up ("*": none open); absent: every '
                    "start-up run had none open")]]
    shutdown: NotRequired[Annotated[bool, Field(description="it ran only after the steps "
                                                            "ended")]]
    code: NotRequired[Annotated[str | None, Field(
        description="sha256 of its code in lawkit's normal form")]]
    normal: NotRequired[Annotated[int | None, Field(description="the version of that normal "
                                                                "form")]]
    assumed: NotRequired[Annotated[str, Field(description='why its runs were assumed, not '
                                                          'seen: "compiled" or "unseen"')]]


@with_config(_STRICT)
class RanDoc(TypedDict):
    """Where something ran, as a unit says it (``UnitDoc``), for a distribution, one of its
    files, or an environment variable's reads: each key may be absent."""

    phases: NotRequired[list[Phase]]
    regions: NotRequired[list[str]]
    startup_regions: NotRequired[list[str] | None]


@with_config(_STRICT)
class FileDoc(TypedDict):
    """One hashed engine file."""

    sha256: str
    units: dict[str, UnitDoc]


@with_config(_STRICT)
class PythonDoc(TypedDict):
    """The Python build that ran."""

    version: str
    implementation: str
    abiflags: str
    gil_disabled: bool


@with_config(_STRICT)
class DirectUrlDoc(TypedDict):
    """Schema 2's PEP 610 direct URL of a distribution."""

    url: str
    editable: NotRequired[bool]


@with_config(_STRICT)
class DistFileDoc(RanDoc):
    """One file of a distribution that ran (schema 3), by its path relative to the folder on
    sys.path that holds it."""

    sha256: Annotated[str, Field(description="of the file's bytes when record ran")]
    native: NotRequired[Annotated[bool, Field(description="an extension module or shared "
                                                          "object")]]
    units: NotRequired[dict[str, UnitDoc]]


@with_config(_STRICT)
class DistDoc(RanDoc):
    """One distribution that ran, by its PEP 503 name."""

    version: str
    record: NotRequired[Annotated[str | None, Field(description="sha256 of its RECORD")]]
    install: NotRequired[Annotated[InstallKind | None, Field(
        description="how it was installed (schema 3)")]]
    source: NotRequired[Annotated[str | None, Field(description="the URL or folder it came "
                                                                "from")]]
    commit: NotRequired[Annotated[str | None, Field(description="the VCS commit it was built "
                                                                "from")]]
    direct_url: NotRequired[Annotated[DirectUrlDoc | None, Field(description="schema 2 only")]]
    files: NotRequired[dict[str, DistFileDoc]]


@with_config(_STRICT)
class EnvironmentDoc(TypedDict):
    """The interpreter and the distributions whose code ran."""

    python: PythonDoc
    distributions: dict[str, DistDoc]
    unpackaged: NotRequired[list[str]]
    everywhere: NotRequired[Annotated[bool, Field(
        description="3.11: every distribution counted as run in every phase and region")]]
    before_recorder: NotRequired[Annotated[list[str], Field(
        description="modules imported before the recorder started: run in every phase and "
                    "region")]]


@with_config(_STRICT)
class EnvironDoc(RanDoc):
    """One environment variable Python code read."""

    value: Annotated[str, Field(description='sha256 of the value read, "absent", or "hidden" '
                                            "(a TOKEN, SECRET, PASSWORD or CREDENTIAL name)")]


@with_config(ConfigDict(strict=True, extra="allow"))
class SettingsDoc(TypedDict, total=False):
    """The process settings at cap.steps()."""

    gc_threshold: list[int] | None
    gc_enabled: bool | None
    switch_interval: float | None
    flags: dict[str, int | str | bool] | None
    hash_seed: str | None
    cpus: list[int] | None


@with_config(_STRICT)
class ConfigurationDoc(TypedDict):
    """The configuration the steps ran under (schema 3)."""

    environ: NotRequired[dict[str, EnvironDoc]]
    settings: NotRequired[SettingsDoc]


@with_config(ConfigDict(strict=True, extra="ignore",
                        title="lawkit footprint (lawkit-footprint/3)"))
class FootprintDoc(TypedDict):
    """A footprint file: which code ran while a command ran, engine and dependencies, and the
    configuration it ran under."""

    schema: Literal["lawkit-footprint/1", "lawkit-footprint/2", "lawkit-footprint/3"]
    key: str
    digest: str
    command: list[str]
    processes: int
    recorder: NotRequired[str]
    python: NotRequired[str]
    regions: NotRequired[list[str]]
    unhashed: NotRequired[list[str]]
    unregioned_threads: NotRequired[Annotated[list[str], Field(
        description="the threads that ran engine code in steps with no region open (or were "
                    "live there while one did), by name, over every process")]]
    files: dict[str, FileDoc]
    environment: NotRequired[EnvironmentDoc | None]
    configuration: NotRequired[ConfigurationDoc | None]


FOOTPRINT = TypeAdapter(FootprintDoc)
"""Validates a footprint file's JSON (``FOOTPRINT.validate_json(raw)``)."""


def footprint_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a footprint file."""
    return FOOTPRINT.json_schema()


def explain(exc: ValidationError,
            again: str = "record the footprint again with lawkit footprint record") -> str:
    """pydantic's first error as one line, with what to do (``again``): ``files.a.py.units.f.
    phases.0: expected 'startup' or 'steps', got 'later' (str): record the footprint again
    with lawkit footprint record``."""
    error = exc.errors()[0]
    loc = [str(p) for p in error["loc"] if not str(p).startswith(("literal[", "function-"))]
    where = ".".join(loc) or "the file"
    if error["type"] == "missing":
        return f"{where}: missing: {again}"
    got = error.get("input")
    return (f"{where}: {error['msg'].replace('Input should be', 'expected')}, got "
            f"{_clipped(got)} ({type(got).__name__}): {again}")


def _clipped(value: Any) -> str:
    """`repr(value)`, cut to a length a message can quote."""
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + " ..."
