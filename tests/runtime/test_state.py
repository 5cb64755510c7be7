"""The versioned state store (SPEC b.1)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cavbench.errors import CavBenchError, ResourceNotFound, VersionConflict
from cavbench.runtime import StateStore

keys = st.sampled_from(["a", "b", "c", "status", "items"])
leaves = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(keys, inner, max_size=2),
    max_leaves=4,
)
resources = st.dictionaries(keys, values, max_size=3)
# dotted paths of one or two segments
dotted = st.builds(lambda a, b: a if b is None else f"{a}.{b}", keys, st.none() | keys)
changes_st = st.dictionaries(dotted, values, max_size=3)


def world(resource: dict[str, Any], version: Any = 1) -> dict[str, Any]:
    fields = dict(resource)
    fields["version"] = version
    return {"order": {"O-1": fields}}


def apply_reference(resource: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any] | None:
    """Independent model of `mutate`'s field semantics; None when an intermediate is not an object."""
    out = copy.deepcopy(resource)
    for path, value in changes.items():
        parts = path.split(".")
        node = out
        for key in parts[:-1]:
            if node.get(key) is None:
                node[key] = {}
            if not isinstance(node[key], dict):
                return None
            node = node[key]
        node[parts[-1]] = copy.deepcopy(value)
    return out


@settings(max_examples=150)
@given(resource=resources, batches=st.lists(changes_st, max_size=5))
def test_versions_bump_exactly_once_per_mutation(
    resource: dict[str, Any], batches: list[dict[str, Any]]
) -> None:
    resource.pop("version", None)
    store = StateStore(world(resource, version=3))
    expected = store.get("order", "O-1")
    mutations = 0
    for batch in batches:
        changes = {k: v for k, v in batch.items() if not k.startswith("version")}
        model = apply_reference(expected, changes)
        if model is None:
            with pytest.raises(CavBenchError):
                store.mutate("order", "O-1", changes)
            assert store.get("order", "O-1") == expected  # all or nothing
            continue
        result = store.mutate("order", "O-1", changes)
        mutations += 1
        model["version"] = 3 + mutations
        assert result.before == expected
        assert result.after == model
        expected = model
        assert store.get("order", "O-1") == expected
        assert store.version("order", "O-1") == 3 + mutations


def test_empty_changes_still_bump_the_version() -> None:
    store = StateStore(world({"status": "open"}, version=7))
    result = store.mutate("order", "O-1", {})
    assert result.before["version"] == 7
    assert result.after == {"status": "open", "version": 8}
    assert store.version("order", "O-1") == 8


@settings(max_examples=100)
@given(resource=resources, expected=st.integers(-3, 10), changes=changes_st)
def test_expected_version_conflict_changes_nothing(
    resource: dict[str, Any], expected: int, changes: dict[str, Any]
) -> None:
    assume(expected != 4)
    store = StateStore(world(resource, version=4))
    before = store.snapshot()
    with pytest.raises(VersionConflict) as info:
        store.mutate("order", "O-1", changes, expected_version=expected)
    assert (info.value.expected, info.value.actual) == (expected, 4)
    assert info.value.ref == "order:O-1"
    assert store.snapshot() == before


def test_matching_expected_version_commits() -> None:
    store = StateStore(world({"status": "open"}, version=4))
    store.mutate("order", "O-1", {"status": "closed"}, expected_version=4)
    assert store.get("order", "O-1") == {"status": "closed", "version": 5}


@settings(max_examples=100)
@given(resource=resources, changes=changes_st, poke=values)
def test_copies_never_alias(resource: dict[str, Any], changes: dict[str, Any], poke: Any) -> None:
    """Whatever a caller does to what it was given, the store does not change."""
    initial = world(resource)
    pristine = copy.deepcopy(initial)
    store = StateStore(initial)
    got = store.get("order", "O-1")
    snap = store.snapshot()
    for container in (got, snap["order"]["O-1"]):
        for value in list(container.values()):
            if isinstance(value, dict):
                value["poked"] = poke
            elif isinstance(value, list):
                value.append(poke)
        container["status"] = poke
    assert store.get("order", "O-1") == pristine["order"]["O-1"]
    assert store.snapshot() == pristine
    if apply_reference(store.get("order", "O-1"), changes) is not None:
        store.mutate("order", "O-1", changes)
    assert initial == pristine, "mutating the store changed the initial state it was given"


def test_mutation_values_are_copied_in() -> None:
    store = StateStore(world({}))
    value: dict[str, Any] = {"lines": [1, 2]}
    store.mutate("order", "O-1", {"detail": value})
    value["lines"].append(3)
    assert store.get("order", "O-1")["detail"] == {"lines": [1, 2]}


def test_dotted_paths_create_intermediates() -> None:
    store = StateStore(world({"items": {"I-1": "open"}}))
    store.mutate("order", "O-1", {"items.I-2": "cancelled", "a.b.c": 1, "nulls.x": 2})
    state = store.get("order", "O-1")
    assert state["items"] == {"I-1": "open", "I-2": "cancelled"}
    assert state["a"] == {"b": {"c": 1}}
    assert state["nulls"] == {"x": 2}


def test_null_intermediate_is_replaced_by_an_object() -> None:
    store = StateStore(world({"meta": None}))
    store.mutate("order", "O-1", {"meta.note": "x"})
    assert store.get("order", "O-1")["meta"] == {"note": "x"}


@pytest.mark.parametrize("blocker", ["text", 3, [1], True])
def test_non_object_intermediate_is_an_error_and_changes_nothing(blocker: Any) -> None:
    store = StateStore(world({"status": blocker, "other": 1}))
    before = store.snapshot()
    with pytest.raises(CavBenchError, match="'status' is not an object"):
        store.mutate("order", "O-1", {"other": 2, "status.code": "x"})
    assert store.snapshot() == before


@pytest.mark.parametrize("version", [None, "3", 1.0, True, [1]])
def test_unversioned_resources_never_bump(version: Any) -> None:
    fields: dict[str, Any] = {"status": "open"}
    if version is not None:
        fields["version"] = version
    store = StateStore({"order": {"O-1": fields}})
    assert store.version("order", "O-1") is None
    for _ in range(3):
        store.mutate("order", "O-1", {"status": "x"})
    got = store.get("order", "O-1")
    assert got.get("version") == version
    assert store.version("order", "O-1") is None
    # with no integer version, an expected version can never match
    with pytest.raises(VersionConflict):
        store.mutate("order", "O-1", {}, expected_version=1)


def test_missing_resource() -> None:
    store = StateStore(world({}))
    for ns, rid in (("order", "O-2"), ("nope", "O-1")):
        with pytest.raises(ResourceNotFound) as info:
            store.get(ns, rid)
        assert (info.value.namespace, info.value.resource_id) == (ns, rid)
        assert str(info.value).startswith(f"{ns}:{rid}: ")
        with pytest.raises(ResourceNotFound):
            store.mutate(ns, rid, {"a": 1})
    assert not store.exists("order", "O-2")
    assert store.exists("order", "O-1")


def test_malformed_initial_state_is_an_error() -> None:
    with pytest.raises(CavBenchError, match="order"):
        StateStore({"order": ["not", "a", "map"]})
    with pytest.raises(CavBenchError, match="O-1"):
        StateStore({"order": {"O-1": "not an object"}})
