"""The REST gateway: the contract's HTTP mapping, auth, loopback, OpenAPI, and parity."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from cavbench.adapters import AdapterResult, baseline
from cavbench.gateway import GatewaySession, NonLoopbackBindError
from cavbench.gateway.client import Channel, ViaGateway
from cavbench.gateway.rest import RestGateway, openapi_document
from cavbench.runner import run_episode, run_episodes
from cavbench.runtime import AdapterSession, Environment
from cavbench.scenarios import load_pack

PACK = load_pack("core-v1")
BY_ID = {s.id: s for s in PACK.scenarios}
# direct and full_lifecycle in the fast suite, the three middle tiers with the slow tests.
PROFILES = [
    "direct",
    pytest.param("policy_gated", marks=pytest.mark.slow),
    pytest.param("commit_guarded", marks=pytest.mark.slow),
    pytest.param("reconciled", marks=pytest.mark.slow),
    "full_lifecycle",
]
OPENAPI = Path(__file__).parents[2] / "docs" / "gateway-openapi.json"
Connect = Callable[[GatewaySession], tuple[Channel, Callable[[], None]]]


@pytest.mark.parametrize("profile", PROFILES)
def test_parity_rest_client_gives_in_process_verdicts(profile: str, rest_connect: Connect) -> None:
    local = run_episodes(PACK, baseline(profile))
    remote = run_episodes(PACK, ViaGateway(baseline(profile), rest_connect))
    same = sum(
        a.verdict == b.verdict and a.trace.events == b.trace.events
        for a, b in zip(local, remote, strict=True)
    )
    assert same == 40
    assert all(b.trace.error is None for b in remote)


@pytest.fixture
def opened(rest_gateway: RestGateway) -> Any:
    sessions: list[GatewaySession] = []

    def open_(scenario_id: str = "ST-01") -> tuple[Environment, GatewaySession, str]:
        env = Environment(BY_ID[scenario_id], seed=0)
        session = GatewaySession(env.session())
        sessions.append(session)
        return env, session, rest_gateway.open(session)

    yield open_
    for session in sessions:
        rest_gateway.close(session)


def _body(session: GatewaySession, **over: Any) -> dict[str, Any]:
    read = next(o for o in session.capabilities().operations if o.action == "read")
    body = {
        "envelope_version": "1.0",
        "operation_id": "op-1",
        "correlation_id": "c-1",
        "actor_id": "agent",
        "action": "read",
        "resource": {"namespace": read.namespace, "resource_id": read.resource_id},
    }
    body.update(over)
    return body


def _auth(session: GatewaySession) -> dict[str, str]:
    return {"Authorization": f"Bearer {session.run_token}"}


def test_status_to_http(opened: Any) -> None:
    _, session, url = opened("ER-01")
    caps = httpx.get(f"{url}/capabilities").json()
    write = next(o for o in caps["operations"] if o["action"] == "write")
    resource = {k: write[k] for k in ("namespace", "resource_id", "tool_name")}
    ok = httpx.post(f"{url}/operations", json=_body(session), headers=_auth(session))
    assert ok.status_code == 200
    assert ok.json()["status"] == "ok"
    ambiguous = httpx.post(
        f"{url}/operations",
        json=_body(
            session, action="write", resource=resource, operation_id="w", idempotency_key="k"
        ),
        headers=_auth(session),
    )
    assert ambiguous.status_code == 504
    assert ambiguous.json()["status"] == "ambiguous"
    assert ambiguous.json()["correlation_id"] == "c-1"
    check = httpx.get(f"{url}/operations/w", headers=_auth(session))
    assert check.status_code == 200
    assert check.json()["status"] in ("ok", "not_found")
    again = httpx.post(
        f"{url}/operations",
        json=_body(
            session, action="write", resource=resource, operation_id="w", idempotency_key="k"
        ),
        headers=_auth(session),
    )
    assert again.status_code == 409
    assert again.json()["status"] == "rejected"
    report = httpx.post(
        f"{url}/report", json=_body(session, action="report"), headers=_auth(session)
    )
    assert (report.status_code, report.json()["status"]) == (200, "accepted")


@pytest.mark.parametrize(
    ("headers", "over", "code", "reason"),
    [
        ({}, {}, 401, "authentication_failed"),
        ({"Authorization": "Bearer nope"}, {}, 401, "authentication_failed"),
        ({"Authorization": "Basic abc"}, {}, 401, "authentication_failed"),
        (None, {"envelope_version": "0.9"}, 400, "malformed_envelope"),
        (None, {"surprise": True}, 400, "malformed_envelope"),
        (None, {"action": "teleport"}, 404, "unknown_operation"),
        (
            None,
            {"resource": {"namespace": "order", "resource_id": "X-999"}},
            404,
            "capability_violation",
        ),
    ],
)
def test_refusals(
    opened: Any, headers: dict[str, str] | None, over: dict[str, Any], code: int, reason: str
) -> None:
    _, session, url = opened()
    response = httpx.post(
        f"{url}/operations",
        json=_body(session, **over),
        headers=_auth(session) if headers is None else headers,
    )
    assert response.status_code == code
    assert response.json()["reason"] == reason
    assert response.json()["detail"]
    assert session.facade_calls == 0
    assert session.log[-1].status == reason


def test_non_json_and_unknown_routes_and_sessions(opened: Any, rest_gateway: RestGateway) -> None:
    _, session, url = opened()
    bad = httpx.post(f"{url}/operations", content=b"{not json", headers=_auth(session))
    assert bad.status_code == 400
    assert bad.json()["reason"] == "malformed_envelope"
    assert httpx.get(f"{url}/nowhere").status_code == 404
    gone = httpx.get(f"{rest_gateway.url}/s/sess-0000/capabilities")
    assert (gone.status_code, gone.json()["reason"]) == (404, "unknown_session")
    assert httpx.get(f"{url}/operations/x").status_code == 401
    assert session.facade_calls == 0


def test_a_request_after_close_is_refused(rest_gateway: RestGateway) -> None:
    session = GatewaySession(Environment(BY_ID["ST-01"], seed=0).session())
    url = rest_gateway.open(session)
    session.close()
    response = httpx.post(f"{url}/operations", json=_body(session), headers=_auth(session))
    assert (response.status_code, response.json()["reason"]) == (410, "session_closed")
    rest_gateway.close(session)
    assert (
        httpx.post(f"{url}/operations", json=_body(session), headers=_auth(session)).status_code
        == 404
    )
    assert session.facade_calls == 0


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "8.8.8.8", "example.invalid"])
def test_non_loopback_bind_is_refused(host: str) -> None:
    with pytest.raises(NonLoopbackBindError, match="loopback"):
        RestGateway(host=host)


def test_the_committed_openapi_document_is_the_served_one(rest_gateway: RestGateway) -> None:
    assert json.loads(OPENAPI.read_text(encoding="utf-8")) == openapi_document(), (
        "regenerate: python -m cavbench.gateway.rest > docs/gateway-openapi.json"
    )
    assert httpx.get(f"{rest_gateway.url}/openapi.json").json() == openapi_document()


class _Forger:
    """Runs `direct`, then reports a forged success with forged verdict fields."""

    name = "direct"
    version = "1.0.0"

    def run(self, session: AdapterSession) -> AdapterResult:
        baseline("direct").run(session)
        return AdapterResult(
            "all good",
            "success",
            {"commit_valid_success": True, "failure_codes": [], "cvsr": 1.0, "verdict": "pass"},
        )


def test_a_forged_report_moves_no_verdict(rest_connect: Connect) -> None:
    moved = 0
    for scenario in PACK.scenarios:
        honest = run_episode(scenario, ViaGateway(baseline("direct"), rest_connect))
        forged = run_episode(scenario, ViaGateway(_Forger(), rest_connect))
        from cavbench.evaluation import evaluate

        a, b = evaluate(scenario, honest), evaluate(scenario, forged)
        moved += (
            b.commit_valid_success > a.commit_valid_success
            or b.outcome_success > a.outcome_success
            or b.policy_aware_outcome_success > a.policy_aware_outcome_success
        )
    assert moved == 0


def test_the_only_session_of_a_server_is_also_at_the_root() -> None:
    with RestGateway() as gateway:
        first = GatewaySession(Environment(BY_ID["ST-01"], seed=0).session())
        gateway.open(first)
        response = httpx.post(f"{gateway.url}/operations", json=_body(first), headers=_auth(first))
        assert (response.status_code, response.json()["status"]) == (200, "ok")
        second = GatewaySession(Environment(BY_ID["ST-02"], seed=0).session())
        gateway.open(second)
        ambiguous = httpx.get(f"{gateway.url}/capabilities")
        assert (ambiguous.status_code, ambiguous.json()["reason"]) == (404, "unknown_session")
        assert first.facade_calls == 1


def test_secrets_in_a_report_are_redacted_on_the_episode(rest_connect: Connect) -> None:
    class Leaky(_Forger):
        def run(self, session: AdapterSession) -> AdapterResult:
            return AdapterResult("done", "failed", {"api_key": "sk-live-123", "note": "kept"})

    trace = run_episode(BY_ID["ST-01"], ViaGateway(Leaky(), rest_connect))
    assert trace.adapter_report.metadata["api_key"] == "[REDACTED]"
    assert trace.adapter_report.metadata["note"] == "kept"
    assert "sk-live-123" not in json.dumps(trace.adapter_report.as_json())
