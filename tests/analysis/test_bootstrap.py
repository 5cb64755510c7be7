"""The task-clustered bootstrap engine: weights, determinism, pairing, and agreement with scipy."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import ArrayLike
from scipy import stats

from analysis import (
    AnalysisConfigError,
    BootstrapConfig,
    IntervalMethod,
    NamedStatistic,
    Ratio,
    RatioDifference,
    TaskMatrix,
    clustered_bootstrap,
    resample_totals,
    resample_weights,
)
from analysis._bootstrap import CHUNK_RESAMPLES, bca_bounds, evaluate_statistics


def _matrix(columns: Mapping[str, ArrayLike], strata: tuple[str, ...] | None = None) -> TaskMatrix:
    arrays = [np.asarray(c, dtype=float) for c in columns.values()]
    n = len(arrays[0])
    values = np.column_stack(arrays)
    return TaskMatrix(tuple(f"t{i:03d}" for i in range(n)), tuple(columns), values, strata)


@given(
    n_tasks=st.integers(1, 30),
    n_resamples=st.integers(1, 2 * CHUNK_RESAMPLES + 5),
    seed=st.integers(0, 2**32),
)
@settings(max_examples=40, deadline=None)
def test_every_resample_draws_as_many_tasks_as_there_are(
    n_tasks: int, n_resamples: int, seed: int
) -> None:
    weights = np.vstack(list(resample_weights(n_tasks, n_resamples, seed)))
    assert weights.shape == (n_resamples, n_tasks)
    assert (weights >= 0).all()
    assert (weights.sum(axis=1) == n_tasks).all()


@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4), seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_stratified_resamples_keep_each_stratum_size(sizes: list[int], seed: int) -> None:
    strata = [f"s{i}" for i, size in enumerate(sizes) for _ in range(size)]
    weights = np.vstack(list(resample_weights(len(strata), 50, seed, strata)))
    labels = np.array(strata)
    for i, size in enumerate(sizes):
        assert (weights[:, labels == f"s{i}"].sum(axis=1) == size).all()


def test_the_same_seed_gives_the_same_draws_and_another_seed_does_not() -> None:
    a = np.vstack(list(resample_weights(50, 300, seed=7)))
    b = np.vstack(list(resample_weights(50, 300, seed=7)))
    c = np.vstack(list(resample_weights(50, 300, seed=8)))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_weights_equal_counting_the_indices_a_plain_loop_draws() -> None:
    """The chunked weights are exactly a per-resample loop over the same generator."""
    n_tasks, n_resamples = 37, CHUNK_RESAMPLES + 11
    weights = np.vstack(list(resample_weights(n_tasks, n_resamples, seed=3)))
    rng = np.random.default_rng(3)
    for row in weights:
        drawn = rng.integers(0, n_tasks, size=n_tasks, dtype=np.int64)
        assert np.array_equal(row, np.bincount(drawn, minlength=n_tasks))


def test_resample_totals_are_weights_times_per_task_sums() -> None:
    rng = np.random.default_rng(0)
    matrix = _matrix({"a": rng.integers(0, 5, 20), "b": rng.integers(5, 10, 20)})
    config = BootstrapConfig(n_resamples=40, seed=11)
    weights = np.vstack(list(resample_weights(20, 40, 11)))
    assert np.array_equal(resample_totals(matrix, config), weights @ matrix.values)


def test_all_groups_share_one_draw_so_identical_columns_give_identical_replicates() -> None:
    rng = np.random.default_rng(1)
    wins = rng.integers(0, 2, 30)
    matrix = _matrix({"a": wins, "b": wins, "n": np.ones(30)})
    result = clustered_bootstrap(
        matrix,
        [
            NamedStatistic("a", Ratio("a", "n")),
            NamedStatistic("b", Ratio("b", "n")),
            NamedStatistic("a-b", RatioDifference(Ratio("a", "n"), Ratio("b", "n"))),
        ],
        BootstrapConfig(n_resamples=500, seed=2),
    )
    assert np.array_equal(result.replicates[:, 0], result.replicates[:, 1])
    assert (result.replicates[:, 2] == 0).all()
    assert (result.low[2], result.high[2]) == (0.0, 0.0)


def test_a_gap_is_computed_inside_each_resample_from_its_parts() -> None:
    rng = np.random.default_rng(4)
    osr = rng.integers(0, 2, 40)
    cvsr = osr * rng.integers(0, 2, 40)
    matrix = _matrix({"osr": osr, "cvsr": cvsr, "n": np.ones(40)})
    result = clustered_bootstrap(
        matrix,
        [
            NamedStatistic("osr", Ratio("osr", "n")),
            NamedStatistic("cvsr", Ratio("cvsr", "n")),
            NamedStatistic("vg", Ratio("osr", "n", minus="cvsr")),
        ],
        BootstrapConfig(n_resamples=300, seed=5),
    )
    np.testing.assert_allclose(
        result.replicates[:, 2], result.replicates[:, 0] - result.replicates[:, 1], atol=1e-12
    )


def _heterogeneous_tasks(seed: int, n_tasks: int = 60) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 6, n_tasks).astype(float)
    p = rng.beta(2, 2, n_tasks)
    osr = rng.binomial(n.astype(int), np.minimum(1, p + 0.2)).astype(float)
    cvsr = np.minimum(osr, rng.binomial(n.astype(int), p).astype(float))
    n_b = rng.integers(1, 6, n_tasks).astype(float)
    b = rng.binomial(n_b.astype(int), p).astype(float)
    return {"osr": osr, "cvsr": cvsr, "n": n, "b": b, "n_b": n_b}


@pytest.mark.parametrize("method", [IntervalMethod.PERCENTILE, IntervalMethod.BCA])
def test_agrees_with_scipy_paired_bootstrap_on_per_task_arrays(method: IntervalMethod) -> None:
    """Same statistics, same resampling unit: the bounds agree within Monte Carlo error."""
    data = _heterogeneous_tasks(seed=12)
    matrix = _matrix(data)
    statistics = [
        NamedStatistic("rate", Ratio("cvsr", "n")),
        NamedStatistic("gap", Ratio("osr", "n", minus="cvsr")),
        NamedStatistic("diff", RatioDifference(Ratio("cvsr", "n"), Ratio("b", "n_b"))),
    ]
    ours = clustered_bootstrap(
        matrix, statistics, BootstrapConfig(n_resamples=20_000, seed=1, method=method)
    )

    def rate(cvsr: np.ndarray, n: np.ndarray, axis: int) -> np.ndarray:
        return np.asarray(cvsr.sum(axis=axis) / n.sum(axis=axis))

    def gap(osr: np.ndarray, cvsr: np.ndarray, n: np.ndarray, axis: int) -> np.ndarray:
        return np.asarray((osr.sum(axis=axis) - cvsr.sum(axis=axis)) / n.sum(axis=axis))

    def diff(
        cvsr: np.ndarray, n: np.ndarray, b: np.ndarray, n_b: np.ndarray, axis: int
    ) -> np.ndarray:
        return np.asarray(
            cvsr.sum(axis=axis) / n.sum(axis=axis) - b.sum(axis=axis) / n_b.sum(axis=axis)
        )

    scipy_method = "BCa" if method is IntervalMethod.BCA else "percentile"
    cases: list[tuple[Callable[..., np.ndarray], tuple[np.ndarray, ...]]] = [
        (rate, (data["cvsr"], data["n"])),
        (gap, (data["osr"], data["cvsr"], data["n"])),
        (diff, (data["cvsr"], data["n"], data["b"], data["n_b"])),
    ]
    for j, (fn, arrays) in enumerate(cases):
        reference = stats.bootstrap(
            arrays,
            fn,
            paired=True,
            vectorized=True,
            n_resamples=20_000,
            method=scipy_method,
            rng=np.random.default_rng(99),
        )
        assert ours.estimate[j] == pytest.approx(fn(*arrays, axis=0))
        # The interval half-width is ~0.1 here; Monte Carlo error of a bound is ~0.003.
        assert ours.low[j] == pytest.approx(reference.confidence_interval.low, abs=0.012)
        assert ours.high[j] == pytest.approx(reference.confidence_interval.high, abs=0.012)
        assert ours.standard_error[j] == pytest.approx(reference.standard_error, rel=0.05)


def test_bca_acceleration_matches_scipy_jackknife_formula() -> None:
    """Fed scipy's own replicates, our BCa bounds equal scipy's exactly."""
    data = _heterogeneous_tasks(seed=3)

    def rate(cvsr: np.ndarray, n: np.ndarray, axis: int) -> np.ndarray:
        return np.asarray(cvsr.sum(axis=axis) / n.sum(axis=axis))

    reference = stats.bootstrap(
        (data["cvsr"], data["n"]),
        rate,
        paired=True,
        vectorized=True,
        n_resamples=5_000,
        method="BCa",
        rng=np.random.default_rng(5),
    )
    estimate = float(data["cvsr"].sum() / data["n"].sum())
    jackknife = (data["cvsr"].sum() - data["cvsr"]) / (data["n"].sum() - data["n"])
    bounds = bca_bounds(reference.bootstrap_distribution, estimate, jackknife, 0.95)
    assert bounds is not None
    assert bounds[0] == pytest.approx(reference.confidence_interval.low, rel=1e-9)
    assert bounds[1] == pytest.approx(reference.confidence_interval.high, rel=1e-9)


def test_an_all_success_rate_collapses_and_an_impossible_bca_falls_back_to_percentile() -> None:
    matrix = _matrix({"wins": np.ones(40), "n": np.ones(40)})
    result = clustered_bootstrap(
        matrix, [NamedStatistic("rate", Ratio("wins", "n"))], BootstrapConfig(n_resamples=200)
    )
    assert (result.low[0], result.high[0]) == (1.0, 1.0)
    assert bca_bounds(np.array([0.2, 0.3, 0.4]), 0.9, np.array([0.9, 0.8]), 0.95) is None


def test_an_undefined_statistic_is_nan_and_counted() -> None:
    """A group that ran one task has no episodes in resamples that do not draw it."""
    matrix = _matrix({"wins": [1, 0, 0, 0], "n": [1, 0, 0, 0]})
    result = clustered_bootstrap(
        matrix, [NamedStatistic("rate", Ratio("wins", "n"))], BootstrapConfig(n_resamples=400)
    )
    assert result.estimate[0] == 1.0
    assert 0 < result.n_undefined[0] < 400
    assert np.isnan(result.replicates[:, 0]).sum() == result.n_undefined[0]


def test_evaluate_statistics_on_one_totals_vector() -> None:
    matrix = _matrix({"a": [1, 1], "b": [0, 1], "n": [2, 2]})
    values = evaluate_statistics(
        [NamedStatistic("gap", Ratio("a", "n", minus="b"))], matrix, np.array([2.0, 1.0, 4.0])
    )
    assert values.tolist() == [0.25]


@pytest.mark.parametrize(
    "kwargs",
    [{"n_resamples": 0}, {"level": 1.0}, {"level": 0.0}, {"seed": -1}],
)
def test_bad_configs_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(AnalysisConfigError):
        BootstrapConfig(**kwargs)  # type: ignore[arg-type]


def test_bad_task_matrices_and_statistics_are_refused() -> None:
    with pytest.raises(AnalysisConfigError, match="shape"):
        TaskMatrix(("a",), ("x", "y"), np.zeros((1, 3)))
    with pytest.raises(AnalysisConfigError, match="unique"):
        TaskMatrix(("a",), ("x", "x"), np.zeros((1, 2)))
    matrix = _matrix({"a": [1], "n": [1]})
    with pytest.raises(AnalysisConfigError, match="no column 'zzz'"):
        clustered_bootstrap(matrix, [NamedStatistic("r", Ratio("zzz", "n"))])
    with pytest.raises(AnalysisConfigError, match="at least one"):
        clustered_bootstrap(matrix, [])
    with pytest.raises(AnalysisConfigError, match="strata"):
        resample_totals(matrix, BootstrapConfig(stratify_by="family"))


def test_task_matrix_values_are_read_only() -> None:
    matrix = _matrix({"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match="read-only"):
        matrix.values[0, 0] = 5.0


def test_cluster_robust_t_matches_statsmodels_cluster_ols_with_t_reference() -> None:
    # A rate over 12 tasks x 4 repetitions is an intercept-only regression clustered by task:
    # statsmodels' CR1 standard error (G/(G-1) correction, t with G-1 df) gives the same interval.
    import statsmodels.api as sm
    from scipy.stats import t as t_distribution

    from analysis._bootstrap import cluster_robust_t_bounds

    rng = np.random.default_rng(5)
    outcomes = (rng.random((12, 4)) < rng.beta(2, 1, size=12)[:, None]).astype(float)
    matrix = TaskMatrix(
        tuple(f"t{i}" for i in range(12)),
        ("s", "n"),
        np.column_stack([outcomes.sum(axis=1), np.full(12, 4.0)]),
    )
    low, high, se = cluster_robust_t_bounds(matrix, [NamedStatistic("r", Ratio("s", "n"))], 0.95)
    fit = sm.OLS(outcomes.ravel(), np.ones(48)).fit(
        cov_type="cluster",
        cov_kwds={"groups": np.repeat(np.arange(12), 4)},
    )
    # CR1 also multiplies by (N-1)/(N-K) = 1 for an intercept-only model; the reference
    # distribution is t with G - 1 = 11 degrees of freedom (Cameron & Miller 2015).
    assert se[0] == pytest.approx(float(fit.bse[0]), rel=1e-9)
    half = t_distribution.ppf(0.975, 11) * float(fit.bse[0])
    centre = float(fit.params[0])
    assert (low[0], high[0]) == pytest.approx((centre - half, centre + half), rel=1e-9)
