"""Failure-code and dimension breakdowns."""

from __future__ import annotations

import polars as pl
import pytest

from analysis import SyntheticTables, TableSchemaError, dimension_breakdown, failure_code_breakdown


def test_failure_codes_per_profile(ablation: SyntheticTables) -> None:
    frame = failure_code_breakdown(ablation.episodes)
    counts = {(r["profile"], r["failure_code"]): r["episodes"] for r in frame.iter_rows(named=True)}
    assert counts[("reconciled", "OR_COMPENSATION_MISSING")] == 5
    assert counts[("direct", "TS_STALE_WITNESS")] == 10
    assert not frame.filter(pl.col("profile") == "full_lifecycle").height
    assert frame["profile"].unique(maintain_order=True).to_list() == [
        "direct",
        "policy_gated",
        "commit_guarded",
        "reconciled",
    ]
    assert (frame["n"] == 40).all()


def test_a_repeated_code_in_one_episode_counts_once() -> None:
    frame = pl.DataFrame({"profile": ["p"], "failure_codes": [["A", "A", "B"]]})
    assert failure_code_breakdown(frame).select("failure_code", "episodes").rows() == [
        ("A", 1),
        ("B", 1),
    ]


def test_dimension_counts_and_fail_rate(ablation: SyntheticTables) -> None:
    frame = dimension_breakdown(ablation.verdicts)
    assert frame.height == 25
    reconciled = frame.filter(
        (pl.col("profile") == "reconciled") & (pl.col("dimension") == "outcome_recoverability")
    ).row(0, named=True)
    assert (reconciled["failed"], reconciled["applicable"], reconciled["fail_rate"]) == (5, 10, 0.5)
    assert (frame["passed"] + frame["failed"] + frame["not_applicable"] == 40).all()


def test_dimensions_by_a_column_only_episodes_hold(ablation: SyntheticTables) -> None:
    frame = dimension_breakdown(
        ablation.verdicts, ("profile", "family"), episodes=ablation.episodes
    )
    assert frame.height == 5 * 4 * 5
    with pytest.raises(TableSchemaError, match="'family'"):
        dimension_breakdown(ablation.verdicts, ("profile", "family"))
