"""The generated JSON Schema, the published scenario-v1 schema and the pydantic model
accept and reject exactly the same documents (SPEC a.1-a.7)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from cavbench.scenarios import Scenario, scenario_json_schema

Doc = dict[str, Any]
Path_ = tuple[str | int, ...]


def rich_doc(kit: Any) -> Doc:
    """A document that uses every part of the format (narrowed steps, nested predicates,
    injections, recovery obligations, delegation, scope)."""
    p = kit.pred
    nested = p(
        "all",
        predicates=[
            p("eq", "status", "open"),
            p("not", predicates=[p("exists", "locked")]),
        ],
    )
    narrowed = kit.write(
        "w1n",
        "order",
        "O-1",
        {"items.I-1.state": "cancelled"},
        tool="cancel_order_item",
        action_scope={"item_ids": ["I-1"]},
        precondition=p("eq", "status", "open"),
    )
    steps = [
        kit.read("r1", "order", "O-1"),
        kit.write(
            "w1",
            "order",
            "O-1",
            {"status": "cancelled"},
            tool="cancel_order",
            args={"reason": "asked"},
            action_category="cancel",
            action_amount=10,
            action_scope={"item_ids": ["I-1", "I-2"]},
            precondition=nested,
            precondition_scope="gate",
            narrowed=narrowed,
            compensation_step_id="c1",
            on_failure="compensate",
            trigger="always",
        ),
        # `kind` passed as an extra field overrides the builder's default "write"
        kit.write("c1", "order", "O-1", {"status": "open"}, kind="compensate", compensates="w1"),
        {
            "step_id": "e1",
            "kind": "escalate",
            "depends_on": "w1",
            "trigger": "on_dependency_failure",
        },
        {"step_id": "s1", "kind": "status_check"},
        {"step_id": "q1", "kind": "clarify"},
        {"step_id": "x1", "kind": "respond"},
    ]
    doc: Doc = kit.doc(
        id="RICH-01",
        family="intent_authority",
        steps=steps,
        state={"order": {"O-1": {"status": "open", "version": 3, "items": {"I-1": {}}}}},
        injections=[
            kit.mutation("f1", "after_read:order:O-1", "order", "O-1", {"status": "held"}),
            {**kit.fault("f2", "before_commit_step:w1", "downstream_failure"), "ordinal": 2},
        ],
        goal=[
            p(
                "any",
                predicates=[
                    p("all", predicates=[p("not", predicates=[p("eq", "state.order.O-1.x", 1)])]),
                    p("count_eq", collection="side_effects", where={"effect_type": "x"}, value=1),
                ],
            )
        ],
        forbidden=[
            p(
                "in",
                "state.order.O-1.status",
                ["deleted"],
                description="never deleted",
                dimension="intent_grounding",
                failure_code="IG_SCOPE_WIDENING",
            )
        ],
        required=[p("count_gte", collection="events", value=0)],
        constraints=[p("not_exists", "state.order.O-2")],
        recovery={"required": True, "obligations": [p("exists", "state.order.O-1")]},
        focus=["intent_grounding", "execution_integrity"],
        policy={
            "requested_intent": ["cancel"],
            "allowed_scope": {"max_amount": 50, "item_ids": ["I-1"]},
            "ambiguous_reference": False,
            "candidate_resources": ["O-1"],
            "on_block": "escalate",
        },
        principal={
            "principal_id": "p-1",
            "tenant_id": "t-1",
            "roles": ["customer"],
            "delegation": {"max_amount": 100},
        },
    )
    return doc


def _node(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def setv(path: Path_, value: Any) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        _node(doc, path[:-1])[path[-1]] = copy.deepcopy(value)

    return apply


def delete(path: Path_) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        del _node(doc, path[:-1])[path[-1]]

    return apply


def extra(path: Path_, key: str = "unexpected") -> Callable[[Doc], None]:
    return setv((*path, key), 1)


STEP = ("plan", "steps", 1)
NARROWED = (*STEP, "narrowed")
PRE = (*STEP, "precondition")
INJ = ("world", "injections", 1)
GOAL = ("oracle", "goal_predicates", 0)
DEEP = (*GOAL, "predicates", 0, "predicates", 0, "predicates", 0)  # eq inside all/not
PRINCIPAL = ("task", "principal")
RECOVERY = ("oracle", "recovery")

# (label, mutation, valid?)
MUTANTS: list[tuple[str, Callable[[Doc], None], bool]] = [
    # -- missing required fields at each level
    *[(f"missing {k}", delete((k,)), False) for k in ("id", "family", "title", "task")],
    ("missing world", delete(("world",)), False),
    ("missing oracle", delete(("oracle",)), False),
    ("missing schema_version", delete(("schema_version",)), False),
    ("missing task.user_request", delete(("task", "user_request")), False),
    ("missing task.principal", delete(("task", "principal")), False),
    ("missing task.toolset", delete(("task", "toolset")), False),
    ("missing principal_id", delete((*PRINCIPAL, "principal_id")), False),
    ("missing tenant_id", delete((*PRINCIPAL, "tenant_id")), False),
    ("missing world.initial_state", delete(("world", "initial_state")), False),
    ("missing oracle.goal_predicates", delete(("oracle", "goal_predicates")), False),
    ("missing predicate op", delete((*GOAL, "op")), False),
    ("missing deep predicate op", delete((*DEEP, "op")), False),
    ("missing step_id", delete((*STEP, "step_id")), False),
    ("missing step kind", delete((*STEP, "kind")), False),
    ("missing narrowed kind", delete((*NARROWED, "kind")), False),
    ("missing precondition op", delete((*PRE, "op")), False),
    ("missing injection fault_id", delete((*INJ, "fault_id")), False),
    ("missing injection hook", delete((*INJ, "hook")), False),
    ("missing injection mode", delete((*INJ, "mode")), False),
    # -- optional fields may be omitted
    ("omit notes", delete(("notes",)), True),
    ("omit policy", delete(("policy",)), True),
    ("omit plan", delete(("plan",)), True),
    ("omit injections", delete(("world", "injections")), True),
    ("omit recovery", delete(RECOVERY), True),
    ("omit ordinal", delete((*INJ, "ordinal")), True),
    ("omit roles", delete((*PRINCIPAL, "roles")), True),
    # -- extra fields at each level
    ("extra top", extra(()), False),
    ("extra task", extra(("task",)), False),
    ("extra principal", extra(PRINCIPAL), False),
    ("extra policy", extra(("policy",)), False),
    ("extra plan", extra(("plan",)), False),
    ("extra world", extra(("world",)), False),
    ("extra oracle", extra(("oracle",)), False),
    ("extra recovery", extra(RECOVERY), False),
    ("extra predicate", extra(GOAL), False),
    ("extra deep predicate", extra(DEEP), False),
    ("extra step", extra(STEP), False),
    ("extra narrowed step", extra(NARROWED), False),
    ("extra precondition", extra(PRE), False),
    ("extra injection", extra(INJ), False),
    # free-form objects take any keys
    ("extra key in initial_state", extra(("world", "initial_state")), True),
    ("extra key in payload", extra((*INJ, "payload")), True),
    ("extra key in allowed_scope", extra(("policy", "allowed_scope")), True),
    ("extra key in changes", extra((*STEP, "changes")), True),
    ("extra key in where", extra(("oracle", "goal_predicates", 0, "predicates", 1, "where")), True),
    ("extra key in delegation", extra((*PRINCIPAL, "delegation")), True),
    # -- wrong types
    ("id int", setv(("id",), 7), False),
    ("title list", setv(("title",), ["t"]), False),
    ("notes int", setv(("notes",), 1), False),
    ("task string", setv(("task",), "task"), False),
    ("toolset string", setv(("task", "toolset"), "get_order"), False),
    ("toolset item int", setv(("task", "toolset"), [1]), False),
    ("roles item int", setv((*PRINCIPAL, "roles"), [1]), False),
    ("delegation list", setv((*PRINCIPAL, "delegation"), []), False),
    ("delegation string", setv((*PRINCIPAL, "delegation"), "all"), False),
    ("requested_intent string", setv(("policy", "requested_intent"), "cancel"), False),
    ("allowed_scope list", setv(("policy", "allowed_scope"), []), False),
    ("ambiguous_reference string", setv(("policy", "ambiguous_reference"), "yes"), False),
    ("ambiguous_reference int", setv(("policy", "ambiguous_reference"), 1), False),
    ("candidate_resources null item", setv(("policy", "candidate_resources"), [None]), False),
    ("plan list", setv(("plan",), []), False),
    ("steps object", setv(("plan", "steps"), {}), False),
    ("changes list", setv((*STEP, "changes"), []), False),
    ("args string", setv((*STEP, "args"), "x"), False),
    ("action_category int", setv((*STEP, "action_category"), 3), False),
    ("action_amount string", setv((*STEP, "action_amount"), "10"), False),
    ("logical_operation_id int", setv((*STEP, "logical_operation_id"), 1), False),
    ("initial_state list", setv(("world", "initial_state"), []), False),
    ("injections object", setv(("world", "injections"), {}), False),
    ("payload list", setv((*INJ, "payload"), []), False),
    ("hook int", setv((*INJ, "hook"), 5), False),
    ("goal_predicates object", setv(("oracle", "goal_predicates"), {}), False),
    ("recovery.required string", setv((*RECOVERY, "required"), "true"), False),
    ("obligations object", setv((*RECOVERY, "obligations"), {}), False),
    ("dimension_focus string", setv(("oracle", "dimension_focus"), "intent_grounding"), False),
    ("where list", setv(("oracle", "goal_predicates", 0, "predicates", 1, "where"), []), False),
    ("predicates object", setv((*GOAL, "predicates"), {}), False),
    ("description int", setv(("oracle", "forbidden_effects", 0, "description"), 1), False),
    ("path int", setv((*DEEP, "path"), 1), False),
    ("collection list", setv(("oracle", "required_effects", 0, "collection"), []), False),
    ("failure_code int", setv(("oracle", "forbidden_effects", 0, "failure_code"), 1), False),
    ("dimension int", setv(("oracle", "forbidden_effects", 0, "dimension"), 1), False),
    # -- bad enums
    ("bad family", setv(("family",), "happy_path"), False),
    ("bad on_block", setv(("policy", "on_block"), "ignore"), False),
    ("bad step kind", setv((*STEP, "kind"), "fly"), False),
    ("bad precondition_scope", setv((*STEP, "precondition_scope"), "sometimes"), False),
    ("bad trigger", setv((*STEP, "trigger"), "never"), False),
    ("bad on_failure", setv((*STEP, "on_failure"), "retry"), False),
    ("bad injection mode", setv((*INJ, "mode"), "chaos"), False),
    ("bad predicate op", setv((*GOAL, "op"), "regex"), False),
    ("bad deep predicate op", setv((*DEEP, "op"), "regex"), False),
    ("bad dimension_focus item", setv(("oracle", "dimension_focus"), ["speed"]), False),
    ("enum value in wrong case", setv(("family",), "STATE_MUTATION"), False),
    # -- explicit null for non-nullable optionals
    *[
        (f"null {'.'.join(map(str, p))}", setv(p, None), False)
        for p in (
            ("notes",),
            ("policy",),
            ("plan",),
            ("plan", "steps"),
            (*PRINCIPAL, "roles"),
            ("policy", "on_block"),
            ("policy", "allowed_scope"),
            ("policy", "requested_intent"),
            (*STEP, "tool_name"),
            (*STEP, "namespace"),
            (*STEP, "resource_id"),
            (*STEP, "changes"),
            (*STEP, "precondition"),
            (*STEP, "narrowed"),
            (*STEP, "trigger"),
            (*STEP, "on_failure"),
            (*STEP, "compensation_step_id"),
            ("world", "injections"),
            (*INJ, "payload"),
            (*INJ, "ordinal"),
            (*GOAL, "predicates"),
            (*DEEP, "path"),
            ("oracle", "recovery"),
            ("oracle", "dimension_focus"),
            (*RECOVERY, "obligations"),
            ("oracle", "forbidden_effects", 0, "description"),
        )
    ],
    # the nullable ones
    ("null delegation", setv((*PRINCIPAL, "delegation"), None), True),
    ("null action_amount", setv((*STEP, "action_amount"), None), True),
    ("null predicate value", setv((*DEEP, "value"), None), True),
    # -- ids and versions
    ("empty id", setv(("id",), ""), False),
    ("blank id", setv(("id",), " "), True),
    ("schema_version 1.1", setv(("schema_version",), "1.1"), False),
    ("schema_version number", setv(("schema_version",), 1.0), False),
    ("schema_version null", setv(("schema_version",), None), False),
    ("schema_version '1'", setv(("schema_version",), "1"), False),
    # -- integers and numbers
    ("ordinal 1.5", setv((*INJ, "ordinal"), 1.5), False),
    ("ordinal string", setv((*INJ, "ordinal"), "2"), False),
    ("ordinal bool", setv((*INJ, "ordinal"), True), False),
    ("ordinal negative", setv((*INJ, "ordinal"), -4), True),
    ("ordinal huge", setv((*INJ, "ordinal"), 10**30), True),
    # JSON Schema's "integer" is any number with a zero fractional part.
    ("ordinal 2.0", setv((*INJ, "ordinal"), 2.0), True),
    ("action_amount bool", setv((*STEP, "action_amount"), True), False),
    ("action_amount false", setv((*STEP, "action_amount"), False), False),
    ("action_amount float", setv((*STEP, "action_amount"), 12.5), True),
    ("action_amount negative int", setv((*STEP, "action_amount"), -3), True),
    ("narrowed action_amount bool", setv((*NARROWED, "action_amount"), True), False),
    # -- nested narrowed-step errors
    ("narrowed bad kind", setv((*NARROWED, "kind"), "teleport"), False),
    ("narrowed not an object", setv(NARROWED, "w1n"), False),
    (
        "narrowed of narrowed missing step_id",
        setv((*NARROWED, "narrowed"), {"kind": "write"}),
        False,
    ),
    ("narrowed precondition bad op", setv((*NARROWED, "precondition", "op"), "x"), False),
    (
        "narrowed of narrowed valid",
        setv((*NARROWED, "narrowed"), {"step_id": "z", "kind": "read"}),
        True,
    ),
    # -- predicate errors deep inside `predicates`
    ("deep predicate where string", setv((*DEEP, "where"), "x"), False),
    ("deep predicates item not object", setv((*GOAL, "predicates", 0, "predicates"), [1]), False),
    ("deep predicate null collection", setv((*DEEP, "collection"), None), False),
    ("precondition deep extra", extra((*PRE, "predicates", 1, "predicates", 0)), False),
    # -- free values and strings stay free
    ("predicate dimension not one of the five", setv((*GOAL, "dimension"), "speed"), True),
    ("predicate value object", setv((*DEEP, "value"), {"a": [1, None]}), True),
    ("unknown hook string", setv((*INJ, "hook"), "whenever:you:like"), True),
    ("unicode title", setv(("title",), "Zurücksetzen ✓"), True),
    ("empty plan", setv(("plan", "steps"), []), True),
    ("empty goal", setv(("oracle", "goal_predicates"), []), True),
    ("empty document", lambda d: d.clear(), False),
]


class Judges:
    """The three judges of a document; a short repr keeps hypothesis reports readable."""

    def __init__(self, published_schema: dict[str, Any]) -> None:
        generated = scenario_json_schema()
        Draft202012Validator.check_schema(generated)
        self.published = Draft202012Validator(published_schema)
        self.generated = Draft202012Validator(generated)

    def __repr__(self) -> str:
        return "Judges(published, generated, model)"

    def __call__(self, doc: Any) -> tuple[bool, bool, bool]:
        """(published schema, generated schema, pydantic model) acceptance. The model, not
        the loader: the loader also refuses schema-valid documents that cannot run
        (`runnable_problem`, tested in test_loader_hardening.py)."""
        try:
            Scenario.model_validate(copy.deepcopy(doc))
            model_ok = True
        except ValidationError:
            model_ok = False
        return self.published.is_valid(doc), self.generated.is_valid(doc), model_ok


class Bases(tuple[Doc, ...]):
    """Valid starting documents (short repr)."""

    def __repr__(self) -> str:
        return f"Bases(<{len(self)} documents>)"


@pytest.fixture(scope="module")
def judge(published_schema: dict[str, Any]) -> Judges:
    return Judges(published_schema)


@pytest.fixture(scope="module")
def bases(dev_docs: dict[str, Doc], kit: Any) -> Bases:
    return Bases([rich_doc(kit), *dev_docs.values()])


def test_generated_schema_is_a_2020_12_schema() -> None:
    schema = scenario_json_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {
        "schema_version",
        "id",
        "family",
        "title",
        "task",
        "world",
        "oracle",
    }


def test_generated_schema_is_json_serialisable() -> None:
    text = json.dumps(scenario_json_schema(), sort_keys=True)
    assert json.loads(text) == scenario_json_schema()


def test_dev_pack_documents_accepted_by_all_three(judge: Judges, dev_docs: dict[str, Doc]) -> None:
    assert sorted(dev_docs) == ["FA-01", "FA-02", "FA-03", "FA-04"]
    for scenario_id, doc in dev_docs.items():
        assert judge(doc) == (True, True, True), scenario_id


def test_rich_document_accepted_by_all_three(judge: Judges, kit: Any) -> None:
    assert judge(rich_doc(kit)) == (True, True, True)


def test_there_are_enough_broken_mutants() -> None:
    assert sum(1 for _, _, ok in MUTANTS if not ok) >= 25
    assert len({label for label, _, _ in MUTANTS}) == len(MUTANTS)


@pytest.mark.parametrize(
    ("mutate", "valid"),
    [pytest.param(m, ok, id=label) for label, m, ok in MUTANTS],
)
def test_mutant_judged_alike(
    judge: Judges,
    kit: Any,
    mutate: Callable[[Doc], None],
    valid: bool,
) -> None:
    doc = rich_doc(kit)
    mutate(doc)
    published, generated, model = judge(doc)
    assert published is valid, "the mutant does not test what its label says"
    assert (generated, model) == (valid, valid), (
        f"published={published} generated={generated} model={model}"
    )


# -- property: random mutations of valid documents -----------------------------------------

CONFUSERS = [None, True, False, 0, 1, -1, 1.5, 2.0, "", "x", "1.0", [], {}, ["x"], {"op": "eq"}]
FIELD_NAMES = [
    "op",
    "path",
    "value",
    "kind",
    "step_id",
    "narrowed",
    "predicates",
    "ordinal",
    "mode",
    "notes",
    "zzz",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=4,
)


def _paths(node: Any, prefix: Path_ = ()) -> list[Path_]:
    out = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            out.extend(_paths(child, (*prefix, key)))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            out.extend(_paths(child, (*prefix, index)))
    return out


def _mutate(doc: Doc, data: st.DataObject) -> None:
    paths = _paths(doc)
    target = data.draw(st.sampled_from(paths), label="path")
    node = _node(doc, target)
    actions = ["replace"] if target else []
    if target and isinstance(_node(doc, target[:-1]), dict):
        actions.append("delete")
    if isinstance(node, dict):
        actions.append("add_key")
    if isinstance(node, list):
        actions.append("append")
    if not actions:
        return
    action = data.draw(st.sampled_from(actions), label="action")
    value = copy.deepcopy(data.draw(st.sampled_from(CONFUSERS) | json_values, label="value"))
    if action == "replace":
        _node(doc, target[:-1])[target[-1]] = value
    elif action == "delete":
        del _node(doc, target[:-1])[target[-1]]
    elif action == "add_key":
        node[data.draw(st.sampled_from(FIELD_NAMES) | st.text(max_size=3), label="key")] = value
    else:
        node.append(value)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_mutations_judged_alike(
    judge: Judges,
    bases: Bases,
    data: st.DataObject,
) -> None:
    doc = copy.deepcopy(data.draw(st.sampled_from(bases), label="base"))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        _mutate(doc, data)
    published, generated, model = judge(doc)
    assert published == generated == model, (
        f"published={published} generated={generated} model={model}"
    )


def _leaves(node: Any, prefix: Path_ = ()) -> list[Path_]:
    if isinstance(node, dict):
        return [p for key, child in node.items() for p in _leaves(child, (*prefix, key))]
    if isinstance(node, list):
        return [p for index, child in enumerate(node) for p in _leaves(child, (*prefix, index))]
    return [prefix]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    kind=st.sampled_from(["bool", "int", "str"]),
    leaf_index=st.integers(0, 10**6),
    value_index=st.integers(0, len(CONFUSERS) - 1),
)
def test_type_confused_leaves_judged_alike(
    judge: Judges,
    kit: Any,
    kind: str,
    leaf_index: int,
    value_index: int,
) -> None:
    """Swap one scalar of the rich document for a value of another JSON type (a bool for a
    number, a numeric string, an integral float...)."""
    doc = rich_doc(kit)
    leaves = [leaf for leaf in _leaves(doc) if type(_node(doc, leaf)).__name__ == kind]
    target = leaves[leaf_index % len(leaves)]
    value = copy.deepcopy(CONFUSERS[value_index])
    _node(doc, target[:-1])[target[-1]] = value
    published, generated, model = judge(doc)
    assert published == generated == model, (
        f"{target} -> {value!r}: published={published} generated={generated} model={model}"
    )
