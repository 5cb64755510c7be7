"""The scenario-v1 JSON Schema, generated from the model (never written by hand)."""

from __future__ import annotations

from typing import Any

from cavbench.scenarios._model import Scenario

SCHEMA_ID = "https://cavbench.dev/schemas/scenario-v1.schema.json"


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) equivalent to CAV-Bench's published scenario-v1 schema."""
    schema = Scenario.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
