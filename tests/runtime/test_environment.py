"""The environment's read and commit paths, step by step (SPEC b.4, b.5)."""

from __future__ import annotations

from typing import Any

import pytest

from cavbench.errors import CavBenchError, EpisodeClosed
from cavbench.runtime import TOOL_EFFECT_TYPE, Environment, ToolFacade, ToolStatus
from cavbench.trace import AdapterReport, EventType

REF = "order:O-1"
STATE = {
    "order": {"O-1": {"status": "open", "version": 1}, "O-2": {"status": "open", "version": 5}},
    "payment": {"P-1": {"captured": 10}},
}


def make(
    kit: Any, injections: list[dict[str, Any]] | None = None
) -> tuple[Environment, ToolFacade]:
    env = Environment(kit.scenario(state=STATE, injections=injections or []), seed=3, run_id="r")
    return env, env.session().tools


def write(tools: ToolFacade, step_id: str = "w1", **overrides: Any) -> Any:
    kwargs: dict[str, Any] = {
        "step_id": step_id,
        "tool_name": "cancel_order",
        "namespace": "order",
        "resource_id": "O-1",
        "changes": {"status": "cancelled"},
        "logical_operation_id": "op-1",
        "idempotency_key": f"T-01:op-1:{step_id}",
        "args": {"reason": "asked"},
    }
    kwargs.update(overrides)
    return tools.write(**kwargs)


def types(env: Environment) -> list[str]:
    return [e.event_type.value for e in env.events]


def test_event_zero_is_the_user_request(kit: Any) -> None:
    env, _ = make(kit)
    (first,) = env.events
    assert first.seq == 0
    assert first.logical_time == 0
    assert first.event_type is EventType.USER_INPUT
    assert first.source == "scenario"
    assert first.metadata == {"text": "Please do the thing."}


def test_read_records_then_fires_after_read(kit: Any) -> None:
    env, tools = make(
        kit, [kit.mutation("m1", f"after_read:{REF}", "order", "O-1", {"status": "held"})]
    )
    result = tools.read("order", "O-1")
    assert result.status is ToolStatus.OK
    assert result.data == {"status": "open", "version": 1}  # the pre-mutation value
    read, mutation = env.events[1:]
    assert read.event_type is EventType.TOOL_READ
    assert read.tool_name == "get_order"
    assert read.args == {"resource_id": "O-1"}
    assert read.resource_refs == (REF,)
    assert dict(read.versions_before) == {REF: 1}
    assert read.response_status == "OK"
    assert read.metadata["result"] == {"status": "open", "version": 1}
    assert mutation.event_type is EventType.EXTERNAL_MUTATION
    assert mutation.fault_id == "m1"
    assert mutation.response_status == "external_mutation"
    assert dict(mutation.versions_before) == {REF: 1}
    assert dict(mutation.versions_after) == {REF: 2}
    assert mutation.metadata == {"changes": {"status": "held"}}
    again = tools.read("order", "O-1")
    assert again.data == {"status": "held", "version": 2}
    assert types(env) == ["user_input", "tool_read", "external_mutation", "tool_read"]


def test_read_tool_names(kit: Any) -> None:
    env, tools = make(kit)
    tools.read("payment", "P-1")
    tools.read("order", "O-1", tool_name="lookup")
    env2 = Environment(kit.scenario(state={"widget": {"5": {"v": 1}}}))
    env2.session().tools.read("widget", 5)  # type: ignore[arg-type]
    assert [e.tool_name for e in env.events[1:]] == ["get_payment", "lookup"]
    assert env2.events[1].tool_name == "get_widget"
    assert env2.events[1].resource_refs == ("widget:5",)


