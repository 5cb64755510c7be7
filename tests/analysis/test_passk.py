"""pass^k: the unbiased per-task estimator and its clustered interval."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis import (
    AnalysisConfigError,
    BootstrapConfig,
    SuccessFlag,
    SyntheticTables,
    pass_hat_k,
    pass_hat_k_per_task,
    simulate_episodes,
)

FAST = BootstrapConfig(n_resamples=1_000, seed=0)


@given(st.data())
def test_per_task_estimator_is_comb_c_k_over_comb_n_k(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 12))
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    value = pass_hat_k_per_task(np.array([float(c)]), np.array([float(n)]), k)[0]
    assert value == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


def test_the_estimator_is_unbiased_for_p_to_the_k() -> None:
    """Averaged over all outcomes of n Bernoulli(p) trials, C(c,k)/C(n,k) is exactly p^k."""
    n, k, p = 6, 3, 0.7
    expected = sum(
        math.comb(n, c) * p**c * (1 - p) ** (n - c) * math.comb(c, k) / math.comb(n, k)
        for c in range(n + 1)
    )
    assert expected == pytest.approx(p**k)


def test_deterministic_baselines_have_flat_pass_k(ablation_repeated: SyntheticTables) -> None:
    frame = pass_hat_k(ablation_repeated.episodes, config=FAST)
    assert frame["k"].unique().sort().to_list() == [1, 2, 3, 4, 5, 6]
    for _profile, part in frame.group_by("profile"):
        assert part["estimate"].n_unique() == 1
    direct = frame.filter(pl.col("profile") == "direct")
    assert direct["estimate"].unique().to_list() == [0.25]
    assert direct["n_tasks"].unique().to_list() == [40]


def test_pass_k_falls_with_k_for_a_flaky_agent() -> None:
    episodes = simulate_episodes({"flaky": [0.5] * 30}, repetitions=4, seed=1)
    frame = pass_hat_k(episodes, config=FAST)
    estimates = frame["estimate"].to_list()
    assert estimates == sorted(estimates, reverse=True)
    assert (frame["ci_low"] <= frame["estimate"]).all()


def test_tasks_with_fewer_trials_than_k_are_left_out() -> None:
    episodes = simulate_episodes({"a": [1.0] * 4}, repetitions=3, seed=0).filter(
        ~((pl.col("scenario_id") == "task-00000") & (pl.col("repetition") == 2))
    )
    frame = pass_hat_k(episodes, config=FAST, flag=SuccessFlag.OUTCOME)
    assert frame["n_tasks"].to_list() == [4, 4, 3]
    with pytest.raises(AnalysisConfigError):
        pass_hat_k(episodes, ks=[0])
