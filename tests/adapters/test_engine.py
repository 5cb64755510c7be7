"""The capability-parameterised baseline engine: each decision of SPEC c on a small
purpose-built scenario."""

from __future__ import annotations

from typing import Any

import pytest

from cavbench.adapters import (
    BASELINE_PROFILES,
    PROFILE_CAPABILITIES,
    Capabilities,
    ExecutionAdapter,
    Profile,
    baseline,
)

ALL = [p.value for p in Profile]
LOWER = ALL[:4]
GATED = ALL[1:]
UNGATED = ALL[:1]
GUARDED = ALL[2:]
UNGUARDED = ALL[:2]
RECONCILING = ALL[3:]
O1 = "order:O-1"

MESSAGES = {
    "success": "Request completed.",
    "partial": "Request partially completed; see diagnostics for unresolved items.",
    "pending_recovery": "Request could not be fully completed; escalated for manual recovery.",
}


def refs(run: Any, event_type: str) -> list[str]:
    return [e.resource_refs[0] for e in run.events(event_type)]


def reasons(run: Any, event_type: str = "escalation") -> list[str]:
    if event_type == "clarification":
        return [e.metadata["question"] for e in run.events(event_type)]
    return [e.args["reason"] for e in run.events(event_type)]


# -- profiles ----------------------------------------------------------------------------------


def test_profiles_in_canonical_order_with_their_capabilities() -> None:
    assert [p.value for p in BASELINE_PROFILES] == [
        "direct",
        "policy_gated",
        "commit_guarded",
        "reconciled",
        "full_lifecycle",
    ]
    table = {p.value: PROFILE_CAPABILITIES[p] for p in BASELINE_PROFILES}
    assert table == {
        "direct": Capabilities(False, False, False, False),
        "policy_gated": Capabilities(True, False, False, False),
        "commit_guarded": Capabilities(True, True, False, False),
        "reconciled": Capabilities(True, True, True, False),
        "full_lifecycle": Capabilities(True, True, True, True),
    }


@pytest.mark.parametrize("profile", ALL)
def test_baseline_adapter_identity(profile: str) -> None:
    adapter = baseline(profile)
    assert isinstance(adapter, ExecutionAdapter)
    assert (adapter.name, adapter.version) == (profile, "1.0.0")
    assert baseline(Profile(profile)) == adapter


def test_unknown_profile_is_rejected() -> None:
    with pytest.raises(ValueError, match="nope"):
        baseline("nope")


# -- reads ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ALL)
def test_reads_are_cached(kit: Any, profile: str) -> None:
    scenario = kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.read("r2", "order", "O-1"),
            kit.write("w1", "order", "O-1", {"status": "x"}),
        ]
    )
    run = kit.episode(scenario, profile)
    assert refs(run, "tool_read") == [O1]
    assert len(run.events("side_effect_commit")) == 1


@pytest.mark.parametrize("profile", ALL)
def test_a_write_without_a_read_step_reads_once(kit: Any, profile: str) -> None:
    run = kit.episode(kit.scenario(steps=[kit.write("w1", "order", "O-1", {"a": 1})]), profile)
    assert run.event_types()[1:] == ["tool_read", "tool_call_attempt", "side_effect_commit"]


def after_read_hazard(kit: Any, **write_extra: Any) -> Any:
    return kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.write("w1", "order", "O-1", {"a": 1}, **write_extra),
        ],
        injections=[kit.mutation("m1", f"after_read:{O1}", "order", "O-1", {"status": "held"})],
    )


@pytest.mark.parametrize("profile", UNGUARDED)
def test_unguarded_profiles_commit_on_the_cached_witness(kit: Any, profile: str) -> None:
    run = kit.episode(after_read_hazard(kit), profile)
    assert run.event_types()[1:] == [
        "tool_read",
        "external_mutation",
        "tool_call_attempt",
        "side_effect_commit",
    ]
    assert dict(run.events("side_effect_commit")[0].versions_before) == {O1: 2}
    assert run.keys_committed() == ["T-01:op-w1:attempt1"]


