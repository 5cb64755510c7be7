"""A checksum of a table's logical content, independent of how the bytes were laid out.

Two tables with the same column names, types and values, row by row, get the same digest,
however they were chunked, compressed or read back. The digest covers, for each column in
order: its name, its type, which rows are null, and the values (null slots count as empty).
Arrow's own buffers cannot be hashed directly: a Parquet round trip renames list children
and may leave arbitrary bytes under null slots.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cavbench.errors import CavBenchError

BATCH_ROWS = 65_536
"""Rows read at a time when a table file is streamed."""


def _put(digest: Any, blob: bytes | memoryview) -> None:
    """Feed one length-prefixed blob, so that adjacent blobs cannot run into each other."""
    view = memoryview(blob)
    digest.update(view.nbytes.to_bytes(8, "little"))
    digest.update(view)


def type_tag(kind: pa.DataType) -> str:
    """A type's name with string and list widths and list child names left out."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{type_tag(kind.value_type)}>"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string"
    return str(kind)


def _blobs(array: pa.Array) -> Iterator[bytes | memoryview]:
    """The byte streams hashed for one array, in order. Their number and order depend only
    on the type, and each stream of a concatenation is the concatenation of the parts'
    streams: that is what lets `ContentDigest` hash a table fed in row groups."""
    kind = array.type
    valid = pc.is_valid(array).to_numpy(zero_copy_only=False).astype(np.uint8)
    yield valid.tobytes()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        lengths = pc.list_value_length(array).fill_null(0).cast(pa.int64())
        yield lengths.to_numpy(zero_copy_only=False).tobytes()
        yield from _blobs(array.flatten())
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        filled = array.fill_null("").cast(pa.large_string())
        offsets = np.frombuffer(filled.buffers()[1], dtype=np.int64)
        offsets = offsets[filled.offset : filled.offset + len(filled) + 1]
        yield np.diff(offsets).astype(np.int64).tobytes()
        data = filled.buffers()[2]
        if len(filled) and data is not None:
            yield memoryview(data)[int(offsets[0]) : int(offsets[-1])]
        else:
            yield b""
    elif pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        zero = pa.scalar(False if pa.types.is_boolean(kind) else 0, type=kind)
        yield array.fill_null(zero).to_numpy(zero_copy_only=False).tobytes()
    else:
        raise CavBenchError(f"content_sha256: column type {kind} is not supported")


def _digest(
    num_rows: int, num_columns: int, columns: Iterable[tuple[pa.Field, pa.ChunkedArray]]
) -> str:
    digest = hashlib.sha256()
    _put(digest, f"rows={num_rows};columns={num_columns}".encode())
    for field, column in columns:
        _put(digest, f"{field.name}:{type_tag(field.type)}".encode())
        for blob in _blobs(column.combine_chunks()):
            _put(digest, blob)
    return "sha256:" + digest.hexdigest()


_SPOOL_BYTES = 1 << 16
"""Bytes of one stream kept in memory before it spills to a temporary file: a table has a
few hundred streams, so this bounds the digest's memory to tens of MB."""
_READ_BYTES = 1 << 20


class ContentDigest:
    """`content_sha256` of a table fed in parts (row groups), in bounded memory.

    The digest is column by column, each column's streams length-prefixed, so nothing can be
    hashed before the last part: each stream is spooled (memory, then a temporary file) and
    hashed in `hexdigest`. Same value as `content_sha256` of the concatenated parts."""

    def __init__(self, schema: pa.Schema, spool_dir: Path | None = None) -> None:
        self.schema = schema
        # Spilled streams hold about the table's uncompressed size: beside the table they go
        # to the disk that holds the results, not a possibly small /tmp (unlinked at once).
        self._spool_dir = None if spool_dir is None else str(spool_dir)
        self.rows = 0
        self._spools: list[list[IO[bytes]]] = [[] for _ in schema]

    def update(self, data: pa.Table | pa.RecordBatch) -> None:
        """Feed the next rows (columns as in the schema, in order)."""
        self.rows += data.num_rows
        for spools, column in zip(self._spools, data.columns, strict=True):
            array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            for index, blob in enumerate(_blobs(array)):
                if index == len(spools):
                    # closed in hexdigest/close: a spool lives across update calls
                    spools.append(
                        tempfile.SpooledTemporaryFile(  # noqa: SIM115
                            max_size=_SPOOL_BYTES, dir=self._spool_dir
                        )
                    )
                spools[index].write(blob)

    def hexdigest(self) -> str:
        """The `sha256:` digest of everything fed (then the spools are released)."""
        if self.rows == 0:  # no part fed: hash an empty table of the schema
            self.update(self.schema.empty_table())
        digest = hashlib.sha256()
        _put(digest, f"rows={self.rows};columns={len(self.schema)}".encode())
        for field, spools in zip(self.schema, self._spools, strict=True):
            _put(digest, f"{field.name}:{type_tag(field.type)}".encode())
            for spool in spools:
                size = spool.tell()
                digest.update(size.to_bytes(8, "little"))
                spool.seek(0)
                while block := spool.read(_READ_BYTES):
                    digest.update(block)
        self.close()
        return "sha256:" + digest.hexdigest()

    def close(self) -> None:
        for spools in self._spools:
            for spool in spools:
                spool.close()
            spools.clear()


def content_sha256(table: pa.Table) -> str:
    """`sha256:` digest of the table's logical content (schema metadata is ignored)."""
    return _digest(table.num_rows, table.num_columns, zip(table.schema, table.columns, strict=True))


def file_content_sha256(path: Path) -> str:
    """`content_sha256` of a Parquet file's table, read in batches (so a large file is
    never held in memory whole)."""
    parquet = pq.ParquetFile(path)
    digest = ContentDigest(parquet.schema_arrow)
    for batch in file_batches(parquet):
        digest.update(batch)
    return digest.hexdigest()


def file_batches(parquet: pq.ParquetFile) -> Iterator[pa.RecordBatch]:
    """A file's rows in batches of at most `BATCH_ROWS`, one row group at a time and on
    this thread: Arrow's reader threads and read-ahead across row groups each cost tens of
    MB of resident memory (measured: `benchmarks/collect.py`)."""
    for group in range(parquet.num_row_groups):
        yield from parquet.iter_batches(
            batch_size=BATCH_ROWS, row_groups=[group], use_threads=False
        )
