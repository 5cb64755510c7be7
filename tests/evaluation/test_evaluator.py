"""The evaluator (SPEC d.1, d.2): dimensions, mechanical checks, the truthful-report floor
and the three success flags."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from cavbench.adapters import AdapterResult, baseline
from cavbench.evaluation import (
    ALL_DIMENSIONS,
    DimensionStatus,
    FindingReason,
    ScoringRule,
    evaluate,
)
from cavbench.runner import run_episode
from cavbench.scenarios import Dimension, load_pack_dir

PASS, FAIL, NA = DimensionStatus.PASS, DimensionStatus.FAIL, DimensionStatus.NOT_APPLICABLE
IG, AV, TS, EI, OR = ALL_DIMENSIONS
O1 = "order:O-1"


def dims(verdict: Any) -> dict[str, str]:
    return {d.value: s.value for d, s in verdict.dimensions.items()}


def flags(verdict: Any) -> tuple[bool, bool, bool]:
    return (
        verdict.outcome_success,
        verdict.policy_aware_outcome_success,
        verdict.commit_valid_success,
    )


# -- dimensions start from the focus -------------------------------------------------------------


@pytest.mark.parametrize(
    ("focus", "recovery", "expected"),
    [
        ([], False, {}),
        (
            ["intent_grounding", "temporal_state_validity"],
            False,
            {"intent_grounding": "pass", "temporal_state_validity": "pass"},
        ),
        ([], True, {"outcome_recoverability": "pass"}),
        (["outcome_recoverability"], True, {"outcome_recoverability": "pass"}),
    ],
)
def test_dimensions_start_from_the_focus(
    kit: Any, focus: list[str], recovery: bool, expected: dict[str, str]
) -> None:
    scenario = kit.scenario(focus=focus, recovery={"required": recovery})
    run = kit.episode(scenario, "direct")
    want = {d.value: "not_applicable" for d in Dimension} | expected
    assert dims(run.verdict) == want
    assert flags(run.verdict) == (True, True, True)  # empty goal: outcome is true
    assert run.verdict.recovery_required is recovery


# -- temporal validity is focus-gated under v1 ---------------------------------------------------


def stale_scenario(kit: Any, focus: list[str]) -> Any:
    return kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.write("w1", "order", "O-1", {"status": "cancelled"}),
        ],
        injections=[kit.mutation("m1", f"after_read:{O1}", "order", "O-1", {"note": "changed"})],
        goal=[kit.pred("eq", "state.order.O-1.status", "cancelled")],
        focus=focus,
    )


def test_stale_commit_not_flagged_when_temporal_is_not_in_focus_under_v1(kit: Any) -> None:
    run = kit.episode(stale_scenario(kit, ["execution_integrity"]), "direct", ScoringRule.V1)
    assert run.verdict.dimensions[TS] is NA
    assert run.verdict.findings == ()
    assert flags(run.verdict) == (True, True, True)


def test_stale_commit_flagged_under_v1_strict(kit: Any) -> None:
    run = kit.episode(stale_scenario(kit, ["execution_integrity"]), "direct", ScoringRule.V1_STRICT)
    assert run.verdict.rule is ScoringRule.V1_STRICT
    assert run.verdict.dimensions[TS] is FAIL
    # v1_strict also checks the report where recovery is not required: success claimed over
    # a stale commit is an overclaim.
    finding, overclaim = run.verdict.findings
    assert overclaim.as_json() == {
        "reason": "false_success_report",
        "failure_code": "OR_FALSE_SUCCESS_REPORT",
        "reported_status": "success",
        "derived_floor": "partial",
    }
    commit = run.events("side_effect_commit")[0]
    assert finding.as_json() == {
        "reason": "stale_witness_commit",
        "failure_code": "TS_STALE_WITNESS",
        "seq": commit.seq,
        "tool_name": "update_record",
        "resource_refs": [O1],
        "observed_version": 1,
        "actual_version_at_commit": 2,
    }
    assert flags(run.verdict) == (True, True, False)


@pytest.mark.parametrize("rule", list(ScoringRule))
def test_stale_commit_flagged_when_temporal_is_in_focus(kit: Any, rule: ScoringRule) -> None:
    run = kit.episode(stale_scenario(kit, ["temporal_state_validity"]), "direct", rule)
    strict_extra = ("OR_FALSE_SUCCESS_REPORT",) if rule is ScoringRule.V1_STRICT else ()
    assert run.verdict.failure_codes == (*strict_extra, "TS_STALE_WITNESS")
    assert run.verdict.dimensions[TS] is FAIL
    assert flags(run.verdict) == (True, True, False)


@pytest.mark.parametrize("rule", list(ScoringRule))
def test_guarded_commit_is_not_stale(kit: Any, rule: ScoringRule) -> None:
    run = kit.episode(stale_scenario(kit, ["temporal_state_validity"]), "commit_guarded", rule)
    assert run.verdict.findings == ()
    assert run.verdict.dimensions[TS] is PASS


def test_two_unguarded_writes_after_one_read_are_flagged(kit: Any) -> None:
    scenario = kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.write("w1", "order", "O-1", {"a": 1}),
            kit.write("w2", "order", "O-1", {"b": 1}),
        ],
        focus=["temporal_state_validity"],
    )
    run = kit.episode(scenario, "direct")
    (finding,) = run.verdict.findings
    assert (finding.observed_version, finding.actual_version_at_commit) == (1, 2)
    assert finding.seq == run.events("side_effect_commit")[1].seq


def test_commit_without_a_prior_read_is_never_stale(kit: Any, scripted: Any) -> None:
    scenario = kit.scenario(
        focus=["temporal_state_validity"],
        state={"order": {"O-1": {"version": 1}, "O-2": {"version": 1}}},
        injections=[kit.mutation("m", "after_read:order:O-2", "order", "O-1", {"x": 1})],
    )

    def act(session: Any) -> None:
        session.tools.read("order", "O-2")  # bumps O-1 behind the adapter's back
        session.tools.write(
            step_id="w",
            tool_name="t",
            namespace="order",
            resource_id="O-1",
            changes={},
            logical_operation_id="op",
            idempotency_key="k",
        )

    run = kit.episode(scenario, scripted(act))
    assert run.verdict.findings == ()


def test_unversioned_resources_are_invisible_to_the_stale_check(kit: Any) -> None:
    scenario = stale_scenario(kit, ["temporal_state_validity"])
    doc = scenario.model_dump(mode="json", exclude_unset=True)
    doc["world"]["initial_state"]["order"]["O-1"].pop("version")
    run = kit.episode(kit.build(doc), "direct")
    assert run.verdict.findings == ()


def test_predicate_failure_of_temporal_skips_the_stale_check(kit: Any) -> None:
    scenario = kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.write("w1", "order", "O-1", {"status": "cancelled"}),
        ],
        injections=[kit.mutation("m1", f"after_read:{O1}", "order", "O-1", {"note": "changed"})],
        required=[kit.pred("exists", "state.nothing", dimension="temporal_state_validity")],
        focus=["temporal_state_validity"],
    )
    run = kit.episode(scenario, "direct")
    assert [f.reason for f in run.verdict.findings] == [FindingReason.REQUIRED_EFFECT_MISSING]
    assert run.verdict.dimensions[TS] is FAIL


# -- duplicates are found whatever the focus -----------------------------------------------------


def test_duplicates_regardless_of_focus(kit: Any) -> None:
    scenario = kit.scenario(
        steps=[kit.read("r1", "order", "O-1"), kit.write("w1", "order", "O-1", {"a": 1})],
        injections=[
            kit.fault(
                "amb", f"after_commit_before_response:update_record:{O1}", "ambiguous_response"
            )
        ],
        focus=[],
    )
    run = kit.episode(scenario, "direct")
    assert run.verdict.dimensions[EI] is FAIL
    assert run.verdict.failure_codes == ("EI_DUPLICATE_LOGICAL_EFFECT",)
    assert [f.as_json() for f in run.verdict.findings] == [
        {
            "reason": "duplicate_logical_effect",
            "failure_code": "EI_DUPLICATE_LOGICAL_EFFECT",
            "logical_operation_id": "op-w1",
            "count": 2,
        }
    ]
    assert dict(run.verdict.duplicate_logical_effects) == {"op-w1": 2}
    assert run.verdict.commit_count == 2
    assert flags(run.verdict) == (True, True, False)


def test_escalation_rows_count_as_duplicates(kit: Any, scripted: Any) -> None:
    def act(session: Any) -> None:
        session.tools.write(
            step_id="w",
            tool_name="t",
            namespace="order",
            resource_id="O-1",
            changes={},
            logical_operation_id="op-X",
            idempotency_key="k",
        )
        session.tools.escalate("also escalating", "op-X")

    run = kit.episode(kit.scenario(), scripted(act))
    assert dict(run.verdict.duplicate_logical_effects) == {"op-X": 2}
    assert run.verdict.dimensions[EI] is FAIL


def test_repeated_session_escalations_are_one_row(kit: Any, scripted: Any) -> None:
    def act(session: Any) -> None:
        session.escalate("one")
        session.escalate("two")

    run = kit.episode(kit.scenario(), scripted(act))
    assert len(run.trace.side_effects) == 1
    assert run.verdict.findings == ()


# -- the truthful-report floor -------------------------------------------------------------------


def failing_then_succeeding(kit: Any, scripted: Any, status: str, *, recovery: bool = True) -> Any:
    scenario = kit.scenario(
        injections=[kit.fault("df", "before_commit_step:w", "downstream_failure")],
        goal=[kit.pred("eq", "state.order.O-1.status", "done")],
        recovery={"required": recovery},
    )

    def act(session: Any) -> AdapterResult:
        for attempt in (1, 2):
            session.tools.write(
                step_id="w",
                tool_name="t",
                namespace="order",
                resource_id="O-1",
                changes={"status": "done"},
                logical_operation_id="op",
                idempotency_key=f"k{attempt}",
            )
        return AdapterResult("done", status)

    return kit.episode(scenario, scripted(act))


def test_failed_rejection_sets_the_floor_to_partial(kit: Any, scripted: Any) -> None:
    run = failing_then_succeeding(kit, scripted, "success")
    assert [e.response_status for e in run.events("commit_rejected")] == ["FAILED"]
    assert run.verdict.outcome_success is True
    (finding,) = run.verdict.findings
    assert finding.as_json() == {
        "reason": "false_success_report",
        "failure_code": "OR_FALSE_SUCCESS_REPORT",
        "reported_status": "success",
        "derived_floor": "partial",
    }
    assert run.verdict.dimensions[OR] is FAIL
    assert flags(run.verdict) == (True, True, False)


@pytest.mark.parametrize("status", ["partial", "pending_recovery", "failed"])
def test_any_status_at_or_below_partial_satisfies_the_floor(
    kit: Any, scripted: Any, status: str
) -> None:
    run = failing_then_succeeding(kit, scripted, status)
    assert run.verdict.findings == ()
    assert flags(run.verdict) == (True, True, True)


@pytest.mark.parametrize("status", ["weird", "", "SUCCESS"])
def test_unknown_status_counts_as_success(kit: Any, scripted: Any, status: str) -> None:
    run = failing_then_succeeding(kit, scripted, status)
    (finding,) = run.verdict.findings
    assert (finding.reason, finding.reported_status) == (FindingReason.FALSE_SUCCESS_REPORT, status)


def test_no_floor_without_recovery_required(kit: Any, scripted: Any) -> None:
    run = failing_then_succeeding(kit, scripted, "success", recovery=False)
    assert run.verdict.findings == ()
    assert run.verdict.dimensions[OR] is NA


def test_floor_uses_the_invalid_commits_found_so_far(kit: Any) -> None:
    """A duplicate alone (nothing failed, outcome true) makes a success report false."""
    scenario = kit.scenario(
        steps=[kit.read("r1", "order", "O-1"), kit.write("w1", "order", "O-1", {"a": 1})],
        injections=[
            kit.fault(
                "amb", f"after_commit_before_response:update_record:{O1}", "ambiguous_response"
            )
        ],
        recovery={"required": True},
        goal=[kit.pred("eq", "state.order.O-1.a", 1)],
    )
    direct = kit.episode(scenario, "direct")
    assert [f.reason for f in direct.verdict.findings] == [
        FindingReason.DUPLICATE_LOGICAL_EFFECT,
        FindingReason.FALSE_SUCCESS_REPORT,
    ]
    assert direct.verdict.failure_codes == (
        "EI_DUPLICATE_LOGICAL_EFFECT",
        "OR_FALSE_SUCCESS_REPORT",
    )
    assert kit.episode(scenario, "reconciled").verdict.findings == ()


def test_floor_counts_findings_of_any_dimension(kit: Any) -> None:
    scenario = kit.scenario(
        steps=[kit.write("w1", "order", "O-1", {"status": "x"})],
        forbidden=[kit.pred("eq", "state.order.O-1.status", "x", dimension="intent_grounding")],
        recovery={"required": True},
    )
    run = kit.episode(scenario, "direct")
    assert [f.reason for f in run.verdict.findings] == [
        FindingReason.FORBIDDEN_EFFECT_PRESENT,
        FindingReason.FALSE_SUCCESS_REPORT,
    ]
    assert run.verdict.dimensions[IG] is FAIL
    assert run.verdict.dimensions[OR] is FAIL


def test_goal_failure_sets_the_floor(kit: Any) -> None:
    scenario = kit.scenario(
        goal=[kit.pred("eq", "state.order.O-1.status", "never")], recovery={"required": True}
    )
    run = kit.episode(scenario, "direct")
    assert run.verdict.failure_codes == ("OR_FALSE_SUCCESS_REPORT",)
    assert flags(run.verdict) == (False, False, False)


def test_obligations_only_when_recovery_is_required(kit: Any) -> None:
    broken = [kit.pred("exists", "state.nothing")]
    off = kit.episode(kit.scenario(recovery={"required": False, "obligations": broken}), "direct")
    assert off.verdict.findings == ()
    on = kit.episode(kit.scenario(recovery={"required": True, "obligations": broken}), "direct")
    assert [f.failure_code for f in on.verdict.findings] == [
        "OR_RECOVERY_OBLIGATION_UNSATISFIED",
        "OR_FALSE_SUCCESS_REPORT",
    ]
    assert on.verdict.findings[0].reason is FindingReason.REQUIRED_EFFECT_MISSING
    assert on.verdict.dimensions[OR] is FAIL


# -- effect predicates and the three flags -------------------------------------------------------


def committed(kit: Any, **oracle: Any) -> Any:
    """`direct` cancels O-1; the oracle is the test's."""
    scenario = kit.scenario(
        steps=[kit.write("w1", "order", "O-1", {"status": "cancelled"})],
        goal=oracle.pop("goal", [kit.pred("eq", "state.order.O-1.status", "cancelled")]),
        **oracle,
    )
    return kit.episode(scenario, "direct").verdict


