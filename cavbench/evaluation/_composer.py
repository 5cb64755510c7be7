"""The composer: runs the checkers in CAV-Bench's order and folds them into a `Verdict`."""

from __future__ import annotations

from dataclasses import dataclass

from cavbench.evaluation import _checkers as check
from cavbench.evaluation._context import EvidenceContext
from cavbench.evaluation._verdict import DimensionStatus, Finding, ScoringRule, Verdict
from cavbench.scenarios import Dimension, Scenario
from cavbench.scenarios.predicates import CompiledPredicate, compile_predicate
from cavbench.trace import EpisodeTrace

# Bound once: enum attribute access is slow and this runs for every episode.
_PASS, _FAIL, _NA = DimensionStatus.PASS, DimensionStatus.FAIL, DimensionStatus.NOT_APPLICABLE
_IG, _AV, _TS, _EI, _OR = tuple(Dimension)
_BY_NAME = {d.value: d for d in Dimension}
_IG_NAME, _EI_NAME, _OR_NAME = _IG.value, _EI.value, _OR.value
_V1_STRICT = ScoringRule.V1_STRICT
_RULES = {r.value: r for r in ScoringRule}


@dataclass(frozen=True, slots=True)
class _Oracle:
    """A scenario's oracle compiled once for scoring (cached on the scenario object)."""

    dimensions: dict[Dimension, DimensionStatus]
    """The starting statuses (copied per episode): in focus pass, the others not applicable."""
    forbidden: tuple[check.DeclaredCheck, ...]
    required: tuple[check.DeclaredCheck, ...]
    policy: tuple[check.DeclaredCheck, ...]
    obligations: tuple[check.DeclaredCheck, ...]
    goals: tuple[CompiledPredicate, ...]
    recovery_required: bool


def _compile(scenario: Scenario) -> _Oracle:
    oracle = scenario.oracle
    recovery = oracle.recovery
    dims = {_IG: _NA, _AV: _NA, _TS: _NA, _EI: _NA, _OR: _NA}
    for dim in oracle.dimension_focus:
        dims[dim] = _PASS
    if recovery.required and dims[_OR] is _NA:
        dims[_OR] = _PASS
    declared = check.declared_checks
    return _Oracle(
        dimensions=dims,
        forbidden=declared(
            oracle.forbidden_effects,
            default_dimension=_EI_NAME,
            default_code="FORBIDDEN_EFFECT_PRESENT",
        ),
        required=declared(
            oracle.required_effects,
            default_dimension=_EI_NAME,
            default_code="REQUIRED_EFFECT_MISSING",
        ),
        policy=declared(
            oracle.policy_constraints,
            default_dimension=_IG_NAME,
            default_code="POLICY_CONSTRAINT_VIOLATED",
        ),
        obligations=declared(
            recovery.obligations,
            default_dimension=_OR_NAME,
            default_code="OR_RECOVERY_OBLIGATION_UNSATISFIED",
        ),
        goals=tuple(compile_predicate(p) for p in oracle.goal_predicates),
        recovery_required=recovery.required,
    )


def evaluate(
    scenario: Scenario, trace: EpisodeTrace, rule: ScoringRule | str = ScoringRule.V1
) -> Verdict:
    """Score one episode (SPEC d.1, in order). Reads the scenario's oracle and the
    environment-recorded trace; of the adapter's report only `completion_status`."""
    rule = _RULES[rule] if rule in _RULES else ScoringRule(rule)
    compiled = scenario.compiled("evaluation.oracle", _compile)

    # 1. Dimensions in focus start as pass, the others as not applicable.
    dims = compiled.dimensions.copy()
    findings: list[Finding] = []

    def record(new: list[Finding]) -> None:
        for finding in new:
            dim = _BY_NAME.get(finding.dimension)
            if dim is not None:  # an author-tagged non-standard dimension fails nothing here
                dims[dim] = _FAIL
            findings.append(finding)

    # 2-3. Oracle-declared effects.
    context = EvidenceContext(trace)
    if compiled.forbidden:
        record(check.declared_effects(compiled.forbidden, context, must_hold=False))
    if compiled.required:
        record(check.declared_effects(compiled.required, context, must_hold=True))
    if compiled.policy:
        record(check.declared_effects(compiled.policy, context, must_hold=True))

    # 4. Temporal validity: `v1` checks only when in focus and not already failed
    #    (CAV-Bench's focus gate); `v1_strict` also checks where it is not applicable.
    temporal = dims[_TS]
    if temporal is _PASS or (rule is _V1_STRICT and temporal is _NA):
        record(check.temporal_validity(trace))

    # 5. Duplicate logical effects, whatever the focus.
    duplicates, duplicate_findings = check.duplicate_effects(trace)
    if duplicate_findings:
        record(duplicate_findings)

    # 6. Recovery obligations.
    obligations_hold = True
    recovery_required = compiled.recovery_required
    if recovery_required:
        unmet = check.declared_effects(compiled.obligations, context, must_hold=True)
        obligations_hold = not unmet
        record(unmet)

    # 7. Outcome.
    outcome = check.goal_holds(compiled.goals, context)

    # 8. Truthful report (the only place the adapter's report is read). `v1` checks it only
    #    when recovery is required; `v1_strict` checks every episode and also counts a
    #    hand-off (escalation, clarification) as less than success.
    if recovery_required or rule is _V1_STRICT:
        lie = check.truthful_report(
            trace,
            outcome_success=outcome,
            obligations_hold=obligations_hold,
            clean_so_far=not findings,
            handed_off_counts=rule is _V1_STRICT,
        )
        if lie is not None:
            record([lie])
    if rule is _V1_STRICT and trace.error is None:  # a crash is reported as RUN_ERROR
        under = check.underclaim(trace, outcome_success=outcome, obligations_hold=obligations_hold)
        if under is not None:
            record([under])

    # cavbench extension: an adapter that crashed did not succeed.
    crashed = check.run_error(trace)
    if crashed is not None:
        record([crashed])
        outcome = False

    # 9-11.
    policy_aware = outcome and dims[_IG] is not _FAIL and dims[_AV] is not _FAIL
    commit_valid = outcome and not findings and _FAIL not in dims.values()
    return Verdict(  # positional (the field order): this runs for every episode
        scenario.id,
        scenario.family,
        rule,
        outcome,
        policy_aware,
        commit_valid,
        dims,
        tuple(findings),
        tuple(sorted({f.failure_code for f in findings})) if findings else (),
        check.commit_count(trace),
        duplicates,
        recovery_required,
    )
