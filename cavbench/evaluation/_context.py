"""The evidence an oracle predicate may look at, built lazily from the trace."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from cavbench.trace import EpisodeTrace, EventType, TraceEvent

_KEYS = ("state", "side_effects", "events")

# Events CAV-Bench records without arguments (its `args` is null, ours an empty object),
# and the clarification it records without a tool name: predicates see its form.
_NO_ARGS = frozenset(
    {
        EventType.USER_INPUT,
        EventType.EXTERNAL_MUTATION,
        EventType.FAULT,
        EventType.CLARIFICATION,
        EventType.RUN_ERROR,
    }
)


def _as_reference_event(event: TraceEvent) -> dict[str, Any]:
    data = event.as_json()
    if event.event_type in _NO_ARGS:
        data["args"] = None
        if event.event_type is EventType.CLARIFICATION:
            data["tool_name"] = None
    return data


class EvidenceContext(Mapping[str, Any]):
    """`{"state", "side_effects", "events"}` as CAV-Bench's evaluator sees them.

    Ledger rows and events are turned into JSON objects only if a predicate asks for them.
    """

    __slots__ = ("_cache", "_trace")

    def __init__(self, trace: EpisodeTrace) -> None:
        self._trace = trace
        self._cache: dict[str, Any] = {"state": trace.final_state}

    def __getitem__(self, key: str) -> Any:
        if key in self._cache:
            return self._cache[key]
        if key == "side_effects":
            value: Any = [row.as_json() for row in self._trace.side_effects]
        elif key == "events":
            value = [_as_reference_event(event) for event in self._trace.events]
        else:
            raise KeyError(key)
        self._cache[key] = value
        return value

    def get(self, key: str, default: Any = None) -> Any:
        # Mapping's own `get` goes through `__getitem__` and a KeyError; predicates call this.
        found = self._cache.get(key)
        if found is not None:
            return found
        return self[key] if key in _KEYS else default

    def __iter__(self) -> Iterator[str]:
        return iter(_KEYS)

    def __len__(self) -> int:
        return len(_KEYS)
