"""What an adapter gets: the session and the tool facade, nothing more (SPEC a.8, b.5)."""

from __future__ import annotations

from typing import Any

from cavbench.runtime import READ_TOOLS, AdapterSession, Environment, ToolFacade
from cavbench.scenarios import ScenarioView


def public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


def test_session_exposes_only_scenario_tools_clarify_escalate(kit: Any) -> None:
    session = Environment(kit.scenario()).session()
    assert isinstance(session, AdapterSession)
    # `seed` and `repetition` say which episode this is (an out-of-process candidate is told
    # the seed; a model-driven adapter keys its cache on both).
    assert public(session) == {"scenario", "tools", "clarify", "escalate", "seed", "repetition"}
    assert not hasattr(session, "__dict__")  # no room to hang anything else on it


def test_facade_exposes_only_the_five_operations(kit: Any) -> None:
    tools = Environment(kit.scenario()).session().tools
    assert isinstance(tools, ToolFacade)
    assert public(tools) == {"read", "write", "status_check", "escalate", "clarify"}
    assert not hasattr(tools, "__dict__")


def test_session_scenario_is_the_view_without_private_parts(kit: Any) -> None:
    scenario = kit.scenario(
        state={"order": {"O-1": {"status": "open", "version": 1}}},
        injections=[kit.fault("f1", "after_read:order:O-1", "ambiguous_response")],
        goal=[kit.pred("exists", "state.order.O-1")],
    )
    view = Environment(scenario).session().scenario
    assert isinstance(view, ScenarioView)
    assert view == scenario.view()
    for hidden in ("world", "oracle", "notes", "schema_version", "injections", "initial_state"):
        assert not hasattr(view, hidden)
    dumped = view.model_dump_json()
    assert "after_read" not in dumped
    assert "goal_predicates" not in dumped


def test_read_tools_table_matches_the_spec() -> None:
    assert dict(READ_TOOLS) == {
        "order": "get_order",
        "payment": "get_payment",
        "inventory": "get_inventory",
        "account": "get_account",
        "slot": "get_service_slot",
        "reservation": "get_reservation",
        "carrier": "get_carrier_status",
        "accounts_aggregate": "get_accounts_aggregate",
    }