@pytest.mark.parametrize("profile", GUARDED)
def test_guarded_profiles_conflict_then_read_fresh_and_retry(kit: Any, profile: str) -> None:
    run = kit.episode(after_read_hazard(kit), profile)
    assert run.event_types()[1:] == [
        "tool_read",
        "external_mutation",
        "tool_call_attempt",
        "commit_rejected",
        "tool_read",
        "tool_call_attempt",
        "side_effect_commit",
    ]
    conflict = run.events("commit_rejected")[0]
    assert conflict.response_status == "CONFLICT"
    assert conflict.metadata == {"expected_version": 1, "actual_version": 2}
    stable = profile in RECONCILING
    assert run.keys_committed() == ["T-01:op-w1" if stable else "T-01:op-w1:attempt2"]


@pytest.mark.parametrize("profile", GUARDED)
def test_own_commits_do_not_refresh_the_cache(kit: Any, profile: str) -> None:
    scenario = kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.write("w1", "order", "O-1", {"a": 1}),
            kit.write("w2", "order", "O-1", {"b": 1}),
        ]
    )
    run = kit.episode(scenario, profile)
    (conflict,) = run.events("commit_rejected")
    assert conflict.metadata == {"expected_version": 1, "actual_version": 2}
    assert conflict.logical_operation_id == "op-w2"
    assert len(run.events("side_effect_commit")) == 2
    assert run.trace.final_state["order"]["O-1"]["version"] == 3


# -- the universal no-op check -------------------------------------------------------------------


@pytest.mark.parametrize("profile", ALL)
def test_universal_noop_check_skips_under_every_profile(kit: Any, profile: str) -> None:
    scenario = kit.scenario(
        policy={"on_block": "escalate"},
        steps=[
            kit.write(
                "w1",
                "order",
                "O-1",
                {"status": "closed"},
                precondition=kit.pred("eq", "status", "closed"),
                precondition_scope="always",
            ),
            kit.write(
                "w2", "order", "O-2", {"x": 1}, depends_on="w1", trigger="on_dependency_failure"
            ),
        ],
        state={"order": {"O-1": {"status": "open", "version": 1}, "O-2": {"version": 1}}},
    )
    run = kit.episode(scenario, profile)
    assert run.notes == ["w1 is a no-op given current state; skipping"]
    assert refs(run, "tool_call_attempt") == ["order:O-2"]  # w1 blocked, so w2 runs
    assert run.events("escalation") == []
    assert run.status == "success"


@pytest.mark.parametrize("profile", ALL)
def test_universal_check_that_holds_lets_the_write_through(kit: Any, profile: str) -> None:
    scenario = kit.scenario(
        steps=[
            kit.write(
                "w1",
                "order",
                "O-1",
                {"status": "closed"},
                precondition=kit.pred("eq", "status", "open"),
                precondition_scope="always",
            )
        ]
    )
    assert kit.episode(scenario, profile).keys_committed() != []


# -- the gate ------------------------------------------------------------------------------------

GATE_ORDER = [
    "ambiguous_reference",
    "intent_mismatch",
    "precondition_failed",
    "scope_violation",
    "authority_violation",
    "tenant_violation",
    "delegation_limit",
]


def gate_scenario(kit: Any, fixed: int) -> Any:
    """A write violating every gate check; the first `fixed` reasons are repaired."""
    policy: dict[str, Any] = {
        "ambiguous_reference": fixed < 1,
        "requested_intent": ["refund"] if fixed < 2 else ["cancel"],
        "allowed_scope": {"max_amount": 100 if fixed < 4 else 1000},
    }
    resource = {
        "status": "closed" if fixed < 3 else "open",
        "owner": "someone_else" if fixed < 5 else "self",
        "tenant": "t-2" if fixed < 6 else "t-1",
        "version": 1,
    }
    principal = {
        "principal_id": "p-1",
        "tenant_id": "t-1",
        "delegation": {"max_amount": 50 if fixed < 7 else 1000},
    }
    write = kit.write(
        "w1",
        "order",
        "O-1",
        {"status": "cancelled"},
        action_category="cancel",
        action_amount=500,
        precondition=kit.pred("eq", "status", "open"),
    )
    return kit.scenario(
        steps=[write], policy=policy, principal=principal, state={"order": {"O-1": resource}}
    )


