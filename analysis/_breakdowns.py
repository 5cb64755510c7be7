"""Failure-code and dimension breakdowns per group (diagnostics: counted, never averaged)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analysis._frames import (
    EPISODE_COLUMNS,
    VERDICT_COLUMNS,
    require_columns,
    require_group_columns,
    sort_by_groups,
)
from analysis._vocab import DIMENSIONS, VerdictStatus


def failure_code_breakdown(
    episodes: pl.DataFrame, group_by: Sequence[str] = ("profile",)
) -> pl.DataFrame:
    """Per group and failure code: episodes carrying the code, of ``n``, and their share.

    An episode with several codes counts once under each; groups without failures have no rows.

    >>> frame = pl.DataFrame({
    ...     "profile": ["direct", "direct", "full_lifecycle"],
    ...     "failure_codes": [["TS_STALE_WITNESS"], [], []],
    ... })
    >>> failure_code_breakdown(frame).rows()
    [('direct', 'TS_STALE_WITNESS', 1, 2, 0.5)]
    """
    group_by = tuple(group_by)
    require_columns(episodes, {"failure_codes": EPISODE_COLUMNS["failure_codes"]})
    require_group_columns(episodes, group_by, "episodes")
    keys = list(group_by) or None
    totals = (
        episodes.group_by(keys).agg(pl.len().alias("n"))
        if keys
        else pl.DataFrame({"n": [episodes.height]})
    )
    counted = (
        episodes.select(*group_by, pl.col("failure_codes").list.unique().alias("failure_code"))
        .explode("failure_code")
        .drop_nulls("failure_code")
        .group_by([*group_by, "failure_code"])
        .agg(pl.len().alias("episodes"))
    )
    joined = (
        counted.join(totals, on=keys, how="left") if keys else counted.join(totals, how="cross")
    )
    joined = joined.with_columns(
        pl.col("episodes").cast(pl.Int64),
        pl.col("n").cast(pl.Int64),
        (pl.col("episodes") / pl.col("n")).alias("share"),
    ).select(*group_by, "failure_code", "episodes", "n", "share")
    return sort_by_groups(joined, group_by, "failure_code")


def dimension_breakdown(
    verdicts: pl.DataFrame,
    group_by: Sequence[str] = ("profile",),
    *,
    episodes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per group and dimension: pass / fail / not-applicable counts and the fail share.

    ``fail_rate`` is failures over applicable verdicts (pass + fail); null when none applied.
    Group keys missing from ``verdicts`` (family, a swept factor) are joined from ``episodes``
    on ``episode_id``.

    >>> frame = pl.DataFrame({
    ...     "episode_id": ["e1", "e1", "e2"],
    ...     "scenario_id": ["s1", "s1", "s2"],
    ...     "profile": ["direct"] * 3,
    ...     "dimension": ["intent_grounding", "execution_integrity", "intent_grounding"],
    ...     "status": ["fail", "not_applicable", "pass"],
    ... })
    >>> dimension_breakdown(frame).select("dimension", "passed", "failed", "fail_rate").rows()
    [('intent_grounding', 1, 1, 0.5), ('execution_integrity', 0, 0, None)]
    """
    group_by = tuple(group_by)
    require_columns(verdicts, VERDICT_COLUMNS, source="verdicts")
    missing = [c for c in group_by if c not in verdicts.schema]
    if missing:
        if episodes is None:
            require_group_columns(verdicts, missing, "verdicts")
        else:
            require_group_columns(episodes, ["episode_id", *missing], "episodes")
            verdicts = verdicts.join(
                episodes.select("episode_id", *missing), on="episode_id", how="left"
            )
    require_group_columns(verdicts, group_by, "verdicts")
    status = pl.col("status")
    counted = (
        verdicts.group_by([*group_by, "dimension"])
        .agg(
            (status == VerdictStatus.PASS).sum().cast(pl.Int64).alias("passed"),
            (status == VerdictStatus.FAIL).sum().cast(pl.Int64).alias("failed"),
            (status == VerdictStatus.NOT_APPLICABLE).sum().cast(pl.Int64).alias("not_applicable"),
        )
        .with_columns((pl.col("passed") + pl.col("failed")).alias("applicable"))
        .with_columns(
            pl.when(pl.col("applicable") > 0)
            .then(pl.col("failed") / pl.col("applicable"))
            .otherwise(None)
            .alias("fail_rate")
        )
    )
    rank = pl.DataFrame(
        {"dimension": list(DIMENSIONS), "__dim": list(range(len(DIMENSIONS)))},
        schema={"dimension": pl.String, "__dim": pl.Int64},
    )
    counted = counted.join(rank, on="dimension", how="left").with_columns(
        pl.col("__dim").fill_null(len(DIMENSIONS))
    )
    return sort_by_groups(counted, group_by, "__dim", "dimension").drop("__dim")
