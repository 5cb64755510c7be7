"""Scoring: pure checkers, the composer, named scoring rules and metrics.

The evaluator imports no adapter and no runtime (an import contract checks it): it reads
the scenario's oracle and the recorded `EpisodeTrace`, never the adapter's own account.
"""

from cavbench.evaluation._checkers import (
    EI_DUPLICATE_LOGICAL_EFFECT,
    OR_FALSE_SUCCESS_REPORT,
    RUN_ERROR,
    TS_STALE_WITNESS,
)
from cavbench.evaluation._composer import evaluate
from cavbench.evaluation._context import EvidenceContext
from cavbench.evaluation._metrics import Metrics, RateCounts, summarize
from cavbench.evaluation._verdict import (
    ALL_DIMENSIONS,
    DimensionStatus,
    Finding,
    FindingReason,
    ScoringRule,
    Verdict,
)

__all__ = [
    "ALL_DIMENSIONS",
    "EI_DUPLICATE_LOGICAL_EFFECT",
    "OR_FALSE_SUCCESS_REPORT",
    "RUN_ERROR",
    "TS_STALE_WITNESS",
    "DimensionStatus",
    "EvidenceContext",
    "Finding",
    "FindingReason",
    "Metrics",
    "RateCounts",
    "ScoringRule",
    "Verdict",
    "evaluate",
    "summarize",
]
