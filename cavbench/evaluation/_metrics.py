"""Headline rates from verdicts: OSR, PAOSR, CVSR and the gaps VG, PAVG (SPEC d.4).

Rates are carried as integer counts over `n`; floats are derived, never stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from cavbench.evaluation._verdict import Verdict
from cavbench.scenarios import Family


@dataclass(frozen=True, slots=True)
class RateCounts:
    """Success counts over `n` episodes."""

    n: int = 0
    outcome: int = 0
    policy_aware: int = 0
    commit_valid: int = 0

    def _rate(self, k: int) -> float:
        return k / self.n if self.n else 0.0

    @property
    def osr(self) -> float:
        return self._rate(self.outcome)

    @property
    def paosr(self) -> float:
        return self._rate(self.policy_aware)

    @property
    def cvsr(self) -> float:
        return self._rate(self.commit_valid)

    @property
    def vg(self) -> float:
        """OSR − CVSR, from exact counts."""
        return float(Fraction(self.outcome - self.commit_valid, self.n)) if self.n else 0.0

    @property
    def pavg(self) -> float:
        """PAOSR − CVSR, from exact counts."""
        return float(Fraction(self.policy_aware - self.commit_valid, self.n)) if self.n else 0.0

    def add(self, verdict: Verdict) -> RateCounts:
        return RateCounts(
            n=self.n + 1,
            outcome=self.outcome + verdict.outcome_success,
            policy_aware=self.policy_aware + verdict.policy_aware_outcome_success,
            commit_valid=self.commit_valid + verdict.commit_valid_success,
        )

    def as_json(self, digits: int = 4) -> dict[str, float | int]:
        return {
            "n": self.n,
            "OSR": round(self.osr, digits),
            "PAOSR": round(self.paosr, digits),
            "CVSR": round(self.cvsr, digits),
            "VG": round(self.vg, digits),
            "PAVG": round(self.pavg, digits),
        }

    def line(self) -> str:
        return f"OSR={self.osr:.3f} PAOSR={self.paosr:.3f} CVSR={self.cvsr:.3f} VG={self.vg:.3f}"


@dataclass(frozen=True, slots=True)
class Metrics:
    overall: RateCounts
    by_family: Mapping[Family, RateCounts]


def summarize(verdicts: Iterable[Verdict]) -> Metrics:
    """Counts overall and per family (families sorted alphabetically)."""
    overall = RateCounts()
    by_family: dict[Family, RateCounts] = {}
    for verdict in verdicts:
        overall = overall.add(verdict)
        by_family[verdict.family] = by_family.get(verdict.family, RateCounts()).add(verdict)
    return Metrics(overall=overall, by_family=dict(sorted(by_family.items())))
