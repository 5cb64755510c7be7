"""Model records: the cache/replay key names exactly what changes an answer; turns survive
their JSON round trip (what the cache and `model_calls.response` store)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cavbench.models import (
    AssistantTurn,
    ChatRequest,
    FinishReason,
    GenerationSettings,
    Message,
    Role,
    ToolCall,
    Usage,
    request_digest,
)

_TEXT = st.text(max_size=20)
_CALLS = st.lists(
    st.builds(ToolCall, id=_TEXT, name=_TEXT, arguments=st.text(max_size=40)), max_size=3
)
_TURNS = st.builds(
    AssistantTurn,
    text=st.none() | _TEXT,
    tool_calls=_CALLS.map(tuple),
    usage=st.builds(
        Usage,
        prompt_tokens=st.integers(0, 10**6),
        completion_tokens=st.integers(0, 10**6),
        cached_tokens=st.integers(0, 10**6),
        reasoning_tokens=st.integers(0, 10**6),
    ),
    finish_reason=st.sampled_from(FinishReason),
    latency_s=st.floats(0, 100, allow_nan=False),
    model=_TEXT,
)
_MESSAGES = st.lists(
    st.builds(Message, role=st.sampled_from(Role), content=st.none() | _TEXT),
    min_size=1,
    max_size=4,
).map(tuple)


@given(_TURNS)
def test_a_turn_survives_its_json_round_trip(turn: AssistantTurn) -> None:
    assert AssistantTurn.from_json(turn.to_json()) == turn


@given(_MESSAGES, st.integers(0, 5), st.integers(0, 5), _TEXT)
def test_the_digest_follows_seed_and_repetition_but_not_the_scenario_label(
    messages: tuple[Message, ...], seed: int, repetition: int, label: str
) -> None:
    request = ChatRequest(messages=messages, seed=seed, repetition=repetition)
    same = request_digest("m", None, request)
    assert request_digest("m", None, request.model_copy(update={"scenario_id": label})) == same
    assert (
        request_digest("m", None, request.model_copy(update={"repetition": repetition + 1})) != same
    )
    assert request_digest("m", None, request.model_copy(update={"seed": seed + 1})) != same
    assert request_digest("m2", None, request) != same
    assert request_digest("m", "http://x/v1", request) != same
    hotter = request.model_copy(update={"settings": GenerationSettings(temperature=0.5)})
    assert request_digest("m", None, hotter) != same


def test_finish_reasons_outside_the_vocabulary_are_other() -> None:
    assert FinishReason.parse("tool_calls") is FinishReason.TOOL_CALLS
    assert FinishReason.parse("eos_token") is FinishReason.OTHER
    assert FinishReason.parse(None) is FinishReason.OTHER
