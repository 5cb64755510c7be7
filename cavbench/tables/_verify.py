"""`verify_sweep`: check everything a reader of a sweep is about to trust, before it reads.

`collect` and `recompute` merge or re-score only cells whose manifest says `COMPLETE` and
whose every table matches its recorded checksum; `analyze` and the paper pipeline must not
trust less. This module is the one place that decides whether a sweep folder (its cells,
its `collected/` folder, or a collected folder on its own such as `artifacts/ablation/`) can
be read, and what exactly to read:

- every cell's manifest is read and every table's row count and content checksum checked
  (a flipped value, a swapped, emptied, deleted or truncated table fails here);
- a cell that failed before writing tables, or whose tables have no manifest beside them,
  counts as incomplete instead of silently vanishing from the analysis;
- a `collected/` folder is checked against its own manifest and against the cells present:
  if a cell was added, redone or lost since `collect` ran, it is stale.

Problems raise `SweepError` with the command that fixes them; `allow_incomplete` (the CLI's
`--allow-incomplete`, the same flag for `collect`, `recompute` and `analyze`) leaves the
incomplete cells out and lists them instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from cavbench.tables._collect import (
    COLLECTED_DIR,
    cell_dirs,
    check_cells,
    describe_problems,
)
from cavbench.tables._errors import SweepError, TableError
from cavbench.tables._io import verify_table
from cavbench.tables._manifest import (
    MANIFEST_NAME,
    CellManifest,
    SweepManifest,
    read_sweep_manifest,
)
from cavbench.tables._schema import Table


class SweepLayout(StrEnum):
    """Where a verified sweep's tables are to be read from."""

    COLLECTED = "collected"
    """The merged tables of a `collected/` folder (or of a collected folder given directly)."""
    CELLS = "cells"
    """The cell folders, one set of tables each."""


@dataclass(frozen=True, slots=True)
class VerifiedSweep:
    """A sweep whose every table to be read matched its manifest."""

    root: Path
    layout: SweepLayout
    read_from: Path
    """The collected folder (layout `collected`) or the sweep folder (layout `cells`)."""
    cells: tuple[Path, ...]
    """The verified cell folders (layout `cells`; empty for `collected`)."""
    n_cells: int
    left_out: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(cell, problems) of every cell left out (only with `allow_incomplete`)."""


def verify_collected(folder: Path) -> tuple[SweepManifest, list[str]]:
    """A collected folder's manifest and why its tables do not match it ([] if they do)."""
    manifest = read_sweep_manifest(folder)
    problems: list[str] = []
    for table in Table:
        record = manifest.tables.get(table.value)
        if record is None:
            problems.append(f"the manifest lists no {table.value} table")
            continue
        problem = verify_table(
            folder / record.file, table, record.rows, record.sha256, collected=True
        )
        if problem is not None:
            problems.append(problem)
    return manifest, problems


def _stale(collected: SweepManifest, good: Sequence[tuple[Path, CellManifest]]) -> list[str]:
    """Why `collected/` no longer holds exactly the complete cells present ([] if it does)."""
    merged = {c.cell: {n: r.sha256 for n, r in c.tables.items()} for c in collected.cells}
    present = {m.cell: {n: r.sha256 for n, r in m.tables.items()} for _, m in good}
    reasons = []
    added = sorted(set(present) - set(merged))
    gone = sorted(set(merged) - set(present))
    changed = sorted(c for c in set(present) & set(merged) if present[c] != merged[c])
    for label, cells in (("not collected", added), ("gone", gone), ("redone since", changed)):
        if cells:
            reasons.append(f"{len(cells)} cell(s) {label}: {cells[0]}" + (" …" * (len(cells) > 1)))
    return reasons


def _incomplete_error(sweep_dir: Path, bad: Sequence[tuple[str, Sequence[str]]]) -> SweepError:
    return SweepError(
        f"{sweep_dir}: {len(bad)} cell(s) are not complete or fail their checksums (fix: run "
        "the same sweep command again to redo them, or pass --allow-incomplete to leave them "
        "out):\n" + describe_problems(bad)
    )


def verify_sweep(sweep_dir: Path, *, allow_incomplete: bool = False) -> VerifiedSweep:
    """Check a sweep folder (cells and/or `collected/`, or a collected folder on its own)
    and say what to read. Raises `SweepError` naming each problem and the command to run."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise SweepError(
            f"{sweep_dir}: no such sweep folder (fix: pass the folder the sweep wrote, "
            "<output.root>/<output.name>, e.g. sweeps/ablation)"
        )
    own = sweep_dir / MANIFEST_NAME
    if own.is_file() and not cell_dirs(sweep_dir):
        # A collected folder given directly (e.g. artifacts/ablation): verify it alone.
        try:
            manifest, problems = verify_collected(sweep_dir)
        except TableError as exc:
            raise SweepError(f"{sweep_dir}: not a sweep folder or a collected one ({exc})") from exc
        if problems:
            raise SweepError(
                f"{sweep_dir}: the collected tables do not match their manifest (fix: restore "
                "them, or run `cavbench collect` on the sweep again):\n  " + "\n  ".join(problems)
            )
        return VerifiedSweep(sweep_dir, SweepLayout.COLLECTED, sweep_dir, (), manifest.n_cells)
    good, bad = check_cells(sweep_dir)
    if bad and not allow_incomplete:
        raise _incomplete_error(sweep_dir, bad)
    collected_dir = sweep_dir / COLLECTED_DIR
    if (collected_dir / MANIFEST_NAME).is_file():
        try:
            merged, problems = verify_collected(collected_dir)
        except TableError as exc:
            problems, merged = [str(exc)], None
        stale = problems or (_stale(merged, good) if merged is not None else [])
        if not stale:
            return VerifiedSweep(
                sweep_dir, SweepLayout.COLLECTED, collected_dir, (), len(good), tuple(bad)
            )
        if not allow_incomplete:
            raise SweepError(
                f"{collected_dir}: stale or damaged, it does not hold the complete cells now in "
                f"{sweep_dir} ({'; '.join(stale)}) (fix: run `cavbench collect {sweep_dir}` "
                "again, or pass --allow-incomplete to read the verified cell folders instead)"
            )
    if not good:
        raise SweepError(
            f"{sweep_dir}: no complete cell to read (no cell manifest.json below it) (fix: run "
            "the sweep, `python -m cavbench.sweep -m …`, and point at <output.root>/<output.name>)"
        )
    return VerifiedSweep(
        sweep_dir,
        SweepLayout.CELLS,
        sweep_dir,
        tuple(d for d, _ in good),
        len(good),
        tuple(bad),
    )
