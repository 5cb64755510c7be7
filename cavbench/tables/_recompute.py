"""`recompute`: re-score every episode of a sweep from its recorded tables, offline.

Each episode's `EpisodeTrace` is rebuilt from `episodes`, `events`, `ledger` and `states`
(no adapter runs, no environment is built), scored again with `evaluate(scenario, trace,
rule)` against the pack the sweep used (its digest must match), and compared with what the
sweep recorded in `episodes`, `verdicts` and `findings`. On an honest sweep nothing differs;
with another `rule` the differences are what that rule changes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from cavbench.evaluation import ScoringRule, evaluate
from cavbench.scenarios import ScenarioPack, load_pack
from cavbench.tables._collect import COLLECTED_DIR, cell_dirs, verify_cell
from cavbench.tables._errors import SweepError
from cavbench.tables._io import check_table_file, read_table
from cavbench.tables._manifest import (
    MANIFEST_NAME,
    PackRecord,
    read_cell_manifest,
    read_sweep_manifest,
)
from cavbench.tables._rows import dimension_statuses, finding_fields, rebuild_trace, verdict_fields
from cavbench.tables._schema import CELL_COLUMN, SCHEMAS, Table

_ROWS = dict[str, list[dict[str, Any]]]
"""episode_id -> that episode's rows of one table."""


_SCORED: tuple[Table, ...] = tuple(t for t in Table if t not in (Table.MODEL_CALLS, Table.MESSAGES))
"""The tables a verdict is rebuilt and compared from (never the model's calls: recompute
re-scores, it does not re-ask)."""

_FINDING_KEYS = frozenset(SCHEMAS[Table.FINDINGS].names) - {
    "episode_id",
    "scenario_id",
    "profile",
    "finding_index",
}
"""The `findings` columns that come from the verdict (and so are compared)."""


@dataclass(frozen=True, slots=True)
class VerdictDifference:
    """One recorded value that re-scoring did not reproduce."""

    cell: str
    episode_id: str
    scenario_id: str
    field: str
    """An `episodes` column, `dimension:<name>`, or `findings`."""
    recorded: str
    recomputed: str


@dataclass(frozen=True, slots=True)
class RecomputeReport:
    """The outcome of re-scoring a sweep."""

    n_cells: int
    n_episodes: int
    rule: str | None
    """The rule everything was re-scored under; None = each cell's recorded rule."""
    differences: tuple[VerdictDifference, ...]

    @property
    def n_differing_episodes(self) -> int:
        return len({(d.cell, d.episode_id) for d in self.differences})

    @property
    def ok(self) -> bool:
        return not self.differences


@dataclass(frozen=True, slots=True)
class _CellTables:
    cell: str
    pack: PackRecord
    rule: str
    rows: Mapping[Table, _ROWS]


def _group(rows: Sequence[dict[str, Any]]) -> _ROWS:
    grouped: _ROWS = defaultdict(list)
    for row in rows:
        grouped[str(row["episode_id"])].append(row)
    return grouped


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _load_pack(pack: PackRecord, where: str, cache: dict[str, ScenarioPack]) -> ScenarioPack:
    if pack.ref not in cache:
        try:
            loaded = load_pack(pack.ref)
        except Exception as exc:
            raise SweepError(
                f"{where}: cannot load the pack {pack.ref!r} the sweep ran ({exc}) "
                "(fix: run recompute from the folder the sweep ran in, or install that pack)"
            ) from exc
        cache[pack.ref] = loaded
    loaded = cache[pack.ref]
    if loaded.digest != pack.digest:
        raise SweepError(
            f"{where}: pack {pack.ref!r} has digest {loaded.digest}, but the sweep ran "
            f"{pack.digest} (fix: use the pack version the sweep used, {pack.id} {pack.version})"
        )
    return loaded


