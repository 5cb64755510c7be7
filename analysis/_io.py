"""Reading a sweep's Parquet tables (the one place in `analysis` that touches files).

A sweep directory holds one hive-style folder per job (``SWEEP_DIR/k1=v1/k2=v2/...``) with
``episodes.parquet``, ``verdicts.parquet``, ... and a ``manifest.json``; after
``cavbench collect`` it also holds merged tables under ``SWEEP_DIR/collected/``. The merged
tables are preferred. Otherwise every job's table is read and the ``key=value`` folder names
between the sweep root and the file become columns, except where they duplicate a real column
(the file is the record). A folder holding the tables directly (one job, or a frozen
artifact such as ``artifacts/ablation/``) is read as it is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import polars as pl

from analysis._errors import SweepNotFoundError, TableSchemaError
from analysis._frames import EPISODE_COLUMNS, RECORD_COLUMNS, VERDICT_COLUMNS, require_columns

COLLECTED = "collected"
MANIFEST = "manifest.json"
COMPLETE = "COMPLETE"


class Layout(StrEnum):
    """How a sweep directory holds its tables."""

    COLLECTED = "collected"
    """Merged tables under ``collected/``."""
    JOBS = "jobs"
    """One table per hive-style job folder."""
    SINGLE = "single"
    """The tables sit directly in the directory."""


@dataclass(frozen=True)
class TableSource:
    """One file read, with its SHA-256 (for the analysis manifest)."""

    path: Path
    sha256: str


@dataclass(frozen=True, eq=False)
class SweepTables:
    """The tables the analysis reads, and where they came from."""

    root: Path
    episodes: pl.DataFrame
    verdicts: pl.DataFrame | None
    sources: tuple[TableSource, ...]
    layout: Layout
    factor_columns: tuple[str, ...]
    """The sweep's swept factors (from its manifests, else the columns beyond the schema)."""
    path_columns: tuple[str, ...]
    """Folder keys that are not columns of the files (job layout only)."""
    skipped_cells: tuple[str, ...] = ()
    """Job folders left out because their manifest says they did not complete."""


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def hive_keys(root: Path, path: Path) -> dict[str, str]:
    """``key=value`` folder names between the sweep root and a table file.

    Parsed relative to the root, so a ``=`` higher up in the path is not taken for a key.

    >>> hive_keys(Path("/s"), Path("/s/profile=direct/seed=0/episodes.parquet"))
    {'profile': 'direct', 'seed': '0'}
    """
    keys: dict[str, str] = {}
    for part in path.relative_to(root).parts[:-1]:
        key, sep, value = part.partition("=")
        if sep and key:
            keys[key] = value
    return keys


def _manifest(folder: Path) -> dict[str, object] | None:
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise SweepNotFoundError(
            f"{path}: unreadable manifest ({error}) (fix: re-run the job or `cavbench collect`)"
        ) from error
    return loaded if isinstance(loaded, dict) else None


def _factors(manifests: list[dict[str, object]]) -> set[str]:
    found: set[str] = set()
    for manifest in manifests:
        factors = manifest.get("factors")
        if isinstance(factors, list):
            found |= {str(f) for f in factors}
    return found


@dataclass(frozen=True, eq=False)
class _Read:
    frame: pl.DataFrame
    files: tuple[Path, ...]
    layout: Layout
    manifests: tuple[dict[str, object], ...]
    skipped: tuple[str, ...]


def _read_jobs(
    root: Path, name: str, skip_incomplete: bool, only: frozenset[Path] | None = None
) -> _Read:
    files = sorted(
        p
        for p in root.rglob(f"{name}.parquet")
        if p.is_file()
        and COLLECTED not in p.relative_to(root).parts
        and (only is None or p.parent in only)
    )
    if not files:
        raise SweepNotFoundError(
            f"{root}: no {name}.parquet in it (neither {COLLECTED}/{name}.parquet nor job "
            f"folders) (fix: point at a finished sweep directory, or run `cavbench collect`)"
        )
    kept: list[Path] = []
    manifests: list[dict[str, object]] = []
    skipped: list[str] = []
    for path in files:
        manifest = _manifest(path.parent)
        status = None if manifest is None else manifest.get("status")
        if manifest is not None and status not in (None, COMPLETE):
            cell = str(path.parent.relative_to(root))
            if not skip_incomplete:
                raise SweepNotFoundError(
                    f"{path.parent / MANIFEST}: job status is {status}, not {COMPLETE} (fix: "
                    "finish or re-run the sweep, or pass --allow-incomplete to leave the job out)"
                )
            skipped.append(cell)
            continue
        kept.append(path)
        if manifest is not None:
            manifests.append(manifest)
    if not kept:
        raise SweepNotFoundError(f"{root}: no completed job holds {name}.parquet")
    frames = []
    for path in kept:
        lazy = pl.scan_parquet(path, hive_partitioning=False)
        real = set(lazy.collect_schema().names())
        extra = {k: v for k, v in hive_keys(root, path).items() if k not in real}
        frames.append(
            lazy.with_columns(pl.lit(v, dtype=pl.String).alias(k) for k, v in extra.items())
        )
    frame = pl.concat(frames, how="diagonal_relaxed").collect()
    return _Read(frame, tuple(kept), Layout.JOBS, tuple(manifests), tuple(skipped))


