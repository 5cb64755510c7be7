"""Load and validate scenario packs; compute the CAV-Bench pack digest (SPEC a.9)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from cavbench.errors import ScenarioError, UnsupportedSchemaVersion
from cavbench.scenarios._model import Scenario
from cavbench.scenarios._vocab import Family

SUPPORTED_SCHEMA_VERSION = "1.0"


class PackManifest(BaseModel):
    """`pack.json`. Unknown keys are tolerated: CAV-Bench packs may carry more metadata."""

    model_config = ConfigDict(frozen=True, extra="allow")

    pack_id: StrictStr
    pack_version: StrictStr
    schema_version: StrictStr = SUPPORTED_SCHEMA_VERSION
    description: StrictStr = ""
    scenario_ids: tuple[StrictStr, ...] | None = Field(default=None)


@dataclass(frozen=True, slots=True)
class ScenarioPack:
    """A validated pack: scenarios sorted by id, with the digest of their raw documents."""

    pack_id: str
    pack_version: str
    description: str
    digest: str
    source: Path
    scenarios: tuple[Scenario, ...]

    def __len__(self) -> int:
        return len(self.scenarios)

    def get(self, scenario_id: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.id == scenario_id:
                return scenario
        raise KeyError(scenario_id)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.scenarios)

    @property
    def families(self) -> tuple[Family, ...]:
        return tuple(sorted({s.family for s in self.scenarios}))


def pack_digest(raw_docs: list[dict[str, Any]]) -> str:
    """`sha256:` of the raw documents sorted by id, serialised exactly as CAV-Bench does."""
    ordered = sorted(raw_docs, key=lambda doc: str(doc.get("id", "")))
    blob = json.dumps(ordered, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


_TYPE_TAGS = frozenset(
    {"int", "float", "str", "bool", "none", "list", "dict", "tuple", "is-instance"}
)


def _is_type_tag(part: str) -> bool:
    """Pydantic puts union-member and validator names into error locations
    (`tuple[...]`, `PlannedStep`, `function-after[...]`, `int`); they are not JSON keys.
    Our document keys are all snake_case, so a capital, a bracket or a hyphen marks a tag."""
    return part in _TYPE_TAGS or part[:1].isupper() or any(c in part for c in "[],-")


def json_path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic error location as a JSON path: `$.plan.steps[2].kind`."""
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _is_type_tag(part):
            out += f".{part}"
    return out


def describe_errors(exc: ValidationError) -> tuple[str, str]:
    """The JSON path of the first problem and a message for it. Errors from the branches of
    one union (a value that is neither a number nor null, say) are merged into one message."""
    errors = exc.errors()
    path = json_path(tuple(errors[0]["loc"]))
    same = [e for e in errors if json_path(tuple(e["loc"])) == path]
    if errors[0]["type"] == "extra_forbidden":
        problem = "unknown field (the scenario-v1 format does not allow extra fields)"
    else:
        problem = " or ".join(dict.fromkeys(e["msg"] for e in same))
    more = len({json_path(tuple(e["loc"])) for e in errors}) - 1
    if more:
        problem += f" (and {more} more error{'s' if more > 1 else ''})"
    return path, problem


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(str(path), "", f"cannot read file: {exc.strerror}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            str(path), f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}"
        ) from exc


def parse_scenario(raw: Any, source: str) -> Scenario:
    """Validate one raw scenario document; errors name the source, the JSON path and the fix."""
    if not isinstance(raw, dict):
        raise ScenarioError(source, "$", "a scenario document must be a JSON object")
    version = raw.get("schema_version")
    if version != SUPPORTED_SCHEMA_VERSION:
        raise UnsupportedSchemaVersion(
            source,
            "$.schema_version",
            f"unsupported schema_version {version!r}",
            f'set "schema_version": "{SUPPORTED_SCHEMA_VERSION}"',
        )
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        path, problem = describe_errors(exc)
        raise ScenarioError(source, path, problem) from exc


def load_pack_dir(directory: Path) -> ScenarioPack:
    """Load `pack.json` + `scenarios/*.json` from a directory (SPEC a.9)."""
    directory = Path(directory)
    manifest_path = directory / "pack.json"
    if not manifest_path.is_file():
        raise ScenarioError(
            str(directory), "", "no pack.json", "add a pack.json with pack_id and pack_version"
        )
    raw_manifest = read_json(manifest_path)
    try:
        manifest = PackManifest.model_validate(raw_manifest)
    except ValidationError as exc:
        path, problem = describe_errors(exc)
        raise ScenarioError(str(manifest_path), path, problem) from exc
    scenario_dir = directory / "scenarios"
    if not scenario_dir.is_dir():
        raise ScenarioError(
            str(directory),
            "",
            "no scenarios/ folder",
            "put one JSON file per scenario in scenarios/",
        )
    files = sorted(scenario_dir.glob("*.json"))
    if not files:
        raise ScenarioError(str(scenario_dir), "", "no scenario files (*.json)")
    raw_docs: list[dict[str, Any]] = []
    scenarios: dict[str, Scenario] = {}
    origin: dict[str, Path] = {}
    for file in files:
        raw = read_json(file)
        scenario = parse_scenario(raw, str(file))
        if scenario.id in scenarios:
            raise ScenarioError(
                str(file),
                "$.id",
                f"duplicate scenario id {scenario.id!r} (also in {origin[scenario.id]})",
            )
        scenarios[scenario.id] = scenario
        origin[scenario.id] = file
        raw_docs.append(raw)
    if manifest.scenario_ids is not None and set(manifest.scenario_ids) != set(scenarios):
        missing = sorted(set(manifest.scenario_ids) - set(scenarios))
        extra = sorted(set(scenarios) - set(manifest.scenario_ids))
        raise ScenarioError(
            str(manifest_path),
            "$.scenario_ids",
            f"does not match the scenario files: listed but absent {missing}, present but unlisted {extra}",
            "make scenario_ids equal the set of ids in scenarios/ (or drop the field)",
        )
    ordered = tuple(scenarios[i] for i in sorted(scenarios))
    return ScenarioPack(
        pack_id=manifest.pack_id,
        pack_version=manifest.pack_version,
        description=manifest.description,
        digest=pack_digest(raw_docs),
        source=directory,
        scenarios=ordered,
    )
