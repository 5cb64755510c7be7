"""The predicate language of scenario-v1 (SPEC a.7), evaluated against a JSON context.

Oracle predicates see `{"state": ..., "side_effects": [...], "events": [...]}`; plan
preconditions see the observed resource object itself. Unlike CAV-Bench we never freeze
values, so a list-valued comparison gives the same answer live and on replay.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, Final

from cavbench.errors import PredicateError
from cavbench.scenarios._model import Predicate
from cavbench.scenarios._vocab import PredicateOp


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()

_COMPARE: Mapping[PredicateOp, Callable[[Any, Any], Any]] = {
    PredicateOp.EQ: operator.eq,
    PredicateOp.NE: operator.ne,
    PredicateOp.LT: operator.lt,
    PredicateOp.LTE: operator.le,
    PredicateOp.GT: operator.gt,
    PredicateOp.GTE: operator.ge,
}
_COUNT: Mapping[PredicateOp, Callable[[int, Any], Any]] = {
    PredicateOp.COUNT_EQ: operator.eq,
    PredicateOp.COUNT_LTE: operator.le,
    PredicateOp.COUNT_GTE: operator.ge,
}


def resolve_path(context: Mapping[str, Any], path: str) -> Any:
    """Descend dot-separated keys through objects only; anything else is `MISSING`."""
    node: Any = context
    for key in path.split("."):
        if type(node) is not dict and not isinstance(node, Mapping):
            return MISSING
        node = node.get(key, MISSING)
        if node is MISSING:
            return MISSING
    return node


def evaluate_predicate(predicate: Predicate, context: Mapping[str, Any]) -> bool:
    """True when the predicate holds in `context`. Raises `PredicateError` where CAV-Bench
    aborts (uncomparable types, a non-list collection, an empty `not`)."""
    op = predicate.op
    compare = _COMPARE.get(op)
    if compare is not None:
        actual = _path_value(predicate, context)
        if actual is MISSING:
            return False
        try:
            return bool(compare(actual, predicate.value))
        except TypeError as exc:
            raise PredicateError(
                f"{op} at path {predicate.path!r}: cannot compare {actual!r} with {predicate.value!r}"
            ) from exc
    if op in (PredicateOp.IN, PredicateOp.NOT_IN):
        actual = _path_value(predicate, context)
        if actual is MISSING:
            return False
        try:
            member = actual in predicate.value  # type: ignore[operator]
        except TypeError as exc:
            raise PredicateError(
                f"{op} at path {predicate.path!r}: value {predicate.value!r} is not a collection or string"
            ) from exc
        return member if op is PredicateOp.IN else not member
    if op is PredicateOp.EXISTS:
        return _path_value(predicate, context) is not MISSING
    if op is PredicateOp.NOT_EXISTS:
        return _path_value(predicate, context) is MISSING
    counter = _COUNT.get(op)
    if counter is not None:
        try:
            return bool(counter(_count(predicate, context), predicate.value))
        except TypeError as exc:
            raise PredicateError(f"{op}: value {predicate.value!r} is not a number") from exc
    nested = predicate.predicates or ()
    if op is PredicateOp.ALL:
        return all(evaluate_predicate(p, context) for p in nested)
    if op is PredicateOp.ANY:
        return any(evaluate_predicate(p, context) for p in nested)
    if op is PredicateOp.NOT:
        if not nested:
            raise PredicateError("not: needs at least one nested predicate in `predicates`")
        results = [evaluate_predicate(p, context) for p in nested]
        return not results[0]
    raise PredicateError(f"unknown predicate op {op!r}")  # pragma: no cover - enum is closed


def _path_value(predicate: Predicate, context: Mapping[str, Any]) -> Any:
    if predicate.path is None:
        raise PredicateError(f"{predicate.op}: needs a `path`")
    return resolve_path(context, predicate.path)


def _count(predicate: Predicate, context: Mapping[str, Any]) -> int:
    collection = predicate.collection
    if collection is None:
        raise PredicateError(f"{predicate.op}: needs a `collection`")
    items = (
        resolve_path(context, collection) if "." in collection else context.get(collection, MISSING)
    )
    if items is MISSING or items is None:
        return 0
    if isinstance(items, str | Mapping):
        return 0  # CAV-Bench iterates it: characters or keys, none of them an object
    if not isinstance(items, list | tuple):
        raise PredicateError(f"{predicate.op}: collection {collection!r} is not a list")
    where = predicate.where or {}
    if any(isinstance(v, list | tuple) for v in where.values()):
        return 0  # CAV-Bench froze list values in `where` to tuples: they never match
    count = 0
    for item in items:
        if isinstance(item, Mapping) and all(item.get(k) == v for k, v in where.items()):
            count += 1
    return count