def read_table(
    root: Path,
    name: str,
    *,
    skip_incomplete: bool = False,
    cells: Sequence[Path] | None = None,
) -> _Read:
    """Read table ``name`` of a sweep (collected, single folder, or job folders, in that order).

    Raises :class:`SweepNotFoundError` when the table is nowhere, or when a job folder's
    manifest says it did not complete (unless ``skip_incomplete``). ``cells``, when given,
    are the only job folders read (the ones a caller has verified).
    """
    root = Path(root)
    if not root.is_dir():
        raise SweepNotFoundError(
            f"{root}: not a directory (fix: pass the sweep's output directory, the one holding "
            f"the job folders or {COLLECTED}/)"
        )
    only = None if cells is None else frozenset(Path(c) for c in cells)
    for folder, layout in ((root / COLLECTED, Layout.COLLECTED), (root, Layout.SINGLE)):
        if only is not None:
            break
        path = folder / f"{name}.parquet"
        if path.is_file():
            manifest = _manifest(folder)
            return _Read(
                pl.read_parquet(path), (path,), layout, () if manifest is None else (manifest,), ()
            )
    return _read_jobs(root, name, skip_incomplete, only)


def read_sweep(
    root: Path | str,
    *,
    with_verdicts: bool = True,
    skip_incomplete: bool = False,
    cells: Sequence[Path] | None = None,
) -> SweepTables:
    """Read and check a sweep's `episodes` (and `verdicts`, when present) tables.

    ``cells``: read only these job folders (the ones `cavbench.tables.verify_sweep` passed).

    The table contract's columns are type-checked, and episode ids must be unique.
    """
    root = Path(root)
    read = read_table(root, "episodes", skip_incomplete=skip_incomplete, cells=cells)
    episodes = read.frame
    source = str(read.files[0] if len(read.files) == 1 else root / "**" / "episodes.parquet")
    needed = {
        c: k for c, k in EPISODE_COLUMNS.items() if c not in ("reported_status", "commit_count")
    }
    require_columns(episodes, needed, source=source)
    duplicated = episodes.get_column("episode_id").is_duplicated()
    if duplicated.any():
        first = episodes.filter(duplicated).get_column("episode_id")[0]
        raise TableSchemaError(
            source,
            "episode_id",
            f"{int(duplicated.sum())} rows share an id (e.g. {first!r})",
            "read one copy of the sweep (collected/ or the job folders), not both",
        )
    sources = [TableSource(p, sha256_file(p)) for p in read.files]
    verdicts: pl.DataFrame | None = None
    if with_verdicts:
        try:
            vread = read_table(root, "verdicts", skip_incomplete=skip_incomplete, cells=cells)
        except SweepNotFoundError:
            verdicts = None
        else:
            verdicts = vread.frame
            require_columns(verdicts, VERDICT_COLUMNS, source=str(vread.files[0]))
            sources += [TableSource(p, sha256_file(p)) for p in vread.files]
    in_files: set[str] = set()
    for path in read.files:
        in_files |= set(pl.read_parquet_schema(path))
    declared = _factors(list(read.manifests))
    if declared:
        factors = tuple(c for c in episodes.columns if c in declared)
    else:
        factors = tuple(c for c in episodes.columns if c not in RECORD_COLUMNS and c in in_files)
    return SweepTables(
        root=root,
        episodes=episodes,
        verdicts=verdicts,
        sources=tuple(sources),
        layout=read.layout,
        factor_columns=factors,
        path_columns=tuple(c for c in episodes.columns if c not in in_files),
        skipped_cells=read.skipped,
    )
