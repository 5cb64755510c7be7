"""A checksum of a table's logical content, independent of how the bytes were laid out.

Two tables with the same column names, types and values, row by row, get the same digest,
however they were chunked, compressed or read back. The digest covers, for each column in
order: its name, its type, which rows are null, and the values (null slots count as empty).
Arrow's own buffers cannot be hashed directly: a Parquet round trip renames list children
and may leave arbitrary bytes under null slots.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cavbench.errors import CavBenchError


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


def _hash_array(digest: Any, array: pa.Array) -> None:
    kind = array.type
    valid = pc.is_valid(array).to_numpy(zero_copy_only=False).astype(np.uint8)
    _put(digest, valid.tobytes())
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        lengths = pc.list_value_length(array).fill_null(0).cast(pa.int64())
        _put(digest, lengths.to_numpy(zero_copy_only=False).tobytes())
        _hash_array(digest, array.flatten())
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        filled = array.fill_null("").cast(pa.large_string())
        offsets = np.frombuffer(filled.buffers()[1], dtype=np.int64)
        offsets = offsets[filled.offset : filled.offset + len(filled) + 1]
        _put(digest, np.diff(offsets).astype(np.int64).tobytes())
        data = filled.buffers()[2]
        if len(filled) and data is not None:
            _put(digest, memoryview(data)[int(offsets[0]) : int(offsets[-1])])
        else:
            _put(digest, b"")
    elif pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        zero = pa.scalar(False if pa.types.is_boolean(kind) else 0, type=kind)
        _put(digest, array.fill_null(zero).to_numpy(zero_copy_only=False).tobytes())
    else:
        raise CavBenchError(f"content_sha256: column type {kind} is not supported")


def _digest(
    num_rows: int, num_columns: int, columns: Iterable[tuple[pa.Field, pa.ChunkedArray]]
) -> str:
    digest = hashlib.sha256()
    _put(digest, f"rows={num_rows};columns={num_columns}".encode())
    for field, column in columns:
        _put(digest, f"{field.name}:{type_tag(field.type)}".encode())
        _hash_array(digest, column.combine_chunks())
    return "sha256:" + digest.hexdigest()


def content_sha256(table: pa.Table) -> str:
    """`sha256:` digest of the table's logical content (schema metadata is ignored)."""
    return _digest(table.num_rows, table.num_columns, zip(table.schema, table.columns, strict=True))


def file_content_sha256(path: Path) -> str:
    """`content_sha256` of a Parquet file's table, read one column at a time (so a large
    merged file is never held in memory whole)."""
    parquet = pq.ParquetFile(path)
    schema = parquet.schema_arrow

    def columns() -> Iterator[tuple[pa.Field, pa.ChunkedArray]]:
        for field in schema:
            yield field, parquet.read(columns=[field.name]).column(0)

    return _digest(parquet.metadata.num_rows, len(schema), columns())
