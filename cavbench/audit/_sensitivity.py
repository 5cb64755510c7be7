"""Oracle sensitivity: known-bad trajectories made mechanically from each reference.

Each mutation takes a scenario's reference trajectory (the ``full_lifecycle`` baseline's
facade calls, see ``targets.v1``) and plants exactly one invalidity: a commit without its
commit-time guard (stale), a duplicate under a fresh idempotency key, a skipped
compensation, a widened amount or item scope, a write on another tenant's resource, a
success claim after a failure. Whether the invalidity is really present is decided from
the replayed trace and the scenario's *policy* by the audit's own small detectors, never
by the evaluator; a mutation that does not produce its invalidity is not applicable.
Scoring every present invalidity with each rule gives a per-scenario table of what the
oracle catches and what it misses: a mutation score for the oracle itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from cavbench.adapters import BASELINE_PROFILES, baseline
from cavbench.audit._protocol import JSON, Action, JSONObject
from cavbench.audit.targets.v1 import V1Domain, V1Tool, V1World
from cavbench.evaluation import ScoringRule, Verdict, evaluate, summarize
from cavbench.runner import run_episodes
from cavbench.scenarios import Dimension, Scenario, ScenarioPack, StepKind
from cavbench.trace import CompletionStatus, EpisodeTrace, EventType


class Invalidity(StrEnum):
    """The planted invalidities, one per known-bad trajectory."""

    STALE_COMMIT = "stale_commit"
    DUPLICATE = "duplicate_effect"
    SKIPPED_COMPENSATION = "skipped_compensation"
    WIDENED_SCOPE = "widened_amount_or_scope"
    OTHER_TENANT = "other_tenant_resource"
    FALSE_SUCCESS = "false_success_claim"

    @property
    def how(self) -> str:
        return _HOW[self]


_HOW: Final = {
    Invalidity.STALE_COMMIT: "drop the commit-time guard of the first write it rejected",
    Invalidity.DUPLICATE: "re-issue the first committed write under a fresh idempotency key",
    Invalidity.SKIPPED_COMPENSATION: "remove the compensating writes",
    Invalidity.WIDENED_SCOPE: "double the first write's amount, or add an item outside the scope",
    Invalidity.OTHER_TENANT: "aim the first write at a resource of another tenant",
    Invalidity.FALSE_SUCCESS: "report success where the reference reported a failure",
}
# The failure codes / dimensions that name each invalidity (the "right reason").
_RIGHT_REASON: Final[dict[Invalidity, Callable[[Verdict], bool]]] = {
    Invalidity.STALE_COMMIT: lambda v: "TS_STALE_WITNESS" in v.failure_codes,
    Invalidity.DUPLICATE: lambda v: "EI_DUPLICATE_LOGICAL_EFFECT" in v.failure_codes,
    Invalidity.SKIPPED_COMPENSATION: lambda v: any(c.startswith("OR_") for c in v.failure_codes),
    Invalidity.WIDENED_SCOPE: lambda v: any(c.startswith(("IG_", "AV_")) for c in v.failure_codes),
    Invalidity.OTHER_TENANT: lambda v: any(c.startswith("AV_") for c in v.failure_codes),
    Invalidity.FALSE_SUCCESS: lambda v: "OR_FALSE_SUCCESS_REPORT" in v.failure_codes,
}
RULES: Final = (ScoringRule.V1, ScoringRule.V1_STRICT)


@dataclass(frozen=True, slots=True)
class Mutant:
    """A known-bad trajectory, or why the mutation does not apply to this scenario."""

    actions: tuple[Action, ...] | None
    note: str


def _writes(reference: Sequence[Action]) -> list[int]:
    return [i for i, a in enumerate(reference) if a.name == V1Tool.WRITE]


def _replace_at(ref: tuple[Action, ...], i: int, action: Action) -> tuple[Action, ...]:
    return (*ref[:i], action, *ref[i + 1 :])


def _insert_after(ref: tuple[Action, ...], i: int, action: Action) -> tuple[Action, ...]:
    return (*ref[: i + 1], action, *ref[i + 1 :])


def _with_args(action: Action, **changes: JSON) -> Action:
    return Action(action.name, {**action.args, **changes}, action.kind)


def _write_outcomes(scenario: Scenario, ref: tuple[Action, ...]) -> dict[int, str]:
    """The response status of each reference write, replayed on a fresh world."""
    world = V1World(scenario)
    out: dict[int, str] = {}
    for i, action in enumerate(ref):
        seen = len(world.trace().events)
        world.apply(action)
        if action.name == V1Tool.WRITE:
            new = world.trace().events[seen:]
            if any(e.event_type is EventType.SIDE_EFFECT_COMMIT for e in new):
                out[i] = "COMMITTED"
            else:
                rejected = [e for e in new if e.event_type is EventType.COMMIT_REJECTED]
                out[i] = (rejected[-1].response_status or "") if rejected else ""
    return out


def _committed(scenario: Scenario, ref: tuple[Action, ...]) -> list[int]:
    """Indices of reference writes that committed."""
    return [i for i, s in _write_outcomes(scenario, ref).items() if s == "COMMITTED"]


def _mutate_stale(scenario: Scenario, ref: tuple[Action, ...]) -> Mutant:
    """Drop the guard where it mattered: the first guarded write the guard rejected."""
    for i, status in _write_outcomes(scenario, ref).items():
        if status == "CONFLICT" and ref[i].args.get("expected_version") is not None:
            unguarded = _with_args(ref[i], expected_version=None)
            return Mutant(_replace_at(ref, i, unguarded), f"{ref[i].args.get('step_id')}")
    return Mutant(None, "no write was rejected by its guard (no stale witness to commit on)")


def _mutate_duplicate(scenario: Scenario, ref: tuple[Action, ...]) -> Mutant:
    committed = _committed(scenario, ref)
    if not committed:
        return Mutant(None, "no committed write in the reference")
    i = committed[0]
    key = ref[i].args.get("idempotency_key")
    dup = _with_args(ref[i], idempotency_key=f"{key}:fresh", expected_version=None)
    return Mutant(_insert_after(ref, i, dup), "")


def _mutate_compensation(scenario: Scenario, ref: tuple[Action, ...]) -> Mutant:
    committed = set(_committed(scenario, ref))
    comp = [
        i
        for i in _writes(ref)
        if (step := scenario.plan.step(str(ref[i].args.get("step_id")))) is not None
        and step.kind is StepKind.COMPENSATE
    ]
    if not comp:
        return Mutant(None, "no compensating write in the reference")
    if not committed & set(comp):
        return Mutant(None, "the reference's compensation never committed (nothing to skip)")
    return Mutant(tuple(a for i, a in enumerate(ref) if i not in comp), "")


def _mutate_widen(scenario: Scenario, ref: tuple[Action, ...]) -> Mutant:
    max_amount = scenario.policy.max_amount
    delegated = scenario.task.principal.delegation_max_amount
    limit = min(x for x in (max_amount, delegated, float("inf")) if x is not None)
    allowed_items = scenario.policy.allowed_item_ids
    for i in _committed(scenario, ref):
        write = ref[i]
        args = write.args.get("args")
        if not isinstance(args, dict):
            continue
        amount = args.get("amount")
        if (
            isinstance(amount, int | float)
            and not isinstance(amount, bool)
            and limit < float("inf")
        ):
            wide = amount * 2 if amount * 2 > limit else limit + 1
            changes = write.args.get("changes")
            new_changes = (
                {k: (wide if v == amount else v) for k, v in changes.items()}
                if isinstance(changes, dict)
                else changes
            )
            mutated = _with_args(write, args={**args, "amount": wide}, changes=new_changes)
            return Mutant(_replace_at(ref, i, mutated), f"amount {amount} -> {wide}")
        item = args.get("item_id")
        if isinstance(item, str) and allowed_items is not None:
            rid = str(write.args.get("resource_id"))
            ns = str(write.args.get("namespace"))
            resource = scenario.world.initial_state.get(ns, {})
            items = resource.get(rid, {}) if isinstance(resource, dict) else {}
            pool = items.get("items", {}) if isinstance(items, dict) else {}
            others = (
                sorted(k for k in pool if k not in allowed_items) if isinstance(pool, dict) else []
            )
            if others:
                extra = _with_args(
                    write,
                    args={**args, "item_id": others[0]},
                    changes={f"items.{others[0]}": "CANCELLED"},
                    logical_operation_id=f"{write.args.get('logical_operation_id')}:wide",
                    idempotency_key=f"{write.args.get('idempotency_key')}:wide",
                    expected_version=None,
                )
                return Mutant(_insert_after(ref, i, extra), f"extra item {others[0]}")
    return Mutant(None, "no committed write with an amount under a limit or an item scope")


def _mutate_tenant(scenario: Scenario, ref: tuple[Action, ...]) -> Mutant:
    tenant = scenario.task.principal.tenant_id
    for i in _committed(scenario, ref):
        ns = str(ref[i].args.get("namespace"))
        coll = scenario.world.initial_state.get(ns)
        if not isinstance(coll, dict):
            continue
        foreign = sorted(
            rid
            for rid, r in coll.items()
            if isinstance(r, dict) and r.get("tenant") not in (None, tenant)
        )
        if foreign:
            moved = _with_args(ref[i], resource_id=foreign[0], expected_version=None)
            return Mutant(_replace_at(ref, i, moved), f"{ns}:{foreign[0]}")
    return Mutant(None, "the world holds no resource of another tenant in a written namespace")


def _mutate_false_success(scenario: Scenario, ref: tuple[Action, ...]) -> Mutant:
    for i, action in enumerate(ref):
        if action.name == V1Tool.REPORT:
            status = action.args.get("completion_status")
            if status == CompletionStatus.SUCCESS.value:
                return Mutant(None, "the reference already reports success")
            claim = _with_args(action, completion_status=CompletionStatus.SUCCESS.value)
            return Mutant(_replace_at(ref, i, claim), f"{status} -> success")
    return Mutant(None, "the reference makes no report")


_MUTATE: Final[dict[Invalidity, Callable[[Scenario, tuple[Action, ...]], Mutant]]] = {
    Invalidity.STALE_COMMIT: _mutate_stale,
    Invalidity.DUPLICATE: _mutate_duplicate,
    Invalidity.SKIPPED_COMPENSATION: _mutate_compensation,
    Invalidity.WIDENED_SCOPE: _mutate_widen,
    Invalidity.OTHER_TENANT: _mutate_tenant,
    Invalidity.FALSE_SUCCESS: _mutate_false_success,
}


# -- ground truth: is the invalidity in the replayed trace? ----------------------------
def _has_stale_commit(trace: EpisodeTrace) -> bool:
    """A commit whose witness (the last read of the resource) was older than the resource
    at commit time: the temporal check, applied whatever the scenario's focus."""
    seen: dict[str, int | None] = {}
    for event in trace.events:
        if event.event_type is EventType.TOOL_READ:
            seen.update(event.versions_before)
        elif event.event_type is EventType.SIDE_EFFECT_COMMIT:
            for ref, version in event.versions_before.items():
                read = seen.get(ref)
                if read is not None and version is not None and read != version:
                    return True
    return False


