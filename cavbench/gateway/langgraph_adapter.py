"""A LangGraph adapter (extra `[langgraph]`): the full-lifecycle strategy as a graph.

The graph walks the plan: `next` picks the next runnable step and routes by its kind to
`read`, `write` (intent/authority gate, commit-time guard, reconciliation of an ambiguous
write, recovery), `escalate` or `clarify`; each returns to `next`; `report` ends the run.
The decisions are the baseline engine's (`BaselineAdapter.step`), so the graph gives the
`full_lifecycle` verdicts; what LangGraph adds is the checkpointed state machine.

The thread id is derived from the scenario id (`cavbench-<scenario_id>`), and the engine's
idempotency keys from the scenario and logical operation ids, so operation and idempotency
ids are the same across retries and resumes. All effects go through the session's facade.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from cavbench.adapters import AdapterResult, Profile, baseline
from cavbench.gateway._errors import require_extra
from cavbench.runtime.session import AdapterSession
from cavbench.scenarios import StepKind

ADAPTER_VERSION = "1.0.0"

_ROUTES = {
    StepKind.READ: "read",
    StepKind.WRITE: "write",
    StepKind.ESCALATE: "escalate",
    StepKind.CLARIFY: "clarify",
}


class GraphState(TypedDict):
    """The checkpointed state: where the walk is and what each node did."""

    index: int
    visited: list[str]


def thread_id(scenario_id: str) -> str:
    """The LangGraph thread of a scenario's episode (stable across retries and resumes)."""
    return f"cavbench-{scenario_id}"


@dataclass(frozen=True, slots=True)
class LangGraphAdapter:
    """Runs the full-lifecycle strategy as a compiled LangGraph graph."""

    profile: Profile = Profile.FULL_LIFECYCLE
    version: str = ADAPTER_VERSION

    @property
    def name(self) -> str:
        return f"langgraph-{self.profile.value}"

    def run(self, session: AdapterSession) -> AdapterResult:
        langgraph_graph = require_extra("langgraph.graph", "langgraph")
        memory = require_extra("langgraph.checkpoint.memory", "langgraph")
        engine = baseline(self.profile)
        ep = engine.start(session)
        steps = ep.view.plan.steps

        def advance(state: GraphState) -> dict[str, Any]:
            index = state["index"]
            while index < len(steps) and not engine.runnable(ep, steps[index]):
                index += 1
            return {"index": index}

        def route(state: GraphState) -> str:
            index = state["index"]
            if index >= len(steps):
                return "report"
            return _ROUTES.get(steps[index].kind, "skip")

        def act(name: str) -> Callable[[GraphState], dict[str, Any]]:
            def node(state: GraphState) -> dict[str, Any]:
                step = steps[state["index"]]
                engine.step(ep, step)
                return {
                    "index": state["index"] + 1,
                    "visited": [*state["visited"], f"{name}:{step.step_id}"],
                }

            return node

        graph = langgraph_graph.StateGraph(GraphState)
        graph.add_node("next", advance)
        for name in ("read", "write", "escalate", "clarify", "skip"):
            graph.add_node(name, act(name))
            graph.add_edge(name, "next")
        graph.add_node("report", lambda state: {})
        graph.add_edge(langgraph_graph.START, "next")
        graph.add_conditional_edges(
            "next", route, ["read", "write", "escalate", "clarify", "skip", "report"]
        )
        graph.add_edge("report", langgraph_graph.END)
        compiled = graph.compile(checkpointer=memory.InMemorySaver())
        config = {
            "configurable": {"thread_id": thread_id(ep.view.id)},
            "recursion_limit": 4 * len(steps) + 10,
        }
        final = compiled.invoke({"index": 0, "visited": []}, config, durability="sync")
        result = engine.finish(ep)
        return AdapterResult(
            final_message=result.final_message,
            completion_status=result.completion_status,
            metadata={
                **result.metadata,
                "adapter_name": self.name,
                "adapter_version": self.version,
                "thread_id": thread_id(ep.view.id),
                "graph_path": list(final["visited"]),
            },
        )


def langgraph_adapter(profile: str = Profile.FULL_LIFECYCLE.value) -> LangGraphAdapter:
    """The `adapter=langgraph` factory."""
    return LangGraphAdapter(Profile(profile))
