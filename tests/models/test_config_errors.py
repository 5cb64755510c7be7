"""Model configs and scripts: a working scripted model from a file, and one error per bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cavbench.agents import LLMAdapter, llm_adapter
from cavbench.errors import ConfigError
from cavbench.models import ChatRequest, Message, Role, ScriptedModel, build_model, load_script
from cavbench.study import CellPlan, compose
from cavbench.study._job import _build_adapter

REQUEST = ChatRequest(messages=(Message(role=Role.USER, content="hi"),), scenario_id="MK-01")


def test_a_script_file_serves_per_scenario_turns(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "default": [{"text": "default"}],
                "scenarios": {
                    "MK-01": [{"tool_calls": [{"name": "get_payment", "arguments": "{bad"}]}]
                },
            }
        )
    )
    model = ScriptedModel(load_script(script))
    (call,) = model.complete(REQUEST).tool_calls
    assert (call.name, call.arguments) == ("get_payment", "{bad")
    other = REQUEST.model_copy(update={"scenario_id": "MK-02"})
    assert model.complete(other).text == "default"


def test_adapter_llm_composes_and_builds(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text("{}")
    cfg = compose(["adapter=llm", "model=scripted", f"model.script={script}"])
    plan = CellPlan.from_config(cfg)
    adapter = _build_adapter(plan)
    assert isinstance(adapter, LLMAdapter)
    assert plan.max_concurrency == 8
    assert "max_concurrency" not in plan.config["adapter"]  # not part of the config hash


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"kind": "scripted"}, "exactly one of model.script"),
        ({"kind": "scripted", "script": "/nonexistent.json"}, "cannot read a JSON script"),
        ({"kind": "scripted", "function": "no_such_module:f"}, "cannot import it"),
        ({"kind": "replay"}, "needs model.sweep_dir"),
        ({"kind": "replay", "sweep_dir": "/nonexistent"}, "no model_calls.parquet"),
        ({"kind": "openai_compatible"}, "model.name is empty"),
        ({"kind": "telepathy"}, "model config"),
        ({}, "no model configured"),
        ({"kind": "scripted", "temprature": 1}, "model config"),
    ],
)
def test_a_bad_model_config_names_the_key_and_the_fix(
    config: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_model(config)


def test_bad_adapter_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="'model' or 'adapter'"):
        llm_adapter(
            {"kind": "scripted", "function": "tests.agents.scripts:probe_then_report"}, op_ids="x"
        )
    with pytest.raises(ConfigError, match="unknown template"):
        llm_adapter(
            {"kind": "scripted", "function": "tests.agents.scripts:probe_then_report"},
            wording={"sytem": "x"},
        )
    with pytest.raises(ConfigError, match="max_turns=0"):
        llm_adapter(
            {"kind": "scripted", "function": "tests.agents.scripts:probe_then_report"}, max_turns=0
        )


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["adapter=llm", "model=openai_compatible"], "model.name"),
        (["adapter=llm", "model=replay"], "model.sweep_dir"),
    ],
)
def test_a_mandatory_model_value_left_unset_is_a_config_error(
    overrides: list[str], key: str
) -> None:
    with pytest.raises(ConfigError, match=rf"not set: {key} \(fix: .*{key}=VALUE"):
        CellPlan.from_config(compose(overrides))