def test_successful_commit(kit: Any) -> None:
    env, tools = make(kit)
    result = write(tools, compensation_for="op-0")
    assert result.status is ToolStatus.COMMITTED
    assert result.data == {"status": "cancelled", "version": 2}
    assert result.operation_id == "op-1"
    assert result.retryable is False
    attempt, commit = env.events[1:]
    assert attempt.event_type is EventType.TOOL_CALL_ATTEMPT
    assert (attempt.tool_name, attempt.args, attempt.resource_refs) == (
        "cancel_order",
        {"reason": "asked"},
        (REF,),
    )
    assert dict(attempt.versions_before) == {REF: 1}
    assert (attempt.logical_operation_id, attempt.idempotency_key) == ("op-1", "T-01:op-1:w1")
    assert commit.event_type is EventType.SIDE_EFFECT_COMMIT
    assert commit.response_status == "COMMITTED"
    assert dict(commit.versions_before) == {REF: 1}
    assert dict(commit.versions_after) == {REF: 2}
    assert commit.metadata == {"effect_id": "eff-0", "effect_type": "cancel_order"}
    trace = env.finalize(AdapterReport())
    (row,) = trace.side_effects
    assert row.effect_id == "eff-0"
    assert row.seq == commit.seq
    assert row.effect_type == "cancel_order"
    assert (row.logical_operation_id, row.idempotency_key) == ("op-1", "T-01:op-1:w1")
    assert row.resource_ref == REF
    assert row.payload == {"reason": "asked"}
    assert row.compensation_for == "op-0"
    assert trace.final_state["order"]["O-1"] == {"status": "cancelled", "version": 2}


def test_before_commit_hooks_fire_step_scoped_first(kit: Any) -> None:
    env, tools = make(
        kit,
        [
            kit.mutation(
                "tool-scoped", f"before_commit:cancel_order:{REF}", "order", "O-1", {"t": 1}
            ),
            kit.mutation("step-scoped", "before_commit_step:w1", "order", "O-1", {"s": 1}),
        ],
    )
    result = write(tools)
    assert result.status is ToolStatus.COMMITTED
    assert types(env)[1:] == [
        "tool_call_attempt",
        "external_mutation",
        "external_mutation",
        "side_effect_commit",
    ]
    assert [e.fault_id for e in env.events[2:4]] == ["step-scoped", "tool-scoped"]
    commit = env.events[4]
    assert dict(commit.versions_before) == {REF: 3}  # the version at commit time
    assert dict(commit.versions_after) == {REF: 4}


def test_forced_failure_rejects_the_first_attempt_only(kit: Any) -> None:
    env, tools = make(kit, [kit.fault("df", "before_commit_step:w1", "downstream_failure")])
    failed = write(tools)
    assert failed.status is ToolStatus.FAILED
    assert failed.data is None
    assert failed.retryable is True
    fault, rejected = env.events[2:]
    assert fault.event_type is EventType.FAULT
    assert (fault.fault_id, fault.response_status) == ("df", "downstream_failure")
    assert fault.metadata == {"affects_step": "w1"}
    assert rejected.event_type is EventType.COMMIT_REJECTED
    assert rejected.response_status == "FAILED"
    assert rejected.metadata == {"reason": "downstream_failure"}
    assert dict(rejected.versions_before) == {}
    assert dict(rejected.versions_after) == {}
    assert env.snapshot()["order"]["O-1"] == {"status": "open", "version": 1}
    assert env.finalize(AdapterReport()).side_effects == ()
    assert write(tools).status is ToolStatus.COMMITTED
    env.close()
    with pytest.raises(EpisodeClosed):  # a closed world refuses kept sessions
        write(tools)


def test_forced_failure_waits_for_its_step(kit: Any) -> None:
    env, tools = make(
        kit, [kit.fault("cf", f"after_read:{REF}", "compensation_failure", affects_step="c1")]
    )
    tools.read("order", "O-1")
    assert write(tools, "w1").status is ToolStatus.COMMITTED
    tools.read("order", "O-1")
    comp = write(
        tools, "c1", changes={"status": "open"}, expected_version=2, logical_operation_id="c"
    )
    assert comp.status is ToolStatus.FAILED
    assert env.events[-1].metadata == {"reason": "compensation_failure"}


def test_forced_failure_without_affects_step_targets_the_hook_suffix(kit: Any) -> None:
    env, tools = make(kit, [kit.fault("df", "after_read:order:O-2", "downstream_failure")])
    tools.read("order", "O-2")
    assert env.events[-1].metadata == {"affects_step": "order:O-2"}
    assert write(tools, "w1").status is ToolStatus.COMMITTED