def _compare(
    group: _CellTables, rule: ScoringRule | None, cache: dict[str, ScenarioPack]
) -> tuple[int, list[VerdictDifference]]:
    pack = _load_pack(group.pack, group.cell, cache)
    chosen = rule if rule is not None else ScoringRule(group.rule)
    differences: list[VerdictDifference] = []
    episodes = group.rows[Table.EPISODES]
    for episode_id, (episode,) in episodes.items():
        try:
            scenario = pack.get(str(episode["scenario_id"]))
        except KeyError:
            raise SweepError(
                f"{group.cell}: episode {episode_id} ran scenario {episode['scenario_id']!r}, "
                f"which pack {pack.pack_id} does not hold"
            ) from None
        trace = rebuild_trace(
            episode,
            group.rows[Table.EVENTS].get(episode_id, []),
            group.rows[Table.LEDGER].get(episode_id, []),
            group.rows[Table.STATES].get(episode_id, []),
        )
        verdict = evaluate(scenario, trace, chosen)
        recorded_dims = {
            str(r["dimension"]): str(r["status"])
            for r in group.rows[Table.VERDICTS].get(episode_id, [])
        }
        recorded_findings = [
            {k: v for k, v in row.items() if k in _FINDING_KEYS}
            for row in sorted(
                group.rows[Table.FINDINGS].get(episode_id, []),
                key=lambda r: int(r["finding_index"]),
            )
        ]
        pairs: list[tuple[str, Any, Any]] = [
            (name, episode[name], value) for name, value in verdict_fields(verdict).items()
        ]
        pairs += [
            (f"dimension:{dimension}", recorded_dims.get(dimension), status)
            for dimension, status in dimension_statuses(verdict)
        ]
        pairs.append(("findings", recorded_findings, [finding_fields(f) for f in verdict.findings]))
        differences.extend(
            VerdictDifference(
                cell=group.cell,
                episode_id=episode_id,
                scenario_id=scenario.id,
                field=name,
                recorded=_text(recorded),
                recomputed=_text(recomputed),
            )
            for name, recorded, recomputed in pairs
            if recorded != recomputed
        )
    return len(episodes), differences


def _cells_from_folders(sweep_dir: Path, allow_incomplete: bool) -> Iterator[_CellTables]:
    directories = cell_dirs(sweep_dir)
    bad = [(d, verify_cell(d)) for d in directories]
    bad = [(d, p) for d, p in bad if p]
    if bad and not allow_incomplete:
        listed = "; ".join(f"{d.relative_to(sweep_dir).as_posix()}: {p[0]}" for d, p in bad[:5])
        raise SweepError(
            f"{sweep_dir}: {len(bad)} cell(s) are not complete ({listed}) (fix: run the same "
            "sweep command again to finish them, or pass --allow-incomplete to skip them)"
        )
    skip = {d for d, _ in bad}
    for directory in directories:
        if directory in skip:
            continue
        manifest = read_cell_manifest(directory)
        if manifest.pack is None:
            continue
        rows = {
            table: _group(
                read_table(directory / manifest.tables[table.value].file, table).to_pylist()
            )
            for table in _SCORED
        }
        yield _CellTables(manifest.cell, manifest.pack, manifest.scoring_rule, rows)


def _cells_from_collected(collected: Path) -> Iterator[_CellTables]:
    manifest = read_sweep_manifest(collected)
    paths = {table: collected / manifest.tables[table.value].file for table in _SCORED}
    for table, path in paths.items():
        check_table_file(path, table, collected=True)
    for summary in manifest.cells:
        # Each cell is one row group of each merged file, so the filter reads only that cell.
        rows = {
            table: _group(
                pq.read_table(path, filters=[(CELL_COLUMN, "=", summary.cell)]).to_pylist()
            )
            for table, path in paths.items()
        }
        yield _CellTables(summary.cell, summary.pack, summary.scoring_rule, rows)


def recompute(
    sweep_dir: Path, *, rule: ScoringRule | str | None = None, allow_incomplete: bool = False
) -> RecomputeReport:
    """Re-score every recorded episode of a sweep (its cells, or its `collected/` folder
    when it has no cells) and report every value that differs from the record."""
    sweep_dir = Path(sweep_dir)
    chosen = ScoringRule(rule) if rule is not None else None
    if not sweep_dir.is_dir():
        raise SweepError(f"{sweep_dir}: no such sweep folder")
    groups: Iterator[_CellTables]
    if cell_dirs(sweep_dir):
        groups = _cells_from_folders(sweep_dir, allow_incomplete)
    elif (sweep_dir / MANIFEST_NAME).is_file():
        groups = _cells_from_collected(sweep_dir)
    elif (sweep_dir / COLLECTED_DIR / MANIFEST_NAME).is_file():
        groups = _cells_from_collected(sweep_dir / COLLECTED_DIR)
    else:
        raise SweepError(f"{sweep_dir}: no cells and no collected tables to recompute")
    cache: dict[str, ScenarioPack] = {}
    n_cells = n_episodes = 0
    differences: list[VerdictDifference] = []
    for group in groups:
        count, found = _compare(group, chosen, cache)
        n_cells += 1
        n_episodes += count
        differences.extend(found)
    if n_cells == 0:
        raise SweepError(f"{sweep_dir}: nothing to recompute (no complete cell)")
    return RecomputeReport(
        n_cells=n_cells,
        n_episodes=n_episodes,
        rule=chosen.value if chosen is not None else None,
        differences=tuple(differences),
    )
