"""Shared fixtures: small scenario documents built in code, the public dev pack, the
published schema, and helpers to run an episode and score it.

Helpers are handed out through fixtures (the suite runs with `--import-mode=importlib`, so
test modules cannot import this file). Every builder returns plain dicts shaped like
scenario-v1 documents; `ScenarioKit.build` validates them with `parse_scenario`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from cavbench.adapters import AdapterResult, ExecutionAdapter, baseline
from cavbench.evaluation import ScoringRule, Verdict, evaluate
from cavbench.runner import run_episode
from cavbench.runtime import AdapterSession
from cavbench.scenarios import Scenario, parse_scenario
from cavbench.trace import EpisodeTrace

# No per-example deadline: a deadline is a timing assertion, and on a loaded machine it fails
# tests whose property holds (speed is measured in benchmarks/, never asserted).
settings.register_profile("cavbench", deadline=None)
settings.load_profile("cavbench")

SHARED = Path("/work/shared/cavbench-v1")
DEV_PACK = SHARED / "dev-pack" / "framework-v1"
DEV_PACK_CSV = SHARED / "dev-pack" / "framework-v1.expected.csv"
PUBLISHED_SCHEMA = SHARED / "schemas" / "scenario-v1.schema.json"
CONFORMANCE = SHARED / "conformance.py"
DEV_PACK_DIGEST = "sha256:1ab59a8a344a019980ae013776009cd20974ba5b35cf550f0395423a9e5aea80"
REPO_ROOT = Path(__file__).resolve().parent.parent

_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Run:
    """One episode run and scored: the scenario, its trace and its verdict."""

    scenario: Scenario
    trace: EpisodeTrace
    verdict: Verdict

    def events(self, event_type: str | None = None) -> list[Any]:
        return [
            e for e in self.trace.events if event_type is None or e.event_type.value == event_type
        ]

    def event_types(self) -> list[str]:
        return [e.event_type.value for e in self.trace.events]

    @property
    def notes(self) -> list[str]:
        notes = self.trace.adapter_report.metadata.get("notes", [])
        assert isinstance(notes, list)
        return [str(n) for n in notes]

    @property
    def status(self) -> str:
        return self.trace.adapter_report.completion_status

    def keys_committed(self) -> list[str | None]:
        return [r.idempotency_key for r in self.trace.side_effects]


class ScenarioKit:
    """Builders for scenario-v1 documents, plus `episode` to run and score one."""

    @staticmethod
    def pred(op: str, path: str | None = None, value: Any = _UNSET, **extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"op": op}
        if path is not None:
            out["path"] = path
        if value is not _UNSET:
            out["value"] = value
        out.update(extra)
        return out

    @staticmethod
    def read(step_id: str, namespace: str, resource_id: str, **extra: Any) -> dict[str, Any]:
        return {
            "step_id": step_id,
            "kind": "read",
            "namespace": namespace,
            "resource_id": resource_id,
            **extra,
        }

    @staticmethod
    def write(
        step_id: str,
        namespace: str,
        resource_id: str,
        changes: Mapping[str, Any] | None = None,
        *,
        tool: str = "update_record",
        op: str | None = _UNSET,
        **extra: Any,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step_id": step_id,
            "kind": "write",
            "tool_name": tool,
            "namespace": namespace,
            "resource_id": resource_id,
            "changes": dict(changes or {}),
        }
        if op is _UNSET:
            out["logical_operation_id"] = f"op-{step_id}"
        elif op is not None:
            out["logical_operation_id"] = op
        out.update(extra)
        return out

    @staticmethod
    def doc(
        *,
        id: str = "T-01",
        family: str = "state_mutation",
        steps: Iterable[Mapping[str, Any]] = (),
        state: Mapping[str, Any] | None = None,
        injections: Iterable[Mapping[str, Any]] = (),
        goal: Iterable[Mapping[str, Any]] = (),
        forbidden: Iterable[Mapping[str, Any]] = (),
        required: Iterable[Mapping[str, Any]] = (),
        constraints: Iterable[Mapping[str, Any]] = (),
        recovery: Mapping[str, Any] | None = None,
        focus: Iterable[str] = (),
        policy: Mapping[str, Any] | None = None,
        principal: Mapping[str, Any] | None = None,
        toolset: Iterable[str] = ("get_order", "update_record"),
    ) -> dict[str, Any]:
        """A complete scenario document; every part can be overridden."""
        doc: dict[str, Any] = {
            "schema_version": "1.0",
            "id": id,
            "family": family,
            "title": f"test scenario {id}",
            "notes": "built in code by the test suite",
            "task": {
                "user_request": "Please do the thing.",
                "principal": dict(
                    principal or {"principal_id": "p-1", "tenant_id": "t-1", "roles": ["customer"]}
                ),
                "toolset": list(toolset),
            },
            "policy": dict(policy or {}),
            "plan": {"steps": [dict(s) for s in steps]},
            "world": {
                "initial_state": copy.deepcopy(
                    dict(state)
                    if state is not None
                    else {"order": {"O-1": {"status": "open", "version": 1}}}
                ),
                "injections": [dict(i) for i in injections],
            },
            "oracle": {
                "goal_predicates": list(goal),
                "forbidden_effects": list(forbidden),
                "required_effects": list(required),
                "policy_constraints": list(constraints),
                "recovery": dict(recovery or {"required": False, "obligations": []}),
                "dimension_focus": list(focus),
            },
        }
        return doc

    @staticmethod
    def build(doc: Mapping[str, Any], source: str = "<test>") -> Scenario:
        return parse_scenario(copy.deepcopy(dict(doc)), source)

    @classmethod
    def scenario(cls, **kwargs: Any) -> Scenario:
        return cls.build(cls.doc(**kwargs))

    @staticmethod
    def mutation(fault_id: str, hook: str, ns: str, rid: str, changes: Mapping[str, Any]) -> dict:
        return {
            "fault_id": fault_id,
            "hook": hook,
            "mode": "external_mutation",
            "payload": {"namespace": ns, "resource_id": rid, "changes": dict(changes)},
        }

    @staticmethod
    def fault(fault_id: str, hook: str, mode: str, **payload: Any) -> dict[str, Any]:
        return {"fault_id": fault_id, "hook": hook, "mode": mode, "payload": payload}

    @staticmethod
    def episode(
        scenario: Scenario,
        adapter: ExecutionAdapter | str,
        rule: ScoringRule | str = ScoringRule.V1,
    ) -> Run:
        chosen = baseline(adapter) if isinstance(adapter, str) else adapter
        trace = run_episode(scenario, chosen)
        return Run(scenario, trace, evaluate(scenario, trace, rule))


class ScriptedAdapter:
    """An adapter whose behaviour is a plain function of the session (for contract tests)."""

    def __init__(self, script: Any, name: str = "scripted", version: str = "0.0.1") -> None:
        self._script = script
        self._name = name
        self._version = version

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        return self._version

    def run(self, session: AdapterSession) -> AdapterResult:
        result = self._script(session)
        if result is None:
            return AdapterResult(final_message="done")
        assert isinstance(result, AdapterResult)
        return result


@pytest.fixture(scope="session")
def kit() -> type[ScenarioKit]:
    """Scenario builders and the episode runner."""
    return ScenarioKit


@pytest.fixture(scope="session")
def scripted() -> type[ScriptedAdapter]:
    """`scripted(fn)` makes an adapter that runs `fn(session)`."""
    return ScriptedAdapter


@pytest.fixture(scope="session")
def dev_pack_dir() -> Path:
    """The public CAV-Bench dev pack (framework-v1); read in place, never copied into the repo."""
    if not (DEV_PACK / "pack.json").is_file():
        pytest.skip(f"public dev pack not found at {DEV_PACK}")
    return DEV_PACK


@pytest.fixture(scope="session")
def dev_docs(dev_pack_dir: Path) -> dict[str, dict[str, Any]]:
    """The dev pack's raw scenario documents by id."""
    docs = {}
    for path in sorted((dev_pack_dir / "scenarios").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        docs[doc["id"]] = doc
    return docs


@pytest.fixture(scope="session")
def published_schema() -> dict[str, Any]:
    """CAV-Bench's published scenario-v1 JSON Schema."""
    if not PUBLISHED_SCHEMA.is_file():
        pytest.skip(f"published schema not found at {PUBLISHED_SCHEMA}")
    schema: dict[str, Any] = json.loads(PUBLISHED_SCHEMA.read_text(encoding="utf-8"))
    return schema


@pytest.fixture(scope="session")
def shared_paths() -> dict[str, Path]:
    return {
        "dev_pack": DEV_PACK,
        "expected_csv": DEV_PACK_CSV,
        "conformance": CONFORMANCE,
        "repo_root": REPO_ROOT,
    }


@pytest.fixture(scope="session")
def dev_pack_digest() -> str:
    return DEV_PACK_DIGEST
