"""The LLM adapter's trajectory-reliability counters: invalid tool calls and retries.

Both are counted from what the adapter saw in one episode, in call order, with no clock and
no model output beyond the calls themselves, so the same transcript always gives the same
counts (definitions in docs/llm-agents.md#reliability-counters):

- an **invalid tool call** is one refused before it acted on the world: an unknown tool,
  arguments that are not JSON or not a JSON object, arguments that fail the tool's schema
  (missing, mistyped or unexpected), or arguments the tool facade refused as unrecordable
  (`ToolCallError`). A well-formed call the world answers with an error (an unknown
  resource, a version conflict, a timeout) is not invalid.
- a **retry** is a write-tool call that repeats an earlier write call of the episode that did
  not take effect (it was invalid or refused, or the world answered anything but `COMMITTED`
  or `IDEMPOTENT_REPLAY`: a conflict, a failure, an ambiguous timeout). The two repeat each
  other when they use the same tool and agree on every part of the operation both of them
  name: the resource (namespace and id) and the logical operation the adapter resolved the
  call to; a part that a call does not name (arguments too broken to name a resource, a call
  refused before it was resolved) matches anything. A retry answers every earlier failed
  attempt it repeats, so one failure followed by two repeats is one retry, unless the first
  repeat fails too. Repeating a write that took effect is a duplicate, not a retry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cavbench.runtime.session import ToolStatus

TOOK_EFFECT = frozenset({ToolStatus.COMMITTED, ToolStatus.IDEMPOTENT_REPLAY})
"""Write outcomes after which the operation is done (anything else may be retried)."""


@dataclass(frozen=True, slots=True)
class WriteAttempt:
    """What identifies one write-tool call's operation, as far as the call names it."""

    tool: str
    resource: tuple[str, str] | None = None
    """(namespace, resource id), None when the arguments name no single resource."""
    operation: str | None = None
    """The logical operation id the call resolved to, None when it was refused before."""

    def repeats(self, earlier: WriteAttempt) -> bool:
        """Same tool, and no part of the operation that both calls name differs.

        >>> WriteAttempt("issue_refund").repeats(WriteAttempt("issue_refund", ("payment", "P-1")))
        True
        >>> WriteAttempt("issue_refund", ("payment", "P-2")).repeats(
        ...     WriteAttempt("issue_refund", ("payment", "P-1")))
        False
        """
        return (
            self.tool == earlier.tool
            and _agree(self.resource, earlier.resource)
            and _agree(self.operation, earlier.operation)
        )


def _agree(a: object, b: object) -> bool:
    return a is None or b is None or a == b


@dataclass(slots=True)
class ReliabilityCounts:
    """One episode's counters (mutable, never shared across episodes)."""

    invalid_tool_calls: int = 0
    retries: int = 0
    unsettled: list[WriteAttempt] = field(default_factory=list)
    """Write attempts that did not take effect and no later call has repeated yet."""

    def write(self, attempt: WriteAttempt, *, took_effect: bool) -> None:
        """Note a write-tool call (valid or not) and whether it took effect."""
        kept = [e for e in self.unsettled if not attempt.repeats(e)]
        if len(kept) < len(self.unsettled):
            self.retries += 1
        self.unsettled = kept
        if not took_effect:
            self.unsettled.append(attempt)
