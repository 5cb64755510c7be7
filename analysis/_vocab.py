"""Closed vocabularies of the analysis layer.

`analysis` may not import the scenario or adapter packages (an import contract forbids it), so
the few names it shares with them (profiles, dimensions, verdict statuses) are spelled here as
plain vocabularies of the table values.
"""

from __future__ import annotations

from enum import StrEnum


class Metric(StrEnum):
    """The five headline metrics of CAV-Bench v1 (SPEC d.4)."""

    OSR = "OSR"
    PAOSR = "PAOSR"
    CVSR = "CVSR"
    VG = "VG"
    PAVG = "PAVG"

    @property
    def is_gap(self) -> bool:
        """True for the two validity gaps, which are differences of rates, not rates."""
        return self in (Metric.VG, Metric.PAVG)

    @property
    def plus_flag(self) -> SuccessFlag:
        """The success flag whose count is the metric's numerator (or the gap's left rate)."""
        return _PLUS[self]

    @property
    def minus_flag(self) -> SuccessFlag | None:
        """For a gap, the flag whose rate is subtracted (always commit-valid); else None."""
        return SuccessFlag.COMMIT_VALID if self.is_gap else None


class SuccessFlag(StrEnum):
    """The three boolean success columns of the `episodes` table."""

    OUTCOME = "outcome_success"
    POLICY_AWARE = "policy_aware_outcome_success"
    COMMIT_VALID = "commit_valid_success"


_PLUS: dict[Metric, SuccessFlag] = {
    Metric.OSR: SuccessFlag.OUTCOME,
    Metric.PAOSR: SuccessFlag.POLICY_AWARE,
    Metric.CVSR: SuccessFlag.COMMIT_VALID,
    Metric.VG: SuccessFlag.OUTCOME,
    Metric.PAVG: SuccessFlag.POLICY_AWARE,
}

RATE_METRICS: tuple[Metric, ...] = (Metric.OSR, Metric.PAOSR, Metric.CVSR)
"""The three single rates; the gaps VG = OSR - CVSR and PAVG = PAOSR - CVSR are derived."""


class IntervalMethod(StrEnum):
    """How a bootstrap interval is read off the resampled statistics."""

    PERCENTILE = "percentile"
    BCA = "bca"
    CLUSTER_T = "cluster_t"
    """Not a bootstrap reading: estimate +/- t(T - 1) x the cluster-robust standard error
    (with the T / (T - 1) correction). Better calibrated than BCa with few tasks."""


class SmallNMethod(StrEnum):
    """Closed-form binomial intervals reported beside the bootstrap for single rates."""

    WILSON = "wilson"
    JEFFREYS = "jeffreys"


class VerdictStatus(StrEnum):
    """Values of `verdicts.status`."""

    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"


CANONICAL_PROFILES: tuple[str, ...] = (
    "direct",
    "policy_gated",
    "commit_guarded",
    "reconciled",
    "full_lifecycle",
)
"""The five baseline profiles in their canonical (capability) order."""

DIMENSIONS: tuple[str, ...] = (
    "intent_grounding",
    "authority_validity",
    "temporal_state_validity",
    "execution_integrity",
    "outcome_recoverability",
)
"""The five validity dimensions in canonical order."""

PRETTY_LABELS: dict[str, str] = {
    "direct": "Direct",
    "policy_gated": "Policy-gated",
    "commit_guarded": "Commit-guarded",
    "reconciled": "Reconciled",
    "full_lifecycle": "Full lifecycle",
    "execution_recovery": "Execution recovery",
    "intent_authority": "Intent & authority",
    "stable_happy_path": "Stable happy path",
    "state_mutation": "State mutation",
    "intent_grounding": "Intent grounding",
    "authority_validity": "Authority validity",
    "temporal_state_validity": "Temporal state validity",
    "execution_integrity": "Execution integrity",
    "outcome_recoverability": "Outcome recoverability",
}
"""The one mapping from table values (profiles, families, dimensions) to figure labels."""


def pretty_label(value: object) -> str:
    """The display label of a table value: :data:`PRETTY_LABELS`, else underscores as spaces.

    >>> pretty_label("policy_gated"), pretty_label("temperature_0.7"), pretty_label(None)
    ('Policy-gated', 'temperature 0.7', 'none')
    """
    if value is None:
        return "none"
    text = str(value)
    return PRETTY_LABELS.get(text, text.replace("_", " "))


SHORT_LABELS: dict[str, str] = {
    "intent_grounding": "Intent",
    "authority_validity": "Authority",
    "temporal_state_validity": "Temporal",
    "execution_integrity": "Execution",
    "outcome_recoverability": "Recovery",
}
"""One-word forms of the validity dimensions, for heatmap columns at column width."""


def short_label(value: object) -> str:
    """A one-word column label where one exists, else :func:`pretty_label`.

    >>> short_label("temporal_state_validity"), short_label("direct")
    ('Temporal', 'Direct')
    """
    return SHORT_LABELS.get(str(value), pretty_label(value))
