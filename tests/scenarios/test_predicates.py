"""The predicate language (SPEC a.7), as properties over generated contexts."""

from __future__ import annotations

import json
import operator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cavbench.adapters import baseline
from cavbench.errors import PredicateError
from cavbench.evaluation import evaluate
from cavbench.runner import run_episode
from cavbench.scenarios import Predicate
from cavbench.scenarios.predicates import (
    MISSING,
    compile_predicate,
    evaluate_predicate,
    resolve_path,
)
from cavbench.trace import EpisodeTrace

COMPARISONS = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "lte": operator.le,
    "gt": operator.gt,
    "gte": operator.ge,
}
PATH_OPS = [*COMPARISONS, "in", "not_in"]

keys = st.text(alphabet="abcxyz_", min_size=1, max_size=4)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=4)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=6,
)
objects = st.dictionaries(keys, json_values, max_size=4)


def pred(op: str, path: str | None = None, value: Any = None, **extra: Any) -> Predicate:
    raw: dict[str, Any] = {"op": op, **extra}
    if path is not None:
        raw["path"] = path
    raw["value"] = value
    return Predicate.model_validate(raw)


def holds(predicate: Predicate, context: dict[str, Any]) -> bool:
    """The interpreted answer, checked against the compiled closure's: the same truth value,
    or the same `PredicateError` message (every property below covers both)."""
    compiled = compile_predicate(predicate)
    try:
        answer = evaluate_predicate(predicate, context)
    except PredicateError as exc:
        message = str(exc)
    else:
        assert compiled(context) is answer
        return answer
    with pytest.raises(PredicateError) as again:
        compiled(context)
    assert str(again.value) == message
    raise again.value


# -- paths --------------------------------------------------------------------------------------


@given(ctx=objects, path=st.lists(keys, min_size=1, max_size=3))
def test_resolve_path_matches_a_manual_walk(ctx: dict[str, Any], path: list[str]) -> None:
    node: Any = ctx
    for key in path:
        node = node.get(key, MISSING) if isinstance(node, dict) else MISSING
        if node is MISSING:
            break
    assert resolve_path(ctx, ".".join(path)) is node


@settings(max_examples=150)
@given(ctx=objects, op=st.sampled_from(PATH_OPS), value=json_values)
def test_missing_path_is_false_for_every_comparison(
    ctx: dict[str, Any], op: str, value: Any
) -> None:
    """`ne` and `not_in` on a missing path are false too (SPEC a.7 rule 2)."""
    path = "never_a_key.below"
    if op in ("in", "not_in") and not isinstance(value, list | str | dict):
        value = [value]
    assert holds(pred(op, path, value), ctx) is False
    assert holds(pred("exists", path), ctx) is False
    assert holds(pred("not_exists", path), ctx) is True


def test_exists_on_a_present_null() -> None:
    ctx = {"state": {"order": {"O-1": {"note": None}}}}
    assert holds(pred("exists", "state.order.O-1.note"), ctx) is True
    assert holds(pred("not_exists", "state.order.O-1.note"), ctx) is False
    assert holds(pred("eq", "state.order.O-1.note", None), ctx) is True
    assert holds(pred("ne", "state.order.O-1.note", None), ctx) is False


@given(items=st.lists(objects, min_size=1, max_size=3), index=st.integers(0, 2), key=keys)
def test_paths_never_descend_into_lists(items: list[dict[str, Any]], index: int, key: str) -> None:
    ctx = {"a": items}
    path = f"a.{index}.{key}"
    assert resolve_path(ctx, path) is MISSING
    assert holds(pred("exists", path), ctx) is False
    assert holds(pred("eq", f"a.{index}", items[index % len(items)]), ctx) is False
    assert holds(pred("exists", "a"), ctx) is True


def test_resource_id_with_a_dot_is_unaddressable() -> None:
    ctx = {"state": {"order": {"O.1": {"status": "open"}}}}
    assert holds(pred("exists", "state.order.O.1.status"), ctx) is False
    assert holds(pred("eq", "state.order.O.1.status", "open"), ctx) is False


def test_nested_item_path() -> None:
    ctx = {"state": {"order": {"O-1": {"items": {"I-2": "cancelled"}}}}}
    assert holds(pred("eq", "state.order.O-1.items.I-2", "cancelled"), ctx) is True


# -- comparisons ----------------------------------------------------------------------------------

numbers = st.integers(-50, 50) | st.floats(-50, 50, allow_nan=False) | st.booleans()


@given(op=st.sampled_from(sorted(COMPARISONS)), actual=numbers, value=numbers)
def test_numeric_comparisons_are_python_comparisons(op: str, actual: Any, value: Any) -> None:
    assert holds(pred(op, "x", value), {"x": actual}) is COMPARISONS[op](actual, value)


