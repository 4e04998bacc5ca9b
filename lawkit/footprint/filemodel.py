"""The footprint file's shape as pydantic validates it and `lawkit schema footprint` prints it
(docs/footprint-file.md). One model reads all three schemas: what a schema lacks has its
default (a schema-1 unit has no ``regions``; a schema-2 distribution has ``direct_url``, not
``install`` and ``files``; only schema 3 has ``configuration``). Keys the model does not know
are ignored, so a file a later lawkit wrote with more in it still reads.

`explain` words pydantic's first error as law files' are worded: ``key.path: expected ...,
got ...``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Phase = Literal["startup", "steps"]
InstallKind = Literal["index", "archive", "vcs", "directory", "editable", "egg-info", "legacy"]


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _Ran(_Model):
    phases: list[Phase] = Field(default_factory=list,
                                description="the phases it ran in (empty: it did not run)")
    regions: list[str] = Field(default_factory=list,
                               description='the regions it ran in during steps ("*": none open)')
    startup_regions: list[str] | None = Field(
        default=None, description='the regions it ran in at start-up ("*": none open); '
                                  'absent: every start-up run had none open')


class UnitModel(_Ran):
    """One unit: a module body, a class shell, or a function or method by qualified name."""

    digest: str = Field(description="sha256 of the unit's bytes")
    shutdown: bool = Field(default=False, description="it ran only after the steps ended")
    code: str | None = Field(default=None,
                             description="sha256 of its code in lawkit's normal form")
    normal: int | None = Field(default=None, description="the version of that normal form")
    assumed: str = Field(default="", description='why its runs were assumed, not seen: '
                                                 '"compiled" or "unseen"')


class FileModel(_Model):
    """One hashed engine file."""

    sha256: str
    units: dict[str, UnitModel]


class PythonModel(_Model):
    """The Python build that ran."""

    version: str
    implementation: str
    abiflags: str
    gil_disabled: bool


class DirectUrlModel(_Model):
    """Schema 2's PEP 610 direct URL of a distribution."""

    url: str
    editable: bool = False


class DistFileModel(_Ran):
    """One file of a distribution that ran (schema 3), by its path relative to the folder on
    sys.path that holds it."""

    sha256: str = Field(description="of the file's bytes when record ran")
    native: bool = Field(default=False, description="an extension module or shared object")
    units: dict[str, UnitModel] = Field(default_factory=dict)


class DistModel(_Ran):
    """One distribution that ran, by its PEP 503 name."""

    version: str
    record: str | None = Field(default=None, description="sha256 of its RECORD")
    install: InstallKind | None = Field(default=None, description="how it was installed "
                                                                  "(schema 3)")
    source: str | None = Field(default=None, description="the URL or folder it came from")
    commit: str | None = Field(default=None, description="the VCS commit it was built from")
    direct_url: DirectUrlModel | None = Field(default=None, description="schema 2 only")
    files: dict[str, DistFileModel] = Field(default_factory=dict)


class EnvironmentModel(_Model):
    """The interpreter and the distributions whose code ran."""

    python: PythonModel
    distributions: dict[str, DistModel]
    unpackaged: list[str] = Field(default_factory=list)
    everywhere: bool = Field(default=False, description="3.11: every distribution counted as "
                                                        "run in every phase and region")
    before_recorder: list[str] = Field(default_factory=list,
                                       description="modules imported before the recorder "
                                                   "started: run in every phase and region")


class EnvironModel(_Ran):
    """One environment variable Python code read."""

    value: str = Field(description='sha256 of the value read, "absent", or "hidden" (a '
                                   "TOKEN, SECRET, PASSWORD or CREDENTIAL name)")


class SettingsModel(_Model):
    """The process settings at cap.steps()."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)
    gc_threshold: list[int] | None = None
    gc_enabled: bool | None = None
    switch_interval: float | None = None
    flags: dict[str, int | str | bool] | None = None
    hash_seed: str | None = None
    cpus: list[int] | None = None


class ConfigurationModel(_Model):
    """The configuration the steps ran under (schema 3)."""

    environ: dict[str, EnvironModel] = Field(default_factory=dict)
    settings: SettingsModel = Field(default_factory=SettingsModel)


class FootprintModel(_Model):
    """A footprint file: which code ran while a command ran, engine and dependencies, and the
    configuration it ran under."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True,
                              title="lawkit footprint (lawkit-footprint/3)")
    schema_: Literal["lawkit-footprint/1", "lawkit-footprint/2", "lawkit-footprint/3"] = \
        Field(alias="schema")
    key: str
    digest: str
    command: list[str]
    processes: int
    recorder: str = "coverage"
    python: str = ""
    regions: list[str] = Field(default_factory=list)
    unhashed: list[str] = Field(default_factory=list)
    files: dict[str, FileModel]
    environment: EnvironmentModel | None = None
    configuration: ConfigurationModel | None = None


def footprint_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a footprint file."""
    return FootprintModel.model_json_schema(by_alias=True)


def explain(exc: ValidationError) -> str:
    """pydantic's first error as one line: ``files.a.py.units.f.phases.0: expected 'startup'
    or 'steps', got 'later' (str)``."""
    error = exc.errors()[0]
    loc = [str(p) for p in error["loc"] if not str(p).startswith(("literal[", "function-"))]
    where = ".".join(loc) or "the file"
    if error["type"] == "missing":
        return f"{where}: missing: record the footprint again with lawkit footprint record"
    got = error.get("input")
    return (f"{where}: {error['msg'].replace('Input should be', 'expected')}, got "
            f"{_clipped(got)} ({type(got).__name__})")


def _clipped(value: Any) -> str:
    """`repr(value)`, cut to a length a message can quote."""
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + " ..."
