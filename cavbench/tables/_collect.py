"""`collect`: merge a finished sweep's cells into one file per table, plus a sweep manifest.

Only cells whose manifest says `COMPLETE` and whose every table matches its recorded
checksum are merged; any other cell stops the merge (or, when asked, is left out and
listed). Cells are merged one at a time, in folder order, streamed in batches of rows, and
the checksums computed as the rows go, so memory stays flat however large the sweep.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cavbench import provenance
from cavbench.tables._checksum import ContentDigest
from cavbench.tables._errors import SweepError, TableError
from cavbench.tables._io import (
    COMPRESSION,
    FOOTER_KEY,
    read_batches,
    replace_atomically,
    tmp_path,
    verify_table,
)
from cavbench.tables._manifest import (
    MANIFEST_NAME,
    CellManifest,
    CellStatus,
    CellSummary,
    Provenance,
    SweepManifest,
    TableRecord,
    read_cell_manifest,
    write_manifest,
)
from cavbench.tables._schema import (
    CELL_COLUMN,
    PARTITION_KEYS,
    SCHEMA_VERSION,
    Table,
    collected_schema,
)

COLLECTED_DIR = "collected"
_MAX_LISTED = 10

log = logging.getLogger(__name__)


def current_provenance() -> Provenance:
    """The software that is writing now."""
    facts = provenance.environment_facts()
    return Provenance(
        cavbench_version=str(facts["cavbench_version"]),
        git_commit=facts["git_commit"],
        git_dirty=None if facts["git_dirty"] is None else facts["git_dirty"] == "true",
        python_version=str(facts["python_version"]),
        platform=str(facts["platform"]),
    )


def cell_dirs(sweep_dir: Path) -> list[Path]:
    """Every folder under `sweep_dir` that holds a cell manifest, in sorted order
    (`collected/` and Hydra's own folders left out)."""
    found: list[Path] = []
    for path in sweep_dir.rglob(MANIFEST_NAME):
        relative = path.parent.relative_to(sweep_dir).parts
        if not relative or relative[0] == COLLECTED_DIR or any(p.startswith(".") for p in relative):
            continue
        found.append(path.parent)
    return sorted(found)


def orphan_dirs(sweep_dir: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(folder, problem) for each folder holding table files but no manifest (a lost or
    never-written manifest): such tables are never read unchecked."""
    names = {t.filename for t in Table}
    folders: set[Path] = set()
    for path in sweep_dir.rglob("*.parquet"):
        relative = path.parent.relative_to(sweep_dir).parts
        if relative[:1] == (COLLECTED_DIR,) or any(p.startswith(".") for p in relative):
            continue
        if path.name in names and not (path.parent / MANIFEST_NAME).is_file():
            folders.add(path.parent)
    return [
        (
            d.relative_to(sweep_dir).as_posix() or ".",
            ("tables without a manifest.json beside them (lost or never written)",),
        )
        for d in sorted(folders)
    ]


def verify_cell(directory: Path, manifest: CellManifest | None = None) -> list[str]:
    """Why a cell folder does not hold a complete, intact set of tables ([] if it does)."""
    if manifest is None:
        try:
            manifest = read_cell_manifest(directory)
        except TableError as exc:
            return [str(exc)]
    if manifest.status is not CellStatus.COMPLETE:
        return [f"status is {manifest.status.value}, not COMPLETE"]
    problems: list[str] = []
    for table in Table:
        record = manifest.tables.get(table.value)
        if record is None:
            problems.append(f"the manifest lists no {table.value} table")
            continue
        problem = verify_table(directory / record.file, table, record.rows, record.sha256)
        if problem is not None:
            problems.append(problem)
    return problems


@dataclass(frozen=True, slots=True)
class CollectResult:
    """What `collect` wrote and what it left out."""

    out_dir: Path
    manifest: SweepManifest
    left_out: tuple[tuple[str, tuple[str, ...]], ...]
    """(cell, problems) of every cell not merged (only with `allow_incomplete`)."""


def describe_problems(bad: Sequence[tuple[str, Sequence[str]]]) -> str:
    lines = [f"  {cell}: {'; '.join(problems)}" for cell, problems in bad[:_MAX_LISTED]]
    if len(bad) > _MAX_LISTED:
        lines.append(f"  … and {len(bad) - _MAX_LISTED} more")
    return "\n".join(lines)


def _with_keys(data: pa.Table, schema: pa.Schema, manifest: CellManifest) -> pa.Table:
    """`data` widened to the collected schema: partition keys and the cell as real columns."""
    values = {**manifest.keys, CELL_COLUMN: manifest.cell}
    columns = []
    for field in schema:
        if data.schema.get_field_index(field.name) >= 0:
            columns.append(data.column(field.name))
        else:
            columns.append(pa.array([values.get(field.name)] * data.num_rows, type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)


PREREGISTRATION_FILES = ("preregistration.json", "deviations.jsonl", "registered_packs.jsonl")
"""A pre-registered sweep's registration and deviation log (`cavbench.study`); collect copies
them beside the merged tables, so a frozen copy keeps its registration."""


def check_cells(
    sweep_dir: Path,
) -> tuple[list[tuple[Path, CellManifest]], list[tuple[str, tuple[str, ...]]]]:
    """Every cell of `sweep_dir` checked against its manifest: the good ones with their
    manifests, and the bad ones (orphan folders included) with their problems."""
    good: list[tuple[Path, CellManifest]] = []
    bad: list[tuple[str, tuple[str, ...]]] = orphan_dirs(sweep_dir)
    for directory in cell_dirs(sweep_dir):
        cell = directory.relative_to(sweep_dir).as_posix()
        try:
            manifest = read_cell_manifest(directory)
        except TableError as exc:
            bad.append((cell, (str(exc),)))
            continue
        problems = verify_cell(directory, manifest)
        if problems:
            bad.append((cell, tuple(problems)))
        else:
            good.append((directory, manifest))
    return good, bad


def collect(
    sweep_dir: Path, out_dir: Path | None = None, *, allow_incomplete: bool = False
) -> CollectResult:
    """Merge the cells of `sweep_dir` into `out_dir` (default `sweep_dir/collected`):
    `<table>.parquet` for each table with the partition keys as columns, and `manifest.json`."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise SweepError(f"{sweep_dir}: no such sweep folder")
    out_dir = Path(out_dir) if out_dir is not None else sweep_dir / COLLECTED_DIR
    good, bad = check_cells(sweep_dir)
    if bad and not allow_incomplete:
        raise SweepError(
            f"{sweep_dir}: {len(bad)} cell(s) are not complete (fix: run the same sweep "
            "command again to finish them, or pass --allow-incomplete to leave them out):\n"
            + describe_problems(bad)
        )
    if not good:
        raise SweepError(f"{sweep_dir}: no complete cell to collect (no manifest.json found below)")
    factors = sorted({name for _, m in good for name in m.factors})
    sweeps = sorted({m.sweep for _, m in good})
    out_dir.mkdir(parents=True, exist_ok=True)
    footer = {
        "layout": "collected",
        "schema_version": SCHEMA_VERSION,
        "sweep": ",".join(sweeps),
        "factors": factors,
        "n_cells": len(good),
    }
    tables: dict[str, TableRecord] = {}
    for table in Table:
        schema = collected_schema(table, factors)
        stamped = schema.with_metadata(
            {FOOTER_KEY: json.dumps({**footer, "table": table.value}, sort_keys=True)}
        )
        path = out_dir / table.filename
        tmp = tmp_path(path)
        digest = ContentDigest(schema, spool_dir=out_dir)
        try:
            with pq.ParquetWriter(tmp, stamped, compression=COMPRESSION) as writer:
                for directory, manifest in good:
                    for data in read_batches(directory / manifest.tables[table.value].file, table):
                        widened = _with_keys(data, schema, manifest)
                        writer.write_table(widened.replace_schema_metadata(stamped.metadata))
                        digest.update(widened)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        tables[table.value] = TableRecord(
            file=table.filename, rows=digest.rows, sha256=digest.hexdigest()
        )
    manifest_out = SweepManifest(
        sweep=",".join(sweeps),
        provenance=current_provenance(),
        partition_keys=(*PARTITION_KEYS, *factors),
        factors=tuple(factors),
        n_cells=len(good),
        n_episodes=sum(m.n_episodes for _, m in good),
        n_errors=sum(m.n_errors for _, m in good),
        cells=tuple(
            CellSummary(
                cell=m.cell,
                keys=m.keys,
                status=m.status,
                config_hash=m.config_hash,
                pack=m.pack,
                scoring_rule=m.scoring_rule,
                n_episodes=m.n_episodes,
                n_errors=m.n_errors,
                tables=m.tables,
            )
            for _, m in good
            if m.pack is not None
        ),
        tables=tables,
    )
    for name in PREREGISTRATION_FILES:
        if (sweep_dir / name).is_file():
            replace_atomically(out_dir / name, (sweep_dir / name).read_bytes())
    write_manifest(out_dir, manifest_out)
    log.info("collected %d cells into %s", len(good), out_dir)
    return CollectResult(out_dir=out_dir, manifest=manifest_out, left_out=tuple(bad))
