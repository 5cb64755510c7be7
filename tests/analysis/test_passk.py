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
    AnalysisWarning,
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
    with pytest.warns(AnalysisWarning, match="unequally often"):
        frame = pass_hat_k(episodes, config=FAST, flag=SuccessFlag.OUTCOME)
    assert frame["n_tasks"].to_list() == [4, 4, 3]
    with pytest.raises(AnalysisConfigError):
        pass_hat_k(episodes, ks=[0])


def test_unequal_repetitions_define_pass_k_over_tasks_with_n_at_least_k() -> None:
    # The example: three tasks run 1, 2 and 3 times; the curve over the tasks that
    # reached k is 5/6, 1/2, 1 on 3, 2 and 1 tasks; it warns, shows the count, and a k no
    # task reached is null (not NaN labelled "percentile").
    episodes = pl.DataFrame(
        {
            "scenario_id": ["a", "b", "b", "c", "c", "c"],
            "profile": ["direct"] * 6,
            "commit_valid_success": [True, True, False, True, True, True],
        }
    )
    with pytest.warns(AnalysisWarning, match=r"direct: 1 to 3 repetitions"):
        frame = pass_hat_k(episodes, ks=[1, 2, 3, 4], config=FAST)
    assert frame["n_tasks"].to_list() == [3, 2, 1, 0]
    assert frame["estimate"].to_list()[1:] == [0.5, 1.0, None]
    assert frame["estimate"][0] == pytest.approx(5 / 6)
    last = frame.row(3, named=True)
    assert (last["ci_low"], last["ci_high"], last["ci_method"]) == (None, None, None)
    assert frame["estimate"].is_nan().sum() == 0


def test_each_group_runs_k_up_to_its_own_repetitions() -> None:
    once = simulate_episodes({"a": [1.0] * 3}, repetitions=1, seed=0)
    thrice = simulate_episodes({"b": [1.0] * 3}, repetitions=3, seed=0)
    frame = pass_hat_k(pl.concat([once, thrice]), config=FAST, flag=SuccessFlag.OUTCOME)
    assert frame.select("profile", "k").rows() == [("a", 1), ("b", 1), ("b", 2), ("b", 3)]
