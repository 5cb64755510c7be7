"""Closed-form binomial intervals for single rates (Wilson, Jeffreys).

A percentile bootstrap of 40 successes in 40 tasks is the single point [1, 1]: every resample
is all successes. A closed-form interval says what the data allow instead (40/40 is compatible
with a true rate of about 0.91). These are reported beside the task-clustered bootstrap for
every single rate; see `docs/statistics.md` for when each one is the right reading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.special import ndtri
from scipy.stats import beta as beta_distribution

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

    >>> interval = wilson_interval(40, 40)
    >>> round(interval.low, 4), interval.high
    (0.9124, 1.0)
    >>> wilson_interval(0, 0)
    Interval(low=0.0, high=1.0)
    """
    _check(k, n, level)
    if n == 0:
        return Interval(0.0, 1.0)
    z = float(ndtri(0.5 + level / 2.0))
    p = k / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denominator
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Interval(low, high)


def jeffreys_interval(k: float, n: float, level: float = 0.95) -> Interval:
    """Equal-tailed Jeffreys interval (Beta(k + 1/2, n - k + 1/2) quantiles).

    Following Brown, Cai and DasGupta (2001) the bound at an observed 0 or n is set to 0 or 1.

    >>> interval = jeffreys_interval(40, 40)
    >>> round(interval.low, 4), interval.high
    (0.9395, 1.0)
    """
    _check(k, n, level)
    if n == 0:
        return Interval(0.0, 1.0)
    tail = (1.0 - level) / 2.0
    low = 0.0 if k == 0 else float(beta_distribution.ppf(tail, k + 0.5, n - k + 0.5))
    high = 1.0 if k == n else float(beta_distribution.ppf(1.0 - tail, k + 0.5, n - k + 0.5))
    return Interval(low, high)


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
