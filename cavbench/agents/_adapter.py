"""`LLMAdapter`: a tool-calling model acting through the session, one facade call per tool call.

The loop: render the episode (system prompt with the policy document, the user request),
offer the scenario's tools, and ask the model for a turn until it calls `report_outcome`,
answers with text only, or a budget (turns, tokens, wall clock) runs out. Every tool result
and every bad call (unknown tool, malformed or invalid arguments, a refused call) goes back
to the model through the one `Renderer`. Nothing the model sends can crash the episode; an
infrastructure failure that survives the model's retries ends it as `infra_error`. The
episode's invalid tool calls and retries are counted on the way (`_reliability`).

The adapter keeps no state between episodes, so one instance serves concurrent episodes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from cavbench.adapters import AdapterResult
from cavbench.agents._reliability import TOOK_EFFECT, ReliabilityCounts, WriteAttempt
from cavbench.agents._render import DEFAULT_RENDERER, Renderer, ToolErrorKind
from cavbench.agents._tools import (
    KEY_ARG,
    VERSION_ARG,
    OfferedTool,
    OpIdSource,
    ToolKind,
    offered_tools,
    resolve_write,
    unoffered,
)
from cavbench.errors import CavBenchError, ModelInfraError, ModelRequestError, ToolCallError
from cavbench.models import (
    AssistantTurn,
    ChatModel,
    ChatRequest,
    GenerationSettings,
    Message,
    Price,
    Role,
    ToolCall,
    request_digest,
)
from cavbench.runtime.session import AdapterSession, ToolResult, ToolStatus
from cavbench.trace import (
    AgentTranscript,
    CompletionStatus,
    MessageRecord,
    ModelCallRecord,
    StopReason,
)

ADAPTER_VERSION = "1.0.0"
UNREPORTED = "unreported"
"""`completion_status` when the model never called report_outcome (scored as no claim's
severity 0, like any unknown status: SPEC d.1 step 8)."""


@dataclass(frozen=True, slots=True)
class Budgets:
    """Per-episode limits, so a looping or hung model never hangs a sweep."""

    max_turns: int = 30
    """Model calls per episode."""
    max_tokens: int | None = 200_000
    """Prompt + completion tokens per episode (checked before each call)."""
    wall_clock_s: float | None = 600.0
    """Seconds per episode; also bounds each call's timeout."""


@dataclass(slots=True)
class _Episode:
    """One run's mutable bookkeeping (never shared across runs)."""

    session: AdapterSession
    tools: dict[str, OfferedTool]
    validators: dict[str, Draft202012Validator]
    messages: list[Message] = field(default_factory=list)
    calls: list[ModelCallRecord] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    reported: tuple[str, str] | None = None
    error: str | None = None
    counts: ReliabilityCounts = field(default_factory=ReliabilityCounts)


@dataclass(slots=True)
class _Seen:
    """What the adapter saw of one tool call, for the reliability counters."""

    invalid: bool = False
    resource: tuple[str, str] | None = None
    operation: str | None = None
    took_effect: bool = False