@given(op=st.sampled_from(["eq", "ne"]), actual=json_values, value=json_values)
def test_equality_is_python_equality_for_any_json(op: str, actual: Any, value: Any) -> None:
    assert holds(pred(op, "x", value), {"x": actual}) is COMPARISONS[op](actual, value)


def test_true_equals_one_and_one_equals_one_point_zero() -> None:
    assert holds(pred("eq", "x", 1), {"x": True}) is True
    assert holds(pred("eq", "x", True), {"x": 1}) is True
    assert holds(pred("eq", "x", 1.0), {"x": 1}) is True
    assert holds(pred("ne", "x", 0), {"x": False}) is False
    assert holds(pred("gt", "x", 0), {"x": True}) is True


@given(
    op=st.sampled_from(["lt", "lte", "gt", "gte"]),
    actual=st.text(max_size=3),
    value=st.integers() | st.none() | st.lists(st.integers(), max_size=2),
)
def test_mixed_type_ordering_raises(op: str, actual: str, value: Any) -> None:
    with pytest.raises(PredicateError):
        holds(pred(op, "x", value), {"x": actual})


def test_ordering_of_null_raises() -> None:
    with pytest.raises(PredicateError, match="cannot compare"):
        holds(pred("lt", "x", 3), {"x": None})


@given(actual=json_values, pool=st.lists(json_values, max_size=4))
def test_in_and_not_in_are_membership(actual: Any, pool: list[Any]) -> None:
    ctx = {"x": actual}
    assert holds(pred("in", "x", pool), ctx) is (actual in pool)
    assert holds(pred("not_in", "x", pool), ctx) is (actual not in pool)


@given(actual=st.text(max_size=3), haystack=st.text(max_size=6))
def test_in_with_a_string_value_is_a_substring_test(actual: str, haystack: str) -> None:
    assert holds(pred("in", "x", haystack), {"x": actual}) is (actual in haystack)
    assert holds(pred("not_in", "x", haystack), {"x": actual}) is (actual not in haystack)


def test_in_with_a_non_collection_value_raises() -> None:
    with pytest.raises(PredicateError):
        holds(pred("in", "x", 5), {"x": 5})


# -- counts ---------------------------------------------------------------------------------------

rows = st.lists(
    st.dictionaries(
        st.sampled_from(["kind", "op", "n"]), st.sampled_from([None, "a", "b", 1]), max_size=3
    )
    | st.sampled_from([1, "row", None, []]),
    max_size=6,
)
wheres = st.dictionaries(
    st.sampled_from(["kind", "op", "n"]), st.sampled_from([None, "a", "b", 1]), max_size=2
)


def manual_count(items: list[Any], where: dict[str, Any]) -> int:
    return sum(
        1
        for item in items
        if isinstance(item, dict) and all(item.get(k) == v for k, v in where.items())
    )


@settings(max_examples=150)
@given(
    items=rows,
    where=wheres,
    op=st.sampled_from(["count_eq", "count_lte", "count_gte"]),
    target=st.integers(0, 6),
)
def test_counts_match_a_manual_count(
    items: list[Any], where: dict[str, Any], op: str, target: int
) -> None:
    ctx = {"side_effects": items, "nested": {"rows": items}}
    expected = {"count_eq": operator.eq, "count_lte": operator.le, "count_gte": operator.ge}[op](
        manual_count(items, where), target
    )
    top = Predicate.model_validate(
        {"op": op, "collection": "side_effects", "where": where, "value": target}
    )
    dotted = Predicate.model_validate(
        {"op": op, "collection": "nested.rows", "where": where, "value": target}
    )
    assert holds(top, ctx) is expected
    assert holds(dotted, ctx) is expected


def test_where_missing_key_matches_expected_null() -> None:
    ctx = {"events": [{"kind": "a"}, {"kind": "a", "op": None}, {"kind": "a", "op": "x"}]}
    p = Predicate.model_validate(
        {"op": "count_eq", "collection": "events", "where": {"op": None}, "value": 2}
    )
    assert holds(p, ctx) is True


def test_where_keys_are_flat() -> None:
    ctx = {"side_effects": [{"payload": {"amount": 5}}, {"payload.amount": 5}]}
    p = Predicate.model_validate(
        {"op": "count_eq", "collection": "side_effects", "where": {"payload.amount": 5}, "value": 1}
    )
    assert holds(p, ctx) is True


def test_collection_without_dot_is_a_top_level_key() -> None:
    ctx = {"side_effects": [{}], "state": {"side_effects": [{}, {}]}}
    p = Predicate.model_validate({"op": "count_eq", "collection": "side_effects", "value": 1})
    assert holds(p, ctx) is True


