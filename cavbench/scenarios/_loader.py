"""Load and validate scenario packs; compute the CAV-Bench pack digest (SPEC a.9)."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from cavbench.errors import ScenarioError, UnsupportedSchemaVersion
from cavbench.scenarios._model import Scenario, runnable_problem
from cavbench.scenarios._vocab import Family

SUPPORTED_SCHEMA_VERSION = "1.0"


class PackManifest(BaseModel):
    """`pack.json`. Unknown keys are tolerated: CAV-Bench packs may carry more metadata."""

    model_config = ConfigDict(frozen=True, extra="allow")

    pack_id: StrictStr = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    """Used as a folder name: letters, digits, `.`, `_`, `-`; at most 128 characters."""
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


MAX_FILE_BYTES = 64 * 1024 * 1024
"""Larger scenario or pack files are refused before they are read."""

_INT64 = (-(2**63), 2**63 - 1)
MAX_DEPTH = 64
"""Deeper documents are refused: scenario documents are shallow, and every later walk of
the data (validation, digests, JSON output) is then safe from recursion limits."""


class _Bad:
    """A value the reader refuses, kept in place so the error can name its JSON path."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


class _Duplicated(dict[str, Any]):
    """An object in which a key occurred more than once."""

    __slots__ = ("duplicate",)
    duplicate: str


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    dup = _Duplicated(out)
    dup.duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return dup


def _parse_int(text: str) -> int | _Bad:
    if len(text) > 20:  # before int(): 4,300+ digits would raise, and big ones cost time
        return _Bad(f"integer with {len(text.lstrip('-'))} digits is outside 64 bits")
    value = int(text)
    lo, hi = _INT64
    return value if lo <= value <= hi else _Bad(f"integer {value} is outside 64 bits")


def _parse_float(text: str) -> float | _Bad:
    value = float(text)
    return value if math.isfinite(value) else _Bad(f"number {text} overflows a float")


def _parse_constant(text: str) -> _Bad:
    return _Bad(f"{text} is not valid JSON (JSON has no NaN or Infinity)")


def _first_problem(value: Any, path: str) -> tuple[str, str] | None:
    """(JSON path, problem) of the first value the reader refused, depth first."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        node, where, depth = stack.pop()
        kind = type(node)
        if depth > MAX_DEPTH:
            return where, f"nested more than {MAX_DEPTH} levels deep"
        if kind is str:
            if not node.isascii():
                try:
                    node.encode("utf-8")
                except UnicodeEncodeError:
                    return where, "string holds a lone UTF-16 surrogate (not valid Unicode)"
        elif kind is _Bad:
            return where, node.problem
        elif isinstance(node, dict):
            if isinstance(node, _Duplicated):
                return where, f"duplicate key {node.duplicate!r} (JSON keys must be unique)"
            for key, item in reversed(node.items()):
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return where, "a key holds a lone UTF-16 surrogate (not valid Unicode)"
                stack.append((item, f"{where}.{key}", depth + 1))
        elif kind is list:
            stack.extend(
                (item, f"{where}[{i}]", depth + 1) for i, item in reversed(list(enumerate(node)))
            )
    return None


def read_json(path: Path) -> Any:
    """Parse a JSON file, refusing with one `ScenarioError` (file and JSON path) whatever
    the stdlib parser would accept but the harness cannot use: special files (a FIFO would
    block), text that is not UTF-8, NaN/Infinity, integers outside 64 bits, duplicate
    keys, lone surrogates, and nesting deeper than the parser allows."""
    where = str(path)
    try:
        if not path.is_file():  # never open a FIFO or device: open() would block
            raise ScenarioError(where, "", "not a regular file", "point at a JSON file")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ScenarioError(where, "", f"file is {size} bytes (limit {MAX_FILE_BYTES})")
        data = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(where, "", f"cannot read file: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            where, f"byte {exc.start}", "not valid UTF-8 text", "save the file as UTF-8"
        ) from exc
    try:
        raw = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            where, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise ScenarioError(where, "$", "nested too deeply to parse") from exc
    except ValueError as exc:  # e.g. a float literal Python cannot convert
        raise ScenarioError(where, "", f"invalid JSON: {exc}") from exc
    problem = _first_problem(raw, "$")
    if problem is not None:
        raise ScenarioError(where, *problem)
    return raw


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
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        path, problem = describe_errors(exc)
        raise ScenarioError(source, path, problem) from exc
    except RecursionError as exc:
        raise ScenarioError(source, "$", "nested too deeply to validate") from exc
    runnable = runnable_problem(scenario)
    if runnable is not None:
        raise ScenarioError(source, *runnable)
    return scenario


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