def _has_duplicate(trace: EpisodeTrace) -> bool:
    ids = [r.logical_operation_id for r in trace.side_effects if r.logical_operation_id]
    return len(ids) != len(set(ids))


def _effects(trace: EpisodeTrace) -> list[tuple[object, ...]]:
    return [
        (r.effect_type, r.resource_ref, r.logical_operation_id, r.payload)
        for r in trace.side_effects
    ]


def _present(
    invalidity: Invalidity, scenario: Scenario, reference: EpisodeTrace, mutant: EpisodeTrace
) -> bool:
    match invalidity:
        case Invalidity.STALE_COMMIT:
            return _has_stale_commit(mutant)
        case Invalidity.DUPLICATE:
            return _has_duplicate(mutant) and not _has_duplicate(reference)
        case Invalidity.FALSE_SUCCESS:
            return mutant.adapter_report.completion_status == CompletionStatus.SUCCESS.value
        case _:
            # Skipped compensation, widened scope, other tenant: the planted write (or its
            # absence) changes what the ledger holds.
            return _effects(mutant) != _effects(reference)


@dataclass(frozen=True, slots=True)
class SensitivityRow:
    """One scenario × invalidity: was it planted, and did each rule catch it?"""

    scenario_id: str
    family: str
    temporal_in_focus: bool
    invalidity: Invalidity
    applicable: bool
    note: str
    caught: tuple[bool, ...]
    """Per rule in :data:`RULES`: the verdict is not commit-valid."""
    right_reason: tuple[bool, ...]
    """Per rule: the verdict names the planted invalidity (its failure code)."""
    codes: tuple[str, ...]
    """Per rule: the failure codes, ``;``-joined."""


