"""Errors are rooted in one class and survive the process boundaries of sweep launchers."""

from __future__ import annotations

import pickle

import pytest

from cavbench.errors import (
    CavBenchError,
    ResourceNotFound,
    ScenarioError,
    UnsupportedSchemaVersion,
    VersionConflict,
)


@pytest.mark.parametrize(
    "error",
    [
        ScenarioError("pack/scenarios/A.json", "$.plan.steps[0].kind", "bad kind", "use read"),
        UnsupportedSchemaVersion("A.json", "$.schema_version", "unsupported", 'set "1.0"'),
        ResourceNotFound("order", "O-1"),
        VersionConflict("order:O-1", 3, 4),
    ],
)
def test_errors_pickle_round_trip(error: CavBenchError) -> None:
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert str(again) == str(error)
    assert isinstance(again, CavBenchError)


def test_scenario_error_names_file_path_and_fix() -> None:
    error = ScenarioError("pack/scenarios/A.json", "$.task", "missing", "add a task")
    assert str(error) == "pack/scenarios/A.json: at $.task: missing (fix: add a task)"
