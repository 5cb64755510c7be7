"""The scenario-v1 document as one typed, frozen model.

The model is the single source of truth: the loader validates with it and the JSON Schema
is generated from it (`scenario_json_schema`). What an adapter may see (`ScenarioView`) is
split from the benchmark-private parts (`world`, `oracle`) by type: an adapter session is
handed a `ScenarioView`, which has no attribute through which the oracle could be reached.

Optional fields that the published schema types as non-nullable (e.g. `tool_name`) reject an
explicit `null`, as that schema does; the few nullable ones are listed in `_NULLABLE`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from cavbench.scenarios._frozen import freeze
from cavbench.scenarios._isolation import executed_digest
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

JSONObject = dict[str, JsonValue]
Number = StrictInt | StrictFloat


def _json_integer(value: Any) -> Any:
    # JSON Schema's "integer" admits 2.0 but not true or "2"; pydantic's int would differ.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


JsonInteger = Annotated[StrictInt, BeforeValidator(_json_integer)]


class _Doc(BaseModel):
    """Frozen, closed (extra fields forbidden) document node."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)
    _NULLABLE: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _reject_explicit_null(cls, data: Any) -> Any:
        # The published schema types these optional fields as non-nullable: absent is fine,
        # an explicit null is not. Pydantic would otherwise accept None for `X | None`.
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None and key in cls.model_fields and key not in cls._NULLABLE:
                    raise ValueError(f"field {key!r} must not be null (omit it instead)")
        return data


_ORDER_OPS = frozenset({PredicateOp.LT, PredicateOp.LTE, PredicateOp.GT, PredicateOp.GTE})
_PATH_OPS = _ORDER_OPS | {
    PredicateOp.EQ,
    PredicateOp.NE,
    PredicateOp.IN,
    PredicateOp.NOT_IN,
    PredicateOp.EXISTS,
    PredicateOp.NOT_EXISTS,
}
_COUNT_OPS = frozenset({PredicateOp.COUNT_EQ, PredicateOp.COUNT_LTE, PredicateOp.COUNT_GTE})


class Predicate(_Doc):
    """One predicate of the oracle language (SPEC a.7)."""

    _NULLABLE: ClassVar[frozenset[str]] = frozenset({"value"})

    op: PredicateOp
    path: StrictStr | SkipJsonSchema[None] = None
    value: JsonValue = None
    collection: StrictStr | SkipJsonSchema[None] = None
    where: JSONObject | SkipJsonSchema[None] = None
    predicates: tuple[Predicate, ...] | SkipJsonSchema[None] = None
    description: StrictStr | SkipJsonSchema[None] = None
    dimension: StrictStr | SkipJsonSchema[None] = None
    """Dimension failed when this oracle predicate is violated (any string; see SPEC d.1)."""
    failure_code: StrictStr | SkipJsonSchema[None] = None

    def as_json(self) -> JSONObject:
        """The predicate as the document wrote it (unset fields left out)."""
        return self.model_dump(mode="json", exclude_unset=True)


def _predicate_problem(predicate: Predicate) -> str | None:
    """What CAV-Bench aborts on whenever this predicate is evaluated (None if nothing).
    Checked for every predicate of a document, so `validate` rejects every document that
    `ablate` would fail on; a standalone `Predicate` stays constructible for tests."""
    op = predicate.op
    value = predicate.value
    if op in _PATH_OPS and predicate.path is None:
        return f"op {op.value!r} needs a `path`"
    if op in (PredicateOp.IN, PredicateOp.NOT_IN) and not isinstance(value, str | list | dict):
        return f"op {op.value!r} needs a `value` that is a list, object or string"
    if op in _COUNT_OPS:
        if predicate.collection is None:
            return f"op {op.value!r} needs a `collection`"
        if op is not PredicateOp.COUNT_EQ and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            return f"op {op.value!r} needs a number `value`"
    if op in _ORDER_OPS and value is None:
        return f"op {op.value!r} needs a `value` to compare with"
    if op is PredicateOp.NOT and not predicate.predicates:
        return "op 'not' needs at least one nested predicate in `predicates`"
    for index, nested in enumerate(predicate.predicates or ()):
        problem = _predicate_problem(nested)
        if problem:
            return f"predicates[{index}]: {problem}"
    return None


class Principal(_Doc):
    _NULLABLE: ClassVar[frozenset[str]] = frozenset({"delegation"})

    principal_id: StrictStr
    tenant_id: StrictStr
    roles: tuple[StrictStr, ...] = ()
    delegation: JSONObject | None = None
    """Delegated authority; only `max_amount` is read."""

    @property
    def delegation_max_amount(self) -> float | None:
        return _number(self.delegation.get("max_amount")) if self.delegation else None


