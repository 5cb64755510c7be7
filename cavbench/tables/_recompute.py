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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from cavbench.evaluation import ScoringRule, evaluate
from cavbench.scenarios import ScenarioPack, load_pack
from cavbench.tables._collect import COLLECTED_DIR
from cavbench.tables._errors import SweepError
from cavbench.tables._io import read_table
from cavbench.tables._manifest import (
    PackRecord,
    read_cell_manifest,
    read_sweep_manifest,
)
from cavbench.tables._rows import dimension_statuses, finding_fields, rebuild_trace, verdict_fields
from cavbench.tables._schema import CELL_COLUMN, SCHEMAS, Table
from cavbench.tables._verify import SweepLayout, verify_sweep

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
    rates: tuple[RateChange, ...] = ()
    """Every group's OSR, PAOSR and CVSR, recorded and recomputed (in group order)."""

    @property
    def rate_changes(self) -> tuple[RateChange, ...]:
        """The rates that re-scoring moved."""
        return tuple(r for r in self.rates if r.recorded != r.recomputed)

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
    label: str = ""
    """The group the cell's rates are reported under (see `RateChange`)."""


def _group(rows: Sequence[dict[str, Any]]) -> _ROWS:
    grouped: _ROWS = defaultdict(list)
    for row in rows:
        grouped[str(row["episode_id"])].append(row)
    return grouped


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass
class _Packs:
    """Where packs come from: `--pack`, else the copy the sweep stored, else the recorded ref."""

    sweep_root: Path
    override: str | Path | None = None
    loaded: dict[str, ScenarioPack] = field(default_factory=dict)

    def _load(self, ref: str | Path, where: str) -> ScenarioPack:
        key = str(ref)
        if key not in self.loaded:
            try:
                self.loaded[key] = load_pack(ref)
            except Exception as exc:
                raise SweepError(
                    f"{where}: cannot load the pack {key!r} ({exc}) (fix: pass --pack with the "
                    "pack the sweep ran)"
                ) from exc
        return self.loaded[key]

    def get(self, pack: PackRecord, where: str) -> ScenarioPack:
        if self.override is not None:
            loaded = self._load(self.override, where)
            source = f"--pack {self.override}"
        elif pack.stored and (self.sweep_root / pack.stored / "pack.json").is_file():
            loaded = self._load(self.sweep_root / pack.stored, where)
            source = f"the pack stored in the sweep ({pack.stored})"
        else:
            loaded = self._load(pack.ref, where)
            source = f"pack {pack.ref!r}"
        if loaded.digest != pack.digest:
            raise SweepError(
                f"{where}: {source} has digest {loaded.digest}, but the sweep ran {pack.digest} "
                f"(fix: pass --pack with the version the sweep used, {pack.id} {pack.version})"
            )
        return loaded


@dataclass(frozen=True, slots=True)
class RateChange:
    """A headline rate of one group (profile, or adapter for a custom adapter), as recorded
    and as recomputed: what a new scoring rule does to the numbers people quote."""

    group: str
    metric: str
    """OSR, PAOSR or CVSR."""
    n: int
    recorded: int
    recomputed: int

    def line(self) -> str:
        """E.g. `direct CVSR 0.250 → 0.225 (10/40 → 9/40)`."""
        before, after = self.recorded / self.n, self.recomputed / self.n
        return (
            f"{self.group} {self.metric} {before:.3f} → {after:.3f} "
            f"({self.recorded}/{self.n} → {self.recomputed}/{self.n})"
        )


_RATE_FLAGS = (
    ("OSR", "outcome_success"),
    ("PAOSR", "policy_aware_outcome_success"),
    ("CVSR", "commit_valid_success"),
)


def _group_label(keys: Mapping[str, str]) -> str:
    profile, adapter = keys.get("profile", ""), keys.get("adapter", "")
    if adapter in ("", "baseline"):
        return profile
    return adapter if profile in ("", "none") else f"{adapter}/{profile}"


def _compare(
    group: _CellTables,
    rule: ScoringRule | None,
    packs: _Packs,
    counts: dict[tuple[str, str], list[int]],
) -> tuple[int, list[VerdictDifference]]:
    """Re-score one cell; `counts[(group, metric)]` accumulates [n, recorded, recomputed]."""
    pack = packs.get(group.pack, group.cell)
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
        again = verdict_fields(verdict)
        for metric, flag in _RATE_FLAGS:
            tally = counts.setdefault((group.label, metric), [0, 0, 0])
            tally[0] += 1
            tally[1] += bool(episode[flag])
            tally[2] += bool(again[flag])
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
            (name, episode[name], value) for name, value in again.items()
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


def _cells_from_folders(directories: Sequence[Path]) -> Iterator[_CellTables]:
    for directory in directories:
        manifest = read_cell_manifest(directory)
        if manifest.pack is None:
            continue
        rows = {
            table: _group(
                read_table(directory / manifest.tables[table.value].file, table).to_pylist()
            )
            for table in _SCORED
        }
        yield _CellTables(
            manifest.cell, manifest.pack, manifest.scoring_rule, rows, _group_label(manifest.keys)
        )


def _cells_from_collected(collected: Path) -> Iterator[_CellTables]:
    manifest = read_sweep_manifest(collected)  # verified by verify_sweep beforehand
    paths = {table: collected / manifest.tables[table.value].file for table in _SCORED}
    for summary in manifest.cells:
        # Each cell is one row group of each merged file, so the filter reads only that cell.
        rows = {
            table: _group(
                pq.read_table(path, filters=[(CELL_COLUMN, "=", summary.cell)]).to_pylist()
            )
            for table, path in paths.items()
        }
        yield _CellTables(
            summary.cell, summary.pack, summary.scoring_rule, rows, _group_label(summary.keys)
        )


def recompute(
    sweep_dir: Path,
    *,
    rule: ScoringRule | str | None = None,
    allow_incomplete: bool = False,
    pack: str | Path | None = None,
) -> RecomputeReport:
    """Re-score every recorded episode of a sweep (its cells, or its `collected/` folder)
    and report every value that differs from the record, and what that does to the rates.

    The pack is `pack` when given, else the copy the sweep stored (`.packs/<digest>`), else
    the recorded reference; its digest must be the one the sweep ran."""
    sweep_dir = Path(sweep_dir)
    chosen = ScoringRule(rule) if rule is not None else None
    verified = verify_sweep(sweep_dir, allow_incomplete=allow_incomplete)
    groups = (
        _cells_from_collected(verified.read_from)
        if verified.layout is SweepLayout.COLLECTED
        else _cells_from_folders(verified.cells)
    )
    root = sweep_dir.parent if sweep_dir.name == COLLECTED_DIR else sweep_dir
    packs = _Packs(sweep_root=root, override=pack)
    counts: dict[tuple[str, str], list[int]] = {}
    n_cells = n_episodes = 0
    differences: list[VerdictDifference] = []
    for group in groups:
        count, found = _compare(group, chosen, packs, counts)
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
        rates=tuple(RateChange(group, metric, *tally) for (group, metric), tally in counts.items()),
    )