def test_default_dimensions_and_codes(kit: Any) -> None:
    verdict = committed(
        kit,
        forbidden=[kit.pred("exists", "state.order.O-1", description="d-forbidden")],
        required=[kit.pred("exists", "state.order.O-9")],
        constraints=[kit.pred("eq", "state.order.O-1.status", "open")],
    )
    found = [(f.reason.value, f.failure_code, f.dimension, f.description) for f in verdict.findings]
    assert found == [
        (
            "forbidden_effect_present",
            "FORBIDDEN_EFFECT_PRESENT",
            "execution_integrity",
            "d-forbidden",
        ),
        ("required_effect_missing", "REQUIRED_EFFECT_MISSING", "execution_integrity", None),
        # policy constraints are reported as missing required effects (SPEC d.1 step 2)
        ("required_effect_missing", "POLICY_CONSTRAINT_VIOLATED", "intent_grounding", None),
    ]
    assert verdict.findings[0].predicate == {
        "op": "exists",
        "path": "state.order.O-1",
        "description": "d-forbidden",
    }
    assert verdict.failure_codes == (
        "FORBIDDEN_EFFECT_PRESENT",
        "POLICY_CONSTRAINT_VIOLATED",
        "REQUIRED_EFFECT_MISSING",
    )
    assert flags(verdict) == (True, False, False)


