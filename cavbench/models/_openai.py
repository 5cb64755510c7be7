"""`openai_compatible`: the official `openai` SDK against any Chat Completions endpoint
(OpenAI, vLLM, llama.cpp's server, Ollama).

The API key is read from the environment variable the config names, when the client is
built; the key itself is held only by the SDK client and is never part of a config, a
record, a log line or an error message. HTTP retries (429, 408, 409, 5xx, connection
errors, timeouts) with exponential backoff are the SDK's own; a malformed 200 response is
retried here with the same backoff. What survives the retries is a `ModelInfraError`.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openai._types import RequestOptions

from cavbench.errors import ConfigError, ModelInfraError, ModelRequestError
from cavbench.models._records import (
    AssistantTurn,
    ChatRequest,
    FinishReason,
    ToolCall,
    Usage,
)

log = logging.getLogger(__name__)

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_NO_KEY = "no-key-set"
"""Sent when the key variable is unset: local servers ignore it, hosted ones answer 401."""
_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 8.0


class OpenAICompatibleModel:
    """A `ChatModel` over the `openai` SDK. Thread-safe (the SDK client is)."""

    def __init__(
        self,
        name: str,
        base_url: str | None = None,
        *,
        api_key_env: str = DEFAULT_KEY_ENV,
        timeout_s: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # an optional extra
            raise ConfigError(
                "model=openai_compatible needs the openai package "
                "(fix: pip install 'cavbench[llm]')"
            ) from exc
        if not name:
            raise ConfigError("model.name is empty (fix: set model.name=<the endpoint's model>)")
        key = os.environ.get(api_key_env)
        if not key:
            log.warning("%s is not set; calling %s without an API key", api_key_env, base_url)
        self._name = name
        self._base_url = base_url
        self._max_retries = max_retries
        self._timeout_s = timeout_s
        self._openai = openai
        self._completion_type = openai.types.chat.ChatCompletion
        self._client = openai.OpenAI(
            api_key=key or _NO_KEY,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=max_retries,
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def base_url(self) -> str | None:
        return self._base_url

    def __repr__(self) -> str:  # never the client: it holds the key
        return f"OpenAICompatibleModel(name={self._name!r}, base_url={self._base_url!r})"

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> AssistantTurn:
        openai = self._openai
        ChatCompletion = self._completion_type  # noqa: N806 (a class)
        kwargs: dict[str, Any] = {
            "model": self._name,
            "messages": [m.as_openai() for m in request.messages],
            "temperature": request.settings.temperature,
        }
        if request.tools:
            kwargs["tools"] = [t.as_openai() for t in request.tools]
            # "auto" is the API's documented default when tools are given, so it changes nothing
            # for OpenAI or vLLM; servers that read a missing tool_choice as "none" (llama.cpp's
            # chatml-function-calling leaves the tools out of the prompt) need it said.
            kwargs["tool_choice"] = "auto"
        if request.settings.top_p is not None:
            kwargs["top_p"] = request.settings.top_p
        if request.settings.max_tokens is not None:
            kwargs["max_tokens"] = request.settings.max_tokens
        if request.settings.seed is not None:
            kwargs["seed"] = request.settings.seed
        options: RequestOptions = {}
        if timeout is not None:  # the caller's budget can only shorten the configured timeout
            options["timeout"] = max(0.001, min(self._timeout_s, timeout))
        problem = ""
        for attempt in range(self._max_retries + 1):
            if attempt:
                time.sleep(min(_BACKOFF_S * 2 ** (attempt - 1), _MAX_BACKOFF_S))
            started = time.perf_counter()
            try:
                # The SDK's documented low-level `post` (same auth, retries, timeouts and
                # parsing): `chat.completions.create` first walks the whole request against
                # its TypedDicts, ~10 ms of CPU per call that serialises concurrent episodes.
                response = self._client.post(
                    "/chat/completions", cast_to=ChatCompletion, body=kwargs, options=options
                )
            except openai.APITimeoutError as exc:
                raise ModelInfraError("timeout", _describe(exc)) from None
            except openai.APIConnectionError as exc:
                raise ModelInfraError("connection", _describe(exc)) from None
            except openai.RateLimitError as exc:
                raise ModelInfraError("rate_limit", _describe(exc)) from None
            except openai.APIStatusError as exc:
                if exc.status_code >= 500:
                    raise ModelInfraError("server_error", _describe(exc)) from None
                raise ModelRequestError(
                    f"{self._base_url or 'api.openai.com'} refused the request for model "
                    f"{self._name!r}: {_describe(exc)} (fix: check model.name, model.base_url "
                    "and the API key variable)"
                ) from None
            except (openai.APIResponseValidationError, ValueError) as exc:
                problem = _describe(exc)
                continue
            latency = time.perf_counter() - started
            turn = _parse(response, latency)
            if isinstance(turn, str):
                problem = turn
                continue
            return turn
        raise ModelInfraError("malformed_response", problem)


def _describe(exc: BaseException) -> str:
    # The SDK's messages quote the endpoint's reply, never the request headers.
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _parse(response: Any, latency: float) -> AssistantTurn | str:
    """The turn, or what is wrong with the response."""
    choices = getattr(response, "choices", None)
    if not choices:
        return f"response has no choices: {str(response)[:200]}"
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        return "response choice has no message"
    calls: list[ToolCall] = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or ()):
        function = getattr(call, "function", None)
        if function is None:
            continue  # a non-function tool call (custom tools): not offered, not answerable
        calls.append(
            ToolCall(
                id=str(getattr(call, "id", None) or f"call_{index}"),
                name=str(getattr(function, "name", "") or ""),
                arguments=str(getattr(function, "arguments", "") or ""),
            )
        )
    usage = getattr(response, "usage", None)
    return AssistantTurn(
        text=getattr(message, "content", None),
        tool_calls=tuple(calls),
        usage=_usage(usage),
        finish_reason=FinishReason.parse(getattr(choice, "finish_reason", None)),
        latency_s=latency,
        model=str(getattr(response, "model", "") or ""),
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cached_tokens=int(getattr(prompt_details, "cached_tokens", 0) or 0),
        reasoning_tokens=int(getattr(completion_details, "reasoning_tokens", 0) or 0),
    )
