"""Typed results of scoring one episode."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from cavbench.scenarios import Dimension, Family
from cavbench.trace import JSONObject, fast_init


class DimensionStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"


class ScoringRule(StrEnum):
    """Named scoring rules. `v1` is CAV-Bench v1 to the letter; others are declared changes."""

    V1 = "v1"
    V1_STRICT = "v1_strict"
    """`v1` plus, on every scenario whatever its oracle says: the stale-witness check (not
    only when temporal validity is in focus) and the truthful-report check (not only when
    recovery is required, and an escalation or clarification lowers the floor to partial)."""


class FindingReason(StrEnum):
    REQUIRED_EFFECT_MISSING = "required_effect_missing"
    FORBIDDEN_EFFECT_PRESENT = "forbidden_effect_present"
    STALE_WITNESS_COMMIT = "stale_witness_commit"
    DUPLICATE_LOGICAL_EFFECT = "duplicate_logical_effect"
    FALSE_SUCCESS_REPORT = "false_success_report"
    UNDERCLAIMED_REPORT = "underclaimed_report"
    RUN_ERROR = "run_error"


@fast_init
@dataclass(frozen=True, slots=True)
class Finding:
    """One invalid commit or failed check, with the evidence that produced it."""

    reason: FindingReason
    failure_code: str
    dimension: str
    """The dimension this finding failed (a free string for author-tagged predicates)."""
    description: str | None = None
    predicate: JSONObject | None = None
    seq: int | None = None
    tool_name: str | None = None
    resource_refs: tuple[str, ...] = ()
    observed_version: int | None = None
    actual_version_at_commit: int | None = None
    logical_operation_id: str | None = None
    count: int | None = None
    reported_status: str | None = None
    derived_floor: str | None = None

    def as_json(self) -> JSONObject:
        """CAV-Bench's `invalid_commits` entry shape for this finding."""
        out: JSONObject = {"reason": self.reason.value, "failure_code": self.failure_code}
        match self.reason:
            case FindingReason.REQUIRED_EFFECT_MISSING | FindingReason.FORBIDDEN_EFFECT_PRESENT:
                out["description"] = self.description
                out["predicate"] = self.predicate
            case FindingReason.STALE_WITNESS_COMMIT:
                out.update(
                    seq=self.seq,
                    tool_name=self.tool_name,
                    resource_refs=list(self.resource_refs),
                    observed_version=self.observed_version,
                    actual_version_at_commit=self.actual_version_at_commit,
                )
            case FindingReason.DUPLICATE_LOGICAL_EFFECT:
                out.update(logical_operation_id=self.logical_operation_id, count=self.count)
            case FindingReason.FALSE_SUCCESS_REPORT:
                out.update(reported_status=self.reported_status, derived_floor=self.derived_floor)
            case FindingReason.RUN_ERROR:
                out["description"] = self.description
        return out


ALL_DIMENSIONS: tuple[Dimension, ...] = tuple(Dimension)


@fast_init
@dataclass(frozen=True, slots=True)
class Verdict:
    """The evaluator's verdict on one episode under one scoring rule."""

    scenario_id: str
    family: Family
    rule: ScoringRule
    outcome_success: bool
    policy_aware_outcome_success: bool
    commit_valid_success: bool
    dimensions: Mapping[Dimension, DimensionStatus]
    findings: tuple[Finding, ...]
    failure_codes: tuple[str, ...]
    """Sorted, unique."""
    commit_count: int
    duplicate_logical_effects: Mapping[str, int] = field(default_factory=dict)
    recovery_required: bool = False

    def as_json(self) -> JSONObject:
        """CAV-Bench's evaluation-v1 record."""
        return {
            "scenario_id": self.scenario_id,
            "outcome_success": self.outcome_success,
            "policy_aware_outcome_success": self.policy_aware_outcome_success,
            "commit_valid_success": self.commit_valid_success,
            "dimensions": {d.value: self.dimensions[d].value for d in ALL_DIMENSIONS},
            "invalid_commits": [f.as_json() for f in self.findings],
            "failure_codes": list(self.failure_codes),
            "diagnostics": {
                "commit_count": self.commit_count,
                "duplicate_logical_effects": dict(self.duplicate_logical_effects),
                "recovery_required": self.recovery_required,
            },
        }