@pytest.mark.parametrize("fixed", range(len(GATE_ORDER)))
def test_gate_reasons_in_order(kit: Any, fixed: int) -> None:
    scenario = gate_scenario(kit, fixed)
    gated = kit.episode(scenario, "policy_gated")
    assert gated.notes == [f"w1 blocked: {GATE_ORDER[fixed]}"]
    assert gated.events("tool_call_attempt") == []
    assert kit.episode(scenario, "direct").keys_committed() == ["T-01:op-w1:attempt1"]


@pytest.mark.parametrize("profile", GATED)
def test_gate_passes_when_nothing_is_wrong(kit: Any, profile: str) -> None:
    run = kit.episode(gate_scenario(kit, len(GATE_ORDER)), profile)
    assert run.notes == []
    assert len(run.events("side_effect_commit")) == 1


@pytest.mark.parametrize(
    ("policy", "step", "resource", "blocked"),
    [
        pytest.param(
            {"requested_intent": []}, {"action_category": "x"}, {}, False, id="no-intent-list"
        ),
        pytest.param({"requested_intent": ["x"]}, {}, {}, False, id="no-category"),
        pytest.param(
            {"allowed_scope": {"item_ids": ["I-1", "I-2"]}},
            {"action_scope": {"item_ids": ["I-1", "I-3"]}},
            {},
            True,
            id="items-not-subset",
        ),
        pytest.param(
            {"allowed_scope": {"item_ids": ["I-1", "I-2"]}},
            {"action_scope": {"item_ids": ["I-2"]}},
            {},
            False,
            id="items-subset",
        ),
        pytest.param({}, {"action_scope": {"item_ids": ["I-9"]}}, {}, False, id="no-allowed-items"),
        pytest.param(
            {"allowed_scope": {"max_amount": 10}},
            {"action_amount": 10},
            {},
            False,
            id="amount-equal",
        ),
        pytest.param(
            {"allowed_scope": {"max_amount": 10}},
            {"action_amount": 10.5},
            {},
            True,
            id="amount-over",
        ),
        pytest.param({}, {}, {"owner": "self", "tenant": "t-1"}, False, id="own-resource"),
        pytest.param(
            {},
            {
                "precondition": {"op": "eq", "path": "status", "value": "x"},
                "precondition_scope": "always",
            },
            {"status": "x"},
            False,
            id="always-precondition-not-gated",
        ),
    ],
)
def test_gate_details(
    kit: Any, policy: dict[str, Any], step: dict[str, Any], resource: dict[str, Any], blocked: bool
) -> None:
    scenario = kit.scenario(
        policy=policy,
        steps=[kit.write("w1", "order", "O-1", {"a": 1}, **step)],
        state={"order": {"O-1": {"status": "open", "version": 1, **resource}}},
    )
    run = kit.episode(scenario, "policy_gated")
    assert (run.events("side_effect_commit") == []) is blocked


@pytest.mark.parametrize("profile", UNGATED)
def test_ungated_profile_ignores_gate_preconditions(kit: Any, profile: str) -> None:
    scenario = kit.scenario(
        steps=[
            kit.write("w1", "order", "O-1", {"a": 1}, precondition=kit.pred("eq", "status", "x"))
        ]
    )
    assert len(kit.episode(scenario, profile).events("side_effect_commit")) == 1


# -- narrowed steps ------------------------------------------------------------------------------


def narrowed_scenario(kit: Any) -> Any:
    narrowed = kit.write(
        "w1n", "order", "O-2", {"status": "partly"}, action_category="cancel", op="op-narrow"
    )
    return kit.scenario(
        policy={"requested_intent": ["cancel_item"]},
        state={
            "order": {
                "O-1": {"status": "open", "version": 1},
                "O-2": {"status": "open", "owner": "someone_else", "version": 4},
                "O-3": {"version": 1},
            }
        },
        steps=[
            kit.read("r0", "order", "O-2"),
            kit.read("r1", "order", "O-1"),
            kit.write(
                "w1",
                "order",
                "O-1",
                {"status": "cancelled"},
                action_category="cancel",
                narrowed=narrowed,
            ),
            kit.write(
                "w2", "order", "O-3", {"after": 1}, depends_on="w1", trigger="on_dependency_success"
            ),
        ],
        injections=[
            kit.mutation("m-r0", "after_read:order:O-2", "order", "O-2", {"touched": True}),
            kit.mutation("m-w1n", "before_commit_step:w1n", "order", "O-3", {"seen": "w1n"}),
            kit.fault("df-w1", "before_commit_step:w1", "downstream_failure"),
        ],
    )


