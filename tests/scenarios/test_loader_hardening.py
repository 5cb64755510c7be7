"""Issue 9: every bad scenario input gets one typed error naming the file and JSON path, and
`validate` rejects everything `ablate` would fail on (fuzzed with hypothesis)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cavbench.adapters import BASELINE_PROFILES, baseline
from cavbench.errors import CavBenchError, ScenarioError
from cavbench.evaluation import ScoringRule
from cavbench.reports import RunInfo, write_run
from cavbench.runner import run_episodes
from cavbench.scenarios import load_pack_dir
from cavbench.tables import CellContext, CellTables, EpisodeKey

PACK = {"pack_id": "hard", "pack_version": "1"}


def _pack(tmp: Path, doc: bytes | str | Any, pack: dict[str, Any] | None = None) -> Path:
    root = tmp / "pack"
    (root / "scenarios").mkdir(parents=True, exist_ok=True)
    (root / "pack.json").write_text(json.dumps(pack or PACK), encoding="utf-8")
    target = root / "scenarios" / "s.json"
    if isinstance(doc, bytes):
        target.write_bytes(doc)
    elif isinstance(doc, str):
        target.write_text(doc, encoding="utf-8", errors="surrogatepass")
    else:
        target.write_text(json.dumps(doc), encoding="utf-8")
    return root


def _refused(root: Path, where: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    assert "s.json" in info.value.source or "pack.json" in info.value.source
    assert info.value.path.startswith(where), info.value
    return info.value


def _text(doc: dict[str, Any]) -> str:
    return json.dumps(doc)


def _sub(doc: dict[str, Any], old: str, new: str) -> str:
    text = _text(doc)
    assert old in text
    return text.replace(old, new, 1)


BAD_TEXT: list[tuple[str, Callable[[dict[str, Any]], bytes | str], str]] = [
    ("invalid utf-8", lambda d: _text(d).encode() + b"\xff", "byte"),
    ("utf-16", lambda d: _text(d).encode("utf-16"), "byte"),
    (
        "nesting 5000",
        lambda d: _sub(d, '"notes": ', '"notes": ' + "[" * 5000 + "]" * 5000 + ', "x": '),
        "$",
    ),
    (
        "4301-digit int",
        lambda d: _sub(d, '"version": 1', '"version": ' + "9" * 4301),
        "$.world.initial_state",
    ),
    (
        "int 2**63",
        lambda d: _sub(d, '"version": 1', f'"version": {2**63}'),
        "$.world.initial_state",
    ),
    ("NaN", lambda d: _sub(d, '"version": 1', '"version": NaN'), "$.world.initial_state"),
    (
        "Infinity",
        lambda d: _sub(d, '"version": 1', '"version": -Infinity'),
        "$.world.initial_state",
    ),
    ("1e999", lambda d: _sub(d, '"version": 1', '"version": 1e999'), "$.world.initial_state"),
    ("duplicate key", lambda d: _sub(d, '"id": "T-01"', '"id": "T-01", "id": "T-02"'), "$"),
    (
        "lone surrogate",
        lambda d: _sub(d, '"Please do the thing."', '"\\ud800"'),
        "$.task.user_request",
    ),
    (
        "nesting 100",
        lambda d: _sub(d, '"version": 1', '"version": ' + "[" * 100 + "]" * 100),
        "$.world",
    ),
]


@pytest.mark.parametrize(
    ("make", "where"), [(m, w) for _, m, w in BAD_TEXT], ids=[n for n, _, _ in BAD_TEXT]
)
def test_bad_text_gets_one_typed_error(
    tmp_path: Path, kit: Any, make: Callable[..., Any], where: str
) -> None:
    _refused(_pack(tmp_path, make(kit.doc())), where)


def _doc_with(kit: Any, **parts: Any) -> dict[str, Any]:
    return kit.doc(**parts)


def test_non_object_resources_are_refused(tmp_path: Path, kit: Any) -> None:
    _refused(_pack(tmp_path, kit.doc(state={"order": ["O-1"]})), "$.world.initial_state.order")
    _refused(
        _pack(tmp_path, kit.doc(state={"order": {"O-1": 5}})), "$.world.initial_state.order.O-1"
    )


@pytest.mark.parametrize(
    ("predicate", "needs"),
    [
        ({"op": "eq", "value": 1}, "path"),
        ({"op": "count_eq", "value": 1}, "collection"),
        ({"op": "count_lte", "collection": "events"}, "number"),
        ({"op": "gt", "path": "state.order.O-1.version"}, "value"),
        ({"op": "in", "path": "state.order.O-1.status"}, "value"),
        ({"op": "not", "predicates": []}, "nested"),
        ({"op": "all", "predicates": [{"op": "lt", "value": 3}]}, "path"),
    ],
)
def test_predicates_missing_what_their_op_needs_are_refused(
    tmp_path: Path, kit: Any, predicate: dict[str, Any], needs: str
) -> None:
    error = _refused(_pack(tmp_path, kit.doc(goal=[predicate])), "$.oracle.goal_predicates[0]")
    assert needs in error.problem


def test_a_malformed_external_mutation_is_refused(tmp_path: Path, kit: Any) -> None:
    fault = kit.fault("f", "after_read:order:O-1", "external_mutation", namespace="order")
    _refused(_pack(tmp_path, kit.doc(injections=[fault])), "$.world.injections[0].payload")


@pytest.mark.parametrize("pack_id", ["a/b", "x" * 300, "", "../up", "sp ace"])
def test_pack_ids_that_cannot_be_folder_names_are_refused(
    tmp_path: Path, kit: Any, pack_id: str
) -> None:
    with pytest.raises(ScenarioError, match=r"pack\.json"):
        load_pack_dir(_pack(tmp_path, kit.doc(), {"pack_id": pack_id, "pack_version": "1"}))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_json_is_refused_without_blocking(tmp_path: Path, kit: Any) -> None:
    root = _pack(tmp_path, kit.doc())
    os.mkfifo(root / "scenarios" / "t.json")
    with pytest.raises(ScenarioError, match="not a regular file"):
        load_pack_dir(root)


# -- fuzz: whatever the document, a typed error or a pack that every baseline runs -------------

weird = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from(["\ud800", "", "a/b", "state.order.O-1", "eq", "count_eq", "events"])
)
values = st.recursive(
    weird,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, item in node.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            out += _paths(item, (*prefix, index))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Values of the same JSON type (so more mutants pass the schema and reach the run)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-3, 3) | st.sampled_from([2**63, -(2**63) - 1, 10**30])
    if isinstance(value, float):
        return st.floats()
    if isinstance(value, str):
        return st.sampled_from(["", "O-1", "order", "x", "w1", "r1", "\ud800"]) | st.text(
            max_size=3
        )
    if isinstance(value, list):
        return st.lists(values, max_size=2)
    return st.dictionaries(st.text(max_size=3), values, max_size=2)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_documents_give_typed_errors_or_run_under_every_baseline(
    tmp_path_factory: pytest.TempPathFactory, kit: Any, data: st.DataObject
) -> None:
    doc = kit.doc(
        steps=[kit.read("r1", "order", "O-1"), kit.write("w1", "order", "O-1", {"status": "x"})],
        goal=[kit.pred("eq", "state.order.O-1.status", "x")],
        injections=[kit.mutation("m", "after_read:order:O-1", "order", "O-1", {"a": 1})],
    )
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(doc)))
        doc = _set(doc, path, data.draw(_like(_get(doc, path)) | values))
    text = json.dumps(doc, allow_nan=True)
    if data.draw(st.integers(0, 4)) == 0:  # now and then, corrupt the bytes too
        raw = text.encode("utf-8", "surrogatepass")
        cut = data.draw(st.integers(0, len(raw)))
        text_or_bytes: bytes | str = raw[:cut] + data.draw(st.binary(max_size=4)) + raw[cut:]
    else:
        text_or_bytes = text
    root = _pack(tmp_path_factory.mktemp("fuzz"), text_or_bytes)
    try:
        pack = load_pack_dir(root)
    except CavBenchError:
        event("refused with a typed error")
        return
    event("loaded, then run by every baseline")
    out = tmp_path_factory.mktemp("out")
    keys = {
        "profile": "p",
        "adapter": "a",
        "pack_id": pack.pack_id,
        "scenarios": "all",
        "scoring_rule": "v1",
        "seeds": "0-0",
    }
    for profile in BASELINE_PROFILES:  # what validate accepts, ablate runs and writes
        episodes = run_episodes(pack, baseline(profile))
        info = RunInfo(profile, pack, profile, "0", 0, ScoringRule.V1, "fuzz")
        write_run(out, info, episodes)
        tables = CellTables(CellContext("s", "c", keys, (), pack.pack_version, pack.digest))
        for e in episodes:
            key = EpisodeKey(e.scenario.id, e.scenario.id, e.scenario.family.value, 0, 0)
            tables.add(key, e.trace, e.verdict)
        tables.build()
