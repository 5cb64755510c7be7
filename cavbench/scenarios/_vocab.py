"""Closed vocabularies of the scenario-v1 format."""

from __future__ import annotations

from enum import StrEnum


class Family(StrEnum):
    STABLE_HAPPY_PATH = "stable_happy_path"
    STATE_MUTATION = "state_mutation"
    INTENT_AUTHORITY = "intent_authority"
    EXECUTION_RECOVERY = "execution_recovery"


class Dimension(StrEnum):
    """The five validity dimensions, in canonical order."""

    INTENT_GROUNDING = "intent_grounding"
    AUTHORITY_VALIDITY = "authority_validity"
    TEMPORAL_STATE_VALIDITY = "temporal_state_validity"
    EXECUTION_INTEGRITY = "execution_integrity"
    OUTCOME_RECOVERABILITY = "outcome_recoverability"


class StepKind(StrEnum):
    READ = "read"
    WRITE = "write"
    ESCALATE = "escalate"
    CLARIFY = "clarify"
    STATUS_CHECK = "status_check"
    COMPENSATE = "compensate"
    RESPOND = "respond"


class Trigger(StrEnum):
    ALWAYS = "always"
    ON_DEPENDENCY_SUCCESS = "on_dependency_success"
    ON_DEPENDENCY_FAILURE = "on_dependency_failure"


class OnFailure(StrEnum):
    COMPENSATE = "compensate"
    ESCALATE = "escalate"
    REPORT_PARTIAL = "report_partial"


class OnBlock(StrEnum):
    REFUSE = "refuse"
    ESCALATE = "escalate"
    CLARIFY = "clarify"
    RESPOND_ONLY = "respond_only"


class PreconditionScope(StrEnum):
    GATE = "gate"
    ALWAYS = "always"


class FaultMode(StrEnum):
    EXTERNAL_MUTATION = "external_mutation"
    AMBIGUOUS_RESPONSE = "ambiguous_response"
    DOWNSTREAM_FAILURE = "downstream_failure"
    COMPENSATION_FAILURE = "compensation_failure"


class PredicateOp(StrEnum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LTE = "lte"
    GT = "gt"
    GTE = "gte"
    IN = "in"
    NOT_IN = "not_in"
    EXISTS = "exists"
    NOT_EXISTS = "not_exists"
    COUNT_EQ = "count_eq"
    COUNT_LTE = "count_lte"
    COUNT_GTE = "count_gte"
    ALL = "all"
    ANY = "any"
    NOT = "not"
