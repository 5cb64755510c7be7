"""A content-addressed answer cache in SQLite (the standard library's `sqlite3`).

The key is `request_digest`: model, base URL, messages, tools, generation settings, the
episode's seed and repetition — nothing else (not timeouts, retries or concurrency). With
`offline=True` a miss raises `CacheMissError` instead of calling the model. Every miss logs
the key's inputs, so a miss that should have been a hit can be diffed against the stored one.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import orjson

from cavbench.errors import CacheMissError
from cavbench.models._protocol import ChatModel
from cavbench.models._records import AssistantTurn, ChatRequest, key_inputs, request_digest

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
  digest TEXT PRIMARY KEY,
  inputs TEXT NOT NULL,
  response TEXT NOT NULL
)
"""


class CachedModel:
    """Wraps a `ChatModel`: answers from the cache when it can, stores what it fetches.
    A hit is the stored turn with `cache_hit=True`; errors are never cached."""

    def __init__(self, inner: ChatModel, path: str | Path, *, offline: bool = False) -> None:
        self._inner = inner
        self._path = Path(path)
        self._offline = offline
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # One connection shared by the episode threads, serialised by the lock: SQLite
        # writes are short, the model calls they bracket are not held under it.
        self._db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def base_url(self) -> str | None:
        return self._inner.base_url

    @property
    def inner(self) -> ChatModel:
        return self._inner

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> AssistantTurn:
        digest = request_digest(self.name, self.base_url, request)
        with self._lock:
            row = self._db.execute(
                "SELECT response FROM answers WHERE digest = ?", (digest,)
            ).fetchone()
        if row is not None:
            return AssistantTurn.from_json(row[0]).model_copy(update={"cache_hit": True})
        inputs = orjson.dumps(key_inputs(self.name, self.base_url, request)).decode()
        if self._offline:
            log.error("cache miss %s (offline); key inputs: %s", digest, inputs)
            raise CacheMissError(
                f"{self._path}: no cached answer for {digest} (scenario {request.scenario_id}, "
                f"seed {request.seed}, repetition {request.repetition}, turn {request.turn}) and "
                "model.cache.offline=true (fix: run once online to fill the cache, or compare the "
                "logged key inputs with the stored ones: "
                f"sqlite3 {self._path} 'select inputs from answers')"
            )
        log.info("cache miss %s; key inputs: %s", digest, inputs)
        turn = self._inner.complete(request, timeout=timeout)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers (digest, inputs, response) VALUES (?, ?, ?)",
                (digest, inputs, turn.to_json()),
            )
        return turn

    def close(self) -> None:
        with self._lock:
            self._db.close()