@pytest.mark.parametrize("profile", GATED)
def test_narrowed_step_acts_after_a_fresh_read_without_regating(kit: Any, profile: str) -> None:
    run = kit.episode(narrowed_scenario(kit), profile)
    assert refs(run, "tool_read") == ["order:O-2", O1, "order:O-2", "order:O-3"]
    assert run.events("commit_rejected") == []  # fresh version 5, not the cached 4
    commits = run.events("side_effect_commit")
    assert [(c.resource_refs[0], c.logical_operation_id) for c in commits] == [
        ("order:O-2", "op-narrow"),
        ("order:O-3", "op-w2"),  # the status was recorded under w1: committed
    ]
    assert [e.fault_id for e in run.events("external_mutation")] == ["m-r0", "m-w1n"]
    assert run.events("fault") == []  # the hook of the original step id never fired
    assert run.notes == []


def test_direct_commits_the_original_step(kit: Any) -> None:
    run = kit.episode(narrowed_scenario(kit), "direct")
    assert run.events("commit_rejected")[0].response_status == "FAILED"  # w1's own hook
    assert "order:O-2" not in refs(run, "side_effect_commit")


# -- block behaviour -----------------------------------------------------------------------------


@pytest.mark.parametrize("on_block", ["refuse", "respond_only", "escalate", "clarify"])
@pytest.mark.parametrize("profile", GATED)
def test_on_block(kit: Any, profile: str, on_block: str) -> None:
    scenario = kit.scenario(
        policy={"requested_intent": ["refund"], "on_block": on_block},
        steps=[kit.write("w1", "order", "O-1", {"a": 1}, action_category="cancel")],
    )
    run = kit.episode(scenario, profile)
    assert run.notes == ["w1 blocked: intent_mismatch"]
    assert run.events("tool_call_attempt") == []
    expected_status = {"escalate": "pending_recovery", "clarify": "partial"}.get(
        on_block, "success"
    )
    assert run.status == expected_status
    assert run.trace.adapter_report.final_message == MESSAGES[expected_status]
    if on_block == "escalate":
        assert reasons(run) == ["w1 blocked (intent_mismatch); requires approval"]
        assert run.events("escalation")[0].logical_operation_id == "escalate:T-01"
    else:
        assert run.events("escalation") == []
    if on_block == "clarify":
        assert reasons(run, "clarification") == [
            "w1 is ambiguous (intent_mismatch); please clarify"
        ]
    else:
        assert run.events("clarification") == []


# -- the commit loop -----------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ALL)
def test_guard_conflict_reread_stale_blocked(kit: Any, profile: str) -> None:
    scenario = kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.write(
                "w1",
                "order",
                "O-1",
                {"status": "cancelled"},
                precondition=kit.pred("eq", "status", "open"),
            ),
            kit.write(
                "w2", "order", "O-2", {"x": 1}, depends_on="w1", trigger="on_dependency_failure"
            ),
        ],
        state={"order": {"O-1": {"status": "open", "version": 1}, "O-2": {"version": 1}}},
        injections=[kit.mutation("m1", f"after_read:{O1}", "order", "O-1", {"status": "shipped"})],
    )
    run = kit.episode(scenario, profile)
    if profile in GUARDED:
        assert run.notes == ["w1 precondition false at commit time; not retried"]
        assert run.events("side_effect_commit") == []
        assert [e.response_status for e in run.events("commit_rejected")] == ["CONFLICT"]
        assert refs(run, "tool_read") == [O1, O1]
        assert run.status == "success"  # stale_blocked does not downgrade
    else:  # the policy gate checks the cached, pre-mutation value
        assert refs(run, "side_effect_commit") == [O1]
        assert run.trace.final_state["order"]["O-1"]["status"] == "cancelled"
    assert "order:O-2" not in refs(run, "tool_call_attempt")  # stale_blocked is not a failure