def test_failed_is_checked_before_conflict(kit: Any) -> None:
    _env, tools = make(kit, [kit.fault("df", "before_commit_step:w1", "downstream_failure")])
    assert write(tools, expected_version=99).status is ToolStatus.FAILED


def test_conflict(kit: Any) -> None:
    env, tools = make(kit)
    result = write(tools, expected_version=0)
    assert result.status is ToolStatus.CONFLICT
    assert result.retryable is True
    assert result.data == {"status": "open", "version": 1}
    rejected = env.events[-1]
    assert rejected.response_status == "CONFLICT"
    assert rejected.metadata == {"expected_version": 0, "actual_version": 1}
    assert env.snapshot()["order"]["O-1"]["version"] == 1
    assert env.finalize(AdapterReport()).side_effects == ()


def test_idempotent_replay(kit: Any) -> None:
    env, tools = make(kit)
    assert write(tools, "w1", idempotency_key="K").status is ToolStatus.COMMITTED
    replay = write(tools, "w2", idempotency_key="K", changes={"status": "other"})
    assert replay.status is ToolStatus.IDEMPOTENT_REPLAY
    assert replay.retryable is False
    assert replay.data == {"status": "cancelled", "version": 2}
    assert env.events[-1].response_status == "IDEMPOTENT_REPLAY"
    assert env.events[-1].metadata == {}
    assert len(env.finalize(AdapterReport()).side_effects) == 1
    assert env.snapshot()["order"]["O-1"] == {"status": "cancelled", "version": 2}


def test_stale_replay_gets_conflict_not_replay(kit: Any) -> None:
    env, tools = make(kit)
    assert write(tools, idempotency_key="K", expected_version=1).status is ToolStatus.COMMITTED
    again = write(tools, idempotency_key="K", expected_version=1)
    assert again.status is ToolStatus.CONFLICT
    assert env.events[-1].metadata == {"expected_version": 1, "actual_version": 2}


def test_escalation_keys_are_not_commit_keys(kit: Any) -> None:
    _env, tools = make(kit)
    tools.escalate("help", "K")
    assert tools.status_check("K").status is ToolStatus.NOT_FOUND
    assert write(tools, idempotency_key="K").status is ToolStatus.COMMITTED
    assert tools.status_check("K").status is ToolStatus.COMMITTED


@pytest.mark.parametrize("mode", ["ambiguous_response", "external_mutation", "downstream_failure"])
def test_any_injection_after_commit_before_response_makes_it_ambiguous(kit: Any, mode: str) -> None:
    hook = f"after_commit_before_response:cancel_order:{REF}"
    payload: dict[str, Any] = (
        {"namespace": "order", "resource_id": "O-2", "changes": {"x": 1}}
        if mode == "external_mutation"
        else {}
    )
    env, tools = make(kit, [kit.fault("amb", hook, mode, **payload)])
    result = write(tools)
    assert result.status is ToolStatus.AMBIGUOUS
    assert result.retryable is True
    assert result.data == {"status": "cancelled", "version": 2}  # committed all the same
    assert types(env)[1:3] == ["tool_call_attempt", "side_effect_commit"]
    assert env.events[3].fault_id == "amb"
    if mode == "ambiguous_response":
        assert env.events[3].event_type is EventType.FAULT
        assert env.events[3].metadata == {}
    assert len(env.finalize(AdapterReport()).side_effects) == 1


def test_ambiguous_response_elsewhere_has_no_effect(kit: Any) -> None:
    env, tools = make(kit, [kit.fault("amb", "before_commit_step:w1", "ambiguous_response")])
    assert write(tools).status is ToolStatus.COMMITTED
    assert types(env)[1:] == ["tool_call_attempt", "fault", "side_effect_commit"]


def test_after_commit_hooks_fire_only_after_success_in_order(kit: Any) -> None:
    env, tools = make(
        kit,
        [
            kit.mutation(
                "c", f"after_commit_before_response:cancel_order:{REF}", "order", "O-2", {"c": 1}
            ),
            kit.mutation("b", f"after_commit:cancel_order:{REF}", "order", "O-2", {"b": 1}),
            kit.mutation("a", "after_commit_step:w1", "order", "O-2", {"a": 1}),
        ],
    )
    assert write(tools, expected_version=0).status is ToolStatus.CONFLICT
    assert "external_mutation" not in types(env)
    assert write(tools, expected_version=1).status is ToolStatus.AMBIGUOUS
    tail = env.events[-4:]
    assert tail[0].event_type is EventType.SIDE_EFFECT_COMMIT
    assert [e.fault_id for e in tail[1:]] == ["a", "b", "c"]


