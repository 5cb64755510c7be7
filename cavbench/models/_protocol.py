"""The one interface every model back end implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cavbench.models._records import AssistantTurn, ChatRequest


@runtime_checkable
class ChatModel(Protocol):
    """Messages + tool schemas + settings -> one assistant turn.

    `complete` must be safe to call from several threads at once (episodes of a cell run
    concurrently). It raises `ModelInfraError` for an infrastructure failure that survived
    its retries, `ModelRequestError` for a refused request and `CacheMissError` when it may
    not fetch; nothing else on purpose.
    """

    @property
    def name(self) -> str:
        """The model name (part of every cache key and of the `model` column)."""
        ...

    @property
    def base_url(self) -> str | None: ...

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> AssistantTurn:
        """One turn; `timeout` (seconds) bounds the call where the back end waits on I/O."""
        ...
