"""The scenario model: error messages (file, JSON path, problem), defaults, immutability and
the adapter-visible view (SPEC a.1-a.8)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from cavbench.errors import CavBenchError, ScenarioError, UnsupportedSchemaVersion
from cavbench.scenarios import (
    Dimension,
    OnBlock,
    OnFailure,
    PreconditionScope,
    Scenario,
    ScenarioView,
    StepKind,
    Trigger,
    parse_scenario,
)

Doc = dict[str, Any]


def error_for(
    doc: Doc, mutate: Callable[[Doc], object], source: str = "FA-02.json"
) -> ScenarioError:
    broken = copy.deepcopy(doc)
    mutate(broken)
    with pytest.raises(ScenarioError) as info:
        parse_scenario(broken, source)
    return info.value


@pytest.fixture
def fa02(dev_docs: dict[str, Doc]) -> Doc:
    return copy.deepcopy(dev_docs["FA-02"])


# -- exact messages --------------------------------------------------------------------------


def test_bad_step_kind_message(fa02: Doc) -> None:
    err = error_for(fa02, lambda d: d["plan"]["steps"][1].__setitem__("kind", "fly"))
    assert str(err) == (
        "FA-02.json: at $.plan.steps[1].kind: Input should be 'read', 'write', 'escalate', "
        "'clarify', 'status_check', 'compensate' or 'respond'"
    )
    assert (err.source, err.path) == ("FA-02.json", "$.plan.steps[1].kind")


def test_missing_oracle_message(fa02: Doc) -> None:
    err = error_for(fa02, lambda d: d.pop("oracle"))
    assert str(err) == "FA-02.json: at $.oracle: Field required"


def test_missing_nested_required_field_message(fa02: Doc) -> None:
    err = error_for(fa02, lambda d: d["task"]["principal"].pop("tenant_id"))
    assert str(err) == "FA-02.json: at $.task.principal.tenant_id: Field required"


def test_extra_field_message(fa02: Doc) -> None:
    err = error_for(fa02, lambda d: d.__setitem__("extra", 1))
    assert str(err) == (
        "FA-02.json: at $.extra: unknown field (the scenario-v1 format does not allow extra fields)"
    )


def test_extra_field_in_injection_names_its_path(fa02: Doc) -> None:
    err = error_for(fa02, lambda d: d["world"]["injections"][0].__setitem__("when", "now"))
    assert err.path == "$.world.injections[0].when"


def test_unsupported_schema_version_message(fa02: Doc) -> None:
    err = error_for(fa02, lambda d: d.__setitem__("schema_version", "2.0"))
    assert isinstance(err, UnsupportedSchemaVersion)
    assert isinstance(err, CavBenchError)
    assert str(err) == (
        "FA-02.json: at $.schema_version: unsupported schema_version '2.0' "
        '(fix: set "schema_version": "1.0")'
    )


def test_schema_version_checked_before_anything_else(fa02: Doc) -> None:
    """A wrong version wins over every other error in the document (SPEC a.1)."""
    err = error_for(fa02, lambda d: d.update(schema_version="0.9", family="nope", extra=1))
    assert isinstance(err, UnsupportedSchemaVersion)


def test_document_not_an_object() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(["not", "a", "scenario"], "list.json")
    assert str(info.value) == "list.json: at $: a scenario document must be a JSON object"


def test_explicit_null_names_the_field(fa02: Doc) -> None:
    err = error_for(fa02, lambda d: d["plan"]["steps"][1].__setitem__("tool_name", None))
    assert err.source == "FA-02.json"
    assert err.path in {"$.plan.steps[1]", "$.plan.steps[1].tool_name"}
    assert "'tool_name' must not be null" in str(err)


# -- JSON paths are plain JSON paths (no pydantic union-branch tags) --------------------------


def _deep_predicate(doc: Doc) -> None:
    doc["oracle"]["goal_predicates"].append(
        {"op": "all", "predicates": [{"op": "not", "predicates": [{"op": "regex"}]}]}
    )


def _narrowed_bad_kind(doc: Doc) -> None:
    doc["plan"]["steps"][1]["narrowed"] = {"step_id": "n", "kind": "teleport"}


def _narrowed_twice(doc: Doc) -> None:
    doc["plan"]["steps"][1]["narrowed"] = {
        "step_id": "n",
        "kind": "write",
        "narrowed": {"step_id": "m", "kind": "write", "oops": 1},
    }


def _where_list(doc: Doc) -> None:
    doc["oracle"]["goal_predicates"][0]["where"] = []


def _amount_bool(doc: Doc) -> None:
    doc["plan"]["steps"][1]["action_amount"] = True


def _precondition_bad_op(doc: Doc) -> None:
    doc["plan"]["steps"][1]["precondition"] = {"op": "all", "predicates": [{"op": "nope"}]}


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        pytest.param(
            _deep_predicate,
            "$.oracle.goal_predicates[1].predicates[0].predicates[0].op",
            id="deep-predicate",
        ),
        pytest.param(_narrowed_bad_kind, "$.plan.steps[1].narrowed.kind", id="narrowed-kind"),
        pytest.param(
            _narrowed_twice, "$.plan.steps[1].narrowed.narrowed.oops", id="narrowed-twice"
        ),
        pytest.param(_where_list, "$.oracle.goal_predicates[0].where", id="where-list"),
        pytest.param(_amount_bool, "$.plan.steps[1].action_amount", id="amount-bool"),
        pytest.param(
            _precondition_bad_op, "$.plan.steps[1].precondition.predicates[0].op", id="precondition"
        ),
    ],
)
def test_error_path_is_a_plain_json_path(
    fa02: Doc, mutate: Callable[[Doc], None], path: str
) -> None:
    err = error_for(fa02, mutate)
    assert err.path == path
    assert str(err).startswith(f"FA-02.json: at {path}: ")


# -- the model ---------------------------------------------------------------------------------


def test_defaults_follow_the_spec(kit: Any) -> None:
    doc = kit.doc(steps=[kit.write("w1", "order", "O-1", {"status": "x"})])
    for key in ("notes", "policy", "plan"):
        doc.pop(key)
    doc["oracle"] = {"goal_predicates": []}
    doc["world"] = {"initial_state": {}}
    scenario = parse_scenario(doc, "min.json")
    assert scenario.notes == ""
    assert scenario.plan.steps == ()
    policy = scenario.policy
    assert policy.requested_intent == ()
    assert policy.allowed_scope == {}
    assert policy.ambiguous_reference is False
    assert policy.candidate_resources == ()
    assert policy.on_block is OnBlock.REFUSE
    assert scenario.world.injections == ()
    oracle = scenario.oracle
    assert oracle.forbidden_effects == oracle.required_effects == oracle.policy_constraints == ()
    assert oracle.recovery.required is False
    assert oracle.recovery.obligations == ()
    assert oracle.dimension_focus == ()


def test_step_defaults(kit: Any) -> None:
    scenario = kit.scenario(steps=[{"step_id": "s", "kind": "write"}])
    step = scenario.plan.steps[0]
    assert step.kind is StepKind.WRITE
    assert step.changes == {}
    assert step.args == {}
    assert step.action_scope == {}
    assert step.precondition_scope is PreconditionScope.GATE
    assert step.trigger is Trigger.ALWAYS
    assert step.on_failure is OnFailure.COMPENSATE
    assert step.tool_name is None
    assert step.logical_operation_id is None


def test_injection_ordinal_defaults_to_one(kit: Any) -> None:
    scenario = kit.scenario(
        injections=[kit.fault("f", "after_read:order:O-1", "ambiguous_response")]
    )
    assert scenario.world.injections[0].ordinal == 1
    assert scenario.world.injections[0].payload == {}


def test_enums_are_parsed_to_strenums(kit: Any) -> None:
    scenario = kit.scenario(focus=["temporal_state_validity", "intent_grounding"])
    assert scenario.oracle.dimension_focus == (
        Dimension.TEMPORAL_STATE_VALIDITY,
        Dimension.INTENT_GROUNDING,
    )


def test_scenario_is_frozen(kit: Any) -> None:
    scenario = kit.scenario()
    with pytest.raises(ValidationError):
        scenario.id = "X"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        scenario.oracle.dimension_focus = ()  # type: ignore[misc]


def test_round_trip_through_json_dump(dev_docs: dict[str, Doc]) -> None:
    """The document as written (unset fields left out) parses back to the same scenario."""
    for doc in dev_docs.values():
        scenario = parse_scenario(copy.deepcopy(doc), "x.json")
        written = scenario.model_dump(mode="json", exclude_unset=True)
        assert parse_scenario(written, "x.json") == scenario
        assert written == doc


# -- the view (SPEC a.8) -----------------------------------------------------------------------

VIEW_FIELDS = {"id", "family", "title", "user_request", "principal", "toolset", "policy", "plan"}


def test_view_has_exactly_the_visible_fields() -> None:
    assert set(ScenarioView.model_fields) == VIEW_FIELDS
    assert not VIEW_FIELDS & {"world", "oracle", "notes", "schema_version", "task"}


def test_view_projects_the_scenario(dev_docs: dict[str, Doc]) -> None:
    scenario = parse_scenario(copy.deepcopy(dev_docs["FA-04"]), "FA-04.json")
    view = scenario.view()
    assert isinstance(view, ScenarioView)
    assert not isinstance(view, Scenario)
    assert view.id == scenario.id
    assert view.family is scenario.family
    assert view.user_request == scenario.task.user_request
    assert view.principal == scenario.task.principal
    assert view.toolset == scenario.task.toolset
    assert view.policy == scenario.policy
    assert view.plan == scenario.plan
    dumped = view.model_dump()
    for hidden in ("world", "oracle", "notes", "schema_version"):
        assert hidden not in dumped
        assert not hasattr(view, hidden)


def test_view_text_holds_no_oracle_or_world_content(kit: Any) -> None:
    scenario = kit.scenario(
        state={"order": {"O-1": {"status": "open", "secret_marker_state": 1, "version": 1}}},
        goal=[kit.pred("eq", "state.order.O-1.status", "secret_marker_goal")],
    )
    text = scenario.view().model_dump_json()
    assert "secret_marker_state" not in text
    assert "secret_marker_goal" not in text
    assert "built in code by the test suite" not in text  # notes


def test_a_copied_scenario_gets_its_own_view() -> None:
    from cavbench.scenarios import load_pack

    original = load_pack("core-v1").scenarios[0]
    assert original.view().id == original.id  # the view is cached now
    clone = original.model_copy(update={"id": "CLONE-1"})
    assert clone.view().id == "CLONE-1"
    assert original.view().id == original.id


def test_compiled_structures_are_built_once_and_never_travel_to_a_copy() -> None:
    import pickle

    from cavbench.scenarios import deep_copy, load_pack

    scenario = load_pack("core-v1").scenarios[0].model_copy()
    builds: list[object] = []

    def build(s: object) -> object:
        builds.append(s)
        return lambda: None  # a closure, as the compiled structures are: not picklable

    first = scenario.compiled("test", build)
    assert scenario.compiled("test", build) is first
    assert builds == [scenario]
    view = scenario.view()
    view.compiled("test", build)
    again = pickle.loads(pickle.dumps(scenario))  # a sweep's worker receives scenarios
    assert again == scenario
    assert again.compiled("test", build) is not first
    assert scenario.model_copy(update={"id": "other"}).compiled("test", build) is not first
    assert deep_copy(view).compiled("test", build) is not view.compiled("test", build)
    assert len(builds) == 5