def test_status_check_event(kit: Any) -> None:
    env, tools = make(kit)
    write(tools, idempotency_key="K")
    found = tools.status_check("K")
    missing = tools.status_check("nope")
    assert (found.status, found.data) == (ToolStatus.COMMITTED, {"found": True})
    assert (missing.status, missing.data) == (ToolStatus.NOT_FOUND, {"found": False})
    hit, miss = env.events[-2:]
    for event, key in ((hit, "K"), (miss, "nope")):
        assert event.event_type is EventType.OPERATION_STATUS_READ
        assert event.tool_name == "get_operation_status"
        assert event.args == {"idempotency_key": key}
        assert event.idempotency_key == key
    assert (hit.response_status, hit.metadata) == ("COMMITTED", {"effect_id": "eff-0"})
    assert (miss.response_status, miss.metadata) == ("NOT_FOUND", {})


def test_status_check_finds_the_replayed_commit_only_once_committed(kit: Any) -> None:
    _env, tools = make(kit, [kit.fault("df", "before_commit_step:w1", "downstream_failure")])
    write(tools, idempotency_key="K")
    assert tools.status_check("K").status is ToolStatus.NOT_FOUND  # FAILED never committed
    write(tools, idempotency_key="K", expected_version=0)
    assert tools.status_check("K").status is ToolStatus.NOT_FOUND  # nor did CONFLICT


def test_escalation_dedup_two_events_one_row(kit: Any) -> None:
    env, tools = make(kit)
    first = tools.escalate("first reason", "L")
    second = tools.escalate("second reason", "L")
    assert (first.status, first.message) == (ToolStatus.CREATED, "first reason")
    assert second.message == "second reason"
    e1, e2 = env.events[1:]
    for event, reason in ((e1, "first reason"), (e2, "second reason")):
        assert event.event_type is EventType.ESCALATION
        assert event.tool_name == "escalate_case"
        assert event.args == {"reason": reason}
        assert event.resource_refs == ("case:T-01",)
        assert event.logical_operation_id == "L"
        assert event.response_status == "CREATED"
    assert e1.metadata == {"effect_id": "eff-0"}
    assert e2.metadata == {"effect_id": "eff-1"}  # the row built, even though deduplicated
    (row,) = env.finalize(AdapterReport()).side_effects
    assert (row.effect_id, row.effect_type, row.idempotency_key) == ("eff-0", "escalate_case", "L")
    assert (row.resource_ref, row.payload, row.seq) == ("case:T-01", {"reason": "first reason"}, 1)


def test_session_helpers(kit: Any) -> None:
    env = Environment(kit.scenario(id="S-9"))
    session = env.session()
    assert session.escalate("r1").status is ToolStatus.CREATED
    session.escalate("r2")
    clar = session.clarify("which one?")
    assert (clar.status, clar.message) == (ToolStatus.CLARIFICATION_REQUESTED, "which one?")
    escalations = [e for e in env.events if e.event_type is EventType.ESCALATION]
    assert [e.logical_operation_id for e in escalations] == ["escalate:S-9", "escalate:S-9"]
    assert len(env.finalize(AdapterReport()).side_effects) == 1
    clarification = env.events[-1]
    assert clarification.event_type is EventType.CLARIFICATION
    assert clarification.metadata == {"question": "which one?"}
    assert env.finalize(AdapterReport()).side_effects[0].resource_ref == "case:S-9"


def test_unversioned_resource(kit: Any) -> None:
    env, tools = make(kit)
    ok = write(tools, namespace="payment", resource_id="P-1", changes={"captured": 20})
    assert ok.status is ToolStatus.COMMITTED
    assert ok.data == {"captured": 20}
    commit = env.events[-1]
    assert dict(commit.versions_before) == {"payment:P-1": None}
    assert dict(commit.versions_after) == {"payment:P-1": None}
    stale = write(tools, "w2", namespace="payment", resource_id="P-1", expected_version=1)
    assert stale.status is ToolStatus.CONFLICT
    assert env.events[-1].metadata == {"expected_version": 1, "actual_version": None}