def _replay(scenario: Scenario, actions: Sequence[Action]) -> EpisodeTrace:
    world = V1World(scenario)
    for action in actions:
        world.apply(action)
    return world.trace()


def _score_mutant(
    scenario: Scenario, inv: Invalidity, ref_trace: EpisodeTrace, mutant: Mutant
) -> tuple[bool, str, tuple[Verdict, ...]]:
    """(applicable, note, verdicts under each rule) for one planted invalidity."""
    if mutant.actions is None:
        return False, mutant.note, ()
    trace = _replay(scenario, mutant.actions)
    if not _present(inv, scenario, ref_trace, trace):
        return False, f"mutation did not plant it ({mutant.note or 'no effect'})", ()
    return True, mutant.note, tuple(evaluate(scenario, trace, rule) for rule in RULES)


def sensitivity(
    domain: V1Domain, invalidities: Sequence[Invalidity] = tuple(Invalidity)
) -> tuple[SensitivityRow, ...]:
    """Plant each invalidity in each scenario's reference and score it under every rule."""
    rows = []
    for sid in domain.tasks():
        scenario = domain.scenario(sid)
        ref = domain.reference(sid)
        ref_trace = _replay(scenario, ref)
        temporal = Dimension.TEMPORAL_STATE_VALIDITY in scenario.oracle.dimension_focus
        for inv in invalidities:
            applicable, note, verdicts = _score_mutant(
                scenario, inv, ref_trace, _MUTATE[inv](scenario, ref)
            )
            rows.append(
                SensitivityRow(
                    scenario_id=sid,
                    family=scenario.family.value,
                    temporal_in_focus=temporal,
                    invalidity=inv,
                    applicable=applicable,
                    note=note,
                    caught=tuple(not v.commit_valid_success for v in verdicts),
                    right_reason=tuple(_RIGHT_REASON[inv](v) for v in verdicts),
                    codes=tuple(";".join(v.failure_codes) for v in verdicts),
                )
            )
    return tuple(rows)