def ambiguous_scenario(kit: Any) -> Any:
    return kit.scenario(
        steps=[kit.read("r1", "order", "O-1"), kit.write("w1", "order", "O-1", {"a": 1})],
        injections=[
            kit.fault(
                "amb", f"after_commit_before_response:update_record:{O1}", "ambiguous_response"
            )
        ],
    )


@pytest.mark.parametrize("profile", UNGUARDED)
def test_ambiguous_without_reconciliation_recommits_under_attempt2(kit: Any, profile: str) -> None:
    run = kit.episode(ambiguous_scenario(kit), profile)
    assert run.keys_committed() == ["T-01:op-w1:attempt1", "T-01:op-w1:attempt2"]
    assert run.events("operation_status_read") == []
    assert run.verdict.duplicate_logical_effects == {"op-w1": 2}


def test_commit_guarded_spurious_conflict_then_third_attempt_duplicate(kit: Any) -> None:
    run = kit.episode(ambiguous_scenario(kit), "commit_guarded")
    assert run.event_types()[1:] == [
        "tool_read",
        "tool_call_attempt",
        "side_effect_commit",
        "fault",
        "tool_call_attempt",
        "commit_rejected",
        "tool_read",
        "tool_call_attempt",
        "side_effect_commit",
    ]
    assert run.events("commit_rejected")[0].metadata == {"expected_version": 1, "actual_version": 2}
    assert run.keys_committed() == ["T-01:op-w1:attempt1", "T-01:op-w1:attempt3"]


@pytest.mark.parametrize("profile", RECONCILING)
def test_reconciliation_confirms_with_a_status_check(kit: Any, profile: str) -> None:
    run = kit.episode(ambiguous_scenario(kit), profile)
    assert run.keys_committed() == ["T-01:op-w1"]
    (check,) = run.events("operation_status_read")
    assert (check.idempotency_key, check.response_status) == ("T-01:op-w1", "COMMITTED")
    assert len(run.events("tool_call_attempt")) == 1
    assert run.verdict.duplicate_logical_effects == {}


@pytest.mark.parametrize("profile", ALL)
def test_shared_logical_operation_across_steps(kit: Any, profile: str) -> None:
    """Two steps for one logical operation: stable keys replay, fresh keys duplicate."""
    scenario = kit.scenario(
        steps=[
            kit.write("w1", "order", "O-1", {"a": 1}, op="same"),
            kit.write("w2", "order", "O-1", {"a": 1}, op="same"),
            kit.write(
                "w3", "order", "O-2", {"b": 1}, depends_on="w2", trigger="on_dependency_success"
            ),
        ],
        state={"order": {"O-1": {"version": 1}, "O-2": {"version": 1}}},
    )
    run = kit.episode(scenario, profile)
    statuses = [e.response_status for e in run.events("commit_rejected")]
    if profile in RECONCILING:
        # w2's expected version is the stale cached 1 → CONFLICT first; then the replay
        assert statuses == ["CONFLICT", "IDEMPOTENT_REPLAY"]
        assert run.keys_committed() == ["T-01:same", "T-01:op-w3"]
    elif profile in GUARDED:
        assert statuses == ["CONFLICT"]
        assert run.keys_committed() == [
            "T-01:same:attempt1",
            "T-01:same:attempt2",
            "T-01:op-w3:attempt1",
        ]
    else:  # attempt-1 keys collide across the two steps, so w2 replays w1
        assert statuses == ["IDEMPOTENT_REPLAY"]
        assert run.keys_committed() == ["T-01:same:attempt1", "T-01:op-w3:attempt1"]


def test_write_without_logical_operation_id_is_not_executed(kit: Any) -> None:
    scenario = kit.scenario(steps=[kit.write("w1", "order", "O-1", {"a": 1}, op=None)])
    run = kit.episode(scenario, "direct")
    assert run.notes == ["w1 has no logical_operation_id; not executed"]
    assert run.events("tool_call_attempt") == []


# -- downstream failure --------------------------------------------------------------------------