class Task(_Doc):
    user_request: StrictStr
    principal: Principal
    toolset: tuple[StrictStr, ...]
    """Advisory only: nothing enforces it (SPEC a.2)."""


class Policy(_Doc):
    """What the literal request licenses; adapter-visible."""

    requested_intent: tuple[StrictStr, ...] = ()
    allowed_scope: JSONObject = Field(default_factory=dict)
    ambiguous_reference: StrictBool = False
    candidate_resources: tuple[StrictStr, ...] = ()
    on_block: OnBlock = OnBlock.REFUSE

    @property
    def max_amount(self) -> float | None:
        return _number(self.allowed_scope.get("max_amount"))

    @property
    def allowed_item_ids(self) -> frozenset[Any] | None:
        """`allowed_scope.item_ids` as CAV-Bench's plain set logic sees it: a list's
        elements as they are (1 is not "1"), a bare string's characters."""
        return _item_set(self.allowed_scope.get("item_ids"))


class PlannedStep(_Doc):
    """One step of the scenario's plan (SPEC a.4)."""

    _NULLABLE: ClassVar[frozenset[str]] = frozenset({"action_amount"})

    step_id: StrictStr
    kind: StepKind
    tool_name: StrictStr | SkipJsonSchema[None] = None
    namespace: StrictStr | SkipJsonSchema[None] = None
    resource_id: StrictStr | SkipJsonSchema[None] = None
    changes: JSONObject = Field(default_factory=dict)
    args: JSONObject = Field(default_factory=dict)
    action_category: StrictStr | SkipJsonSchema[None] = None
    action_amount: Number | None = None
    action_scope: JSONObject = Field(default_factory=dict)
    logical_operation_id: StrictStr | SkipJsonSchema[None] = None
    precondition: Predicate | SkipJsonSchema[None] = None
    precondition_scope: PreconditionScope = PreconditionScope.GATE
    narrowed: PlannedStep | SkipJsonSchema[None] = None
    compensates: StrictStr | SkipJsonSchema[None] = None
    compensation_step_id: StrictStr | SkipJsonSchema[None] = None
    depends_on: StrictStr | SkipJsonSchema[None] = None
    trigger: Trigger = Trigger.ALWAYS
    on_failure: OnFailure = OnFailure.COMPENSATE

    @property
    def scope_item_ids(self) -> frozenset[Any]:
        """`action_scope.item_ids` under the same set logic (empty when absent)."""
        return _item_set(self.action_scope.get("item_ids")) or frozenset()


class Plan(_Doc):
    steps: tuple[PlannedStep, ...] = ()

    def step(self, step_id: str) -> PlannedStep | None:
        for step in self.steps:
            if step.step_id == step_id:
                return step
        return None


class Injection(_Doc):
    """A scheduled fault (SPEC a.5). Fires at most once, the first time its hook is reached."""

    fault_id: StrictStr
    hook: StrictStr
    ordinal: JsonInteger = 1
    mode: FaultMode
    payload: JSONObject = Field(default_factory=dict)


class World(_Doc):
    """Benchmark-private: the initial state and the scheduled faults."""

    initial_state: JSONObject
    injections: tuple[Injection, ...] = ()


class Recovery(_Doc):
    required: StrictBool = False
    obligations: tuple[Predicate, ...] = ()


class Oracle(_Doc):
    """Benchmark-private: what the evaluator checks."""

    goal_predicates: tuple[Predicate, ...]
    forbidden_effects: tuple[Predicate, ...] = ()
    required_effects: tuple[Predicate, ...] = ()
    policy_constraints: tuple[Predicate, ...] = ()
    recovery: Recovery = Field(default_factory=Recovery)
    dimension_focus: tuple[Dimension, ...] = ()


_T = TypeVar("_T")
COMPILED = "_compiled"
"""The `__dict__` key of `compiled`'s cache; `deep_copy` and `model_copy` leave it behind."""


class _CompiledCache:
    """`compiled(key, build)`: derived data computed once per model object and kept on it.

    Mixed into frozen models (before `BaseModel`), whose values never change, so what is
    derived from them stays valid; copies start without it, and pickling leaves it out."""

    def compiled(self, key: str, build: Callable[[Self], _T]) -> _T:
        """`build(self)`, computed once per object. Keys name the consumer
        (`"evaluation.oracle"`)."""
        try:  # the hot path: one lookup, no call
            return self.__dict__[COMPILED][key]  # type: ignore[no-any-return]
        except KeyError:
            pass
        cache: dict[str, Any] | None = self.__dict__.get(COMPILED)
        if cache is None:
            cache = self.__dict__[COMPILED] = {}
        found = cache.get(key)
        if found is None:
            found = cache[key] = build(self)
        return found

    def __getstate__(self) -> dict[Any, Any]:
        # Closures do not pickle (a sweep's worker processes receive scenarios): leave them out.
        assert isinstance(self, BaseModel)
        state = BaseModel.__getstate__(self)
        if COMPILED in self.__dict__:
            state["__dict__"] = {k: v for k, v in self.__dict__.items() if k != COMPILED}
        return state


