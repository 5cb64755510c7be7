"""`manifest.json`: what made a cell's tables (or a collected sweep) and whether it finished.

A cell's manifest is written first with status `RUNNING`, before any table is replaced, and
last with status `COMPLETE` once every table is in place; a crash leaves `RUNNING` (or a job
failure `FAILED` with its traceback), so an unfinished cell is never taken for a finished
one. No wall-clock time is recorded: the same config gives the same manifest.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from cavbench.tables._errors import TableError
from cavbench.tables._io import replace_atomically
from cavbench.tables._schema import SCHEMA_VERSION

MANIFEST_NAME = "manifest.json"
TRACEBACK_NAME = "traceback.txt"


class CellStatus(StrEnum):
    """Life cycle of one cell's folder."""

    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TableRecord(_Record):
    """One table file of a cell or of a collected sweep."""

    file: str
    """File name, relative to the manifest's folder."""
    rows: int
    sha256: str
    """`sha256:` digest of the table's logical content (see `content_sha256`)."""


class PackRecord(_Record):
    """The scenario pack a cell ran."""

    ref: str
    """The pack as configured: a built-in id or a directory."""
    id: str
    version: str
    digest: str
    stored: str | None = None
    """The copy of the pack's files inside the sweep folder (`.packs/<digest>`, relative to
    it), which `recompute` reads when `ref` is not at hand."""


class AdapterRecord(_Record):
    name: str
    """The adapter config's name (the `adapter` partition key)."""
    reported_name: str
    """The name the adapter object gives itself."""
    version: str
    source_module: str | None = None
    """A custom adapter's factory module (None for cavbench's own adapters)."""
    source_sha256: str | None = None
    """sha256 of that module's source: a change redoes the cell instead of skipping it."""


class SeedBlock(_Record):
    """Seeds `start … start+count-1`, each run `repetitions` times."""

    start: int
    count: int
    repetitions: int


class Provenance(_Record):
    """Which software made the files."""

    cavbench_version: str
    git_commit: str | None
    """cavbench's own commit, only when it runs from a cavbench checkout (else null)."""
    git_dirty: bool | None = None
    """True when that checkout had uncommitted changes to tracked files (null: no checkout)."""
    python_version: str
    platform: str


class CellManifest(_Record):
    """The manifest of one cell (one Hydra job)."""

    kind: Literal["cavbench.cell"] = "cavbench.cell"
    schema_version: str = SCHEMA_VERSION
    status: CellStatus
    sweep: str
    """The sweep's name (`output.name`)."""
    cell: str
    """The cell's folder relative to the sweep folder (its hive path)."""
    keys: dict[str, str]
    """Partition key -> value, factors included (folder order: `PARTITION_KEYS`, then the
    factors sorted; the JSON file lists keys alphabetically)."""
    factors: tuple[str, ...] = ()
    """Names of the swept factors (also keys, also `episodes` columns)."""
    provenance: Provenance
    pack: PackRecord | None = None
    scoring_rule: str
    profile: str
    adapter: AdapterRecord | None = None
    seeds: SeedBlock
    scenario_ids: tuple[str, ...] = ()
    config: dict[str, JsonValue]
    """The resolved job config (without Hydra's own node and the `output` section)."""
    config_hash: str
    n_episodes: int = 0
    n_errors: int = 0
    """Episodes whose adapter raised (each still has an `episodes` row and a failed verdict)."""
    n_infra_errors: int = 0
    """Episodes ended by an infrastructure failure (status `infra_error`): left out of rates,
    and the cell is run again on resume."""
    tables: dict[str, TableRecord] = Field(default_factory=dict)
    error: str | None = None
    """The traceback when the job failed (status `FAILED`); also in `traceback.txt`."""


class CellSummary(_Record):
    """One cell as listed in a collected sweep's manifest."""

    cell: str
    keys: dict[str, str]
    status: CellStatus
    config_hash: str
    pack: PackRecord
    scoring_rule: str
    n_episodes: int
    n_errors: int
    tables: dict[str, TableRecord]


class SweepManifest(_Record):
    """The manifest of `SWEEP_DIR/collected/`: the merged tables and the cells they hold."""

    kind: Literal["cavbench.sweep"] = "cavbench.sweep"
    schema_version: str = SCHEMA_VERSION
    sweep: str
    provenance: Provenance
    partition_keys: tuple[str, ...]
    factors: tuple[str, ...]
    n_cells: int
    n_episodes: int
    n_errors: int
    cells: tuple[CellSummary, ...]
    tables: dict[str, TableRecord]


def write_manifest(directory: Path, manifest: CellManifest | SweepManifest) -> Path:
    """Write `directory/manifest.json` atomically (indent 2, sorted keys)."""
    path = directory / MANIFEST_NAME
    text = json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    replace_atomically(path, text.encode("utf-8"))
    return path


def _load(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TableError(path, f"cannot read manifest: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise TableError(path, f"invalid JSON at line {exc.lineno}: {exc.msg}") from exc


_M = TypeVar("_M", bound=BaseModel)


def _read_validated(path: Path, model: type[_M], what: str, fix: str) -> _M:
    """Read a manifest (the file or its folder) and validate it against `model`."""
    path = path / MANIFEST_NAME if path.is_dir() else path
    raw = _load(path)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TableError(path, f"not a {what}: {where}: {first['msg']}", fix) from exc


def read_cell_manifest(path: Path) -> CellManifest:
    """Read and validate a cell's `manifest.json` (the file or its folder)."""
    return _read_validated(path, CellManifest, "cell manifest", "re-run the sweep")


def read_sweep_manifest(path: Path) -> SweepManifest:
    """Read and validate a collected sweep's `manifest.json` (the file or its folder)."""
    return _read_validated(path, SweepManifest, "collected-sweep manifest", "run cavbench collect")
