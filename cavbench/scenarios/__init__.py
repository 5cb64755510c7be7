"""Scenario documents and packs: typed models, loader, digest and generated JSON Schema."""

from cavbench.scenarios._builtin import builtin_pack_ids, builtin_pack_root, load_pack
from cavbench.scenarios._isolation import deep_copy, executed_digest
from cavbench.scenarios._lint import LintCode, LintFinding, lint_scenario
from cavbench.scenarios._loader import ScenarioPack, load_pack_dir, pack_digest, parse_scenario
from cavbench.scenarios._model import (
    Injection,
    Oracle,
    Plan,
    PlannedStep,
    Policy,
    Predicate,
    Principal,
    Scenario,
    ScenarioView,
    World,
)
from cavbench.scenarios._schema import scenario_json_schema
from cavbench.scenarios._vocab import (
    Dimension,
    Family,
    FaultMode,
    OnBlock,
    OnFailure,
    PreconditionScope,
    PredicateOp,
    StepKind,
    Trigger,
)

__all__ = [
    "deep_copy",
    "executed_digest",
    "Dimension",
    "Family",
    "FaultMode",
    "Injection",
    "LintCode",
    "LintFinding",
    "OnBlock",
    "OnFailure",
    "Oracle",
    "Plan",
    "PlannedStep",
    "Policy",
    "PreconditionScope",
    "Predicate",
    "PredicateOp",
    "Principal",
    "Scenario",
    "ScenarioPack",
    "ScenarioView",
    "StepKind",
    "Trigger",
    "World",
    "builtin_pack_ids",
    "builtin_pack_root",
    "lint_scenario",
    "load_pack",
    "load_pack_dir",
    "pack_digest",
    "parse_scenario",
    "scenario_json_schema",
]