class ScenarioView(_CompiledCache, BaseModel):
    """Everything an adapter may know about a scenario, and nothing else (SPEC a.8)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    family: Family
    title: str
    user_request: str
    principal: Principal
    toolset: tuple[str, ...]
    policy: Policy
    plan: Plan


class Scenario(_CompiledCache, _Doc):
    """A whole scenario-v1 document: the adapter-visible part plus `world` and `oracle`."""

    schema_version: Literal["1.0"]
    id: StrictStr = Field(min_length=1)
    family: Family
    title: StrictStr
    notes: StrictStr = ""
    task: Task
    policy: Policy = Field(default_factory=Policy)
    plan: Plan = Field(default_factory=Plan)
    world: World
    oracle: Oracle

    def view(self) -> ScenarioView:
        """The adapter-visible projection (no world, no oracle, no notes). Built once."""
        return self._view

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> Scenario:
        """A copy; the cached view, digest and compiled structures are dropped so the copy's
        are its own."""
        copy = super().model_copy(update=update, deep=deep)
        copy.__dict__.pop("_view", None)
        copy.__dict__.pop("digest", None)
        copy.__dict__.pop(COMPILED, None)
        return copy

    @cached_property
    def digest(self) -> str:
        """`sha256:` of what an episode of this scenario runs: the view, the initial state
        and the injections (`executed_digest`); each episode records the digest of its own
        copy, so a difference shows that something altered it."""
        return executed_digest(self.view(), self.world.initial_state, self.world.injections)

    @cached_property
    def _view(self) -> ScenarioView:
        # Built without re-validation so the JSON parts stay read-only containers: the view
        # is shared by every episode of this scenario and must not be editable by adapters.
        principal = self.task.principal
        return ScenarioView.model_construct(
            id=self.id,
            family=self.family,
            title=self.title,
            user_request=self.task.user_request,
            principal=_frozen_copy(principal, "delegation"),
            toolset=self.task.toolset,
            policy=_frozen_copy(self.policy, "allowed_scope"),
            plan=Plan.model_construct(
                _fields_set=self.plan.model_fields_set,
                steps=tuple(_frozen_step(s) for s in self.plan.steps),
            ),
        )


_M = TypeVar("_M", bound=BaseModel)


def _frozen_copy(model: _M, *fields: str) -> _M:
    """`model` with the named JSON fields replaced by read-only deep copies."""
    update = {f: freeze(getattr(model, f)) for f in fields if getattr(model, f) is not None}
    copy = model.model_copy(update=update)
    # model_copy marks updated fields as set; keep the document's own record of what was set.
    object.__setattr__(copy, "__pydantic_fields_set__", set(model.model_fields_set))
    return copy


def _frozen_predicate(predicate: Predicate) -> Predicate:
    copy = _frozen_copy(predicate, "value", "where")
    if predicate.predicates:
        object.__setattr__(
            copy, "predicates", tuple(_frozen_predicate(p) for p in predicate.predicates)
        )
    return copy


def _frozen_step(step: PlannedStep) -> PlannedStep:
    copy = _frozen_copy(step, "changes", "args", "action_scope")
    if step.precondition is not None:
        object.__setattr__(copy, "precondition", _frozen_predicate(step.precondition))
    if step.narrowed is not None:
        object.__setattr__(copy, "narrowed", _frozen_step(step.narrowed))
    return copy


def _number(value: object) -> float | None:
    # CAV-Bench compares a boolean limit as the number it is in Python (True is 1).
    if not isinstance(value, int | float):
        return None
    return float(value)


def _item_set(items: object) -> frozenset[Any] | None:
    if isinstance(items, str | list | tuple):
        return frozenset(items)
    return None


def runnable_problem(scenario: Scenario) -> tuple[str, str] | None:
    """(JSON path, problem) of the first thing in a schema-valid document that CAV-Bench
    aborts a run on (a non-object resource, a malformed external mutation, a predicate
    missing what its op needs), or None. The loader refuses such documents, so `validate`
    rejects every document that `ablate` would fail on; the model itself stays exactly as
    permissive as the published JSON Schema."""
    world = scenario.world
    for namespace, resources in world.initial_state.items():
        where = f"$.world.initial_state.{namespace}"
        if not isinstance(resources, dict):
            return where, f"must map resource ids to objects, got {type(resources).__name__}"
        for rid, fields in resources.items():
            if not isinstance(fields, dict):
                return (
                    f"{where}.{rid}",
                    f"a resource must be an object, got {type(fields).__name__}",
                )
    for index, injection in enumerate(world.injections):
        if injection.mode is not FaultMode.EXTERNAL_MUTATION:
            continue
        payload = injection.payload
        if (
            not isinstance(payload.get("namespace"), str)
            or payload.get("resource_id") is None
            or not isinstance(payload.get("changes"), dict)
        ):
            return (
                f"$.world.injections[{index}].payload",
                "external_mutation needs namespace (a string), resource_id and changes (an object)",
            )
    for index, injection in enumerate(world.injections):
        target = injection.payload.get("affects_step")
        if injection.mode in (FaultMode.DOWNSTREAM_FAILURE, FaultMode.COMPENSATION_FAILURE):
            where = f"$.world.injections[{index}]"
            if isinstance(target, list | dict):
                return f"{where}.payload.affects_step", "must be a step id (a string)"
            if not target and ":" not in injection.hook:
                return (
                    f"{where}.hook",
                    "a failure without payload.affects_step targets the step after the hook's "
                    "`:`, and this hook has none (fix: set affects_step)",
                )
    found = _version_problem(scenario) or _scope_problem(scenario)
    if found is not None:
        return found
    oracle = scenario.oracle
    groups: list[tuple[str, tuple[Predicate, ...]]] = [
        ("$.oracle.goal_predicates", oracle.goal_predicates),
        ("$.oracle.forbidden_effects", oracle.forbidden_effects),
        ("$.oracle.required_effects", oracle.required_effects),
        ("$.oracle.policy_constraints", oracle.policy_constraints),
        ("$.oracle.recovery.obligations", oracle.recovery.obligations),
    ]
    for where, predicates in groups:
        for index, predicate in enumerate(predicates):
            problem = _predicate_problem(predicate)
            if problem:
                return f"{where}[{index}]", problem
    for index, first in enumerate(scenario.plan.steps):
        step: PlannedStep | None = first
        where = f"$.plan.steps[{index}]"
        while step is not None:
            if step.precondition is not None:
                problem = _predicate_problem(step.precondition)
                if problem:
                    return f"{where}.precondition", problem
            step, where = step.narrowed, f"{where}.narrowed"
    return None


def _version_problem(scenario: Scenario) -> tuple[str, str] | None:
    """A `version` that is not an integer: CAV-Bench bumps booleans as integers and treats
    other types as unversioned, which is accidental; cavbench refuses the document."""
    for namespace, resources in scenario.world.initial_state.items():
        for rid, fields in resources.items():  # type: ignore[union-attr]
            if _bad_version(fields):
                return (
                    f"$.world.initial_state.{namespace}.{rid}.version",
                    "a resource version must be an integer (or absent: unversioned)",
                )
    for index, injection in enumerate(scenario.world.injections):
        if _bad_version(injection.payload.get("changes")):
            return f"$.world.injections[{index}].payload.changes.version", "must be an integer"
    for index, first in enumerate(scenario.plan.steps):
        step: PlannedStep | None = first
        where = f"$.plan.steps[{index}]"
        while step is not None:
            if _bad_version(step.changes):
                return f"{where}.changes.version", "must be an integer"
            step, where = step.narrowed, f"{where}.narrowed"
    return None


def _bad_version(fields: object) -> bool:
    if not isinstance(fields, dict) or "version" not in fields:
        return False
    return type(fields["version"]) is not int


def _scope_problem(scenario: Scenario) -> tuple[str, str] | None:
    """Limits and item lists CAV-Bench cannot compare (it raises mid-run)."""
    limits = [("$.policy.allowed_scope.max_amount", scenario.policy.allowed_scope)]
    if scenario.task.principal.delegation is not None:
        limits.append(
            ("$.task.principal.delegation.max_amount", scenario.task.principal.delegation)
        )
    for where, holder in limits:
        value = holder.get("max_amount")
        if value is not None and not isinstance(value, int | float):
            return where, "must be a number"
    scopes = [("$.policy.allowed_scope.item_ids", scenario.policy.allowed_scope)]
    for index, first in enumerate(scenario.plan.steps):
        step: PlannedStep | None = first
        where = f"$.plan.steps[{index}]"
        while step is not None:
            scopes.append((f"{where}.action_scope.item_ids", step.action_scope))
            step, where = step.narrowed, f"{where}.narrowed"
    for where, holder in scopes:
        items = holder.get("item_ids")
        if items is None or isinstance(items, str):
            continue
        if not isinstance(items, list) or any(isinstance(i, list | dict) for i in items):
            return where, "must be a list of ids (strings or numbers) or a string"
    return None
