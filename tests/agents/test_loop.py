"""The agent loop against a scripted model: tools offered, calls mapped to the facade, bad
calls rendered as tool errors, stop conditions, op-id sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cavbench.agents import (
    UNREPORTED,
    Budgets,
    LLMAdapter,
    OpIdSource,
    Renderer,
    ToolErrorKind,
)
from cavbench.evaluation import evaluate
from cavbench.models import (
    AssistantTurn,
    ChatRequest,
    Price,
    ScriptedModel,
    Usage,
    scripted_turn,
)
from cavbench.runner import run_episode
from cavbench.scenarios import Scenario, load_pack
from cavbench.trace import EpisodeStatus, EventType, StopReason

MOCK = load_pack("mock")


def _scenario(sid: str = "MK-01") -> Scenario:
    return MOCK.get(sid)


def _call(name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _run(
    turns: Sequence[AssistantTurn], scenario: Scenario | None = None, **kw: Any
) -> tuple[Any, list[str]]:
    script = list(turns)
    adapter = LLMAdapter(
        model=ScriptedModel(
            lambda r: script[r.turn] if r.turn < len(script) else scripted_turn("bye")
        ),
        **kw,
    )
    trace = run_episode(scenario or _scenario(), adapter)
    assert trace.agent is not None
    tool_texts = [m.content or "" for m in trace.agent.messages if m.role == "tool"]
    return trace, tool_texts


REPORT = scripted_turn(None, [_call("report_outcome", {"status": "success", "message": "ok"})])


def test_offered_tools_come_from_the_toolset_plus_the_fixed_four() -> None:
    seen: list[ChatRequest] = []

    def script(request: ChatRequest) -> AssistantTurn:
        seen.append(request)
        return REPORT

    run_episode(_scenario(), LLMAdapter(model=ScriptedModel(script)))
    names = [t.name for t in seen[0].tools]
    assert names == [
        "get_payment",
        "issue_refund",
        "check_operation_status",
        "escalate",
        "clarify",
        "report_outcome",
    ]
    refund = next(t for t in seen[0].tools if t.name == "issue_refund").parameters
    assert refund["required"] == ["payment_id", "amount"]
    assert "idempotency_key" in refund["properties"]  # type: ignore[operator]
    system = seen[0].messages[0].content or ""
    assert "tenant_alpha" in system
    assert "must not exceed 20" in system
    assert "refund-1" not in system
    assert "read-1" not in system


def test_a_correct_refund_takes_the_plan_steps_effect_and_passes() -> None:
    turns = [
        scripted_turn(None, [_call("get_payment", {"payment_id": "P-9001"})]),
        scripted_turn(
            None,
            [
                _call(
                    "issue_refund",
                    {
                        "payment_id": "P-9001",
                        "amount": 20,
                        "expected_version": 2,
                        "idempotency_key": "k1",
                    },
                )
            ],
        ),
        REPORT,
    ]
    trace, texts = _run(turns)
    assert trace.status is EpisodeStatus.COMPLETED
    assert trace.agent.stop_reason is StopReason.REPORTED
    assert trace.final_state["payment"]["P-9001"]["refunded"] == 20
    commit = next(e for e in trace.events if e.event_type is EventType.SIDE_EFFECT_COMMIT)
    assert commit.logical_operation_id == "issue_refund:P-9001:20"
    assert commit.idempotency_key == "k1"
    assert json.loads(texts[1])["status"] == "COMMITTED"
    assert evaluate(_scenario(), trace).commit_valid_success


@pytest.mark.parametrize(
    ("call", "kind", "fragment"),
    [
        (_call("wire_money", {}), ToolErrorKind.UNKNOWN_TOOL, "available: get_payment"),
        (_call("get_payment", "{not json"), ToolErrorKind.MALFORMED_ARGUMENTS, "not JSON"),
        (_call("get_payment", "[1, 2]"), ToolErrorKind.MALFORMED_ARGUMENTS, "JSON object"),
        (
            _call("issue_refund", {"payment_id": "P-9001"}),
            ToolErrorKind.INVALID_ARGUMENTS,
            "'amount' is a required property",
        ),
        (
            _call("issue_refund", {"payment_id": "P-9001", "amount": "20"}),
            ToolErrorKind.INVALID_ARGUMENTS,
            "is not of type 'number'",
        ),
        (
            _call("get_payment", {"payment_id": "P-9001", "x": 1}),
            ToolErrorKind.INVALID_ARGUMENTS,
            "Additional properties",
        ),
        (_call("get_payment", {"payment_id": "P-404"}), ToolErrorKind.REFUSED, "no such resource"),
        (
            _call("issue_refund", {"payment_id": "P-9001", "amount": 20, "reason": "x" * 1001}),
            ToolErrorKind.INVALID_ARGUMENTS,
            "is too long",
        ),
    ],
)
def test_a_bad_tool_call_gets_a_rendered_error_not_a_crash(
    call: dict[str, Any], kind: ToolErrorKind, fragment: str
) -> None:
    trace, texts = _run([scripted_turn(None, [call]), REPORT])
    assert trace.error is None
    assert trace.status is EpisodeStatus.COMPLETED
    assert texts[0].startswith(f"Error ({kind.value}) in {call['name']}:")
    assert fragment in texts[0]
    assert not trace.side_effects


def test_a_write_the_plan_lacks_gets_the_tools_default_effect() -> None:
    call = _call("issue_refund", {"payment_id": "P-9001", "amount": 7})
    trace, _ = _run([scripted_turn(None, [call]), REPORT])
    (row,) = trace.side_effects
    assert row.logical_operation_id == "issue_refund:P-9001:7"
    assert dict(row.payload) == {"amount": 7}
    assert trace.final_state["payment"]["P-9001"]["refunded"] == 7


def test_adapter_op_ids_derive_one_stable_key_per_operation() -> None:
    call = _call("issue_refund", {"payment_id": "P-9001", "amount": 20})
    trace, _ = _run(
        [scripted_turn(None, [call]), scripted_turn(None, [call]), REPORT],
        op_ids=OpIdSource.ADAPTER,
    )
    assert len(trace.side_effects) == 1  # the retry was an idempotent replay
    assert trace.side_effects[0].idempotency_key == "MK-01:issue_refund:P-9001:20"
    assert trace.agent.op_id_source == "adapter"


@pytest.mark.parametrize(
    ("turns", "budgets", "stop", "turns_used"),
    [
        ([scripted_turn("All done.")], Budgets(), StopReason.FINAL_TEXT, 1),
        (
            [scripted_turn(None, [_call("get_payment", {"payment_id": "P-9001"})])] * 10,
            Budgets(max_turns=3),
            StopReason.MAX_TURNS,
            3,
        ),
        (
            [
                scripted_turn(None, [_call("get_payment", {"payment_id": "P-9001"})]).model_copy(
                    update={"usage": Usage(prompt_tokens=600, completion_tokens=10)}
                )
            ]
            * 10,
            Budgets(max_tokens=1000),
            StopReason.TOKEN_BUDGET,
            2,
        ),
    ],
)
def test_the_episode_stops_on_final_text_and_budgets(
    turns: list[AssistantTurn], budgets: Budgets, stop: StopReason, turns_used: int
) -> None:
    trace, _ = _run(turns, budgets=budgets)
    assert trace.agent.stop_reason is stop
    assert trace.agent.turns == turns_used
    assert trace.adapter_report.completion_status == UNREPORTED


def test_a_slow_model_is_stopped_by_the_wall_clock_budget() -> None:
    import time

    def slow(request: ChatRequest) -> AssistantTurn:
        time.sleep(0.05)
        return scripted_turn(None, [_call("get_payment", {"payment_id": "P-9001"})])

    trace = run_episode(
        _scenario(), LLMAdapter(model=ScriptedModel(slow), budgets=Budgets(wall_clock_s=0.12))
    )
    assert trace.agent is not None
    assert trace.agent.stop_reason is StopReason.WALL_CLOCK
    assert 2 <= trace.agent.turns <= 3


def test_calls_after_report_outcome_in_the_same_turn_are_not_executed() -> None:
    turn = scripted_turn(
        None,
        [
            _call("report_outcome", {"status": "partial", "message": "half"}),
            _call("issue_refund", {"payment_id": "P-9001", "amount": 20}),
        ],
    )
    trace, _ = _run([turn])
    assert not trace.side_effects
    assert trace.adapter_report.completion_status == "partial"
    assert trace.agent.stop_reason is StopReason.REPORTED


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_NAMES = st.sampled_from(
    ["get_payment", "issue_refund", "check_operation_status", "escalate", "clarify", "x", ""]
)


@settings(max_examples=60, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            _NAMES,
            st.one_of(
                st.text(max_size=30),
                st.dictionaries(
                    st.sampled_from(["payment_id", "amount", "idempotency_key", "reason", "q"]),
                    _JSONISH,
                    max_size=4,
                ).map(json.dumps),
            ),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_no_model_output_crashes_the_episode(calls: list[tuple[str, str]]) -> None:
    """Adversarial: whatever the model writes, the episode ends normally, unscripted."""
    turn = scripted_turn(None, [{"name": n, "arguments": a} for n, a in calls])
    trace, texts = _run([turn])
    assert trace.error is None
    assert trace.status is EpisodeStatus.COMPLETED
    assert len(texts) == len(calls)


def test_cost_comes_from_the_price_table_and_is_null_without_one() -> None:
    turn = REPORT.model_copy(
        update={"usage": Usage(prompt_tokens=1_000, completion_tokens=100, cached_tokens=400)}
    )
    priced, _ = _run([turn], price=Price(input=2.0, output=8.0, cached_input=1.0))
    unpriced, _ = _run([turn])
    assert priced.agent.cost_usd == pytest.approx((600 * 2.0 + 400 * 1.0 + 100 * 8.0) / 1e6)
    assert priced.agent.calls[0].cost_usd == priced.agent.cost_usd
    assert unpriced.agent.cost_usd is None


def test_the_wording_of_results_and_errors_comes_from_the_renderer() -> None:
    renderer = Renderer(error="E:{kind}:{tool}", result="R:{tool}:{payload}")
    turn = scripted_turn(
        None,
        [_call("nope", {}), _call("get_payment", {"payment_id": "P-9001"})],
    )
    _, texts = _run([turn, REPORT], renderer=renderer)
    assert texts[0] == "E:unknown_tool:nope"
    assert texts[1].startswith('R:get_payment:{"data":')


def test_the_policy_document_is_the_same_text_in_every_process() -> None:
    # allowed item ids are a set: their text must not follow the process's string hashing.
    code = (
        "from cavbench.agents import DEFAULT_RENDERER as R; from cavbench.scenarios import "
        "load_pack; print(R.policy_document(load_pack('core-v1').get('ER-08').view()))"
    )
    texts = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(texts) == 1
    assert "Only these items are in scope: I-1, I-2, I-3." in texts.pop()
