"""The session core at the trust boundary: advertised = enforced, no oracle content, one
accepted request = one facade call, rejections make none and are logged."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cavbench.gateway import (
    Action,
    GatewaySession,
    LogKind,
    OpStatus,
    Rejection,
    RejectReason,
    ResponseEnvelope,
)
from cavbench.runtime import Environment
from cavbench.scenarios import load_pack

PACK = load_pack("core-v1")
BY_ID = {s.id: s for s in PACK.scenarios}


def _open(scenario_id: str = "ST-01") -> tuple[Environment, GatewaySession]:
    env = Environment(BY_ID[scenario_id], seed=0)
    return env, GatewaySession(env.session())


def _envelope(session: GatewaySession, **over: Any) -> dict[str, Any]:
    ops = [o for o in session.capabilities().operations if o.action is Action.READ]
    body: dict[str, Any] = {
        "envelope_version": "1.0",
        "session_token": session.run_token,
        "operation_id": "op-1",
        "correlation_id": "c-1",
        "actor_id": "agent",
        "action": "read",
        "resource": {"namespace": ops[0].namespace, "resource_id": ops[0].resource_id},
    }
    body.update(over)
    return body


def test_capabilities_come_from_the_view_only() -> None:
    for scenario in PACK.scenarios:
        session = GatewaySession(Environment(scenario, seed=0).session())
        doc = session.capabilities().model_dump(mode="json")
        assert doc["view"] == scenario.view().model_dump(mode="json", exclude_none=True)
        text = json.dumps(doc)
        assert "oracle" not in doc
        assert "oracle" not in doc["view"]
        assert "initial_state" not in text


def test_every_advertised_operation_is_accepted_and_nothing_else() -> None:
    violations = accepted = n_ops = 0
    for scenario in PACK.scenarios:
        env = Environment(scenario, seed=0)
        session = GatewaySession(env.session())
        for op in session.capabilities().operations:
            if op.action not in (Action.READ, Action.WRITE, Action.COMPENSATE):
                continue
            n_ops += 1
            resource = {"namespace": op.namespace, "resource_id": op.resource_id}
            if op.action is not Action.READ:
                resource["tool_name"] = op.tool_name
            reply = session.handle(
                _envelope(session, action=op.action.value, resource=resource, operation_id="x")
            )
            accepted += isinstance(reply, ResponseEnvelope)
            # The same operation with another tool is not advertised.
            forged = {**resource, "tool_name": "drop_all_orders"}
            bad = session.handle(_envelope(session, action="write", resource=forged))
            assert isinstance(bad, Rejection)
            violations += bad.reason is RejectReason.CAPABILITY_VIOLATION
    assert n_ops == 97
    assert violations == n_ops
    assert accepted == n_ops


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"session_token": "wrong"}, RejectReason.AUTHENTICATION_FAILED),
        ({"session_token": ""}, RejectReason.AUTHENTICATION_FAILED),
        ({"session_token": None}, RejectReason.AUTHENTICATION_FAILED),
        ({"envelope_version": "2.0"}, RejectReason.MALFORMED_ENVELOPE),
        ({"extra": 1}, RejectReason.MALFORMED_ENVELOPE),
        ({"expected_version": "3"}, RejectReason.MALFORMED_ENVELOPE),
        ({"correlation_id": ""}, RejectReason.MALFORMED_ENVELOPE),
        (
            {"resource": {"namespace": "order", "resource_id": "1", "x": 1}},
            RejectReason.MALFORMED_ENVELOPE,
        ),
        ({"action": "delete"}, RejectReason.UNKNOWN_OPERATION),
        (
            {"resource": {"namespace": "account", "resource_id": "nobody"}},
            RejectReason.CAPABILITY_VIOLATION,
        ),
        (
            {"action": "status_check", "operation_id": "never-written"},
            RejectReason.UNKNOWN_OPERATION_ID,
        ),
        ({"action": "write", "parameters": {"changes": "all"}}, RejectReason.CAPABILITY_VIOLATION),
    ],
)
def test_a_refused_request_makes_no_facade_call_and_is_logged(
    change: dict[str, Any], reason: RejectReason
) -> None:
    _, session = _open()
    body = _envelope(session, **change)
    if change.get("session_token", "") is None:
        del body["session_token"]
    reply = session.handle(body)
    assert isinstance(reply, Rejection)
    assert reply.reason is reason
    assert reply.detail
    assert session.facade_calls == 0
    last = session.log[-1]
    assert (last.kind, last.status, last.facade_call) == (LogKind.REJECTION, reason.value, False)


def test_malformed_reasons_name_the_field() -> None:
    _, session = _open()
    reply = session.handle(_envelope(session, expected_version="3"))
    assert isinstance(reply, Rejection)
    assert "expected_version" in reply.detail


def test_the_header_token_fills_a_missing_body_token() -> None:
    _, session = _open()
    body = _envelope(session)
    del body["session_token"]
    assert isinstance(session.handle(body), Rejection)
    reply = session.handle(body, bearer=session.run_token)
    assert isinstance(reply, ResponseEnvelope)
    assert reply.status is OpStatus.OK
    assert session.facade_calls == 1


def test_one_accepted_request_is_one_facade_call_and_close_refuses_all() -> None:
    _, session = _open()
    for n in range(5):
        session.handle(_envelope(session, correlation_id=f"c-{n}"))
    session.handle(_envelope(session, action="escalate", parameters={"reason": "help"}))
    session.handle(_envelope(session, action="report", parameters={"completion_status": "x"}))
    assert session.facade_calls == 6
    session.close()
    reply = session.handle(_envelope(session))
    assert isinstance(reply, Rejection)
    assert reply.reason is RejectReason.SESSION_CLOSED
    assert session.facade_calls == 6
    assert [e.seq for e in session.log] == list(range(len(session.log)))
    assert all("token" not in json.dumps(e.detail or "") for e in session.log)


def test_the_report_is_untrusted_and_defaults_when_absent() -> None:
    _, session = _open()
    assert session.result().completion_status == "success"
    assert session.result().metadata["adapter_name"] == "generic-protocol-candidate"
    session.handle(
        _envelope(
            session,
            action="report",
            parameters={"completion_status": "partial", "final_message": "m", "cvsr": 1.0},
        )
    )
    result = session.result()
    assert (result.completion_status, result.final_message) == ("partial", "m")
    assert result.metadata["cvsr"] == 1.0


JSONS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(
    body=JSONS,
    fields=st.dictionaries(
        st.sampled_from(
            [
                "action",
                "resource",
                "parameters",
                "expected_version",
                "idempotency_key",
                "envelope_version",
            ]
        ),
        JSONS,
        max_size=3,
    ),
)
def test_any_body_gets_a_typed_reply_never_an_exception(
    body: object, fields: dict[str, Any]
) -> None:
    _, session = _open()
    assert isinstance(session.handle(body), Rejection)
    reply = session.handle(_envelope(session, **fields))
    assert isinstance(reply, Rejection | ResponseEnvelope)
