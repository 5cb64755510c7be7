"""Tools derived from the scenario view for packs without hand-written specs (netops-v1, a
synthetic pack with invented tool names): every toolset entry is offered, and a scripted
model replaying a baseline profile's actions as tool calls gets that profile's verdicts."""

from __future__ import annotations

import json

from cavbench.adapters import Profile, baseline
from cavbench.agents import (
    MAX_STRING_CHARS,
    Budgets,
    LLMAdapter,
    OpIdSource,
    ToolKind,
    derive_write_spec,
    id_param,
    offered_tools,
    resolve_write,
    unoffered,
)
from cavbench.controls import profile_scripts
from cavbench.evaluation import evaluate
from cavbench.models import ScriptedModel, turns_script
from cavbench.runner import Episode, run_episode, verdict_row
from cavbench.scenarios import Scenario, load_pack, parse_scenario
from tests.agents.test_parity import ROOT, _normalise, _parity, _rows

NETOPS_GOLDEN = ROOT / "tests" / "golden" / "netops-v1.expected.csv"
ALIASES = {"get_operation_status", "escalate_case"}


def test_every_netops_toolset_entry_is_offered() -> None:
    scenarios = load_pack("netops-v1").scenarios
    offered = 0
    for scenario in scenarios:
        view = scenario.view()
        tools = offered_tools(view, OpIdSource.MODEL)
        assert unoffered(view) == (), scenario.id
        wanted = [t for t in view.toolset if t not in ALIASES]
        assert all(name in tools for name in wanted), scenario.id
        offered += len(wanted)
    assert (len(scenarios), offered) == (32, 68)


def test_scripted_full_lifecycle_reproduces_netops_verdicts() -> None:
    pack, expected = load_pack("netops-v1"), _rows(NETOPS_GOLDEN)
    assert _parity(pack, expected, (Profile.FULL_LIFECYCLE,)) == 32


def test_scripted_profiles_on_netops_differ_only_off_toolset() -> None:
    # 158/160: `direct` in NO-IA-01 and NO-IA-08 writes with a tool outside the scenario's
    # toolset (scope widening); the LLM adapter offers only toolset tools, so it cannot.
    pack, expected = load_pack("netops-v1"), _rows(NETOPS_GOLDEN)
    assert _parity(pack, expected) == 158
    assert _parity(pack, expected, (Profile.DIRECT,)) == 30


def _synthetic() -> Scenario:
    """NO-HP-01 with the namespace, tools and toolset renamed to invented ones."""
    path = ROOT / "scenarios" / "netops-v1" / "scenarios" / "NO-HP-01.json"
    text = path.read_text().replace("drain_link", "frobnicate_gizmo")
    text = text.replace("get_link", "get_gizmo").replace('"link"', '"gizmo"')
    raw = json.loads(text)
    raw["id"] = "SYN-01"
    return parse_scenario(raw, "synthetic")


def test_invented_tool_is_derived_from_the_plan() -> None:
    view = _synthetic().view()
    tools = offered_tools(view, OpIdSource.ADAPTER)
    assert unoffered(view) == ()
    assert [(t.name, t.kind) for t in tools.values()][:2] == [
        ("get_gizmo", ToolKind.READ),
        ("frobnicate_gizmo", ToolKind.WRITE),
    ]
    params = tools["frobnicate_gizmo"].schema.parameters
    assert params["required"] == ["gizmo_id", "reason"]
    assert params["properties"]["reason"] == {"type": "string", "maxLength": MAX_STRING_CHARS}  # type: ignore[index]


def test_invented_tool_reaches_each_profile_verdict() -> None:
    scenario = _synthetic()
    matched = 0
    for profile in (Profile.DIRECT, Profile.FULL_LIFECYCLE):
        want_trace = run_episode(scenario, baseline(profile))
        want = verdict_row(
            Episode(scenario, "b", 0, want_trace, evaluate(scenario, want_trace)), profile.value
        )
        model = ScriptedModel(turns_script([], profile_scripts([scenario], profile.value)))
        adapter = LLMAdapter(model=model, budgets=Budgets(100, None, None))
        trace = run_episode(scenario, adapter)
        got = verdict_row(
            Episode(scenario, "b", 0, trace, evaluate(scenario, trace)), profile.value
        )
        matched += _normalise(got) == _normalise(want)
    assert matched == 2


def test_unplanned_call_gets_the_generic_default_effect() -> None:
    view = _synthetic().view()
    tool = offered_tools(view, OpIdSource.MODEL)["frobnicate_gizmo"]
    write = resolve_write(view, tool, "gizmo", "G-9", {"gizmo_id": "G-9", "reason": "audit"})
    assert (write.from_plan, dict(write.changes), write.args) == (
        False,
        {"reason": "audit"},
        {"reason": "audit"},
    )
    assert write.logical_operation_id == "frobnicate_gizmo:G-9:audit"


def test_derived_names_and_missing_tools() -> None:
    view = _synthetic().view()
    assert derive_write_spec(view, "no_such_tool") is None
    assert (id_param("gizmo"), id_param("ip-pool"), id_param("9x"), id_param("")) == (
        "gizmo_id",
        "ip_pool_id",
        "resource_id",
        "resource_id",
    )
    assert id_param("order") == "order_id"  # the hand-written table wins
