"""Factor effects: what changing one swept factor does, level by level, against a baseline.

A harness study sweeps one factor (``harness.error_style``, ``model.temperature``,
``adapter``, ``profile``, ...) with everything else held fixed. The effect of a level is the
paired difference ``level - baseline`` of a measure, within task:

- **Paired by construction.** An episode of a level is matched with the baseline's episode of
  the same pack, scenario, seed and repetition and the same value of every other swept
  column; unmatched episodes are left out and counted. Two episodes on one match key are an
  error (something that varies is not named as a factor).
- **Task-clustered.** The per-task sums of the matched pairs form one :class:`TaskMatrix`;
  every level and measure is resampled from the same task draws (the existing engine,
  :func:`clustered_bootstrap`), so all differences are paired and share their resamples.
- **Measures.** The headline metrics (OSR, CVSR, VG, PAVG by default) over the scored pairs
  (a pair with an infrastructure error on either side is not scored), and the trajectory
  reliability measures whose columns the episodes carry (turns, invalid tool calls, retries,
  infrastructure errors, reaching the turn limit); a measure whose column is absent is left out
  and named in the result.
- **Multiplicity.** Holm's adjustment over the family (every level x measure of the table) of
  paired sign-flip permutation p-values; the table is flagged ``exploratory`` unless the
  caller states that it is the pre-registered confirmatory analysis. An interval containing 0
  reads "no detected difference" -- never "no difference".
- **Across domains.** The same effects per pack, with the sign of each and whether it reverses
  between packs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from analysis._bootstrap import (
    DEFAULT_CONFIG,
    BootstrapConfig,
    NamedStatistic,
    Ratio,
    RatioDifference,
    TaskMatrix,
    clustered_bootstrap,
)
from analysis._contrasts import holm_adjust, paired_permutation_p
from analysis._errors import AnalysisConfigError, MixedInputError
from analysis._figures import Plot, figure_style, round_numbers
from analysis._frames import EPISODE_COLUMNS, FLAG_COLUMNS, ordered_levels, require_columns
from analysis._report import Align, ReportTable, fmt_interval, fmt_p, fmt_rate
from analysis._vocab import Metric

NO_DETECTED_DIFFERENCE = "no detected difference"
"""The reading of an interval that contains 0 (absence of evidence, not evidence of absence)."""

HELD_FIXED: tuple[str, ...] = ("profile", "adapter", "scoring_rule")
"""Columns always part of the match key (beside pack, scenario, seed and repetition)."""

STATUS_COLUMN, INFRA_STATUS = "status", "infra_error"
"""An episode whose `status` is `infra_error` failed for infrastructure reasons (a rate limit,
a timeout): it is excluded from the rates and counted as such."""


class MeasureKind(StrEnum):
    """How a measure is computed from the matched pairs."""

    METRIC = "metric"
    """A headline metric (a rate or a validity gap) over the scored pairs."""
    MEAN = "mean"
    """The mean of a numeric (or boolean) episode column over all pairs."""


@dataclass(frozen=True)
class Measure:
    """One quantity compared between a level and the baseline.

    >>> Measure.of_metric(Metric.VG).name
    'VG'
    >>> Measure("turn_limit", MeasureKind.MEAN, column="stop_reason", equals="max_turns").column
    'stop_reason'
    """

    name: str
    kind: MeasureKind
    metric: Metric | None = None
    column: str | None = None
    equals: str | None = None
    """For a categorical column: the measure is the share of episodes with this value."""

    @classmethod
    def of_metric(cls, metric: Metric) -> Measure:
        """The measure of a headline metric."""
        return cls(str(metric), MeasureKind.METRIC, metric=metric)


HEADLINE_MEASURES: tuple[Measure, ...] = tuple(
    Measure.of_metric(m) for m in (Metric.OSR, Metric.CVSR, Metric.VG, Metric.PAVG)
)
"""The headline metrics a factor analysis reports by default."""

RELIABILITY_MEASURES: tuple[Measure, ...] = (
    Measure("turns", MeasureKind.MEAN, column="model_turns"),
    Measure("invalid_tool_calls", MeasureKind.MEAN, column="n_invalid_tool_calls"),
    Measure("retries", MeasureKind.MEAN, column="n_retries"),
    Measure("infra_errors", MeasureKind.MEAN, column=STATUS_COLUMN, equals=INFRA_STATUS),
    Measure("turn_limit", MeasureKind.MEAN, column="stop_reason", equals="max_turns"),
)
"""Trajectory-reliability measures, reported when the episodes carry their columns (the LLM
adapter's `episodes` columns, `n_invalid_tool_calls` and `n_retries` defined in
docs/llm-agents.md; null for the deterministic profiles, so never reported for them)."""

EFFECT_COLUMNS: tuple[str, ...] = (
    "factor",
    "level",
    "baseline",
    "measure",
    "kind",
    "level_estimate",
    "baseline_estimate",
    "difference",
    "ci_low",
    "ci_high",
    "ci_method",
    "n_tasks",
    "n_pairs",
    "level_higher",
    "baseline_higher",
    "permutation_p",
    "permutation_p_holm",
    "reading",
    "exploratory",
)
"""Columns of a factor-effects frame (a per-pack frame adds ``pack_id`` first)."""


def factor_column(episodes: pl.DataFrame, key: str) -> str:
    """The episodes column that holds a swept key.

    A key is looked up as written, with dots as underscores, without a ``factors.`` prefix,
    and finally by its last part; so ``harness.error_style`` finds ``harness.error_style`` or
    ``harness_error_style``, and ``model.temperature`` or ``factors.temperature`` finds
    ``temperature``.

    >>> factor_column(pl.DataFrame({"harness_error_style": ["a"]}), "harness.error_style")
    'harness_error_style'
    """
    bare = key.removeprefix("factors.")
    last = key.rsplit(".", 1)[-1]
    for candidate in (key, key.replace(".", "_"), bare, bare.replace(".", "_"), last):
        if candidate in episodes.schema:
            return candidate
    raise AnalysisConfigError(
        f"--factor {key}: no episodes column holds it (looked for {key!r} and "
        f"{key.replace('.', '_')!r}; columns: {', '.join(episodes.columns)}) (fix: name a swept "
        "key of this sweep)"
    )


@dataclass(frozen=True, eq=False)
class FactorEffects:
    """Per level, the paired differences against the baseline; per pack; and the caveats."""

    factor: str
    column: str
    baseline: str
    levels: tuple[str, ...]
    """The compared levels (baseline excluded), in order."""
    frame: pl.DataFrame
    """One row per (level, measure), columns :data:`EFFECT_COLUMNS`."""
    by_pack: pl.DataFrame | None
    """One row per (pack, level, measure) with ``sign`` and the reversal flags; None for one
    pack."""
    note: str
    missing_measures: tuple[str, ...]
    """Requested measures left out because the episodes lack their column."""
    n_unpaired: int
    """Episodes left out because the other side of their pair did not run."""
    config: BootstrapConfig


def _measure_values(episodes: pl.DataFrame, measure: Measure) -> pl.Expr:
    assert measure.column is not None
    col = pl.col(measure.column)
    if measure.equals is not None:
        return (col.cast(pl.String) == measure.equals).fill_null(False).cast(pl.Float64)
    return col.cast(pl.Float64).fill_null(0.0)


def _has_values(episodes: pl.DataFrame, column: str) -> bool:
    return column in episodes.schema and not episodes.get_column(column).is_null().all()


def _available(
    episodes: pl.DataFrame, measures: Sequence[Measure]
) -> tuple[list[Measure], list[str]]:
    kept, missing = [], []
    # Since table schema 2 every sweep has the LLM columns, null for the deterministic
    # profiles: a measure needs values, and the reliability measures a model-driven episode.
    model_driven = _has_values(episodes, "model_turns")
    for m in measures:
        if m.kind is MeasureKind.MEAN and (
            m.column is None
            or not _has_values(episodes, m.column)
            or (m in RELIABILITY_MEASURES and not model_driven)
        ):
            missing.append(m.name)
            continue
        # Every episode has a `status` (issue 9); a share of a value no episode takes (no
        # infra error in a deterministic sweep) is left out, not reported as 0 - 0.
        if (
            m.kind is MeasureKind.MEAN
            and m.equals is not None
            and not (episodes.get_column(str(m.column)) == m.equals).any()
        ):
            missing.append(m.name)
            continue
        if m.kind is MeasureKind.MEAN:
            dtype = episodes.schema[str(m.column)]
            if m.equals is None and not (dtype.is_numeric() or dtype == pl.Boolean):
                raise AnalysisConfigError(
                    f"measure {m.name!r}: column {m.column!r} has type {dtype}, expected a "
                    "number or boolean (fix: give the measure an `equals` value)"
                )
        kept.append(m)
    return kept, missing


def _pairs(
    episodes: pl.DataFrame, column: str, level: str, baseline: str, key: list[str]
) -> tuple[pl.DataFrame, int]:
    """Inner-join a level's episodes with the baseline's on the match key."""
    sides = []
    for value in (level, baseline):
        side = episodes.filter(pl.col("__level") == value)
        dup = side.select(key).is_duplicated()
        if dup.any():
            example = side.filter(dup).select(key).row(0, named=True)
            raise MixedInputError(
                f"episodes: {column}={value} has several episodes for one pair key {example}; "
                "something that varies is not held fixed (fix: name it with --group-by or "
                "filter it with --where COLUMN=VALUE)"
            )
        sides.append(side)
    joined = sides[0].join(sides[1], on=key, how="inner", suffix="__base", nulls_equal=True)
    return joined, sides[0].height + sides[1].height - 2 * joined.height


def _crossed(episodes: pl.DataFrame, candidates: Sequence[str], column: str) -> list[str]:
    """The candidate columns crossed with the factor (several values within one of its levels).

    A column that only changes *with* the factor (an adapter named after its profile) is not a
    separate factor, so pairs need not agree on it.
    """
    present = [c for c in dict.fromkeys(candidates) if c in episodes.schema and c != column]
    if not present:
        return []
    spread = episodes.group_by("__level").agg(pl.col(c).n_unique() for c in present)
    return [c for c in present if spread.get_column(c).max() not in (None, 0, 1)]


def _permutation_p(left: np.ndarray, right: np.ndarray, seed: int, resamples: int) -> float:
    # With one differing task every sign flip gives the same |mean|: p is exactly 1 (and
    # scipy's permutation_test refuses a one-element sample).
    if int(np.count_nonzero(left != right)) <= 1:
        return 1.0
    return paired_permutation_p(left, right, n_resamples=resamples, seed=seed)


NO_PAIRS = "no paired episodes"
"""The reading of a comparison no task contributes to (nothing to estimate)."""


def _reading(low: float, high: float, level: str, baseline: str, n_tasks: int) -> str:
    if n_tasks == 0:
        return NO_PAIRS
    if not (np.isfinite(low) and np.isfinite(high)) or low <= 0.0 <= high:
        return NO_DETECTED_DIFFERENCE
    return f"{level} higher than {baseline}" if low > 0.0 else f"{level} lower than {baseline}"


def _effects(
    episodes: pl.DataFrame,
    *,
    factor: str,
    column: str,
    baseline: str,
    levels: Sequence[str],
    measures: Sequence[Measure],
    key: list[str],
    infra: bool,
    config: BootstrapConfig,
    permutation_resamples: int,
    exploratory: bool,
) -> tuple[pl.DataFrame, int]:
    columns: list[str] = []
    blocks: list[np.ndarray] = []
    statistics: list[NamedStatistic] = []
    rows: list[dict[str, object]] = []
    per_task: list[tuple[np.ndarray, np.ndarray]] = []
    tasks = sorted(episodes.get_column("__task").unique().to_list())
    task_index = {t: i for i, t in enumerate(tasks)}
    unpaired = 0
    for li, level in enumerate(levels):
        pairs, dropped = _pairs(episodes, column, level, baseline, key)
        unpaired += dropped
        # Column expressions throughout: a literal would be summed once per group, not per row.
        scored = pl.col("__task").is_not_null()
        if infra:
            scored = ~(
                (pl.col(STATUS_COLUMN) == INFRA_STATUS).fill_null(False)
                | (pl.col(f"{STATUS_COLUMN}__base") == INFRA_STATUS).fill_null(False)
            )
        quantities: dict[str, pl.Expr] = {
            "n": pl.col("__task").is_not_null().cast(pl.Float64),
            "scored": scored.cast(pl.Float64),
        }
        for flag in FLAG_COLUMNS:
            for side, name in (("L", flag), ("B", f"{flag}__base")):
                quantities[f"{flag}:{side}"] = (pl.col(name) & scored).cast(pl.Float64)
        for m in measures:
            if m.kind is MeasureKind.MEAN:
                assert m.column is not None
                base = Measure(m.name, m.kind, column=f"{m.column}__base", equals=m.equals)
                quantities[f"{m.name}:L"] = _measure_values(pairs, m)
                quantities[f"{m.name}:B"] = _measure_values(pairs, base)
        summed = pairs.group_by("__task").agg(e.sum().alias(q) for q, e in quantities.items())
        values = np.zeros((len(tasks), len(quantities)), dtype=np.float64)
        if summed.height:
            index = np.array([task_index[t] for t in summed.get_column("__task").to_list()])
            for j, q in enumerate(quantities):
                values[index, j] = summed.get_column(q).to_numpy()
        for j, q in enumerate(quantities):
            columns.append(f"{li}:{q}")
            blocks.append(values[:, j])
        col = {q: values[:, j] for j, q in enumerate(quantities)}
        for m in measures:
            c = len(rows)
            if m.kind is MeasureKind.METRIC:
                assert m.metric is not None
                plus = str(m.metric.plus_flag)
                minus = None if m.metric.minus_flag is None else str(m.metric.minus_flag)
                over, n = f"{li}:scored", col["scored"]
                left_sum = col[f"{plus}:L"] - (0.0 if minus is None else col[f"{minus}:L"])
                right_sum = col[f"{plus}:B"] - (0.0 if minus is None else col[f"{minus}:B"])
            else:
                plus, minus = m.name, None
                over, n = f"{li}:n", col["n"]
                left_sum, right_sum = col[f"{m.name}:L"], col[f"{m.name}:B"]
            left, right = (
                Ratio(
                    f"{li}:{plus}:{side}",
                    over,
                    minus=None if minus is None else f"{li}:{minus}:{side}",
                )
                for side in ("L", "B")
            )
            statistics += [
                NamedStatistic(f"{c}:diff", RatioDifference(left, right)),
                NamedStatistic(f"{c}:L", left),
                NamedStatistic(f"{c}:B", right),
            ]
            present = n > 0
            with np.errstate(invalid="ignore", divide="ignore"):
                lt, bt = (left_sum / n)[present], (right_sum / n)[present]
            per_task.append((lt, bt))
            rows.append(
                {
                    "factor": factor,
                    "level": level,
                    "baseline": baseline,
                    "measure": m.name,
                    "kind": str(m.kind),
                    "n_tasks": int(present.sum()),
                    "n_pairs": int(n.sum()),
                    "level_higher": int(np.count_nonzero(lt > bt)),
                    "baseline_higher": int(np.count_nonzero(bt > lt)),
                    "exploratory": exploratory,
                }
            )
    strata = None
    if config.stratify_by is not None:
        # A stratified bootstrap resamples tasks within e.g. their family (a task-level column).
        labels = episodes.group_by("__task").agg(
            pl.col(config.stratify_by).cast(pl.String).unique()
        )
        mixed = labels.filter(pl.col(config.stratify_by).list.len() > 1)
        if mixed.height:
            raise MixedInputError(
                f"episodes: task {mixed['__task'][0]!r} has several {config.stratify_by!r} "
                "values; a stratum must be a property of the task (fix: stratify by a "
                "task-level column such as family)"
            )
        lookup = dict(
            zip(
                labels["__task"].to_list(),
                labels[config.stratify_by].list.first().to_list(),
                strict=True,
            )
        )
        strata = tuple(str(lookup[t]) for t in tasks)
    matrix = TaskMatrix(
        tuple(str(t) for t in tasks), tuple(columns), np.column_stack(blocks), strata
    )
    boot = clustered_bootstrap(matrix, statistics, config)
    p_values = [
        _permutation_p(lt, bt, config.seed, permutation_resamples) if lt.size else float("nan")
        for lt, bt in per_task
    ]
    holm = holm_adjust(p_values)
    for c, row in enumerate(rows):
        d, lj, bj = (boot.position(f"{c}:{s}") for s in ("diff", "L", "B"))
        low, high = float(boot.low[d]), float(boot.high[d])
        row.update(
            level_estimate=float(boot.estimate[lj]),
            baseline_estimate=float(boot.estimate[bj]),
            difference=float(boot.estimate[d]),
            ci_low=low,
            ci_high=high,
            ci_method=str("percentile" if boot.bca_fallback[d] else config.method),
            permutation_p=p_values[c],
            permutation_p_holm=holm[c],
            reading=_reading(low, high, str(row["level"]), baseline, int(str(row["n_tasks"]))),
        )
    schema = {"exploratory": pl.Boolean, "n_tasks": pl.Int64, "n_pairs": pl.Int64}
    frame = pl.DataFrame(rows, schema_overrides=schema).select(EFFECT_COLUMNS)
    return frame, unpaired


def effects_note(n_rows: int, level: float, exploratory: bool) -> str:
    """The caveat printed under a factor-effects table.

    >>> effects_note(4, 0.95, True).split(";")[0]
    'Exploratory: 4 comparisons'
    """
    kind = "Exploratory" if exploratory else "Confirmatory (pre-registered)"
    return (
        f"{kind}: {n_rows} comparisons; the {level:.0%} intervals are per comparison, and "
        "Holm-adjusted permutation p-values control the family-wise error over all of them. "
        f"An interval that contains 0 reads '{NO_DETECTED_DIFFERENCE}', not 'no difference'."
    )


def _with_task(episodes: pl.DataFrame, task: str) -> pl.DataFrame:
    if "pack_id" in episodes.schema:
        key = pl.concat_str(pl.col("pack_id"), pl.lit("/"), pl.col(task))
    else:
        key = pl.col(task)
    return episodes.with_columns(key.alias("__task"))


def factor_effects(
    episodes: pl.DataFrame,
    factor: str,
    baseline: str,
    *,
    measures: Sequence[Measure] = (*HEADLINE_MEASURES, *RELIABILITY_MEASURES),
    held_fixed: Sequence[str] = (),
    config: BootstrapConfig = DEFAULT_CONFIG,
    permutation_resamples: int = 9_999,
    exploratory: bool = True,
    task: str = "scenario_id",
) -> FactorEffects:
    """Paired, task-clustered differences ``level - baseline`` of every measure, per level.

    Pairs agree on every column of ``profile``, ``adapter``, ``scoring_rule`` and
    ``held_fixed`` (the sweep's other swept factors) that is crossed with the factor, i.e.
    takes several values within one of its levels. Levels are compared as
    text (a temperature of ``0.7`` is the level ``"0.7"``).

    >>> from analysis._synthetic import ablation_standin
    >>> episodes = ablation_standin().episodes
    >>> effects = factor_effects(
    ...     episodes, "profile", "direct", measures=HEADLINE_MEASURES[1:2],
    ...     config=BootstrapConfig(n_resamples=500, seed=1))
    >>> effects.frame.select("level", "difference").rows()[:2]
    [('policy_gated', 0.25), ('commit_guarded', 0.5)]
    """
    require_columns(episodes, {c: EPISODE_COLUMNS[c] for c in (task, *FLAG_COLUMNS)})
    if permutation_resamples < 1:
        raise AnalysisConfigError("permutation_resamples must be at least 1")
    column = factor_column(episodes, factor)
    if episodes.is_empty():
        raise AnalysisConfigError("factor_effects: no episodes")
    episodes = _with_task(episodes, task).with_columns(
        pl.col(column).cast(pl.String).alias("__level")
    )
    levels = [str(v) for v in ordered_levels(episodes, column) if v is not None]
    if baseline not in levels:
        raise AnalysisConfigError(
            f"--baseline {baseline}: not a level of {factor} (levels: {', '.join(levels)})"
        )
    compared = [lv for lv in levels if lv != baseline]
    if not compared:
        raise AnalysisConfigError(f"{factor} has only the level {baseline!r}: nothing to compare")
    kept, missing = _available(episodes, measures)
    if not kept:
        raise AnalysisConfigError(
            f"none of the measures {[m.name for m in measures]} can be computed from these episodes"
        )
    key = [c for c in ("pack_id", task, "seed", "repetition") if c in episodes.schema]
    key += [c for c in _crossed(episodes, (*HELD_FIXED, *held_fixed), column) if c not in key]
    infra = STATUS_COLUMN in episodes.schema
    common = {
        "factor": factor,
        "column": column,
        "baseline": baseline,
        "levels": compared,
        "measures": kept,
        "key": key,
        "infra": infra,
        "config": config,
        "permutation_resamples": permutation_resamples,
        "exploratory": exploratory,
    }
    frame, unpaired = _effects(episodes, **common)  # type: ignore[arg-type]
    by_pack: pl.DataFrame | None = None
    packs = ordered_levels(episodes, "pack_id") if "pack_id" in episodes.schema else []
    if len(packs) > 1:
        parts = []
        for pack in packs:
            subset = episodes.filter(pl.col("pack_id") == pack)
            here = [lv for lv in compared if subset.filter(pl.col("__level") == lv).height]
            if baseline not in subset.get_column("__level").to_list() or not here:
                continue
            part, _ = _effects(subset, **{**common, "levels": here})  # type: ignore[arg-type]
            parts.append(part.with_columns(pl.lit(str(pack)).alias("pack_id")))
        by_pack = _reversals(pl.concat(parts)) if parts else None
    return FactorEffects(
        factor=factor,
        column=column,
        baseline=baseline,
        levels=tuple(compared),
        frame=frame,
        by_pack=by_pack,
        note=effects_note(frame.height, config.level, exploratory),
        missing_measures=tuple(missing),
        n_unpaired=unpaired,
        config=config,
    )


def _reversals(frame: pl.DataFrame) -> pl.DataFrame:
    """Add each effect's sign and whether it reverses across packs.

    ``sign_reversal``: point estimates of opposite sign in two packs. ``reversal_detected``:
    two packs whose intervals both exclude 0, on opposite sides.
    """
    sign = pl.col("difference").sign().cast(pl.Int64)
    detected = (
        pl.when(pl.col("ci_low") > 0)
        .then(1)
        .when(pl.col("ci_high") < 0)
        .then(-1)
        .otherwise(0)
        .cast(pl.Int64)
    )
    frame = frame.with_columns(sign.alias("sign"), detected.alias("__detected"))
    over = ["level", "measure"]
    return frame.with_columns(
        ((pl.col("sign").max().over(over) > 0) & (pl.col("sign").min().over(over) < 0)).alias(
            "sign_reversal"
        ),
        (
            (pl.col("__detected").max().over(over) > 0)
            & (pl.col("__detected").min().over(over) < 0)
        ).alias("reversal_detected"),
    ).select("pack_id", *EFFECT_COLUMNS, "sign", "sign_reversal", "reversal_detected")


def factor_effects_table(
    effects: FactorEffects,
    *,
    caption: str = "",
    label: str = "tab:cavbench-factor-effects",
) -> ReportTable:
    """One row per (level, measure): difference, interval, reading, Holm p; pack rows after."""
    headers = (
        "Pack",
        "Measure",
        "Contrast",
        "Level",
        "Baseline",
        "Difference",
        f"{effects.config.level:.0%} clustered",
        "Tasks",
        "+/-",
        "Holm p",
        "Reading",
    )
    aligns = (Align.LEFT, Align.LEFT, Align.LEFT, *([Align.RIGHT] * 3), Align.CENTER)
    aligns += (Align.RIGHT, Align.RIGHT, Align.RIGHT, Align.LEFT)

    def block(frame: pl.DataFrame, pack: str | None) -> tuple[tuple[str, ...], ...]:
        return tuple(
            (
                pack if pack is not None else str(row["pack_id"]),
                str(row["measure"]),
                f"{row['level']} - {row['baseline']}",
                fmt_rate(row["level_estimate"]),
                fmt_rate(row["baseline_estimate"]),
                fmt_rate(row["difference"]),
                fmt_interval(row["ci_low"], row["ci_high"]),
                str(row["n_tasks"]),
                f"{row['level_higher']}/{row['baseline_higher']}",
                fmt_p(row["permutation_p_holm"]),
                str(row["reading"])
                + (" (sign reverses across packs)" if row.get("sign_reversal") else ""),
            )
            for row in frame.iter_rows(named=True)
        )

    blocks = [block(effects.frame, "all")]
    if effects.by_pack is not None:
        blocks.append(block(effects.by_pack, None))
    notes = [
        f"Paired within task: a {effects.factor} level's episode is matched with the "
        f"{effects.baseline} episode of the same pack, scenario, seed and repetition and every "
        f"other swept value ({effects.n_unpaired} episodes without a pair left out).",
        "+/-: tasks where the level's per-task value is higher / lower than the baseline's.",
        effects.note,
    ]
    if effects.missing_measures:
        notes.append(
            "Not reported (the episodes lack their columns): "
            + ", ".join(effects.missing_measures)
            + "."
        )
    if effects.by_pack is not None:
        notes.append(
            "Pack rows: the same analysis within each pack (its own Holm family); 'sign "
            "reverses' marks an effect whose point estimate changes sign between packs."
        )
    return ReportTable(
        headers,
        aligns,
        tuple(blocks),
        caption or f"Effect of {effects.factor} against {effects.baseline}, paired within task.",
        tuple(notes),
        label,
    )


_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


def factor_forest_figure(effects: FactorEffects) -> Plot:
    """Forest plot: one panel per measure, one row per level (and per pack), zero line."""
    parts = [effects.frame.with_columns(pl.lit("all").alias("pack_id"))]
    if effects.by_pack is not None:
        parts.append(effects.by_pack.select("pack_id", *EFFECT_COLUMNS))
    data = round_numbers(
        pl.concat(parts, how="diagonal_relaxed").select(
            "pack_id",
            "measure",
            "level",
            "baseline",
            "difference",
            "ci_low",
            "ci_high",
            "n_tasks",
            "reading",
        )
    )
    measures = list(dict.fromkeys(data["measure"].to_list()))
    labels = list(
        dict.fromkeys(f"{lv} / {pk}" for pk, lv in data.select("pack_id", "level").rows())
    )
    packs = list(dict.fromkeys(data["pack_id"].to_list()))
    with figure_style():
        fig = Figure(figsize=(1.9 * len(measures) + 1.8, 0.32 * len(labels) + 1.0))
        fig.set_layout_engine("constrained")
        axes = fig.subplots(1, len(measures), squeeze=False)[0]
        for ax, measure in zip(axes, measures, strict=True):
            part = data.filter(pl.col("measure") == measure)
            ax.axvline(0.0, color="#444444", linewidth=0.7, zorder=0)
            for pack in packs:
                sub = part.filter(pl.col("pack_id") == pack)
                if sub.is_empty():
                    continue
                rows = np.array(
                    [labels.index(f"{lv} / {pack}") for lv in sub["level"].to_list()], dtype=float
                )
                est = sub["difference"].to_numpy()
                colour = _COLOURS[packs.index(pack) % len(_COLOURS)]
                ax.errorbar(
                    est,
                    rows,
                    xerr=np.vstack(
                        [est - sub["ci_low"].to_numpy(), sub["ci_high"].to_numpy() - est]
                    ),
                    fmt="o" if pack == "all" else "s",
                    color=colour,
                    elinewidth=1.3,
                    markersize=4.0,
                    label=str(pack),
                )
            ax.set_title(f"{measure} difference")
            ax.set_yticks(range(len(labels)), labels if ax is axes[0] else [""] * len(labels))
            ax.set_ylim(len(labels) - 0.5, -0.5)
        if len(packs) > 1:
            axes[-1].legend(loc="lower right", fontsize=6)
        fig.supxlabel(
            f"{effects.factor}: level - {effects.baseline}, paired within task, "
            f"{effects.config.level:.0%} task-clustered interval",
            fontsize=7,
        )
        # Freeze the layout once so every save draws the same geometry (byte-identical files).
        fig.draw_without_rendering()
        fig.set_layout_engine("none")
        name = "factor_effects_" + effects.column.replace(".", "_")
        return Plot(name, fig, data)
