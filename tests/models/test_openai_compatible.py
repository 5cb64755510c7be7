"""The `openai_compatible` back end through the real `openai` SDK against a loopback fake
server: tool calls, retried 429/500, timeouts, malformed responses and arguments, refusals,
and the answer cache."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from cavbench.agents import LLMAdapter
from cavbench.errors import CacheMissError, ModelInfraError, ModelRequestError
from cavbench.models import (
    CachedModel,
    ChatRequest,
    FinishReason,
    Message,
    OpenAICompatibleModel,
    Role,
)
from cavbench.models.fake_server import FakeChatServer, FakeReply, completion
from cavbench.runner import run_episode
from cavbench.scenarios import load_pack
from cavbench.trace import EpisodeStatus, StopReason

SCENARIO = load_pack("mock").get("MK-01")
REQUEST = ChatRequest(messages=(Message(role=Role.USER, content="hi"),))
FAST_RETRY = {"retry-after-ms": "5"}  # the SDK honours it, so retries take milliseconds


def _model(server: FakeChatServer, **kw: Any) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("fake-model", server.base_url, **kw)


def _args(**kw: Any) -> str:
    return json.dumps(kw)


def _by_turn(*replies: FakeReply) -> Any:
    """A responder answering turn i (assistant messages so far) with replies[i]."""

    def respond(body: dict[str, Any]) -> FakeReply:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return replies[min(turn, len(replies) - 1)]

    return respond


def test_tool_calls_drive_an_episode_through_the_sdk() -> None:
    responder = _by_turn(
        FakeReply(body=completion(None, [("get_payment", _args(payment_id="P-9001"))])),
        FakeReply(
            body=completion(
                None,
                [("issue_refund", _args(payment_id="P-9001", amount=20, expected_version=2))],
                prompt_tokens=250,
            )
        ),
        FakeReply(
            body=completion(None, [("report_outcome", _args(status="success", message="ok"))])
        ),
    )
    with FakeChatServer(responder) as server:
        trace = run_episode(SCENARIO, LLMAdapter(model=_model(server)))
        sent = server.requests
    assert trace.status is EpisodeStatus.COMPLETED
    assert trace.agent is not None
    assert trace.agent.stop_reason is StopReason.REPORTED
    assert (trace.agent.turns, trace.agent.prompt_tokens, trace.agent.completion_tokens) == (
        3,
        450,
        30,
    )
    assert trace.final_state["payment"]["P-9001"]["refunded"] == 20
    assert [t["function"]["name"] for t in sent[0]["tools"]][:2] == ["get_payment", "issue_refund"]
    # Said explicitly: llama.cpp's server reads a missing tool_choice as "none".
    assert {r["tool_choice"] for r in sent} == {"auto"}
    assistant = sent[1]["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == ""  # not null: llama.cpp's server requires a string
    tool_message = sent[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_0"
    assert [c.finish_reason for c in trace.agent.calls] == ["tool_calls"] * 3


def test_rate_limit_then_server_error_then_success_is_retried() -> None:
    replies = iter(
        [
            FakeReply(status=429, body={"error": {"message": "slow down"}}, headers=FAST_RETRY),
            FakeReply(status=500, body={"error": {"message": "boom"}}, headers=FAST_RETRY),
            FakeReply(body=completion("hello")),
        ]
    )
    with FakeChatServer(lambda _b: next(replies)) as server:
        turn = _model(server, max_retries=3).complete(REQUEST)
        attempts = len(server.requests)
    assert (turn.text, turn.finish_reason, attempts) == ("hello", FinishReason.STOP, 3)
    assert turn.usage.prompt_tokens == 100


def test_errors_surviving_the_retries_are_infra_errors() -> None:
    reply = FakeReply(status=503, body={"error": {"message": "down"}}, headers=FAST_RETRY)
    with FakeChatServer(lambda _b: reply) as server:
        with pytest.raises(ModelInfraError) as caught:
            _model(server, max_retries=2).complete(REQUEST)
        attempts = len(server.requests)
    assert (caught.value.kind, attempts) == ("server_error", 3)


def test_a_hung_endpoint_times_out_and_the_episode_is_an_infra_error() -> None:
    with FakeChatServer(lambda _b: FakeReply(body=completion("late"), delay_s=1.0)) as server:
        trace = run_episode(
            SCENARIO, LLMAdapter(model=_model(server, timeout_s=0.2, max_retries=0))
        )
    assert trace.status is EpisodeStatus.INFRA_ERROR
    assert trace.agent is not None
    assert trace.agent.calls[0].error_class == "ModelInfraError:timeout"
    assert trace.error is None  # the adapter did not fail: the infrastructure did


def test_a_malformed_response_is_retried_then_an_infra_error() -> None:
    counter = itertools.count()

    def respond(_body: dict[str, Any]) -> FakeReply:
        next(counter)
        return FakeReply(body={"id": "x", "object": "chat.completion", "choices": []})

    with FakeChatServer(respond) as server, pytest.raises(ModelInfraError) as caught:
        _model(server, max_retries=1).complete(REQUEST)
    assert caught.value.kind == "malformed_response"
    assert next(counter) == 2


def test_a_refused_request_is_a_request_error_and_an_adapter_error_episode() -> None:
    reply = FakeReply(status=404, body={"error": {"message": "no such model"}})
    with FakeChatServer(lambda _b: reply) as server:
        with pytest.raises(ModelRequestError, match="no such model"):
            _model(server).complete(REQUEST)
        trace = run_episode(SCENARIO, LLMAdapter(model=_model(server)))
    assert trace.status is EpisodeStatus.ADAPTER_ERROR
    assert trace.agent is not None
    assert trace.agent.stop_reason is StopReason.MODEL_ERROR


def test_malformed_arguments_and_unknown_tools_reach_the_model_as_tool_errors() -> None:
    responder = _by_turn(
        FakeReply(
            body=completion(None, [("get_payment", '{"payment_id": "P-9001"'), ("transfer", "{}")])
        ),
        FakeReply(body=completion(None, [("report_outcome", _args(status="failed", message="x"))])),
    )
    with FakeChatServer(responder) as server:
        trace = run_episode(SCENARIO, LLMAdapter(model=_model(server)))
        second = server.requests[1]["messages"]
    tool_texts = [m["content"] for m in second if m["role"] == "tool"]
    assert tool_texts[0].startswith("Error (malformed_arguments) in get_payment")
    assert tool_texts[1].startswith("Error (unknown_tool) in transfer")
    assert trace.status is EpisodeStatus.COMPLETED


def test_the_cache_answers_repeats_and_offline_misses_are_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite"
    with FakeChatServer(lambda _b: FakeReply(body=completion("hi"))) as server:
        cached = CachedModel(_model(server), path)
        first = cached.complete(REQUEST)
        second = cached.complete(REQUEST)
        other_rep = cached.complete(REQUEST.model_copy(update={"repetition": 1}))
        calls = len(server.requests)
        cached.close()
        assert (first.cache_hit, second.cache_hit, other_rep.cache_hit) == (False, True, False)
        assert calls == 2
        offline = CachedModel(_model(server), path, offline=True)
        assert offline.complete(REQUEST).text == "hi"
        with caplog.at_level("ERROR"), pytest.raises(CacheMissError, match="offline=true"):
            offline.complete(REQUEST.model_copy(update={"seed": 9}))
        assert len(server.requests) == calls  # offline: never called
        offline.close()
    assert '"seed":9' in caplog.text  # the miss logs the key's inputs


def test_a_request_without_tools_sends_no_tool_choice() -> None:
    with FakeChatServer() as server:
        _model(server).complete(REQUEST)
        (sent,) = server.requests
    assert "tools" not in sent
    assert "tool_choice" not in sent
