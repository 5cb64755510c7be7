"""Closed-form binomial intervals for single rates (Wilson, Jeffreys).

A percentile bootstrap of 40 successes in 40 tasks is the single point [1, 1]: every resample
is all successes. A closed-form interval says what the data allow instead (40/40 is compatible
with a true rate of about 0.91). These are reported beside the task-clustered bootstrap for
every single rate; see `docs/statistics.md` for when each one is the right reading.
"""

from __future__ import annotations

from dataclasses import dataclass

from statsmodels.stats.proportion import proportion_confint

from analysis._errors import AnalysisConfigError
from analysis._vocab import SmallNMethod


@dataclass(frozen=True)
class Interval:
    """A two-sided interval ``[low, high]`` at a stated level."""

    low: float
    high: float


def _check(k: float, n: float, level: float) -> None:
    if not 0.0 < level < 1.0:
        raise AnalysisConfigError(f"interval level must be in (0, 1), got {level}")
    if n < 0 or k < 0 or k > n:
        raise AnalysisConfigError(f"need 0 <= k <= n for a binomial interval, got k={k}, n={n}")


def wilson_interval(k: float, n: float, level: float = 0.95) -> Interval:
    """Wilson score interval for ``k`` successes in ``n`` trials (``n`` may be an effective n).

    Computed by ``statsmodels.stats.proportion.proportion_confint(method="wilson")``.

    >>> interval = wilson_interval(40, 40)
    >>> round(interval.low, 4), interval.high
    (0.9124, 1.0)
    >>> wilson_interval(0, 0)
    Interval(low=0.0, high=1.0)
    """
    _check(k, n, level)
    if n == 0:
        return Interval(0.0, 1.0)
    low, high = proportion_confint(k, n, alpha=1.0 - level, method="wilson")
    return Interval(
        0.0 if k == 0 else max(0.0, float(low)), 1.0 if k == n else min(1.0, float(high))
    )


def jeffreys_interval(k: float, n: float, level: float = 0.95) -> Interval:
    """Equal-tailed Jeffreys interval (Beta(k + 1/2, n - k + 1/2) quantiles, by statsmodels).

    Following Brown, Cai and DasGupta (2001) the bound at an observed 0 or n is set to 0 or 1.

    >>> interval = jeffreys_interval(40, 40)
    >>> round(interval.low, 4), interval.high
    (0.9395, 1.0)
    """
    _check(k, n, level)
    if n == 0:
        return Interval(0.0, 1.0)
    low, high = proportion_confint(k, n, alpha=1.0 - level, method="jeffreys")
    # statsmodels returns the raw Beta quantiles; BCD 2001 pin the bound at an observed 0 or n.
    return Interval(0.0 if k == 0 else float(low), 1.0 if k == n else float(high))


def binomial_interval(
    k: float, n: float, level: float = 0.95, method: SmallNMethod = SmallNMethod.WILSON
) -> Interval:
    """Dispatch to :func:`wilson_interval` or :func:`jeffreys_interval`.

    >>> binomial_interval(37, 40, method=SmallNMethod.JEFFREYS).low < 0.925
    True
    """
    if method is SmallNMethod.WILSON:
        return wilson_interval(k, n, level)
    return jeffreys_interval(k, n, level)
