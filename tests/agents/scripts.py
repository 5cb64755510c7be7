"""Model scripts importable by config (`model.function=tests.agents.scripts:NAME`).

Test-only scripts; the controls that experiments reference live in `cavbench.controls`.
"""

from __future__ import annotations

from cavbench.models import AssistantTurn, ChatRequest, scripted_turn


def probe_then_report(request: ChatRequest) -> AssistantTurn:
    """Turn 0: call the first tool with no arguments (an invalid call); then report."""
    if request.turn == 0:
        return scripted_turn("Let me look.", [{"name": request.tools[0].name, "arguments": {}}])
    return scripted_turn(
        None, [{"name": "report_outcome", "arguments": {"status": "success", "message": "done"}}]
    )