def failure_scenario(
    kit: Any,
    *,
    on_failure: str = "compensate",
    comp: str | None = "c1",
    comp_fails: bool = False,
    comp_on_failure: str | None = None,
) -> Any:
    w1_extra: dict[str, Any] = {"on_failure": on_failure}
    if comp is not None:
        w1_extra["compensation_step_id"] = comp
    c1_extra: dict[str, Any] = {"kind": "compensate", "compensates": "w1"}
    if comp_on_failure:
        c1_extra["on_failure"] = comp_on_failure
    injections = [kit.fault("df", "before_commit_step:w1", "downstream_failure")]
    if comp_fails:
        injections.append(kit.fault("cf", "before_commit_step:c1", "compensation_failure"))
    return kit.scenario(
        steps=[
            kit.read("r1", "order", "O-1"),
            kit.write("w1", "order", "O-1", {"status": "cancelled"}, **w1_extra),
            kit.write("c1", "order", "O-9", {"status": "restored"}, **c1_extra),
        ],
        state={
            "order": {"O-1": {"status": "open", "version": 1}, "O-9": {"status": "x", "version": 2}}
        },
        injections=injections,
        recovery={"required": True},
    )


@pytest.mark.parametrize("on_failure", ["compensate", "escalate", "report_partial"])
@pytest.mark.parametrize("profile", LOWER)
def test_without_recovery_coordinator_failure_is_just_noted(
    kit: Any, profile: str, on_failure: str
) -> None:
    run = kit.episode(failure_scenario(kit, on_failure=on_failure), profile)
    assert run.notes == ["w1 failed"]
    assert run.status == "success"  # no downgrade
    assert run.events("escalation") == []
    assert run.events("side_effect_commit") == []  # the compensation step never runs on its own
    assert [e.response_status for e in run.events("commit_rejected")] == ["FAILED"]


def test_full_lifecycle_report_partial(kit: Any) -> None:
    run = kit.episode(failure_scenario(kit, on_failure="report_partial"), "full_lifecycle")
    assert (run.status, run.notes, run.events("escalation")) == ("partial", ["w1 failed"], [])


def test_full_lifecycle_escalate(kit: Any) -> None:
    run = kit.episode(failure_scenario(kit, on_failure="escalate"), "full_lifecycle")
    assert run.status == "pending_recovery"
    assert reasons(run) == ["w1 failed and requires manual resolution"]


def test_full_lifecycle_compensates(kit: Any) -> None:
    run = kit.episode(failure_scenario(kit), "full_lifecycle")
    assert run.status == "partial"
    assert run.event_types()[-4:] == [
        "commit_rejected",
        "tool_read",
        "tool_call_attempt",
        "side_effect_commit",
    ]
    assert refs(run, "tool_read") == [O1, "order:O-9"]  # a fresh read of the compensation target
    (commit,) = run.events("side_effect_commit")
    assert (commit.resource_refs, commit.logical_operation_id) == (("order:O-9",), "op-c1")
    assert run.trace.side_effects[0].compensation_for is None  # baselines never set it (SPEC i.14)
    assert run.trace.final_state["order"]["O-9"]["status"] == "restored"


@pytest.mark.parametrize("comp", [None, "nope"])
def test_full_lifecycle_cannot_compensate(kit: Any, comp: str | None) -> None:
    run = kit.episode(failure_scenario(kit, comp=comp), "full_lifecycle")
    assert run.status == "pending_recovery"
    assert reasons(run) == ["w1 failed and cannot be compensated"]


def test_recursive_compensation_failure(kit: Any) -> None:
    run = kit.episode(failure_scenario(kit, comp_fails=True), "full_lifecycle")
    assert run.status == "pending_recovery"
    assert reasons(run) == ["c1 failed and cannot be compensated", "Compensation for w1 failed"]
    assert run.notes == ["w1 failed", "c1 failed"]
    (row,) = run.trace.side_effects
    assert (row.effect_type, row.logical_operation_id) == ("escalate_case", "escalate:T-01")
    assert run.events("side_effect_commit") == []


def test_compensation_failure_uses_the_compensation_steps_own_on_failure(kit: Any) -> None:
    run = kit.episode(
        failure_scenario(kit, comp_fails=True, comp_on_failure="report_partial"), "full_lifecycle"
    )
    assert reasons(run) == ["Compensation for w1 failed"]
    assert run.status == "pending_recovery"


