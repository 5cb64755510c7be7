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


CompiledPredicate = Callable[[Mapping[str, Any]], bool]
"""A predicate compiled once into a closure over its own fields (`compile_predicate`)."""


_MAPPINGS: set[type] = {dict}
"""Types known to be mappings (a set lookup instead of an ABC `isinstance` per hop)."""


def _resolver(path: str) -> Callable[[Mapping[str, Any]], Any]:
    keys = tuple(path.split("."))

    def resolve(context: Mapping[str, Any]) -> Any:
        node: Any = context
        for key in keys:
            if type(node) not in _MAPPINGS:
                if not isinstance(node, Mapping):
                    return MISSING
                _MAPPINGS.add(type(node))
            node = node.get(key, MISSING)
            if node is MISSING:
                return MISSING
        return node

    return resolve


def _raiser(message: str) -> CompiledPredicate:
    def fail(context: Mapping[str, Any]) -> bool:
        raise PredicateError(message)

    return fail


def compile_predicate(predicate: Predicate) -> CompiledPredicate:
    """`predicate` as a closure: `compile_predicate(p)(context) == evaluate_predicate(p,
    context)` for every context, raising the same `PredicateError`s, but the op dispatch,
    path splitting and field lookups are done once. The closure captures the predicate's
    values as they are now: compile from data that nobody edits afterwards (a pack's
    scenario, or an episode's own copy)."""
    op = predicate.op
    value = predicate.value
    path = predicate.path
    compare = _COMPARE.get(op)
    if compare is not None or op in (PredicateOp.IN, PredicateOp.NOT_IN):
        if path is None:
            return _raiser(f"{op}: needs a `path`")
        resolve = _resolver(path)
        if compare is not None:

            def compared(context: Mapping[str, Any]) -> bool:
                actual = resolve(context)
                if actual is MISSING:
                    return False
                try:
                    return bool(compare(actual, value))
                except TypeError as exc:
                    raise PredicateError(
                        f"{op} at path {path!r}: cannot compare {actual!r} with {value!r}"
                    ) from exc

            return compared
        negate = op is PredicateOp.NOT_IN

        def member(context: Mapping[str, Any]) -> bool:
            actual = resolve(context)
            if actual is MISSING:
                return False
            try:
                found = actual in value  # type: ignore[operator]
            except TypeError as exc:
                raise PredicateError(
                    f"{op} at path {path!r}: value {value!r} is not a collection or string"
                ) from exc
            return not found if negate else found

        return member
    if op in (PredicateOp.EXISTS, PredicateOp.NOT_EXISTS):
        if path is None:
            return _raiser(f"{op}: needs a `path`")
        resolve = _resolver(path)
        if op is PredicateOp.EXISTS:
            return lambda context: resolve(context) is not MISSING
        return lambda context: resolve(context) is MISSING
    counter = _COUNT.get(op)
    if counter is not None:
        return _compile_count(predicate, counter)
    nested = tuple(compile_predicate(p) for p in predicate.predicates or ())
    if op is PredicateOp.ALL:
        return lambda context: all(p(context) for p in nested)
    if op is PredicateOp.ANY:
        return lambda context: any(p(context) for p in nested)
    if op is PredicateOp.NOT:
        if not nested:
            return _raiser("not: needs at least one nested predicate in `predicates`")

        def negation(context: Mapping[str, Any]) -> bool:
            results = [p(context) for p in nested]  # all of them: a later one may raise
            return not results[0]

        return negation
    return _raiser(f"unknown predicate op {op!r}")  # pragma: no cover - enum is closed


def _compile_count(predicate: Predicate, counter: Callable[[int, Any], Any]) -> CompiledPredicate:
    op, value, collection = predicate.op, predicate.value, predicate.collection
    if collection is None:
        return _raiser(f"{op}: needs a `collection`")
    where = tuple((predicate.where or {}).items())
    never = any(isinstance(v, list | tuple) for _, v in where)
    dotted = _resolver(collection) if "." in collection else None

    def count(context: Mapping[str, Any]) -> bool:
        items = dotted(context) if dotted is not None else context.get(collection, MISSING)
        n = 0
        if items is MISSING or items is None or isinstance(items, str | Mapping):
            pass  # CAV-Bench iterates a string or object: none of its items is an object
        elif not isinstance(items, list | tuple):
            raise PredicateError(f"{op}: collection {collection!r} is not a list")
        elif not never:  # CAV-Bench froze list values in `where` to tuples: they never match
            for item in items:
                if isinstance(item, Mapping) and all(item.get(k) == v for k, v in where):
                    n += 1
        try:
            return bool(counter(n, value))
        except TypeError as exc:
            raise PredicateError(f"{op}: value {value!r} is not a number") from exc

    return count
