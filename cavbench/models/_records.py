"""The records a chat model takes and gives: messages, tool schemas, settings, one assistant turn.

Frozen pydantic models, so every record crossing the model boundary is typed and immutable,
and `request_digest` can name a request by the canonical JSON of what changes an answer.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class FinishReason(StrEnum):
    """Why the model stopped generating (OpenAI's vocabulary; anything else is `other`)."""

    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"

    @classmethod
    def parse(cls, value: object) -> FinishReason:
        try:
            return cls(str(value))
        except ValueError:
            return cls.OTHER


class ToolCall(_Record):
    """One tool call as the model wrote it. `arguments` is the raw text: it may not be JSON."""

    id: str
    name: str
    arguments: str = "{}"


class Message(_Record):
    """One chat message (OpenAI's chat format)."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    """For a `tool` message: the call it answers."""

    def as_openai(self) -> dict[str, Any]:
        """The message as the Chat Completions API takes it."""
        # A tools-only assistant turn is sent with an empty string, not null: the API takes
        # either, but llama.cpp's server requires a string (its check and its chat template).
        content = "" if self.content is None and self.tool_calls else self.content
        out: dict[str, Any] = {"role": self.role.value, "content": content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


class ToolSchema(_Record):
    """A function tool offered to the model; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, JsonValue]

    def as_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class GenerationSettings(_Record):
    """Sampling settings sent with every call (all part of the cache key)."""

    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
    """Completion tokens per call."""
    seed: int | None = None
    """Sampling seed sent to the endpoint (None: not sent)."""


class Usage(_Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the endpoint served from its own prompt cache."""
    reasoning_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Price(_Record):
    """US dollars per million tokens, from the provider's price list (never guessed)."""

    input: float
    output: float
    cached_input: float | None = None
    """Price of prompt tokens served from the endpoint's prompt cache (None: as `input`)."""

    def cost(self, usage: Usage) -> float:
        cached = usage.cached_tokens if self.cached_input is not None else 0
        fresh = usage.prompt_tokens - cached
        total = fresh * self.input + cached * (self.cached_input or 0.0)
        return (total + usage.completion_tokens * self.output) / 1_000_000


class AssistantTurn(_Record):
    """What one model call gave back."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    finish_reason: FinishReason = FinishReason.STOP
    latency_s: float = 0.0
    """Seconds the call took (wall clock: recorded in `model_calls`, never in a verdict)."""
    model: str = ""
    """The model name the endpoint reported (may differ from the requested one)."""
    cache_hit: bool = False

    def message(self) -> Message:
        """The turn as the assistant message that goes back into the conversation."""
        return Message(role=Role.ASSISTANT, content=self.text, tool_calls=self.tool_calls)

    def to_json(self) -> str:
        """The turn as JSON text (how `model_calls.response` and the cache store it)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> AssistantTurn:
        return cls.model_validate_json(text)


class ChatRequest(_Record):
    """One call: the conversation so far, the tools, the settings and which episode asks.

    `seed` and `repetition` are the episode's, so the cache keeps repetitions apart;
    `scenario_id` only helps a scripted model pick its script (the messages already name it).
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    settings: GenerationSettings = Field(default_factory=GenerationSettings)
    scenario_id: str = ""
    seed: int = 0
    repetition: int = 0

    @property
    def turn(self) -> int:
        """0-based index of the turn being asked for (assistant messages so far)."""
        return sum(1 for m in self.messages if m.role is Role.ASSISTANT)


def key_inputs(model: str, base_url: str | None, request: ChatRequest) -> dict[str, Any]:
    """Everything that changes an answer, and nothing that does not (timeouts, retries,
    concurrency, the scenario label): the inputs of the cache key and the replay key."""
    return {
        "model": model,
        "base_url": base_url or "",
        "messages": [m.model_dump(mode="json") for m in request.messages],
        "tools": [t.model_dump(mode="json") for t in request.tools],
        "settings": request.settings.model_dump(mode="json"),
        "seed": request.seed,
        "repetition": request.repetition,
    }


def request_digest(model: str, base_url: str | None, request: ChatRequest) -> str:
    """`sha256:` of the canonical JSON of `key_inputs` (keys sorted)."""
    blob = orjson.dumps(key_inputs(model, base_url, request), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(blob).hexdigest()