@pytest.mark.parametrize(
    ("tool", "effect"), [*TOOL_EFFECT_TYPE.items(), ("custom_tool", "custom_tool")]
)
def test_effect_type_from_the_tool_name(kit: Any, tool: str, effect: str) -> None:
    env, tools = make(kit)
    write(tools, tool_name=tool)
    assert env.events[-1].metadata["effect_type"] == effect
    assert env.finalize(AdapterReport()).side_effects[0].effect_type == effect


def test_effect_type_table_matches_the_spec() -> None:
    assert dict(TOOL_EFFECT_TYPE) == {
        "cancel_order": "cancel_order",
        "cancel_order_item": "cancel_item",
        "issue_refund": "refund",
        "change_shipping_address": "change_address",
        "reserve_inventory": "reserve_inventory",
        "release_inventory": "release_inventory",
        "apply_account_credit": "apply_credit",
        "book_service_slot": "book_slot",
        "export_customer_data": "export_customer_data",
        "capture_payment": "capture_payment",
        "update_carrier_address": "update_carrier_address",
        "escalate_case": "escalate_case",
    }


def test_seq_is_contiguous_and_logical_time_equals_seq(kit: Any) -> None:
    env, tools = make(
        kit,
        [
            kit.fault(
                "amb", f"after_commit_before_response:cancel_order:{REF}", "ambiguous_response"
            )
        ],
    )
    tools.read("order", "O-1")
    write(tools)
    tools.status_check("T-01:op-1:w1")
    tools.escalate("x", "L")
    tools.clarify("q")
    trace = env.finalize(AdapterReport())
    assert [e.seq for e in trace.events] == list(range(len(trace.events)))
    assert all(e.as_json()["logical_time"] == e.seq for e in trace.events)


def test_seed_has_no_behavioural_effect(kit: Any) -> None:
    scenario = kit.scenario(state=STATE)
    traces = []
    for seed in (0, 7):
        env = Environment(scenario, seed=seed, run_id=f"run-{seed}")
        tools = env.session().tools
        tools.read("order", "O-1")
        write(tools)
        traces.append(env.finalize(AdapterReport()))
    a, b = (t.as_json() for t in traces)
    assert (a.pop("seed"), b.pop("seed")) == (0, 7)
    assert (a.pop("run_id"), b.pop("run_id")) == ("run-0", "run-7")
    assert a == b


def test_finalize(kit: Any) -> None:
    env, tools = make(kit)
    write(tools)
    report = AdapterReport("me", "9.9", "done", "partial", {"k": 1})
    trace = env.finalize(report)
    assert (trace.scenario_id, trace.run_id, trace.seed) == ("T-01", "r", 3)
    assert trace.adapter_report == report
    assert trace.error is None
    assert trace.final_state == {
        "order": {
            "O-1": {"status": "cancelled", "version": 2},
            "O-2": {"status": "open", "version": 5},
        },
        "payment": {"P-1": {"captured": 10}},
    }
    data = trace.as_json()
    assert data["schema_version"] == "1.0"
    assert (data["adapter_name"], data["adapter_version"]) == ("me", "9.9")


def test_malformed_external_mutation_is_refused_at_load(kit: Any) -> None:
    with pytest.raises(CavBenchError, match=r"injections\[0\]\.payload"):
        make(kit, [kit.fault("bad", f"after_read:{REF}", "external_mutation", namespace="order")])


def test_ordinal_three_still_fires_on_the_first_read(kit: Any) -> None:
    injection = kit.mutation("late", f"after_read:{REF}", "order", "O-1", {"status": "held"})
    injection["ordinal"] = 3
    env, tools = make(kit, [injection])
    tools.read("order", "O-1")
    tools.read("order", "O-1")
    tools.read("order", "O-1")
    assert types(env) == ["user_input", "tool_read", "external_mutation", "tool_read", "tool_read"]
