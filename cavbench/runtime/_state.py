"""Versioned state store (SPEC b.1).

Invariants: callers only ever receive copies; a mutation either fails with nothing changed
or applies every change and bumps an integer `version` exactly once.

Stored resource objects are never modified in place: a mutation builds a new object and
swaps it in (copy on write). That is what lets `peek` and `snapshot` share objects with the
store instead of copying them; whoever receives those treats them as read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cavbench.errors import CavBenchError, ResourceNotFound, VersionConflict
from cavbench.trace import JSON, JSONObject, Resource, State

_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: JSON) -> JSON:
    """Deep copy of a JSON value; much faster than `copy.deepcopy` for plain data."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, dict):
        return copy_resource(value)
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def copy_resource(resource: Resource) -> Resource:
    """Deep copy of a JSON object; flat objects (the common case) cost one `dict()` call."""
    out = dict(resource)
    for key, value in out.items():
        if type(value) not in _SCALARS:
            out[key] = copy_json(value)
    return out


def version_of(resource: Mapping[str, JSON]) -> int | None:
    """The integer version of a resource, or None if it is unversioned (bools do not count)."""
    version = resource.get("version")
    return version if type(version) is int else None


@dataclass(frozen=True, slots=True)
class Mutation:
    """Before/after states of a mutated resource (read-only, shared with the store)."""

    before: Resource
    after: Resource


class StateStore:
    """Resources keyed by (namespace, resource id), each an independent copy of the initial state."""

    __slots__ = ("_data",)

    def __init__(
        self, initial_state: Mapping[str, JSON], *, source: str = "world.initial_state"
    ) -> None:
        data: State = {}
        for namespace, resources in initial_state.items():
            if not isinstance(resources, dict):
                raise CavBenchError(
                    f"{source}.{namespace}: must map resource ids to objects, got {type(resources).__name__}"
                )
            bucket: dict[str, Resource] = {}
            for rid, fields in resources.items():
                if not isinstance(fields, dict):
                    raise CavBenchError(
                        f"{source}.{namespace}.{rid}: a resource must be an object, got {type(fields).__name__}"
                    )
                bucket[str(rid)] = fields  # shared, never modified: mutations copy on write
            data[namespace] = bucket
        self._data = data

    def fork(self) -> StateStore:
        """A store starting from this one's current state, for another episode: the stored
        objects are shared (never edited in place), the namespace maps are its own."""
        other = StateStore.__new__(StateStore)
        other._data = {ns: dict(bucket) for ns, bucket in self._data.items()}
        return other

    def _live(self, namespace: str, resource_id: str) -> Resource:
        try:
            return self._data[namespace][resource_id]
        except KeyError:
            raise ResourceNotFound(namespace, resource_id) from None

    def exists(self, namespace: str, resource_id: str) -> bool:
        return resource_id in self._data.get(namespace, {})

    def get(self, namespace: str, resource_id: str) -> Resource:
        """A copy of the resource; mutating it changes nothing here."""
        return copy_resource(self._live(namespace, resource_id))

    def peek(self, namespace: str, resource_id: str) -> Resource:
        """The stored object itself, read-only by contract (for trace records, not adapters)."""
        return self._live(namespace, resource_id)

    def version(self, namespace: str, resource_id: str) -> int | None:
        return version_of(self._live(namespace, resource_id))

    def mutate(
        self,
        namespace: str,
        resource_id: str,
        changes: Mapping[str, JSON],
        expected_version: int | None = None,
    ) -> Mutation:
        """Apply dotted-path `changes`; bump an integer version once. All or nothing."""
        live = self._live(namespace, resource_id)
        current = version_of(live)
        if expected_version is not None and expected_version != current:
            raise VersionConflict(f"{namespace}:{resource_id}", expected_version, current)
        before = live  # never modified again: the store swaps in `work`
        # Shallow: nothing stored is edited in place, so `work` may share the values it does
        # not change; `_assign` copies each object on a dotted path before writing into it.
        work = dict(live)
        for dotted, value in changes.items():
            _assign(work, dotted, copy_json(value), f"{namespace}:{resource_id}")
        if current is not None:
            work["version"] = current + 1
        self._data[namespace][resource_id] = work
        return Mutation(before=before, after=work)

    def shared(self) -> State:
        """The whole world, sharing the stored resources (read-only by contract, like
        `peek`): what an episode's trace records as its final state."""
        return {ns: dict(bucket) for ns, bucket in self._data.items()}

    def snapshot(self) -> State:
        """A deep copy of the whole world."""
        return {
            ns: {rid: copy_resource(r) for rid, r in bucket.items()}
            for ns, bucket in self._data.items()
        }


def _assign(target: JSONObject, dotted: str, value: JSON, ref: str) -> None:
    """Set `target[a][b]...` = value for `dotted` = "a.b...", copying every object on the
    path (it may be shared with the version before the mutation)."""
    if "." not in dotted:
        target[dotted] = value
        return
    parts = dotted.split(".")
    node = target
    for depth, key in enumerate(parts[:-1]):
        child = node.get(key)
        if child is None:
            child = {}
        elif not isinstance(child, dict):
            where = ".".join(parts[: depth + 1])
            raise CavBenchError(f"{ref}: cannot assign {dotted!r}: {where!r} is not an object")
        else:
            child = dict(child)
        node[key] = child
        node = child
    node[parts[-1]] = value
