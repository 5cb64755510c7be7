"""Sweep tables: one declared Arrow schema per Parquet table, atomic writers, validating
readers, manifests, and the `collect` and `recompute` steps over a finished sweep.

See `docs/tables.md` for every table and column.
"""

from cavbench.tables._checksum import content_sha256
from cavbench.tables._collect import CollectResult, cell_dirs, collect, verify_cell
from cavbench.tables._errors import SweepError, TableError
from cavbench.tables._io import (
    TableWriter,
    WrittenTable,
    build_table,
    read_footer,
    read_table,
    write_table,
)
from cavbench.tables._manifest import (
    MANIFEST_NAME,
    TRACEBACK_NAME,
    AdapterRecord,
    CellManifest,
    CellStatus,
    CellSummary,
    PackRecord,
    Provenance,
    SeedBlock,
    SweepManifest,
    TableRecord,
    read_cell_manifest,
    read_sweep_manifest,
    write_manifest,
)
from cavbench.tables._recompute import RateChange, RecomputeReport, VerdictDifference, recompute
from cavbench.tables._rows import CellContext, CellTables, EpisodeKey, rebuild_trace
from cavbench.tables._schema import (
    CELL_COLUMN,
    PARTITION_KEYS,
    RESERVED_NAMES,
    SCHEMA_VERSION,
    SCHEMAS,
    Table,
    collected_schema,
    schema_for,
)
from cavbench.tables._verify import SweepLayout, VerifiedSweep, verify_collected, verify_sweep

__all__ = [
    "CELL_COLUMN",
    "MANIFEST_NAME",
    "PARTITION_KEYS",
    "RESERVED_NAMES",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "TRACEBACK_NAME",
    "AdapterRecord",
    "CellContext",
    "CellManifest",
    "CellStatus",
    "CellSummary",
    "CellTables",
    "CollectResult",
    "EpisodeKey",
    "PackRecord",
    "Provenance",
    "RateChange",
    "RecomputeReport",
    "SeedBlock",
    "SweepError",
    "SweepLayout",
    "SweepManifest",
    "Table",
    "TableError",
    "TableRecord",
    "VerdictDifference",
    "VerifiedSweep",
    "TableWriter",
    "WrittenTable",
    "build_table",
    "cell_dirs",
    "collect",
    "collected_schema",
    "content_sha256",
    "read_cell_manifest",
    "read_footer",
    "read_sweep_manifest",
    "read_table",
    "rebuild_trace",
    "recompute",
    "schema_for",
    "verify_cell",
    "verify_collected",
    "verify_sweep",
    "write_manifest",
    "write_table",
]
