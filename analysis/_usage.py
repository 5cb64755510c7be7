"""Model usage and infrastructure errors: what an LLM sweep cost, and which episodes do not
count.

Episodes whose status is `infra_error` (a rate limit, timeout, 5xx or malformed response
that survived the retries) say nothing about the agent: `rated_episodes` leaves them out
of every rate, and `usage_summary` counts them beside the token and cost totals.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

INFRA_ERROR = "infra_error"
_USAGE = ("model_turns", "prompt_tokens", "completion_tokens", "cost_usd")


def rated_episodes(episodes: pl.DataFrame) -> pl.DataFrame:
    """The episodes rates are computed over: all but `infra_error` ones.

    >>> frame = pl.DataFrame({"episode_id": ["a", "b"], "status": ["completed", "infra_error"]})
    >>> rated_episodes(frame).get_column("episode_id").to_list()
    ['a']
    """
    if "status" not in episodes.schema:
        return episodes
    return episodes.filter(pl.col("status") != INFRA_ERROR)


def usage_summary(episodes: pl.DataFrame, group_by: Sequence[str]) -> pl.DataFrame | None:
    """Per group: episodes, infra errors, turns, tokens and cost (None when no episode called
    a model or hit an infra error, e.g. a sweep of the deterministic profiles).

    >>> frame = pl.DataFrame({
    ...     "profile": ["p", "p"], "status": ["completed", "infra_error"],
    ...     "model_turns": [3, 1], "prompt_tokens": [900, 100],
    ...     "completion_tokens": [60, 0], "cost_usd": [0.002, None],
    ... })
    >>> usage_summary(frame, ["profile"]).row(0)
    ('p', 2, 1, 4, 1000, 60, 0.002)
    """
    if "status" not in episodes.schema:
        return None
    present = [c for c in _USAGE if c in episodes.schema]
    used = any(episodes.get_column(c).is_not_null().any() for c in present)
    if not used and not (episodes.get_column("status") == INFRA_ERROR).any():
        return None
    # A column with no value at all (cost without a price table) stays null, not 0.
    totals = [
        pl.when(pl.col(c).is_null().all()).then(None).otherwise(pl.col(c).sum()).alias(c)
        for c in present
    ]
    return (
        episodes.group_by(list(group_by), maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("episodes"),
            (pl.col("status") == INFRA_ERROR).sum().cast(pl.Int64).alias("infra_errors"),
            *totals,
        )
        .sort(list(group_by))
    )