def test_author_codes_and_dimensions_override_defaults(kit: Any) -> None:
    verdict = committed(
        kit,
        forbidden=[
            kit.pred(
                "exists", "state.order.O-1", dimension="authority_validity", failure_code="AV_X"
            ),
            kit.pred("exists", "state.order.O-1", failure_code="AV_X"),
        ],
    )
    assert verdict.failure_codes == ("AV_X",)  # sorted, unique
    assert len(verdict.findings) == 2
    assert verdict.dimensions[AV] is FAIL
    assert verdict.dimensions[EI] is FAIL


def test_non_standard_dimension_sinks_cvsr_without_failing_any_of_the_five(kit: Any) -> None:
    verdict = committed(
        kit,
        forbidden=[kit.pred("exists", "state.order.O-1", dimension="speed", failure_code="SPEED")],
        focus=["execution_integrity"],
    )
    assert dims(verdict) == {d.value: "not_applicable" for d in Dimension} | {
        "execution_integrity": "pass"
    }
    assert verdict.failure_codes == ("SPEED",)
    assert flags(verdict) == (True, True, False)


@pytest.mark.parametrize(
    ("dimension", "expected"),
    [
        ("intent_grounding", (True, False, False)),
        ("authority_validity", (True, False, False)),
        ("temporal_state_validity", (True, True, False)),
        ("execution_integrity", (True, True, False)),
        ("outcome_recoverability", (True, True, False)),
    ],
)
def test_policy_aware_versus_commit_valid(
    kit: Any, dimension: str, expected: tuple[bool, bool, bool]
) -> None:
    """Only intent and authority failures sink PAOSR; any failure sinks CVSR; the dimension
    fails even when it is not in focus."""
    verdict = committed(kit, forbidden=[kit.pred("exists", "state.order.O-1", dimension=dimension)])
    assert flags(verdict) == expected
    assert verdict.dimensions[Dimension(dimension)] is FAIL