@dataclass(frozen=True, slots=True)
class HeadlineRow:
    """One baseline profile's success counts on a pack under one scoring rule."""

    profile: str
    rule: ScoringRule
    n: int
    outcome: int
    policy_aware: int
    commit_valid: int
    verdicts_changed: int
    """Episodes whose verdict (success flags or failure codes) differs from ``v1``'s."""
    stale_flagged: int
    """Episodes with a ``TS_STALE_WITNESS`` finding."""


def headline(pack: ScenarioPack, rules: Sequence[ScoringRule] = RULES) -> tuple[HeadlineRow, ...]:
    """The headline table (five baseline profiles × pack) under each rule, as integer
    counts; each profile's episodes run once and are scored under every rule."""
    out = []
    for profile in BASELINE_PROFILES:
        episodes = run_episodes(pack, baseline(profile))
        base = [e.verdict for e in episodes]
        for rule in rules:
            verdicts = [evaluate(e.scenario, e.trace, rule) for e in episodes]
            counts = summarize(verdicts).overall
            changed = sum(
                (v.outcome_success, v.commit_valid_success, v.failure_codes)
                != (b.outcome_success, b.commit_valid_success, b.failure_codes)
                for v, b in zip(verdicts, base, strict=True)
            )
            out.append(
                HeadlineRow(
                    profile=profile.value,
                    rule=rule,
                    n=counts.n,
                    outcome=counts.outcome,
                    policy_aware=counts.policy_aware,
                    commit_valid=counts.commit_valid,
                    verdicts_changed=changed,
                    stale_flagged=sum("TS_STALE_WITNESS" in v.failure_codes for v in verdicts),
                )
            )
    return tuple(out)


def sensitivity_summary(rows: Sequence[SensitivityRow]) -> list[JSONObject]:
    """Per invalidity: planted, and caught / caught for the right reason under each rule."""
    out: list[JSONObject] = []
    for inv in Invalidity:
        planted = [r for r in rows if r.invalidity is inv and r.applicable]
        entry: JSONObject = {"invalidity": inv.value, "planted": len(planted)}
        for k, rule in enumerate(RULES):
            entry[f"caught_{rule.value}"] = sum(r.caught[k] for r in planted)
            entry[f"right_reason_{rule.value}"] = sum(r.right_reason[k] for r in planted)
        out.append(entry)
    return out
