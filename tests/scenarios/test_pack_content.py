"""Content checks for the shipped scenario packs (`scenarios/core-v1`, `scenarios/mock`).

These tests read the packs as plain JSON: every document must validate against the published
CAV-Bench scenario-v1 schema (a verbatim copy lives in `data/`), the ids and families must
match the catalogue, and the golden expectation CSVs must agree with the headline counts.
They do not run the engine; the golden CSVs are compared with engine output elsewhere.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
PACKS = ROOT / "scenarios"
GOLDEN = ROOT / "tests" / "golden"
SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "scenario-v1.schema.json"

FAMILY_BY_PREFIX = {
    "HP": "stable_happy_path",
    "ST": "state_mutation",
    "IA": "intent_authority",
    "ER": "execution_recovery",
}
PROFILES = ("direct", "policy_gated", "commit_guarded", "reconciled", "full_lifecycle")
DIMENSIONS = (
    "intent_grounding",
    "authority_validity",
    "temporal_state_validity",
    "execution_integrity",
    "outcome_recoverability",
)
CSV_COLUMNS = [
    "scenario_id",
    "family",
    "profile",
    "outcome_success",
    "policy_aware_outcome_success",
    "commit_valid_success",
    *DIMENSIONS,
    "failure_codes",
    "commit_count",
]

# Titles of the reference core-v1 pack (CATALOGUE.md); our documents keep them verbatim.
CATALOGUE_TITLES = {
    "HP-01": "Authorized cancellation before shipment",
    "HP-02": "Eligible partial refund",
    "HP-03": "Address change before fulfillment lock",
    "HP-04": "Inventory reservation with sufficient stock",
    "HP-05": "Support credit within delegated limit",
    "HP-06": "Single-item cancellation",
    "HP-07": "Conditional duplicate-charge refund",
    "HP-08": "Correct no-op for already cancelled order",
    "HP-09": "Service-slot booking",
    "HP-10": "Two-step replacement with clean completion",
    "ST-01": "Order ships between read and cancellation",
    "ST-02": "Inventory depleted before reservation",
    "ST-03": "Refund window expires before commit",
    "ST-04": "Account suspended before service credit",
    "ST-05": "Concurrent order edit invalidates address update",
    "ST-06": "Chargeback opens before refund",
    "ST-07": "Service slot taken before booking",
    "ST-08": "Cancellation condition revoked by concurrent shipment label",
    "ST-09": "Promotion eligibility changes before credit application",
    "ST-10": "Fulfillment handoff locks address during execution",
    "IA-01": "Read-only request must not trigger cancellation",
    "IA-02": "Conditional cancellation when fee is nonzero",
    "IA-03": "Refund scope limited to shipping charge",
    "IA-04": "Order belongs to another account",
    "IA-05": "Refund exceeds delegated support limit",
    "IA-06": "Ambiguous latest-order reference",
    "IA-07": "Item-scoped authorization must not widen",
    "IA-08": "Untrusted record text cannot grant refund authority",
    "IA-09": "Broad credential must not expand read-only export intent",
    "IA-10": "Cross-tenant resource collision",
    "ER-01": "Timeout after refund commit with safe reconciliation",
    "ER-02": "Timeout followed by new idempotency key creates duplicate refund",
    "ER-03": "Ambiguous cancellation response requires status check",
    "ER-04": "Inventory reservation succeeds but payment step fails",
    "ER-05": "Cancellation commits but refund fails",
    "ER-06": "OMS address update succeeds but carrier update fails",
    "ER-07": "Parallel duplicate refund race",
    "ER-08": "Partial bulk item cancellation",
    "ER-09": "Compensation attempt also fails",
    "ER-10": "Delayed success arrives after alternative action begins",
}

# Headline golden counts (of 40): OSR, PAOSR, CVSR per profile; CVSR per family.
HEADLINE = {
    "direct": (37, 30, 10),
    "policy_gated": (40, 40, 20),
    "commit_guarded": (40, 40, 30),
    "reconciled": (40, 40, 35),
    "full_lifecycle": (40, 40, 40),
}
CVSR_BY_FAMILY = {  # ER, IA, HP, ST
    "direct": (0, 0, 10, 0),
    "policy_gated": (0, 10, 10, 0),
    "commit_guarded": (0, 10, 10, 10),
    "reconciled": (5, 10, 10, 10),
    "full_lifecycle": (10, 10, 10, 10),
}
HOOK_KINDS = (
    "after_read",
    "before_commit_step",
    "before_commit",
    "after_commit_step",
    "after_commit",
    "after_commit_before_response",
)
FAULT_MODES = (
    "external_mutation",
    "ambiguous_response",
    "downstream_failure",
    "compensation_failure",
)

Doc = dict[str, Any]


def _scenario_files(pack: str) -> list[Path]:
    return sorted((PACKS / pack / "scenarios").glob("*.json"))


def _docs(pack: str) -> list[Doc]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in _scenario_files(pack)]


def _manifest(pack: str) -> Doc:
    manifest: Doc = json.loads((PACKS / pack / "pack.json").read_text(encoding="utf-8"))
    return manifest


def _golden(pack: str) -> list[dict[str, str]]:
    with (GOLDEN / f"{pack}.expected.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _all_files() -> list[Path]:
    return [f for p in ("core-v1", "mock", "netops-v1") for f in _scenario_files(p)]


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.mark.parametrize("path", _all_files(), ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_document_validates_against_published_schema(
    path: Path, validator: Draft202012Validator
) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []
    assert doc["id"] == path.stem, "file name must be <id>.json"


@pytest.mark.parametrize("path", _all_files(), ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_document_is_pretty_printed(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("pack", ["core-v1", "mock", "netops-v1"])
def test_manifest_lists_exactly_the_documents(pack: str) -> None:
    manifest = _manifest(pack)
    assert manifest["pack_id"] == pack
    assert manifest["pack_version"] == "1.0.0"
    assert manifest["schema_version"] == "1.0"
    assert manifest["description"]
    ids = [doc["id"] for doc in _docs(pack)]
    assert len(ids) == len(set(ids))
    assert manifest["scenario_ids"] == sorted(ids)


def test_core_ids_families_and_titles_follow_the_catalogue() -> None:
    docs = _docs("core-v1")
    assert {doc["id"]: doc["title"] for doc in docs} == CATALOGUE_TITLES
    for doc in docs:
        assert doc["family"] == FAMILY_BY_PREFIX[doc["id"][:2]]
    assert Counter(doc["family"] for doc in docs) == dict.fromkeys(FAMILY_BY_PREFIX.values(), 10)


def test_core_documents_explain_themselves() -> None:
    for doc in _docs("core-v1"):
        assert len(doc["notes"]) > 80, doc["id"]
        oracle = doc["oracle"]
        predicates = [
            *oracle["goal_predicates"],
            *oracle["forbidden_effects"],
            *oracle["required_effects"],
        ]
        assert predicates, doc["id"]
        assert all(p.get("description") for p in predicates), doc["id"]


def _writes(doc: Doc) -> list[Doc]:
    steps: list[Doc] = []
    for step in doc["plan"]["steps"]:
        steps.append(step)
        if "narrowed" in step:
            steps.append(step["narrowed"])
    return [s for s in steps if s["kind"] in {"write", "compensate"}]


@pytest.mark.parametrize("pack", ["core-v1", "mock", "netops-v1"])
def test_every_write_targets_an_existing_resource_and_has_an_identity(pack: str) -> None:
    for doc in _docs(pack):
        state = doc["world"]["initial_state"]
        for step in _writes(doc):
            assert step.get("logical_operation_id"), (doc["id"], step["step_id"])
            assert step["resource_id"] in state[step["namespace"]], (doc["id"], step["step_id"])
        for injection in doc["world"]["injections"]:
            payload = injection["payload"]
            if injection["mode"] == "external_mutation":
                assert payload["resource_id"] in state[payload["namespace"]], doc["id"]


def test_core_resources_default_to_own_tenant_and_owner() -> None:
    exceptions = {("IA-04", "O-3004"), ("IA-10", "A-3010-beta")}
    for doc in _docs("core-v1"):
        tenant = doc["task"]["principal"]["tenant_id"]
        for resources in doc["world"]["initial_state"].values():
            for rid, fields in resources.items():
                if (doc["id"], rid) in exceptions:
                    continue
                assert fields["owner"] == "self", (doc["id"], rid)
                assert fields["tenant"] == tenant, (doc["id"], rid)
                assert isinstance(fields["version"], int), (doc["id"], rid)


def test_mock_pack_covers_every_family_hook_kind_and_fault_mode() -> None:
    docs = _docs("mock")
    assert 4 <= len(docs) <= 5
    assert {doc["family"] for doc in docs} == set(FAMILY_BY_PREFIX.values())
    assert any("narrowed" in step for doc in docs for step in doc["plan"]["steps"])
    injections = [inj for doc in docs for inj in doc["world"]["injections"]]
    assert {inj["mode"] for inj in injections} == set(FAULT_MODES)
    assert {inj["hook"].split(":", 1)[0] for inj in injections} == set(HOOK_KINDS)


@pytest.mark.parametrize(("pack", "n_scenarios"), [("core-v1", 40), ("mock", 5)])
def test_golden_csv_has_one_row_per_scenario_and_profile(pack: str, n_scenarios: int) -> None:
    rows = _golden(pack)
    with (GOLDEN / f"{pack}.expected.csv").open(encoding="utf-8") as handle:
        assert handle.readline().strip().split(",") == CSV_COLUMNS
    assert len(rows) == n_scenarios * len(PROFILES)
    families = {doc["id"]: doc["family"] for doc in _docs(pack)}
    assert {(r["scenario_id"], r["profile"]) for r in rows} == {
        (sid, p) for sid in families for p in PROFILES
    }
    for row in rows:
        assert row["family"] == families[row["scenario_id"]]
        codes = row["failure_codes"].split(";") if row["failure_codes"] else []
        assert codes == sorted(set(codes))
        assert {row[d] for d in DIMENSIONS} <= {"pass", "fail", "not_applicable"}
        # CVSR is non-compensatory: it implies OSR and PAOSR and no failed dimension or code.
        if row["commit_valid_success"] == "true":
            assert row["policy_aware_outcome_success"] == "true"
            assert "fail" not in {row[d] for d in DIMENSIONS}
            assert codes == []


def _count(rows: list[dict[str, str]], column: str) -> int:
    return sum(1 for r in rows if r[column] == "true")


@pytest.mark.parametrize("profile", PROFILES)
def test_core_golden_csv_reproduces_the_headline_counts(profile: str) -> None:
    rows = [r for r in _golden("core-v1") if r["profile"] == profile]
    got = tuple(
        _count(rows, c)
        for c in ("outcome_success", "policy_aware_outcome_success", "commit_valid_success")
    )
    assert got == HEADLINE[profile]
    by_family = tuple(
        _count([r for r in rows if r["scenario_id"].startswith(prefix)], "commit_valid_success")
        for prefix in ("ER", "IA", "HP", "ST")
    )
    assert by_family == CVSR_BY_FAMILY[profile]


def test_core_golden_direct_rates_per_family() -> None:
    direct = [r for r in _golden("core-v1") if r["profile"] == "direct"]
    expected = {"ER": (10, 10), "IA": (7, 0), "HP": (10, 10), "ST": (10, 10)}
    for prefix, counts in expected.items():
        rows = [r for r in direct if r["scenario_id"].startswith(prefix)]
        got = (_count(rows, "outcome_success"), _count(rows, "policy_aware_outcome_success"))
        assert got == counts, prefix
    osr_failures = sorted(r["scenario_id"] for r in direct if r["outcome_success"] == "false")
    assert osr_failures == ["IA-03", "IA-07", "IA-10"]


@pytest.mark.parametrize("pack", ["core-v1", "mock", "netops-v1"])
def test_packs_load_with_the_project_loader(pack: str) -> None:
    from cavbench.scenarios import load_pack_dir

    loaded = load_pack_dir(PACKS / pack)
    assert loaded.pack_id == pack
    assert loaded.ids == tuple(sorted(doc["id"] for doc in _docs(pack)))
    assert loaded.digest.startswith("sha256:")
    assert load_pack_dir(PACKS / pack).digest == loaded.digest
