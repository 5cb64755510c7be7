"""The audit tables' declared schemas."""

from __future__ import annotations

from pathlib import Path

import pytest

from cavbench.audit import AuditError
from cavbench.audit._tables import AuditTable, read_rows, schema_of, write_rows


def test_every_table_declares_a_versioned_schema() -> None:
    for table in AuditTable:
        schema = schema_of(table)
        assert schema.names
        assert b"cavbench.audit" in (schema.metadata or {})


def test_rows_round_trip(tmp_path: Path) -> None:
    row = {
        "target": "t",
        "level": "class",
        "defect_class": "D3",
        "variant_id": None,
        "check": "INV-3",
    }
    path = write_rows(AuditTable.AUDIT_LOAD_BEARING, [row], tmp_path)
    assert read_rows(path, AuditTable.AUDIT_LOAD_BEARING) == [row]


def test_wrong_columns_and_nulls_are_refused(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match="differ from the declared schema"):
        write_rows(AuditTable.AUDIT_LOAD_BEARING, [{"target": "t"}], tmp_path)
    row = {"target": None, "level": "class", "defect_class": "D3", "variant_id": None, "check": "x"}
    with pytest.raises(AuditError, match="holds nulls"):
        write_rows(AuditTable.AUDIT_LOAD_BEARING, [row], tmp_path)
    assert not list(tmp_path.glob("*.parquet"))


def test_reading_with_the_wrong_schema_is_refused(tmp_path: Path) -> None:
    row = {"target": "t", "level": "class", "defect_class": "D3", "variant_id": None, "check": "x"}
    path = write_rows(AuditTable.AUDIT_LOAD_BEARING, [row], tmp_path)
    with pytest.raises(AuditError, match="schema differs"):
        read_rows(path, AuditTable.AUDIT_CHECKS)
