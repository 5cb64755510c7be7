"""`scripted`: deterministic turns from a file or a Python callable (tests, controls).

A script file is JSON::

    {"default": [TURN, ...], "scenarios": {"HP-01": [TURN, ...]}}

where a TURN is ``{"text": "...", "tool_calls": [{"name": "get_order", "arguments":
{"order_id": "O-1"}}]}`` (``arguments`` may also be raw text, to script a malformed call).
Turn *i* of an episode is the script's *i*-th entry (the scenario's own list if it has one);
past the end the model answers with a final text. The answer depends only on the request,
so episodes may run in any order or at once.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from cavbench.errors import ConfigError
from cavbench.models._records import AssistantTurn, ChatRequest, FinishReason, ToolCall

Script = Callable[[ChatRequest], AssistantTurn]
EXHAUSTED = "(the script has no more turns)"


def scripted_turn(
    text: str | None = None, calls: Sequence[Mapping[str, Any]] = ()
) -> AssistantTurn:
    """A turn from plain values: `calls` are ``{"name": ..., "arguments": dict | str}``."""
    tool_calls = []
    for index, call in enumerate(calls):
        arguments = call.get("arguments", {})
        raw = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
        tool_calls.append(
            ToolCall(
                id=str(call.get("id") or f"call_{index}"), name=str(call["name"]), arguments=raw
            )
        )
    return AssistantTurn(
        text=text,
        tool_calls=tuple(tool_calls),
        finish_reason=FinishReason.TOOL_CALLS if tool_calls else FinishReason.STOP,
    )


class ScriptedModel:
    """A `ChatModel` whose answers come from a script (a callable) — no I/O, no randomness."""

    def __init__(self, script: Script, name: str = "scripted") -> None:
        self._script = script
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def base_url(self) -> str | None:
        return None

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> AssistantTurn:
        turn = self._script(request)
        return turn if turn.model else turn.model_copy(update={"model": self._name})


def turns_script(
    default: Sequence[AssistantTurn], by_scenario: Mapping[str, Sequence[AssistantTurn]]
) -> Script:
    """A script serving turn *i* of the scenario's list (or of `default`)."""

    def script(request: ChatRequest) -> AssistantTurn:
        turns = by_scenario.get(request.scenario_id, default)
        index = request.turn
        return turns[index] if index < len(turns) else scripted_turn(EXHAUSTED)

    return script


def load_script(path: str | Path) -> Script:
    """A script file (see the module docstring)."""
    source = Path(path)
    try:
        data = orjson.loads(source.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ConfigError(f"model.script={source}: cannot read a JSON script ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a script is an object with 'default' and/or 'scenarios'")

    def turns(items: object, where: str) -> list[AssistantTurn]:
        if not isinstance(items, list):
            raise ConfigError(f"{source}: {where} must be a list of turns")
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("tool_calls", []), list):
                raise ConfigError(
                    f"{source}: {where}[{i}] must be an object with 'text' and/or 'tool_calls'"
                )
            out.append(scripted_turn(item.get("text"), item.get("tool_calls", [])))
        return out

    scenarios = data.get("scenarios", {})
    if not isinstance(scenarios, dict):
        raise ConfigError(f"{source}: 'scenarios' must map scenario ids to lists of turns")
    return turns_script(
        turns(data.get("default", []), "default"),
        {str(k): turns(v, f"scenarios.{k}") for k, v in scenarios.items()},
    )


def import_script(reference: str) -> Script:
    """A callable named ``module:attribute``."""
    module_name, _, attribute = reference.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"model.function={reference!r}: cannot import it (fix: use 'package.module:function')"
        ) from exc
    if not callable(found):
        raise ConfigError(f"model.function={reference!r} is not callable")
    script: Script = found
    return script
