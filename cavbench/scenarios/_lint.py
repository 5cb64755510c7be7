"""Semantic checks the JSON Schema cannot express.

A document can be schema-valid and still not run as its author meant: a fault aimed at a
resource the world does not hold, a hook no event ever fires, a compensation step that does
not exist. CAV-Bench accepts such documents (and so does `v1`), so these are warnings;
`cavbench validate --strict` turns them into errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cavbench.scenarios._model import PlannedStep, Scenario
from cavbench.scenarios._vocab import FaultMode, StepKind

_HOOK_SHAPES = {
    "after_read": 2,
    "before_commit_step": 1,
    "before_commit": 3,
    "after_commit_step": 1,
    "after_commit": 3,
    "after_commit_before_response": 3,
}
"""Hook prefix -> number of `:`-separated parts after it (SPEC a.5)."""


class LintCode(StrEnum):
    UNKNOWN_HOOK = "unknown_hook"
    MISSING_RESOURCE = "missing_resource"
    UNKNOWN_STEP = "unknown_step"
    WRITE_WITHOUT_LOGICAL_ID = "write_without_logical_id"
    WRITE_WITHOUT_TARGET = "write_without_target"
    DUPLICATE_STEP_ID = "duplicate_step_id"
    INERT_AMBIGUOUS_RESPONSE = "inert_ambiguous_response"


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One semantic problem in a scenario document."""

    scenario_id: str
    code: LintCode
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.scenario_id}: at {self.path}: {self.message} [{self.code}]"


def _resources(scenario: Scenario) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for namespace, bucket in scenario.world.initial_state.items():
        if isinstance(bucket, dict):
            out.update((namespace, str(rid)) for rid in bucket)
    return out


def _steps(steps: tuple[PlannedStep, ...], path: str) -> list[tuple[str, PlannedStep]]:
    out: list[tuple[str, PlannedStep]] = []
    for i, step in enumerate(steps):
        here = f"{path}[{i}]"
        out.append((here, step))
        if step.narrowed is not None:
            out.append((f"{here}.narrowed", step.narrowed))
    return out


def lint_scenario(scenario: Scenario) -> list[LintFinding]:
    """Semantic warnings for one scenario, in document order."""
    found: list[LintFinding] = []

    def warn(code: LintCode, path: str, message: str) -> None:
        found.append(LintFinding(scenario.id, code, path, message))

    resources = _resources(scenario)
    steps = _steps(scenario.plan.steps, "$.plan.steps")
    top_ids = [s.step_id for s in scenario.plan.steps]
    known_ids = {s.step_id for _, s in steps}
    for step_id in sorted({i for i in top_ids if top_ids.count(i) > 1}):
        warn(
            LintCode.DUPLICATE_STEP_ID,
            "$.plan.steps",
            f"step_id {step_id!r} is used more than once",
        )

    for path, step in steps:
        if step.kind in (StepKind.READ, StepKind.WRITE, StepKind.COMPENSATE):
            if step.namespace is None or step.resource_id is None:
                warn(
                    LintCode.WRITE_WITHOUT_TARGET,
                    path,
                    f"a {step.kind} step needs namespace and resource_id",
                )
            elif (step.namespace, step.resource_id) not in resources:
                warn(
                    LintCode.MISSING_RESOURCE,
                    path,
                    f"{step.namespace}:{step.resource_id} is not in world.initial_state",
                )
        if step.kind in (StepKind.WRITE, StepKind.COMPENSATE) and step.logical_operation_id is None:
            warn(
                LintCode.WRITE_WITHOUT_LOGICAL_ID,
                path,
                "a write needs logical_operation_id (the baselines skip it; duplicates cannot be detected)",
            )
        for field in ("depends_on", "compensation_step_id"):
            ref = getattr(step, field)
            if ref is not None and ref not in known_ids:
                warn(LintCode.UNKNOWN_STEP, f"{path}.{field}", f"no step with step_id {ref!r}")

    for i, injection in enumerate(scenario.world.injections):
        path = f"$.world.injections[{i}]"
        prefix, _, rest = injection.hook.partition(":")
        parts = rest.split(":") if rest else []
        if prefix not in _HOOK_SHAPES or len(parts) != _HOOK_SHAPES[prefix]:
            warn(
                LintCode.UNKNOWN_HOOK,
                f"{path}.hook",
                f"{injection.hook!r} is not a hook the environment fires "
                f"(known: {', '.join(f'{p}:…' for p in _HOOK_SHAPES)})",
            )
        elif prefix.endswith("_step") and rest not in known_ids:
            warn(LintCode.UNKNOWN_STEP, f"{path}.hook", f"no step with step_id {rest!r}")
        elif prefix in (
            "after_read",
            "before_commit",
            "after_commit",
            "after_commit_before_response",
        ):
            namespace, resource_id = parts[-2], parts[-1]
            if (namespace, resource_id) not in resources:
                warn(
                    LintCode.MISSING_RESOURCE,
                    f"{path}.hook",
                    f"{namespace}:{resource_id} is not in world.initial_state",
                )
        if injection.mode is FaultMode.EXTERNAL_MUTATION:
            target = (
                str(injection.payload.get("namespace")),
                str(injection.payload.get("resource_id")),
            )
            if target not in resources:
                warn(
                    LintCode.MISSING_RESOURCE,
                    f"{path}.payload",
                    f"external_mutation targets {target[0]}:{target[1]}, which is not in world.initial_state",
                )
        if (
            injection.mode is FaultMode.AMBIGUOUS_RESPONSE
            and prefix != "after_commit_before_response"
        ):
            warn(
                LintCode.INERT_AMBIGUOUS_RESPONSE,
                f"{path}.mode",
                "ambiguous_response only has an effect at an after_commit_before_response hook",
            )
        if injection.mode in (FaultMode.DOWNSTREAM_FAILURE, FaultMode.COMPENSATION_FAILURE):
            affects = injection.payload.get("affects_step")
            if isinstance(affects, str) and affects not in known_ids:
                warn(
                    LintCode.UNKNOWN_STEP,
                    f"{path}.payload.affects_step",
                    f"no step with step_id {affects!r}",
                )
    return found
