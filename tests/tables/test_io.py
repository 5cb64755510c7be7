"""Writers are atomic and stamp a footer; readers hold files to the declared schema."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cavbench.tables import (
    SCHEMAS,
    Table,
    TableError,
    TableWriter,
    build_table,
    content_sha256,
    read_footer,
    read_table,
    schema_for,
    write_table,
)
from cavbench.tables._io import verify_table


def _verdicts(n: int = 3) -> pa.Table:
    return build_table(
        Table.VERDICTS,
        {
            "episode_id": [f"e{i}" for i in range(n)],
            "scenario_id": ["HP-01"] * n,
            "profile": ["direct"] * n,
            "dimension": ["intent_grounding"] * n,
            "status": ["pass"] * n,
        },
    )


def test_every_table_has_a_schema_keyed_by_episode() -> None:
    assert set(SCHEMAS) == set(Table)
    for schema in SCHEMAS.values():
        assert schema.names[:2] == ["episode_id", "scenario_id"]


def test_write_is_atomic_and_stamps_the_footer(tmp_path: Path) -> None:
    written = write_table(tmp_path, Table.VERDICTS, _verdicts(), {"config_hash": "sha256:x"})
    assert written.path == tmp_path / "verdicts.parquet"
    assert written.rows == 3
    assert [p.name for p in tmp_path.iterdir()] == ["verdicts.parquet"]
    facts = read_footer(written.path)
    assert facts["table"] == "verdicts"
    assert facts["config_hash"] == "sha256:x"
    assert facts["content_sha256"] == written.sha256
    assert pq.ParquetFile(written.path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert verify_table(written.path, Table.VERDICTS, 3, written.sha256) is None


def test_a_failed_write_leaves_the_previous_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write_table(tmp_path, Table.VERDICTS, _verdicts(2), {})

    def broken(*_: object, **__: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        write_table(tmp_path, Table.VERDICTS, _verdicts(5), {})
    assert [p.name for p in tmp_path.iterdir()] == ["verdicts.parquet"]
    assert read_table(first.path, Table.VERDICTS).num_rows == 2


def test_a_half_written_file_is_never_read(tmp_path: Path) -> None:
    written = write_table(tmp_path, Table.VERDICTS, _verdicts(), {})
    data = written.path.read_bytes()
    written.path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TableError, match=r"verdicts\.parquet"):
        read_table(written.path, Table.VERDICTS)
    problem = verify_table(written.path, Table.VERDICTS, 3, written.sha256)
    assert problem is not None
    assert "not a readable Parquet file" in problem


def test_the_reader_checks_table_version_and_columns(tmp_path: Path) -> None:
    written = write_table(tmp_path, Table.VERDICTS, _verdicts(), {})
    with pytest.raises(TableError, match="expected 'episodes'"):
        read_table(written.path, Table.EPISODES)
    table = pq.read_table(written.path)
    meta = json.loads(table.schema.metadata[b"cavbench"])
    old = table.replace_schema_metadata({b"cavbench": json.dumps({**meta, "schema_version": "0"})})
    pq.write_table(old, tmp_path / "old.parquet")
    with pytest.raises(TableError, match="schema version '0'"):
        read_table(tmp_path / "old.parquet", Table.VERDICTS)
    dropped = table.drop_columns(["status"])
    pq.write_table(dropped, tmp_path / "dropped.parquet")
    with pytest.raises(TableError, match=r"missing \['status'\]"):
        read_table(tmp_path / "dropped.parquet", Table.VERDICTS)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "foreign.parquet")
    with pytest.raises(TableError, match="no cavbench footer"):
        read_table(tmp_path / "foreign.parquet", Table.VERDICTS)


def test_build_table_names_the_bad_column() -> None:
    with pytest.raises(TableError, match=r"missing \['status'\]"):
        build_table(
            Table.VERDICTS, {"episode_id": [], "scenario_id": [], "profile": [], "dimension": []}
        )
    with pytest.raises(TableError, match="'profile' is declared non-null"):
        build_table(
            Table.VERDICTS,
            {
                "episode_id": ["e"],
                "scenario_id": ["s"],
                "profile": [None],
                "dimension": ["d"],
                "status": ["pass"],
            },
        )


def test_factor_columns_follow_the_declared_episode_columns() -> None:
    schema = schema_for(Table.EPISODES, ["model", "temperature"])
    assert schema.names[-2:] == ["model", "temperature"]
    assert schema.names[:-2] == SCHEMAS[Table.EPISODES].names
    assert schema_for(Table.EVENTS, ["model"]) == SCHEMAS[Table.EVENTS]


def test_a_table_written_in_row_groups_equals_one_written_whole(tmp_path: Path) -> None:
    (tmp_path / "whole").mkdir()
    whole = write_table(tmp_path / "whole", Table.VERDICTS, _verdicts(7), {"cell": "c"})
    (tmp_path / "parts").mkdir()
    writer = TableWriter(tmp_path / "parts", Table.VERDICTS, {"cell": "c"})
    data = _verdicts(7)
    for start, length in ((0, 3), (3, 0), (3, 4)):
        writer.write(data.slice(start, length))
    assert not (tmp_path / "parts" / "verdicts.parquet").exists()  # nothing final before close
    parts = writer.close()
    assert (parts.rows, parts.sha256) == (whole.rows, whole.sha256)
    assert pq.ParquetFile(parts.path).metadata.num_row_groups == 3
    assert read_footer(parts.path) == read_footer(whole.path)
    assert read_table(parts.path, Table.VERDICTS).equals(read_table(whole.path, Table.VERDICTS))
    assert verify_table(parts.path, Table.VERDICTS, 7, whole.sha256) is None
    assert [p.name for p in (tmp_path / "parts").iterdir()] == ["verdicts.parquet"]


def test_an_aborted_row_group_writer_leaves_the_previous_file(tmp_path: Path) -> None:
    first = write_table(tmp_path, Table.VERDICTS, _verdicts(2), {})
    writer = TableWriter(tmp_path, Table.VERDICTS, {})
    writer.write(_verdicts(5))
    writer.abort()
    assert [p.name for p in tmp_path.iterdir()] == ["verdicts.parquet"]
    assert verify_table(first.path, Table.VERDICTS, 2, first.sha256) is None


def test_an_empty_row_group_writer_gives_the_empty_tables_checksum(tmp_path: Path) -> None:
    empty = _verdicts(0)
    writer = TableWriter(tmp_path, Table.VERDICTS, {})
    written = writer.close()
    assert written.rows == 0
    assert written.sha256 == content_sha256(empty)
