"""The audit's Parquet tables: one declared Arrow schema each, written atomically (zstd).

Tables and their rows:

- ``audit_checks``: target × oracle variant × check (status, reason, run counts, usable
  tasks: on how many tasks, or INV-3 pairs, at least one run applied);
- ``audit_detection``: target × oracle variant (detected, by which checks, expected ones,
  equivalence with the correct oracle);
- ``audit_classes``: target × defect class (both denominators, detectors, load-bearing);
- ``audit_load_bearing``: each (target, check) that alone detects a class or a variant;
- ``correction_episodes`` / ``correction_tasks`` / ``correction_summary``: replay correction;
- ``sensitivity`` / ``sensitivity_headline``: oracle sensitivity of the ``v1`` evaluator.

Every file's schema metadata names the table and the schema version.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from cavbench.audit._protocol import AuditError

AUDIT_SCHEMA_VERSION: Final = "2"  # 2: audit_checks gained usable_tasks, tasks
METADATA_KEY: Final = b"cavbench.audit"

_S, _B, _I, _F = pa.string(), pa.bool_(), pa.int32(), pa.float64()
_LIST = pa.list_(pa.string())


class AuditTable(StrEnum):
    AUDIT_CHECKS = "audit_checks"
    AUDIT_DETECTION = "audit_detection"
    AUDIT_CLASSES = "audit_classes"
    AUDIT_LOAD_BEARING = "audit_load_bearing"
    CORRECTION_EPISODES = "correction_episodes"
    CORRECTION_TASKS = "correction_tasks"
    CORRECTION_SUMMARY = "correction_summary"
    SENSITIVITY = "sensitivity"
    SENSITIVITY_HEADLINE = "sensitivity_headline"

    @property
    def filename(self) -> str:
        return f"{self.value}.parquet"


def _f(name: str, kind: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


_FIELDS: Final[Mapping[AuditTable, tuple[pa.Field, ...]]] = {
    AuditTable.AUDIT_CHECKS: (
        _f("target", _S), _f("variant_id", _S), _f("kind", _S), _f("defect_class", _S, True),
        _f("check", _S), _f("covers", _S), _f("status", _S), _f("expected_to_fail", _B),
        _f("reason", _S), _f("runs", _I), _f("failed_runs", _I), _f("not_applicable_runs", _I),
        _f("usable_tasks", _I), _f("tasks", _I),
    ),
    AuditTable.AUDIT_DETECTION: (
        _f("target", _S), _f("variant_id", _S), _f("kind", _S), _f("defect_class", _S, True),
        _f("description", _S), _f("detected", _B), _f("detectors", _LIST), _f("expected", _LIST),
        _f("missing_expected", _LIST), _f("equivalent_to_correct", _B), _f("behaviour", _S),
        _f("inv4_status", _S),
    ),
    AuditTable.AUDIT_CLASSES: (
        _f("target", _S), _f("defect_class", _S), _f("slug", _S), _f("variants", _I),
        _f("distinct", _I), _f("equivalent", _I), _f("detected", _I),
        _f("detected_distinct", _I), _f("detectors", _LIST), _f("expected", _LIST),
        _f("missing_expected", _LIST), _f("load_bearing", _LIST),
        _f("undetected_variants", _LIST), _f("inv4_not_applicable", _LIST),
    ),
    AuditTable.AUDIT_LOAD_BEARING: (
        _f("target", _S), _f("level", _S), _f("defect_class", _S), _f("variant_id", _S, True),
        _f("check", _S),
    ),
    AuditTable.CORRECTION_EPISODES: (
        _f("record_id", _S), _f("target", _S), _f("task", _S), _f("agent", _S),
        _f("repetition", _I), _f("actions", _I), _f("passed_before", _B), _f("passed_after", _B),
        _f("components_before", _S), _f("components_after", _S), _f("changed", _B),
    ),
    AuditTable.CORRECTION_TASKS: (
        _f("task", _S), _f("agent", _S), _f("measure", _S), _f("episodes", _I),
        _f("passed_before", _I), _f("passed_after", _I),
    ),
    AuditTable.CORRECTION_SUMMARY: (
        _f("agent", _S), _f("measure", _S), _f("episodes", _I), _f("tasks", _I),
        _f("passed_before", _I), _f("passed_after", _I),
        _f("rate_before", _F), _f("before_low", _F), _f("before_high", _F),
        _f("rate_after", _F), _f("after_low", _F), _f("after_high", _F),
        _f("delta", _F), _f("delta_low", _F), _f("delta_high", _F),
        _f("level", _F), _f("resamples", _I), _f("seed", _I),
    ),
    AuditTable.SENSITIVITY: (
        _f("scenario_id", _S), _f("family", _S), _f("temporal_in_focus", _B),
        _f("invalidity", _S), _f("applicable", _B), _f("note", _S),
        _f("caught_v1", _B, True), _f("right_reason_v1", _B, True), _f("codes_v1", _S, True),
        _f("caught_v1_strict", _B, True), _f("right_reason_v1_strict", _B, True),
        _f("codes_v1_strict", _S, True),
    ),
    AuditTable.SENSITIVITY_HEADLINE: (
        _f("profile", _S), _f("rule", _S), _f("n", _I), _f("outcome", _I),
        _f("policy_aware", _I), _f("commit_valid", _I), _f("verdicts_changed", _I),
        _f("stale_flagged", _I),
    ),
}  # fmt: skip


def schema_of(table: AuditTable) -> pa.Schema:
    """The declared schema of ``table``, with its name and version in the metadata."""
    meta = json.dumps({"table": table.value, "schema_version": AUDIT_SCHEMA_VERSION})
    return pa.schema(list(_FIELDS[table]), metadata={METADATA_KEY: meta.encode()})


def write_rows(table: AuditTable, rows: Sequence[Mapping[str, Any]], out_dir: Path) -> Path:
    """Validate ``rows`` against the schema and write ``<out_dir>/<table>.parquet`` atomically."""
    schema = schema_of(table)
    names = set(schema.names)
    for n, row in enumerate(rows):
        if set(row) != names:
            raise AuditError(
                f"{table.filename}: row {n} has columns {sorted(set(row) ^ names)} "
                "that differ from the declared schema (fix: the writer and schema disagree)"
            )
    try:
        data = pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise AuditError(f"{table.filename}: a value does not fit the schema: {exc}") from exc
    for field, column in zip(schema, data.columns, strict=True):
        if not field.nullable and column.null_count:
            raise AuditError(f"{table.filename}: column {field.name!r} holds nulls")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / table.filename
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    pq.write_table(data, tmp, compression="zstd")
    os.replace(tmp, path)
    return path


def read_rows(path: Path, table: AuditTable) -> list[dict[str, Any]]:
    """Read a table back, checking it carries ``table``'s declared schema."""
    data = pq.read_table(path)
    if not data.schema.equals(schema_of(table), check_metadata=False):
        raise AuditError(f"{path}: schema differs from the declared {table.value} schema")
    rows: list[dict[str, Any]] = data.to_pylist()
    return rows


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