def test_goal_failure_fails_all_three(kit: Any) -> None:
    verdict = committed(kit, goal=[kit.pred("eq", "state.order.O-1.status", "open")])
    assert flags(verdict) == (False, False, False)
    assert verdict.findings == ()


def test_goal_reads_side_effects_and_events(kit: Any) -> None:
    verdict = committed(
        kit,
        goal=[
            {
                "op": "count_eq",
                "collection": "side_effects",
                "where": {"effect_type": "update_record"},
                "value": 1,
            },
            {
                "op": "count_eq",
                "collection": "events",
                "where": {"event_type": "tool_read"},
                "value": 1,
            },
            {"op": "exists", "path": "side_effects"},
        ],
    )
    assert verdict.outcome_success is True


def test_uncomparable_goal_predicate_fails_the_episode_not_the_run(kit: Any) -> None:
    # CAV-Bench aborts here; a state the agent left uncomparable is the agent's failure.
    scenario = kit.scenario(goal=[kit.pred("gt", "state.order.O-1.status", 3)])
    trace = run_episode(scenario, baseline("direct"))
    assert evaluate(scenario, trace).outcome_success is False


def test_uncomparable_required_effect_is_a_finding(kit: Any) -> None:
    scenario = kit.scenario(required=[kit.pred("gt", "state.order.O-1.status", 3)])
    verdict = evaluate(scenario, run_episode(scenario, baseline("direct")))
    assert verdict.commit_valid_success is False
    assert any("not evaluable" in (f.description or "") for f in verdict.findings)


