"""Write tables atomically and read them back against their declared schema.

A file is written as `<name>.tmp-<pid>` and renamed into place, so a reader sees either
the previous complete file or the new complete file, never a half-written one. The footer
carries the key facts of the manifest under the `cavbench` key, so a lone file still says
what made it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cavbench.tables._checksum import (
    ContentDigest,
    content_sha256,
    file_batches,
    file_content_sha256,
    type_tag,
)
from cavbench.tables._errors import TableError
from cavbench.tables._schema import SCHEMA_VERSION, Table, collected_schema, schema_for

FOOTER_KEY = b"cavbench"
COMPRESSION = "zstd"
TMP_MARKER = ".tmp-"


@dataclass(frozen=True, slots=True)
class WrittenTable:
    """What a writer put on disk: the file, its row count and its logical checksum."""

    table: Table
    path: Path
    rows: int
    sha256: str


def tmp_path(path: Path) -> Path:
    """The private temporary name this process writes `path` under before renaming it."""
    return path.with_name(f"{path.name}{TMP_MARKER}{os.getpid()}")


def replace_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file and a rename (for small files)."""
    tmp = tmp_path(path)
    with tmp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def build_table(
    table: Table, columns: Mapping[str, Sequence[Any]], factors: Sequence[str] = ()
) -> pa.Table:
    """An Arrow table of `table`'s declared schema from column lists (all columns required)."""
    schema = schema_for(table, factors)
    missing = [name for name in schema.names if name not in columns]
    extra = [name for name in columns if schema.get_field_index(name) < 0]
    if missing or extra:
        raise TableError(
            table.filename,
            f"columns do not match the declared schema: missing {missing}, extra {extra}",
        )
    try:
        data = pa.Table.from_pydict({name: columns[name] for name in schema.names}, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise TableError(
            table.filename, f"a value does not fit the declared schema: {exc}"
        ) from exc
    _check_not_null(table.filename, data)
    return data


def _check_not_null(where: str | Path, data: pa.Table) -> None:
    for field, column in zip(data.schema, data.columns, strict=True):
        if not field.nullable and column.null_count:
            raise TableError(where, f"column {field.name!r} is declared non-null but holds nulls")


def write_table(
    directory: Path, table: Table, data: pa.Table, footer: Mapping[str, Any]
) -> WrittenTable:
    """Write `data` as `directory/<table>.parquet` (zstd), atomically, footer attached."""
    path = directory / table.filename
    digest = content_sha256(data)
    facts = {
        **footer,
        "table": table.value,
        "schema_version": SCHEMA_VERSION,
        "rows": data.num_rows,
        "content_sha256": digest,
    }
    stamped = data.replace_schema_metadata({FOOTER_KEY: json.dumps(facts, sort_keys=True)})
    tmp = tmp_path(path)
    try:
        pq.write_table(stamped, tmp, compression=COMPRESSION)
        with tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return WrittenTable(table=table, path=path, rows=data.num_rows, sha256=digest)


class TableWriter:
    """Write `directory/<table>.parquet` in row groups as the rows come, atomically.

    Rows go to the temporary file as they are fed, and the logical checksum is computed as
    they go (`ContentDigest`), so memory does not grow with the table. `close` adds the
    footer (which needs the final row count and checksum) and renames the file into place;
    `abort` removes the temporary file. Same footer facts and checksum as `write_table`."""

    def __init__(
        self,
        directory: Path,
        table: Table,
        footer: Mapping[str, Any],
        factors: Sequence[str] = (),
    ) -> None:
        self.table = table
        self.path = directory / table.filename
        self.schema = schema_for(table, factors)
        self._footer = dict(footer)
        self._tmp = tmp_path(self.path)
        self._digest = ContentDigest(self.schema, spool_dir=directory)
        # No stored Arrow schema: its metadata is fixed at open, before the footer facts are
        # known, and would hide them. Readers cast to the declared schema anyway.
        self._writer = pq.ParquetWriter(
            self._tmp, self.schema, compression=COMPRESSION, store_schema=False
        )

    def write(self, data: pa.Table) -> None:
        """Append rows (a table of the declared schema, e.g. from `build_table`)."""
        self._writer.write_table(data)
        self._digest.update(data)

    def close(self) -> WrittenTable:
        digest = self._digest.hexdigest()
        facts = {
            **self._footer,
            "table": self.table.value,
            "schema_version": SCHEMA_VERSION,
            "rows": self._digest.rows,
            "content_sha256": digest,
        }
        # Parquet key-value metadata: written in the file's footer at close, and read back
        # as the Arrow schema's metadata (as `write_table`'s footer is).
        self._writer.add_key_value_metadata({FOOTER_KEY: json.dumps(facts, sort_keys=True)})
        try:
            self._writer.close()
            with self._tmp.open("rb+") as handle:
                os.fsync(handle.fileno())
            os.replace(self._tmp, self.path)
        finally:
            self._tmp.unlink(missing_ok=True)
        return WrittenTable(table=self.table, path=self.path, rows=self._digest.rows, sha256=digest)

    def abort(self) -> None:
        """Drop what was written (the previous file, if any, stays in place)."""
        self._digest.close()
        try:
            self._writer.close()
        except (OSError, pa.ArrowException):
            pass  # e.g. a full disk: the temporary file goes anyway
        finally:
            self._tmp.unlink(missing_ok=True)


def _raw_footer(path: Path) -> bytes | None:
    """The footer facts, from the Parquet key-value metadata (where `TableWriter` puts them
    at close) or, failing that, the stored Arrow schema's metadata."""
    metadata = pq.read_metadata(path).metadata or {}
    raw = metadata.get(FOOTER_KEY)
    if raw is None:
        raw = (pq.read_schema(path).metadata or {}).get(FOOTER_KEY)
    return raw


def read_footer(path: Path) -> dict[str, Any]:
    """The `cavbench` facts stored in a table file's footer."""
    try:
        raw = _raw_footer(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TableError(
            path, f"not a readable Parquet file ({exc})", "re-run the sweep to rewrite the cell"
        ) from exc
    if raw is None:
        raise TableError(path, "no cavbench footer: not a table written by cavbench")
    facts: dict[str, Any] = json.loads(raw)
    return facts


def _expected_schema(path: Path, table: Table, collected: bool) -> pa.Schema:
    facts = read_footer(path)
    if facts.get("table") != table.value:
        raise TableError(path, f"holds table {facts.get('table')!r}, expected {table.value!r}")
    version = facts.get("schema_version")
    if version != SCHEMA_VERSION:
        raise TableError(
            path,
            f"written with table schema version {version!r}; this cavbench reads {SCHEMA_VERSION!r}",
            "read it with the cavbench version named in its manifest, or re-run the sweep",
        )
    factors = [str(name) for name in facts.get("factors", [])]
    return collected_schema(table, factors) if collected else schema_for(table, factors)


def _check_schema(path: Path, actual: pa.Schema, expected: pa.Schema) -> None:
    if actual.names != expected.names:
        missing = [n for n in expected.names if n not in actual.names]
        extra = [n for n in actual.names if n not in expected.names]
        raise TableError(
            path,
            f"columns differ from the declared schema: missing {missing}, unexpected {extra}",
            "re-run the sweep with this cavbench version",
        )
    for have, want in zip(actual, expected, strict=True):
        if type_tag(have.type) != type_tag(want.type):
            raise TableError(
                path, f"column {want.name!r} has type {have.type}, the declared type is {want.type}"
            )


def check_table_file(path: Path, table: Table, *, collected: bool = False) -> pa.Schema:
    """Check a file's footer and column names/types against the declared schema, reading
    no data. Returns the declared schema it must be read with."""
    expected = _expected_schema(path, table, collected)
    _check_schema(path, pq.read_schema(path), expected)
    return expected


def read_table(path: Path, table: Table, *, collected: bool = False) -> pa.Table:
    """Read one table file and check it against the declared schema.

    Returns the table cast to the declared types (so list children and string widths are
    the declared ones), its footer kept as schema metadata.
    """
    expected = check_table_file(path, table, collected=collected)
    try:
        data = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TableError(path, f"cannot read ({exc})", "re-run the sweep to rewrite it") from exc
    try:
        cast = data.cast(expected.with_metadata({FOOTER_KEY: _raw_footer(path) or b""}))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise TableError(path, f"a column has the wrong type: {exc}") from exc
    _check_not_null(path, cast)
    return cast


def read_batches(path: Path, table: Table) -> Iterator[pa.Table]:
    """`read_table` in batches of at most `BATCH_ROWS` rows (for files too large to hold)."""
    expected = check_table_file(path, table)
    stamped = expected.with_metadata({FOOTER_KEY: _raw_footer(path) or b""})
    try:
        for batch in file_batches(pq.ParquetFile(path)):
            cast = pa.Table.from_batches([batch]).cast(stamped)
            _check_not_null(path, cast)
            yield cast
    except (OSError, pa.ArrowInvalid) as exc:
        raise TableError(path, f"cannot read ({exc})", "re-run the sweep to rewrite it") from exc


def verify_table(
    path: Path, table: Table, rows: int, sha256: str, *, collected: bool = False
) -> str | None:
    """Why the file at `path` does not hold exactly the recorded content, or None if it does."""
    if not path.is_file():
        return f"{path.name} is missing"
    try:
        # A file can be large: check it in batches, never whole in memory. (Non-null
        # columns need no check here: the checksum covers which slots are null.)
        check_table_file(path, table, collected=collected)
        n_rows = pq.ParquetFile(path).metadata.num_rows
        actual = file_content_sha256(path) if n_rows == rows else ""
    except TableError as exc:
        return str(exc)
    except (OSError, pa.ArrowException) as exc:  # truncated or overwritten bytes
        return f"{path.name} is not a readable Parquet file ({exc})"
    if n_rows != rows:
        return f"{path.name} has {n_rows} rows, the manifest says {rows}"
    if actual != sha256:
        return f"{path.name} content checksum {actual} differs from the manifest's {sha256}"
    return None
