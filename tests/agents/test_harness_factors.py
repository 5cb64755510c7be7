"""Harness factors as Hydra groups: text assets with digests, the defaults reproduce today's
rendering, the scripted text-sensitive agent shows a known error_style effect, and the five
deterministic profiles show exactly none."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import yaml

from analysis import BootstrapConfig, read_sweep
from analysis._factors import NO_DETECTED_DIFFERENCE, FactorEffects, factor_effects
from cavbench.adapters import BASELINE_PROFILES
from cavbench.agents import (
    DEFAULT_RENDERER,
    WRITE_SPECS,
    Budgets,
    OpIdSource,
    ToolErrorKind,
    ToolKind,
    llm_adapter,
    offered_tools,
)
from cavbench.agents._harness import (
    DEFAULT_LEVELS,
    HarnessFactor,
    harness_renderer,
    levels,
    load_level,
)
from cavbench.controls import lifecycle_turns
from cavbench.errors import ConfigError
from cavbench.models import AssistantTurn, ChatRequest, ScriptedModel, scripted_turn
from cavbench.runner import run_episode
from cavbench.runtime import READ_TOOLS
from cavbench.scenarios import load_pack
from cavbench.study import compose, run_cell

ROOT = Path(__file__).resolve().parents[2]
FAST = BootstrapConfig(n_resamples=400, seed=0)
SCRIPTED = ["model=scripted", "model.function=cavbench.controls:text_sensitive"]


def test_every_group_file_names_its_asset_and_digest() -> None:
    n = 0
    for factor in HarnessFactor:
        group = sorted(p.stem for p in (ROOT / "conf" / "harness" / factor.value).glob("*.yaml"))
        assert group == list(levels(factor))
        for level in group:
            body = yaml.safe_load(
                (ROOT / "conf" / "harness" / factor.value / f"{level}.yaml").read_text()
            )
            asset = load_level(factor, level)
            assert body == {
                "factors": {
                    f"harness_{factor.value}": level,
                    f"harness_{factor.value}_digest": asset.digest,
                }
            }
            n += 1
    assert n == 12


def test_the_cavbench_levels_reproduce_todays_rendering() -> None:
    factors = {f"harness_{f.value}": level for f, level in DEFAULT_LEVELS.items()}
    renderer = harness_renderer(factors)
    assert replace(renderer, tool_descriptions={}) == DEFAULT_RENDERER
    # tool_desc=cavbench names every hand-written tool with its own description; a tool
    # derived from the plan (netops-v1's) keeps its derived description.
    n = derived = 0
    for pack in ("core-v1", "netops-v1"):
        for scenario in load_pack(pack).scenarios:
            for tool in offered_tools(scenario.view(), OpIdSource.MODEL).values():
                hand_written = tool.spec is None or tool.spec is WRITE_SPECS.get(tool.name)
                if tool.kind is ToolKind.READ:
                    hand_written = tool.name in READ_TOOLS.values()
                assert (tool.name in renderer.tool_descriptions) == hand_written, tool.name
                assert renderer.tool_schema(tool.schema) == tool.schema
                n += 1
                derived += not hand_written
    assert n > derived > 0


def test_tool_desc_terse_rewords_every_tool() -> None:
    renderer = harness_renderer({"harness_tool_desc": "terse"})
    schema = offered_tools(load_pack("core-v1").scenarios[0].view(), OpIdSource.MODEL)[
        "report_outcome"
    ].schema
    assert renderer.tool_schema(schema).description == "Report outcome."
    assert renderer.tool_schema(schema).parameters == schema.parameters


def test_error_style_levels_render_their_wording() -> None:
    def render(level: str) -> str:
        return harness_renderer({"harness_error_style": level}).tool_error(
            ToolErrorKind.REFUSED, "cancel_order", "boom"
        )

    assert [render(level) for level in ("cavbench", "mcp_sdk", "tau2", "terse")] == [
        "Error (refused) in cancel_order: boom",
        "Error executing tool cancel_order: boom",
        "Error: boom",
        "Error.",
    ]


def test_a_digest_that_is_not_the_assets_is_refused() -> None:
    with pytest.raises(ConfigError, match="not the digest"):
        harness_renderer({"harness_error_style": "tau2", "harness_error_style_digest": "0" * 16})


def test_an_unknown_level_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known levels: \\['cavbench', 'mcp_sdk'"):
        harness_renderer({"harness_error_style": "nope"})


def test_llm_adapter_renders_the_level_and_wording_still_wins() -> None:
    model = {"kind": "scripted", "function": "cavbench.controls:text_sensitive"}
    adapter = llm_adapter(model, factors={"harness_error_style": "tau2", "other": 1})
    assert adapter.renderer.error == "Error: {detail}"
    adapter = llm_adapter(
        model, factors={"harness_error_style": "tau2"}, wording={"error": "X {detail}"}
    )
    assert adapter.renderer.error == "X {detail}"


def _effects(sweep: Path) -> FactorEffects:
    tables = read_sweep(sweep)
    assert set(tables.factor_columns) == {"harness_error_style", "harness_error_style_digest"}
    return factor_effects(
        tables.episodes,
        "harness.error_style",
        "cavbench",
        held_fixed=tables.factor_columns,
        config=FAST,
    )


def _cell(root: Path, *overrides: str) -> None:
    run_cell(compose([*overrides, f"output.root={root}", "output.name=h", "output.progress=false"]))


def test_text_sensitive_agent_shows_the_known_error_style_effect(tmp_path: Path) -> None:
    for level in ("cavbench", "mcp_sdk", "tau2", "terse"):
        _cell(
            tmp_path, "scenarios=core-v1", "adapter=llm", *SCRIPTED, f"+harness/error_style={level}"
        )
    episodes = read_sweep(tmp_path / "h").episodes
    digests = episodes.group_by("harness_error_style").agg(
        pl.col("harness_error_style_digest").unique()
    )
    assert {
        r["harness_error_style"]: r["harness_error_style_digest"] for r in digests.to_dicts()
    } == {
        level: [load_level(HarnessFactor.ERROR_STYLE, level).digest]
        for level in ("cavbench", "mcp_sdk", "tau2", "terse")
    }
    # The known effect: the agent gives up only on scenarios with a write, so only those can
    # lose; 21 of core-v1's 40 lose (the other write scenarios succeed by not committing).
    wide = episodes.pivot(
        on="harness_error_style", index="scenario_id", values="commit_valid_success"
    )
    lost = wide.filter(pl.col("cavbench") & ~pl.col("tau2")).get_column("scenario_id").to_list()
    with_write = {
        s
        for s in wide.get_column("scenario_id")
        if any(t.tool_calls and t.tool_calls[0].name in WRITE_SPECS for t in lifecycle_turns(s))
    }
    assert len(lost) == 21
    assert set(lost) <= with_write
    frame = _effects(tmp_path / "h").frame.filter(pl.col("measure") == "CVSR")
    rows = {r["level"]: r for r in frame.to_dicts()}
    # The error names the tool under mcp_sdk (as under cavbench): the agent retries, no change.
    assert rows["mcp_sdk"]["difference"] == 0.0
    assert rows["mcp_sdk"]["reading"] == NO_DETECTED_DIFFERENCE
    # tau2 and terse do not: the agent gives up on every scenario with a write.
    for level in ("tau2", "terse"):
        row = rows[level]
        assert (row["n_pairs"], row["level_higher"], row["baseline_higher"]) == (40, 0, 21)
        assert row["difference"] == pytest.approx(-21 / 40)
        assert row["ci_high"] < 0
        assert row["reading"] == f"{level} lower than cavbench"
    # Its reliability counters: every scenario with a write (32) has the one invalid first
    # write under each level; the retries of it (and ER-08's second, full_lifecycle's own
    # retry after a version conflict) happen only where the error names the tool.
    totals = episodes.group_by("harness_error_style").agg(
        pl.col("n_invalid_tool_calls").sum(), pl.col("n_retries").sum()
    )
    assert {tuple(r) for r in totals.iter_rows()} == {
        ("cavbench", 32, 33),
        ("mcp_sdk", 32, 33),
        ("tau2", 32, 0),
        ("terse", 32, 0),
    }
    effects = _effects(tmp_path / "h").frame
    retries = {r["level"]: r for r in effects.filter(pl.col("measure") == "retries").to_dicts()}
    mcp_sdk = effects.filter(pl.col("level") == "mcp_sdk")
    assert mcp_sdk.height == 7  # OSR, CVSR, VG, PAVG, turns, invalid_tool_calls, retries
    assert mcp_sdk.get_column("difference").to_list() == [0.0] * 7
    for level in ("tau2", "terse"):
        row = retries[level]
        assert (row["n_pairs"], row["level_higher"], row["baseline_higher"]) == (40, 0, 32)
        assert row["difference"] == pytest.approx(-33 / 40)
        assert row["ci_high"] < 0
        assert row["reading"] == f"{level} lower than cavbench"
    invalid = effects.filter(pl.col("measure") == "invalid_tool_calls")
    assert invalid.get_column("difference").to_list() == [0.0] * 3
    assert set(invalid.get_column("reading")) == {NO_DETECTED_DIFFERENCE}


def test_deterministic_profiles_give_exactly_zero_under_the_real_groups(tmp_path: Path) -> None:
    for profile in BASELINE_PROFILES:
        for level in ("cavbench", "tau2"):
            _cell(
                tmp_path,
                "scenarios=netops-v1",
                f"profile={profile.value}",
                f"+harness/error_style={level}",
            )
    frame = _effects(tmp_path / "h").frame
    assert frame.get_column("n_pairs").unique().to_list() == [160]
    for column in ("difference", "ci_low", "ci_high"):
        assert frame.get_column(column).to_list() == [0.0] * 4
    assert set(frame.get_column("reading")) == {NO_DETECTED_DIFFERENCE}


def test_user_lang_de_translates_every_request_and_keeps_its_ids() -> None:
    english = harness_renderer({"harness_user_lang": "en"})
    german = harness_renderer({"harness_user_lang": "de"})
    n = 0
    for pack in ("core-v1", "netops-v1"):
        for scenario in load_pack(pack).scenarios:
            view = scenario.view()
            assert english.user_message(view) == DEFAULT_RENDERER.user_message(view)
            text = german.user_message(view)
            assert text != view.user_request
            # Database ids and values stay as they are: every id-like token survives.
            for token in re.findall(r"[A-Z]+-\d+|\d+\.\d+\.\d+\.\d+", view.user_request):
                assert token in text, (scenario.id, token)
            n += 1
    assert n == 72
    assert german.user_message(load_pack("core-v1").scenarios[2].view()) == (
        "Stornieren Sie meine Bestellung O-4003."
    )


def test_user_lang_without_a_translation_is_a_recorded_adapter_error(tmp_path: Path) -> None:
    script = "model.function=tests.agents.scripts:probe_then_report"
    _cell(
        tmp_path, "scenarios=mock", "adapter=llm", "model=scripted", script, "+harness/user_lang=de"
    )
    episodes = read_sweep(tmp_path / "h").episodes
    assert set(episodes.get_column("status")) == {"adapter_error"}
    assert all("no translation of its request" in e for e in episodes.get_column("error"))


def test_the_model_reads_the_chosen_levels() -> None:
    seen: list[ChatRequest] = []

    def script(request: ChatRequest) -> AssistantTurn:
        seen.append(request)
        return scripted_turn(None, [{"name": "no_such_tool", "arguments": {}}])

    factors = {
        "harness_tool_desc": "terse",
        "harness_user_lang": "de",
        "harness_error_style": "mcp_sdk",
        "harness_system_prompt": "minimal",
        "harness_policy_doc": "checklist",
    }
    adapter = replace(
        llm_adapter(
            {"kind": "scripted", "function": "cavbench.controls:text_sensitive"}, factors=factors
        ),
        model=ScriptedModel(script),
        budgets=Budgets(max_turns=2, max_tokens=None, wall_clock_s=None),
    )
    scenario = load_pack("core-v1").scenarios[2]
    run_episode(scenario, adapter)
    first, second = seen
    system, user = first.messages[0].content or "", first.messages[1].content
    assert system.startswith("You are an agent with tools.")
    assert "# Rules you must follow" in system
    assert user == "Stornieren Sie meine Bestellung O-4003."
    assert {t.name: t.description for t in first.tools}["report_outcome"] == "Report outcome."
    assert second.messages[-1].content.startswith("Error executing tool no_such_tool: no such tool")


ALTERNATE = {
    "error_style": "terse",
    "system_prompt": "minimal",
    "policy_doc": "checklist",
    "tool_desc": "terse",
    "user_lang": "de",
}


def test_deterministic_profiles_give_exactly_zero_when_every_group_changes(tmp_path: Path) -> None:
    for profile in BASELINE_PROFILES:
        defaults = {f: DEFAULT_LEVELS[HarnessFactor(f)] for f in ALTERNATE}
        for chosen in (defaults, ALTERNATE):
            groups = [f"+harness/{f}={level}" for f, level in chosen.items()]
            _cell(tmp_path, "scenarios=core-v1", f"profile={profile.value}", *groups)
    tables = read_sweep(tmp_path / "h")
    assert len(tables.factor_columns) == 10
    for factor in ALTERNATE:
        effects = factor_effects(
            tables.episodes,
            f"harness.{factor}",
            DEFAULT_LEVELS[HarnessFactor(factor)],
            held_fixed=tables.factor_columns,
            config=FAST,
        )
        frame = effects.frame
        assert frame.get_column("n_pairs").unique().to_list() == [200]
        for column in ("difference", "ci_low", "ci_high"):
            assert frame.get_column(column).to_list() == [0.0] * 4
