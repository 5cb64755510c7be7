"""Pack loading and the pack digest (SPEC a.9). Broken packs are built in `tmp_path`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from cavbench.errors import ScenarioError, SelectionError, UnsupportedSchemaVersion
from cavbench.scenarios import load_pack, load_pack_dir, pack_digest

Doc = dict[str, Any]


def write_pack(
    root: Path,
    docs: dict[str, Doc],
    *,
    manifest: Doc | None = None,
    names: dict[str, str] | None = None,
    indent: int | None = 2,
    shuffle_keys: bool = False,
) -> Path:
    """Write a pack directory; `names` maps scenario id -> file name."""
    (root / "scenarios").mkdir(parents=True)
    (root / "pack.json").write_text(
        json.dumps(manifest or {"pack_id": "tmp-pack", "pack_version": "0.1.0"}), encoding="utf-8"
    )
    rng = random.Random(7)
    for scenario_id, doc in docs.items():
        data = doc
        if shuffle_keys:
            items = list(doc.items())
            rng.shuffle(items)
            data = dict(items)
        name = (names or {}).get(scenario_id, f"{scenario_id}.json")
        (root / "scenarios" / name).write_text(json.dumps(data, indent=indent), encoding="utf-8")
    return root


@pytest.fixture
def two_docs(kit: Any) -> dict[str, Doc]:
    return {"B-02": kit.doc(id="B-02"), "A-01": kit.doc(id="A-01", family="stable_happy_path")}


# -- the dev pack --------------------------------------------------------------------------------


def test_dev_pack_loads(dev_pack_dir: Path, dev_pack_digest: str) -> None:
    pack = load_pack_dir(dev_pack_dir)
    assert pack.pack_id == "framework-v1"
    assert pack.pack_version == "1.0.0"
    assert pack.ids == ("FA-01", "FA-02", "FA-03", "FA-04")
    assert len(pack) == 4
    assert pack.digest == dev_pack_digest
    assert pack.get("FA-03").id == "FA-03"
    with pytest.raises(KeyError):
        pack.get("FA-99")


def test_load_pack_accepts_a_directory_path(dev_pack_dir: Path, dev_pack_digest: str) -> None:
    assert load_pack(dev_pack_dir).digest == dev_pack_digest
    assert load_pack(str(dev_pack_dir)).digest == dev_pack_digest


def test_load_pack_unknown_name_is_a_selection_error(tmp_path: Path) -> None:
    with pytest.raises(SelectionError, match="no-such-pack"):
        load_pack(str(tmp_path / "no-such-pack"))


def test_digest_ignores_file_order_names_and_formatting(
    tmp_path: Path, dev_docs: dict[str, Doc], dev_pack_digest: str
) -> None:
    reversed_docs = dict(reversed(list(dev_docs.items())))
    names = {sid: f"{9 - i:02d}-{sid.lower()}.json" for i, sid in enumerate(dev_docs)}
    pack = load_pack_dir(
        write_pack(tmp_path / "p", reversed_docs, names=names, indent=None, shuffle_keys=True)
    )
    assert pack.digest == dev_pack_digest
    assert pack.ids == ("FA-01", "FA-02", "FA-03", "FA-04")


def test_digest_changes_with_content(
    tmp_path: Path, dev_docs: dict[str, Doc], dev_pack_digest: str
) -> None:
    changed = json.loads(json.dumps(dev_docs))
    changed["FA-01"]["title"] += "!"
    assert load_pack_dir(write_pack(tmp_path / "p", changed)).digest != dev_pack_digest


def test_pack_digest_function_matches_the_spec_formula(dev_docs: dict[str, Doc]) -> None:
    import hashlib

    docs = list(dev_docs.values())
    blob = json.dumps(sorted(docs, key=lambda d: d["id"]), sort_keys=True, separators=(",", ":"))
    expected = "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()
    assert pack_digest(list(reversed(docs))) == expected


def test_scenarios_sorted_by_id_whatever_the_file_names(
    tmp_path: Path, two_docs: dict[str, Doc]
) -> None:
    pack = load_pack_dir(
        write_pack(tmp_path / "p", two_docs, names={"A-01": "z.json", "B-02": "a.json"})
    )
    assert pack.ids == ("A-01", "B-02")
    assert pack.pack_id == "tmp-pack"


def test_scenario_ids_matching_is_accepted(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    manifest = {"pack_id": "p", "pack_version": "1", "scenario_ids": ["B-02", "A-01"]}
    assert load_pack_dir(write_pack(tmp_path / "p", two_docs, manifest=manifest)).ids == (
        "A-01",
        "B-02",
    )


# -- broken packs: a ScenarioError naming the file ----------------------------------------------


def test_missing_pack_json(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    root = write_pack(tmp_path / "p", two_docs)
    (root / "pack.json").unlink()
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    assert str(root) in str(info.value)
    assert "pack.json" in str(info.value)


def test_missing_scenarios_folder(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "pack.json").write_text('{"pack_id": "p", "pack_version": "1"}', encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    assert str(root) in str(info.value)
    assert "scenarios/" in str(info.value)


def test_empty_scenarios_folder(tmp_path: Path) -> None:
    root = write_pack(tmp_path / "p", {})
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    assert str(root / "scenarios") in str(info.value)
    assert "no scenario files" in str(info.value)


def test_invalid_json_names_file_line_and_column(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    root = write_pack(tmp_path / "p", two_docs)
    bad = root / "scenarios" / "A-01.json"
    bad.write_text('{\n  "id": "A-01",\n  "family": ,\n}\n', encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    message = str(info.value)
    assert message.startswith(f"{bad}: at line 3 column 13: invalid JSON")


def test_invalid_pack_json(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    root = write_pack(tmp_path / "p", two_docs)
    (root / "pack.json").write_text("{pack_id: 1}", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    assert str(info.value).startswith(f"{root / 'pack.json'}: at line 1 column 2: invalid JSON")


def test_pack_json_missing_version(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    root = write_pack(tmp_path / "p", two_docs, manifest={"pack_id": "p"})
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    assert str(info.value).startswith(f"{root / 'pack.json'}: at $.pack_version: ")


def test_invalid_scenario_names_its_file(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    two_docs["B-02"]["family"] = "nope"
    root = write_pack(tmp_path / "p", two_docs)
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    assert str(info.value).startswith(f"{root / 'scenarios' / 'B-02.json'}: at $.family: ")


def test_duplicate_ids(tmp_path: Path, kit: Any) -> None:
    docs = {"A-01": kit.doc(id="A-01"), "copy": kit.doc(id="A-01")}
    root = write_pack(tmp_path / "p", docs, names={"A-01": "a.json", "copy": "b.json"})
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    message = str(info.value)
    assert message.startswith(
        f"{root / 'scenarios' / 'b.json'}: at $.id: duplicate scenario id 'A-01'"
    )
    assert str(root / "scenarios" / "a.json") in message


def test_scenario_ids_mismatch(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    manifest = {"pack_id": "p", "pack_version": "1", "scenario_ids": ["A-01", "C-03"]}
    root = write_pack(tmp_path / "p", two_docs, manifest=manifest)
    with pytest.raises(ScenarioError) as info:
        load_pack_dir(root)
    message = str(info.value)
    assert message.startswith(f"{root / 'pack.json'}: at $.scenario_ids: ")
    assert "['C-03']" in message
    assert "['B-02']" in message


def test_unsupported_schema_version_in_pack(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    two_docs["A-01"]["schema_version"] = "2.0"
    root = write_pack(tmp_path / "p", two_docs)
    with pytest.raises(UnsupportedSchemaVersion) as info:
        load_pack_dir(root)
    assert str(info.value).startswith(f"{root / 'scenarios' / 'A-01.json'}: at $.schema_version: ")


def test_non_json_files_are_ignored(tmp_path: Path, two_docs: dict[str, Doc]) -> None:
    root = write_pack(tmp_path / "p", two_docs)
    (root / "scenarios" / "README.md").write_text("not a scenario", encoding="utf-8")
    assert load_pack_dir(root).ids == ("A-01", "B-02")