@pytest.mark.parametrize("ctx", [{}, {"side_effects": None}, {"x": {}}])
def test_missing_or_null_collection_counts_zero(ctx: dict[str, Any]) -> None:
    for collection in ("side_effects", "x.rows"):
        p = Predicate.model_validate({"op": "count_eq", "collection": collection, "value": 0})
        assert holds(p, ctx) is True


@pytest.mark.parametrize("value", [{"a": 1}, "abc", ""])
def test_a_string_or_object_collection_counts_zero_as_in_the_reference(value: Any) -> None:
    # Issue 9, v1 edge case 11: CAV-Bench iterates it (characters, keys): no object to count.
    p = Predicate.model_validate({"op": "count_eq", "collection": "x", "value": 0})
    assert holds(p, {"x": value}) is True


def test_a_list_value_in_where_never_matches_as_in_the_reference() -> None:
    # Issue 9, v1 edge case 6: CAV-Bench froze `where` lists into tuples.
    p = Predicate.model_validate(
        {"op": "count_eq", "collection": "x", "where": {"k": [1]}, "value": 0}
    )
    assert holds(p, {"x": [{"k": [1]}, {"k": [1]}]}) is True


@pytest.mark.parametrize("value", [3, True, 1.5])
def test_non_list_collection_raises(value: Any) -> None:
    p = Predicate.model_validate({"op": "count_gte", "collection": "x", "value": 0})
    with pytest.raises(PredicateError, match="not a list"):
        holds(p, {"x": value})


# -- combinators ----------------------------------------------------------------------------------

leaf_preds = st.sampled_from(["t", "f"])


def _leaf(kind: str) -> dict[str, Any]:
    return (
        {"op": "exists", "path": "present"} if kind == "t" else {"op": "exists", "path": "absent"}
    )


@given(kinds=st.lists(leaf_preds, max_size=5))
def test_all_and_any(kinds: list[str]) -> None:
    ctx = {"present": 1}
    nested = [_leaf(k) for k in kinds]
    truth = [k == "t" for k in kinds]
    assert holds(Predicate.model_validate({"op": "all", "predicates": nested}), ctx) is all(truth)
    assert holds(Predicate.model_validate({"op": "any", "predicates": nested}), ctx) is any(truth)


@given(kinds=st.lists(leaf_preds, min_size=1, max_size=5))
def test_not_negates_the_first_nested_predicate(kinds: list[str]) -> None:
    p = Predicate.model_validate({"op": "not", "predicates": [_leaf(k) for k in kinds]})
    assert holds(p, {"present": 1}) is (kinds[0] != "t")


def test_empty_all_is_true_empty_any_is_false() -> None:
    assert holds(Predicate.model_validate({"op": "all", "predicates": []}), {}) is True
    assert holds(Predicate.model_validate({"op": "any"}), {}) is False


@pytest.mark.parametrize("raw", [{"op": "not", "predicates": []}, {"op": "not"}])
def test_not_without_nested_predicates_raises(raw: dict[str, Any]) -> None:
    with pytest.raises(PredicateError):
        holds(Predicate.model_validate(raw), {})


def test_not_still_evaluates_every_nested_predicate() -> None:
    """The later nested predicates are evaluated, so their errors surface (SPEC a.7 rule 5)."""
    bad = {"op": "lt", "path": "s", "value": 1}
    p = Predicate.model_validate({"op": "not", "predicates": [{"op": "exists", "path": "s"}, bad]})
    with pytest.raises(PredicateError):
        holds(p, {"s": "text"})


# -- list-valued comparisons: same live and after a JSON round trip (no replay bug) -----------


def test_list_valued_eq_is_the_same_live_and_on_replay(kit: Any) -> None:
    scenario = kit.scenario(
        id="LIST-01",
        state={"payment": {"P-1007": {"captures": [], "version": 1, "owner": "self"}}},
        steps=[
            kit.read("r1", "payment", "P-1007"),
            kit.write(
                "w1",
                "payment",
                "P-1007",
                {"captures": [75, 75]},
                tool="capture_payment",
                args={"amounts": [75, 75]},
            ),
        ],
        goal=[kit.pred("eq", "state.payment.P-1007.captures", [75, 75])],
        required=[
            {
                "op": "count_eq",
                "collection": "side_effects",
                "where": {"payload": {"amounts": [75, 75]}, "effect_type": "capture_payment"},
                "value": 1,
            }
        ],
        forbidden=[kit.pred("in", "state.payment.P-1007.captures", [[75], [75, 75, 75]])],
        focus=["execution_integrity"],
    )
    trace = run_episode(scenario, baseline("direct"))
    live = evaluate(scenario, trace)
    reloaded = EpisodeTrace.from_json(json.loads(json.dumps(trace.as_json())))
    replayed = evaluate(scenario, reloaded)
    assert live.outcome_success is True
    assert live.commit_valid_success is True
    assert replayed == live
    assert replayed.as_json() == live.as_json()
