"""Read-only JSON containers for what adapters see.

The scenario view is built once per scenario and handed to every episode's adapter; if an
adapter could edit a plan step's `changes` in place, it would rewrite the scenario for every
later episode in the process. These subclasses of `dict` and `list` compare, iterate and
serialise exactly like the originals (so predicates and JSON output are unchanged) but refuse
every in-place edit.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pydantic import JsonValue


def _refuse(*_: object, **__: object) -> NoReturn:
    raise TypeError("scenario data is read-only; copy it (dict(x) / list(x)) before editing")


class FrozenDict(dict[str, Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # pickle/deepcopy would otherwise call __setitem__
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))


class FrozenList(list[Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # pickle/deepcopy would otherwise call extend
        return (FrozenList, (list(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


def freeze(value: JsonValue) -> Any:
    """A deep read-only copy of a JSON value."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value