# -- plan control --------------------------------------------------------------------------------


def dependency_scenario(kit: Any, trigger: str, *, fail: bool, depends_on: str = "w1") -> Any:
    return kit.scenario(
        steps=[
            kit.write("w1", "order", "O-1", {"a": 1}, on_failure="report_partial"),
            kit.write("w2", "order", "O-2", {"b": 1}, depends_on=depends_on, trigger=trigger),
        ],
        state={"order": {"O-1": {"version": 1}, "O-2": {"version": 1}}},
        injections=[kit.fault("df", "before_commit_step:w1", "downstream_failure")] if fail else [],
    )


@pytest.mark.parametrize("profile", ALL)
def test_on_dependency_failure_runs_under_the_four_lower_profiles_only(
    kit: Any, profile: str
) -> None:
    run = kit.episode(dependency_scenario(kit, "on_dependency_failure", fail=True), profile)
    ran = "order:O-2" in refs(run, "side_effect_commit")
    assert ran is (profile != "full_lifecycle")


@pytest.mark.parametrize("profile", ALL)
@pytest.mark.parametrize("fail", [False, True])
def test_on_dependency_success(kit: Any, profile: str, fail: bool) -> None:
    run = kit.episode(dependency_scenario(kit, "on_dependency_success", fail=fail), profile)
    assert ("order:O-2" in refs(run, "side_effect_commit")) is (not fail)


@pytest.mark.parametrize(
    ("trigger", "runs"),
    [("always", True), ("on_dependency_success", False), ("on_dependency_failure", False)],
)
def test_unknown_dependency(kit: Any, trigger: str, runs: bool) -> None:
    run = kit.episode(dependency_scenario(kit, trigger, fail=False, depends_on="ghost"), "direct")
    assert ("order:O-2" in refs(run, "side_effect_commit")) is runs


@pytest.mark.parametrize("profile", ALL)
def test_plan_escalate_clarify_status_check_respond(kit: Any, profile: str) -> None:
    scenario = kit.scenario(
        steps=[
            {"step_id": "e1", "kind": "escalate"},
            {"step_id": "q1", "kind": "clarify"},
            {"step_id": "s1", "kind": "status_check"},
            {"step_id": "x1", "kind": "respond"},
            kit.write("c1", "order", "O-1", {"a": 1}, kind="compensate"),
        ]
    )
    run = kit.episode(scenario, profile)
    assert run.event_types()[1:] == ["escalation", "clarification"]
    assert reasons(run) == ["e1: escalation required by task plan"]
    assert reasons(run, "clarification") == ["q1: clarification required by task plan"]
    assert run.status == "success"  # plan escalations and clarifications do not downgrade
    assert run.trace.adapter_report.final_message == "Request completed."


def test_report_metadata(kit: Any) -> None:
    run = kit.episode(failure_scenario(kit, on_failure="report_partial"), "full_lifecycle")
    report = run.trace.adapter_report
    assert (report.adapter_name, report.adapter_version) == ("full_lifecycle", "1.0.0")
    assert report.metadata == {"notes": ["w1 failed"]}
    assert report.final_message == MESSAGES["partial"]


@pytest.mark.parametrize("profile", ALL)
def test_engine_is_deterministic(kit: Any, profile: str) -> None:
    scenario = failure_scenario(kit, comp_fails=True)
    first = kit.episode(scenario, profile).trace.as_json()
    assert kit.episode(scenario, profile).trace.as_json() == first


def test_the_engine_report_shortcut_gives_the_checked_report() -> None:
    """The runner builds our own engine's report without the untrusted-adapter checks; it
    must be the very record those checks give, for every profile and scenario of core-v1."""
    from cavbench.runner import _engine_report, _report
    from cavbench.runtime import Environment
    from cavbench.scenarios import load_pack

    compared = 0
    for profile in BASELINE_PROFILES:
        adapter = baseline(profile)
        for scenario in load_pack("core-v1").scenarios:
            result = adapter.run(Environment(scenario, isolate=False).session())
            assert _engine_report(adapter, result) == _report(adapter, result)
            compared += 1
    assert compared == 200
