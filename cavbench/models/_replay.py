"""`replay`: serve the calls a sweep recorded in its `model_calls` tables; a miss is an error.

The key is the request digest, so a replayed episode gets exactly the answers its recording
got as long as the conversation is the same; the first divergence fails loudly with
`CacheMissError` naming the missing digest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from cavbench.errors import CacheMissError, ConfigError
from cavbench.models._records import (
    AssistantTurn,
    ChatRequest,
    GenerationSettings,
    request_digest,
)

MODEL_CALLS_FILE = "model_calls.parquet"


class ReplayModel:
    """A `ChatModel` answering from recorded `model_calls` rows (no network)."""

    def __init__(
        self, sweep_dir: str | Path, name: str | None = None, base_url: str | None = None
    ) -> None:
        root = Path(sweep_dir)
        files = sorted(root.rglob(MODEL_CALLS_FILE)) if root.is_dir() else []
        if not files:
            raise ConfigError(
                f"model.sweep_dir={root}: no {MODEL_CALLS_FILE} under it "
                "(fix: point it at the folder of a sweep that ran adapter=llm)"
            )
        self._answers: dict[str, str] = {}
        endpoints: set[tuple[str, str | None]] = set()
        for path in files:
            table = pq.read_table(
                path,
                columns=["model_name", "base_url", "request_digest", "response", "error_class"],
            )
            for row in table.to_pylist():
                if row["error_class"] is None and row["response"] is not None:
                    self._answers[str(row["request_digest"])] = str(row["response"])
                    endpoints.add((str(row["model_name"]), row["base_url"]))
        if name is None:
            if len(endpoints) != 1:
                raise ConfigError(
                    f"model.sweep_dir={root} recorded {len(endpoints)} models "
                    f"({sorted(e[0] for e in endpoints)}) (fix: set model.name and model.base_url)"
                )
            name, base_url = next(iter(endpoints))
        self._name = name
        self._base_url = base_url
        self._root = root

    @property
    def name(self) -> str:
        return self._name

    @property
    def base_url(self) -> str | None:
        return self._base_url

    def __len__(self) -> int:
        return len(self._answers)

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> AssistantTurn:
        digest = request_digest(self._name, self._base_url, request)
        answer = self._answers.get(digest)
        if answer is None:
            raise CacheMissError(
                f"replay of {self._root}: no recorded call {digest} (scenario "
                f"{request.scenario_id}, seed {request.seed}, repetition {request.repetition}, "
                f"turn {request.turn}); the conversation differs from the recording "
                "(fix: replay with the same adapter config, pack and seeds as the recording)"
            )
        return AssistantTurn.from_json(answer)


def recorded_settings(sweep_dir: str | Path) -> GenerationSettings:
    """The generation settings the recorded sweep ran with (from a cell manifest's config),
    so a replay asks exactly what the recording asked."""
    for path in sorted(Path(sweep_dir).rglob("manifest.json")):
        try:
            model = json.loads(path.read_text(encoding="utf-8")).get("config", {}).get("model")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(model, dict) and model.get("kind") not in (None, "replay"):
            fields = GenerationSettings.model_fields
            return GenerationSettings(**{k: v for k, v in model.items() if k in fields})
    raise ConfigError(
        f"model.sweep_dir={sweep_dir}: no cell manifest with a recorded model config "
        "(fix: point it at the folder of a sweep that ran adapter=llm)"
    )