@dataclass(frozen=True, slots=True)
class LLMAdapter:
    """An `ExecutionAdapter` driven by a `ChatModel`."""

    model: ChatModel
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    budgets: Budgets = field(default_factory=Budgets)
    op_ids: OpIdSource = OpIdSource.MODEL
    renderer: Renderer = DEFAULT_RENDERER
    price: Price | None = None
    name: str = "llm"
    version: str = ADAPTER_VERSION

    def run(self, session: AdapterSession) -> AdapterResult:
        view = session.scenario
        tools = offered_tools(view, self.op_ids)
        ep = _Episode(
            session=session,
            tools=tools,
            validators={n: Draft202012Validator(t.schema.parameters) for n, t in tools.items()},
            cost=0.0 if self.price is not None else None,
        )
        render = self.renderer
        ep.messages += [
            Message(role=Role.SYSTEM, content=render.system_prompt(view)),
            Message(role=Role.USER, content=render.user_message(view)),
        ]
        schemas = tuple(render.tool_schema(t.schema) for t in tools.values())
        started = time.monotonic()
        stop = StopReason.MAX_TURNS
        final_text = ""
        for turn_index in range(self.budgets.max_turns):
            budget = self.budgets
            if budget.max_tokens is not None and (
                ep.prompt_tokens + ep.completion_tokens >= budget.max_tokens
            ):
                stop = StopReason.TOKEN_BUDGET
                break
            timeout = None
            if budget.wall_clock_s is not None:
                timeout = budget.wall_clock_s - (time.monotonic() - started)
                if timeout <= 0:
                    stop = StopReason.WALL_CLOCK
                    break
            request = ChatRequest(
                messages=tuple(ep.messages),
                tools=schemas,
                settings=self.settings,
                scenario_id=view.id,
                seed=session.seed,
                repetition=session.repetition,
            )
            turn = self._call(ep, turn_index, request, timeout)
            if turn is None:
                stop = (
                    StopReason.INFRA_ERROR
                    if (ep.calls[-1].error_class or "").startswith("ModelInfraError")
                    else StopReason.MODEL_ERROR
                )
                break
            ep.messages.append(turn.message())
            if not turn.tool_calls:
                stop = StopReason.FINAL_TEXT
                final_text = turn.text or ""
                break
            for call in turn.tool_calls:
                ep.messages.append(
                    Message(role=Role.TOOL, content=self._dispatch(ep, call), tool_call_id=call.id)
                )
                if ep.reported is not None:
                    break
            if ep.reported is not None:
                stop = StopReason.REPORTED
                break
        return self._result(ep, stop, final_text)

    # -- the model ------------------------------------------------------------------------
    def _call(
        self, ep: _Episode, turn_index: int, request: ChatRequest, timeout: float | None
    ) -> AssistantTurn | None:
        digest = request_digest(self.model.name, self.model.base_url, request)
        try:
            turn = self.model.complete(request, timeout=timeout)
        except (ModelInfraError, ModelRequestError) as exc:
            kind = (
                f"ModelInfraError:{exc.kind}"
                if isinstance(exc, ModelInfraError)
                else type(exc).__name__
            )
            ep.error = str(exc)
            ep.calls.append(
                ModelCallRecord(
                    turn_index, self.model.name, self.model.base_url, digest,
                    0, 0, 0, 0, 0.0, None, None, False, kind, None,
                )
            )  # fmt: skip
            return None
        usage = turn.usage
        ep.prompt_tokens += usage.prompt_tokens
        ep.completion_tokens += usage.completion_tokens
        cost = self.price.cost(usage) if self.price is not None else None
        if cost is not None and ep.cost is not None:
            ep.cost += cost
        ep.calls.append(
            ModelCallRecord(
                turn=turn_index,
                model=self.model.name,
                base_url=self.model.base_url,
                request_digest=digest,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                latency_s=turn.latency_s,
                finish_reason=turn.finish_reason.value,
                cost_usd=cost,
                cache_hit=turn.cache_hit,
                error_class=None,
                response=turn.model_copy(update={"cache_hit": False}).to_json(),
            )
        )
        return turn

    # -- one tool call = one facade call ------------------------------------------------------
    def _dispatch(self, ep: _Episode, call: ToolCall) -> str:
        seen = _Seen()
        text = self._carry_out(ep, call, seen)
        if seen.invalid:
            ep.counts.invalid_tool_calls += 1
        tool = ep.tools.get(call.name)
        if tool is not None and tool.kind is ToolKind.WRITE:
            attempt = WriteAttempt(tool.name, seen.resource, seen.operation)
            ep.counts.write(attempt, took_effect=seen.took_effect)
        return text

    def _carry_out(self, ep: _Episode, call: ToolCall, seen: _Seen) -> str:
        render = self.renderer
        tool = ep.tools.get(call.name)
        seen.invalid = True  # until the call reaches the world
        if tool is None:
            detail = render.unknown_tool_detail(list(ep.tools))
            return render.tool_error(ToolErrorKind.UNKNOWN_TOOL, call.name, detail)
        try:
            args = orjson.loads(call.arguments) if call.arguments.strip() else {}
        except orjson.JSONDecodeError as exc:
            return render.tool_error(
                ToolErrorKind.MALFORMED_ARGUMENTS, call.name, f"arguments are not JSON ({exc})"
            )
        if not isinstance(args, dict):
            return render.tool_error(
                ToolErrorKind.MALFORMED_ARGUMENTS, call.name, "arguments must be a JSON object"
            )
        seen.resource = tool.resource(args)
        problem = best_match(ep.validators[call.name].iter_errors(args))
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path)
            detail = f"{where}: {problem.message}" if where else problem.message
            return render.tool_error(ToolErrorKind.INVALID_ARGUMENTS, call.name, detail)
        try:
            result = self._execute(ep, tool, args, seen)
        except CavBenchError as exc:  # the world refused (an unknown resource, say)
            # Only the facade's refusal of unrecordable arguments makes the call invalid.
            seen.invalid = isinstance(exc, ToolCallError)
            return render.tool_error(ToolErrorKind.REFUSED, call.name, str(exc))
        seen.invalid = False
        seen.took_effect = result.status in TOOK_EFFECT
        return render.tool_result(call.name, result)

    def _execute(
        self, ep: _Episode, tool: OfferedTool, args: Mapping[str, Any], seen: _Seen
    ) -> ToolResult:
        session = ep.session
        facade = session.tools
        match tool.kind:
            case ToolKind.READ:
                namespace, resource_id = tool.resource(args) or ("", "")
                return facade.read(namespace, resource_id)
            case ToolKind.WRITE:
                target = tool.resource(args)
                if target is None:  # the schema's oneOf already requires exactly one
                    raise ToolCallError("name exactly one resource")
                write = resolve_write(session.scenario, tool, target[0], target[1], args)
                seen.operation = write.logical_operation_id
                key = (
                    args.get(KEY_ARG)
                    if self.op_ids is OpIdSource.MODEL
                    else f"{session.scenario.id}:{write.logical_operation_id}"
                )
                version = args.get(VERSION_ARG)
                return facade.write(
                    step_id=write.step_id,
                    tool_name=tool.name,
                    namespace=write.namespace,
                    resource_id=write.resource_id,
                    changes=write.changes,
                    args=write.args,
                    logical_operation_id=write.logical_operation_id,
                    idempotency_key=None if key is None else str(key),
                    expected_version=version if isinstance(version, int) else None,
                )
            case ToolKind.STATUS:
                return facade.status_check(str(args[KEY_ARG]))
            case ToolKind.ESCALATE:
                return session.escalate(str(args["reason"]))
            case ToolKind.CLARIFY:
                return session.clarify(str(args["question"]))
            case ToolKind.REPORT:
                ep.reported = (str(args["status"]), str(args["message"]))
                return ToolResult(ToolStatus.OK, message="outcome recorded")

    # -- the end ------------------------------------------------------------------------------
    def _result(self, ep: _Episode, stop: StopReason, final_text: str) -> AdapterResult:
        if ep.reported is not None:
            status, message = ep.reported
        elif stop in (StopReason.INFRA_ERROR, StopReason.MODEL_ERROR):
            status, message = CompletionStatus.FAILED.value, ep.error or ""
        else:
            status, message = UNREPORTED, final_text
        transcript = AgentTranscript(
            model=self.model.name,
            temperature=self.settings.temperature,
            turns=len(ep.calls),
            prompt_tokens=ep.prompt_tokens,
            completion_tokens=ep.completion_tokens,
            cost_usd=ep.cost,
            stop_reason=stop,
            op_id_source=self.op_ids.value,
            calls=tuple(ep.calls),
            n_invalid_tool_calls=ep.counts.invalid_tool_calls,
            n_retries=ep.counts.retries,
            messages=tuple(
                MessageRecord(
                    index=i,
                    role=m.role.value,
                    content=m.content,
                    tool_calls=orjson.dumps([c.model_dump() for c in m.tool_calls]).decode(),
                    tool_call_id=m.tool_call_id,
                )
                for i, m in enumerate(ep.messages)
            ),
            error=ep.error,
        )
        return AdapterResult(
            final_message=message,
            completion_status=status,
            metadata={
                "stop_reason": stop.value,
                "op_id_source": self.op_ids.value,
                "unoffered_tools": list(unoffered(ep.session.scenario)),
            },
            agent=transcript,
        )
