"""Wilson and Jeffreys intervals for single rates."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import beta

from analysis import (
    AnalysisConfigError,
    SmallNMethod,
    binomial_interval,
    jeffreys_interval,
    wilson_interval,
)


def test_a_perfect_40_of_40_is_not_reported_as_the_point_one() -> None:
    wilson = wilson_interval(40, 40)
    jeffreys = jeffreys_interval(40, 40)
    assert wilson.high == jeffreys.high == 1.0
    assert round(wilson.low, 4) == 0.9124
    assert round(jeffreys.low, 4) == 0.9395


def test_wilson_matches_the_closed_form() -> None:
    k, n, z = 37, 40, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    interval = wilson_interval(k, n)
    assert interval.low == pytest.approx(centre - half, rel=1e-12)
    assert interval.high == pytest.approx(centre + half, rel=1e-12)


def test_jeffreys_is_the_beta_quantiles_inside_the_range() -> None:
    interval = jeffreys_interval(10, 40, 0.9)
    assert interval.low == pytest.approx(beta.ppf(0.05, 10.5, 30.5))
    assert interval.high == pytest.approx(beta.ppf(0.95, 10.5, 30.5))
    assert jeffreys_interval(0, 40).low == 0.0


@given(
    n=st.integers(1, 500),
    frac=st.floats(0, 1),
    level=st.floats(0.5, 0.999),
    method=st.sampled_from(list(SmallNMethod)),
)
def test_intervals_contain_the_estimate_and_stay_in_the_unit_range(
    n: int, frac: float, level: float, method: SmallNMethod
) -> None:
    k = round(frac * n)
    interval = binomial_interval(k, n, level, method)
    assert 0.0 <= interval.low <= k / n <= interval.high <= 1.0
    assert interval.high - interval.low > 0.0


@given(n=st.integers(2, 200), frac=st.floats(0.05, 0.95))
def test_a_higher_level_gives_a_wider_wilson_interval(n: int, frac: float) -> None:
    k = round(frac * n)
    narrow, wide = wilson_interval(k, n, 0.8), wilson_interval(k, n, 0.99)
    assert wide.low <= narrow.low
    assert narrow.high <= wide.high


def test_no_trials_is_the_whole_unit_interval_and_bad_counts_are_refused() -> None:
    assert wilson_interval(0, 0) == jeffreys_interval(0, 0)
    assert (wilson_interval(0, 0).low, wilson_interval(0, 0).high) == (0.0, 1.0)
    with pytest.raises(AnalysisConfigError):
        wilson_interval(5, 4)
    with pytest.raises(AnalysisConfigError):
        jeffreys_interval(1, 4, level=1.5)