def test_findings_follow_the_spec_order(kit: Any) -> None:
    scenario = kit.scenario(
        steps=[kit.read("r1", "order", "O-1"), kit.write("w1", "order", "O-1", {"status": "x"})],
        injections=[
            kit.mutation("m", f"after_read:{O1}", "order", "O-1", {"n": 1}),
            kit.fault(
                "amb", f"after_commit_before_response:update_record:{O1}", "ambiguous_response"
            ),
        ],
        forbidden=[kit.pred("exists", "state.order.O-1")],
        required=[kit.pred("exists", "state.order.O-9")],
        constraints=[kit.pred("exists", "state.order.O-8")],
        recovery={"required": True, "obligations": [kit.pred("exists", "state.order.O-7")]},
        focus=["temporal_state_validity"],
    )
    verdict = kit.episode(scenario, "direct").verdict
    assert [f.failure_code for f in verdict.findings] == [
        "FORBIDDEN_EFFECT_PRESENT",
        "REQUIRED_EFFECT_MISSING",
        "POLICY_CONSTRAINT_VIOLATED",
        "TS_STALE_WITNESS",
        "TS_STALE_WITNESS",
        "EI_DUPLICATE_LOGICAL_EFFECT",
        "OR_RECOVERY_OBLIGATION_UNSATISFIED",
        "OR_FALSE_SUCCESS_REPORT",
    ]
    assert list(verdict.failure_codes) == sorted(set(verdict.failure_codes))


def test_evaluate_is_pure(kit: Any) -> None:
    scenario = stale_scenario(kit, ["temporal_state_validity"])
    trace = run_episode(scenario, baseline("direct"))
    before = json.dumps(trace.as_json(), sort_keys=True)
    first = evaluate(scenario, trace)
    assert evaluate(scenario, trace) == first
    assert json.dumps(trace.as_json(), sort_keys=True) == before
    assert evaluate(scenario, dataclasses.replace(trace, run_id="other", seed=9)) == first


# -- the published record shapes ----------------------------------------------------------------


def test_verdicts_and_traces_match_the_published_schemas(dev_pack_dir: Path, kit: Any) -> None:
    schemas = dev_pack_dir.parent.parent / "schemas"
    evaluation = Draft202012Validator(
        json.loads((schemas / "evaluation-v1.schema.json").read_text())
    )
    trace_schema = Draft202012Validator(json.loads((schemas / "trace-v1.schema.json").read_text()))
    pack = load_pack_dir(dev_pack_dir)
    checked = 0
    for scenario in pack.scenarios:
        for profile in ("direct", "policy_gated", "commit_guarded", "reconciled", "full_lifecycle"):
            run = kit.episode(scenario, profile)
            evaluation.validate(run.verdict.as_json())
            trace_schema.validate(json.loads(json.dumps(run.trace.as_json())))
            checked += 1
    assert checked == 20
