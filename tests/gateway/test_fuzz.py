"""Schemathesis against the running REST gateway: every generated request (valid and invalid
envelopes, with and without the token) gets no server error and a response the committed
OpenAPI document describes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cavbench.gateway import GatewaySession  # noqa: E402
from cavbench.gateway.rest import RestGateway, openapi_document  # noqa: E402
from cavbench.runtime import Environment  # noqa: E402
from cavbench.scenarios import load_pack  # noqa: E402

# Schemathesis's `not_a_server_error` counts any 5xx; the contract answers `failed` with 502 and
# `ambiguous` with 504 (documented, with a JSON body), so a server error here is any other 5xx.
CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
PER_OPERATION = {"capabilities": 20, "operationStatus": 200, "operate": 500, "report": 300}


def _session_document(base_url: str) -> dict[str, Any]:
    """The document as one session sees it: its base URL as the server, no session_id."""
    document = copy.deepcopy(openapi_document())
    prefix = "/s/{session_id}"
    paths = {}
    for path, item in document["paths"].items():
        for operation in item.values():
            operation["parameters"] = [
                p for p in operation.get("parameters", []) if p["name"] != "session_id"
            ]
        paths[path.removeprefix(prefix)] = item
    document["paths"] = paths
    document["servers"] = [{"url": base_url}]  # the base URL is also passed to each call
    return document


@pytest.mark.slow
def test_generated_requests_get_documented_responses(rest_gateway: RestGateway) -> None:
    scenario = next(s for s in load_pack("core-v1").scenarios if s.id == "ER-01")
    session = GatewaySession(Environment(scenario, seed=0).session())
    base = rest_gateway.open(session)
    schema = schemathesis.openapi.from_dict(_session_document(base))
    sent: dict[int, int] = {}
    advertised = [o for o in session.capabilities().operations if o.namespace is not None]
    plan = [
        (mode, result.ok())
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        for result in schema.get_all_operations()
    ]
    for mode, operation in plan:
        name = operation.definition.raw["operationId"]
        if mode is GenerationMode.NEGATIVE and name == "capabilities":
            continue  # it takes no input, so there is nothing invalid to send
        examples = PER_OPERATION[name]

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def run(case: Any) -> None:
            headers = {"Authorization": f"Bearer {session.run_token}"}
            body = case.body
            # `run` is called right below, inside its loop iteration.
            if mode is GenerationMode.POSITIVE and isinstance(body, dict):  # noqa: B023
                # Reach past auth and the capability check: the real token, and for half the
                # cases an advertised resource, so that facade calls happen too.
                body["session_token"] = session.run_token
                if len(body.get("correlation_id", "")) % 2 == 0:
                    op = advertised[len(body.get("operation_id", "")) % len(advertised)]
                    body["action"] = op.action.value
                    body["resource"] = {
                        k: v
                        for k, v in (
                            ("namespace", op.namespace),
                            ("resource_id", op.resource_id),
                            ("tool_name", None if op.action == "read" else op.tool_name),
                        )
                        if v is not None
                    }
            response = case.call(base_url=base, headers=headers)
            assert response.status_code < 500 or response.status_code in (502, 504), response.text
            case.validate_response(response, checks=CHECKS)
            sent[response.status_code] = sent.get(response.status_code, 0) + 1

        run()
    rest_gateway.close(session)
    print("responses by HTTP status:", dict(sorted(sent.items())))
    assert sum(sent.values()) >= 1000
    assert not any(code >= 500 and code not in (502, 504) for code in sent)
    assert session.facade_calls > 100
