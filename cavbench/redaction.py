"""Scrub secrets from every artifact cavbench writes (tables, run directories, manifests).

Adapters are untrusted and may echo anything into a final message, report metadata, an
exception or tool arguments (one dumped `os.environ`). Looking at key names is not enough,
so values are scrubbed too: any occurrence of the value of an environment variable whose
name looks secret (`CAVBENCH_SECRET_ENV_NAMES`, default below) and any match of the
configured patterns (`CAVBENCH_REDACT_PATTERNS`, one regular expression per line) becomes
`[REDACTED]`. Writers apply `redact_text` to the text they are about to write, so one
module covers every artifact. With nothing to scrub it costs one attribute test.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

REDACTED = "[REDACTED]"

DEFAULT_SECRET_ENV_NAMES = r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIAL|AUTH|PRIVATE"
"""Environment variable names (case-insensitive search) whose values are secrets."""

MIN_SECRET_LENGTH = 6
"""Shorter values (`PASS=1`, `AUTH_MODE=on`) would scrub ordinary text; they are skipped."""


_SECRET_MARKERS = ("token", "secret", "password", "credential", "authorization", "api_key")
_SECRET = re.compile("|".join(_SECRET_MARKERS), re.IGNORECASE)


@lru_cache(maxsize=4096)  # report keys repeat across episodes; the search is per key
def _secret(key: str) -> bool:
    return _SECRET.search(key) is not None


_INT64 = (-(2**63), 2**63 - 1)


def safe_text(value: str) -> str:
    """`value` as writable Unicode: a lone surrogate (which UTF-8 cannot encode, so neither
    Parquet nor JSON output can) becomes its `\\udXXX` escape."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def redact(value: object, depth: int = 0) -> Any:
    """A JSON-safe copy of untrusted report data with values under secret-looking keys
    replaced (CAV-Bench copied reports verbatim, secrets included). Non-string keys become
    strings; sets, tuples and other objects become lists or their `repr`; what JSON or
    Parquet cannot hold (integers beyond 64 bits, NaN, lone surrogates, nesting past 64
    levels) becomes text."""
    kind = type(value)
    if kind is str:
        return safe_text(value)  # type: ignore[arg-type]
    if kind is bool or value is None:
        return value
    if kind is int:
        lo, hi = _INT64
        return value if lo <= value <= hi else str(value)  # type: ignore[operator]
    if kind is float:
        return value if math.isfinite(value) else repr(value)  # type: ignore[arg-type]
    if depth > 64:
        return safe_text(repr(value)[:200])
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = safe_text(key if isinstance(key, str) else repr(key))
            out[name] = REDACTED if _secret(name) else redact(item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        if all(type(v) is str and v.isascii() for v in value):  # the common case: notes
            return list(value)
        return [redact(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((redact(v, depth + 1) for v in value), key=repr)
    try:
        return safe_text(repr(value)[:200])
    except Exception:
        return f"<{kind.__name__}>"


@dataclass(frozen=True, slots=True)
class Redactor:
    """Secret values and patterns, compiled into one regular expression."""

    pattern: re.Pattern[str] | None

    @property
    def active(self) -> bool:
        return self.pattern is not None

    def text(self, value: str) -> str:
        """`value` with every secret replaced by `[REDACTED]`."""
        pattern = self.pattern
        return value if pattern is None else pattern.sub(REDACTED, value)


def build_redactor(
    environ: Mapping[str, str],
    *,
    names: str = DEFAULT_SECRET_ENV_NAMES,
    patterns: tuple[str, ...] = (),
    min_length: int = MIN_SECRET_LENGTH,
) -> Redactor:
    """A redactor for the secret-named variables of `environ` plus `patterns`."""
    secret_name = re.compile(names, re.IGNORECASE)
    values = {
        v for k, v in environ.items() if secret_name.search(k) and len(v.strip()) >= min_length
    }
    # Also their JSON-escaped form, as they appear inside serialised payloads.
    values |= {json.dumps(v)[1:-1] for v in values}
    alternatives = [re.escape(v) for v in sorted(values, key=lambda v: (-len(v), v))]
    alternatives += list(patterns)
    return Redactor(
        re.compile("|".join(f"(?:{a})" for a in alternatives)) if alternatives else None
    )


@lru_cache(maxsize=1)
def current_redactor() -> Redactor:
    """The process's redactor, from its environment (built once; `reset` rebuilds it)."""
    patterns = tuple(
        p for p in os.environ.get("CAVBENCH_REDACT_PATTERNS", "").splitlines() if p.strip()
    )
    names = os.environ.get("CAVBENCH_SECRET_ENV_NAMES") or DEFAULT_SECRET_ENV_NAMES
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CAVBENCH_")}
    return build_redactor(environ, names=names, patterns=patterns)


def reset() -> None:
    """Forget the cached redactor (after changing the environment, e.g. in tests)."""
    current_redactor.cache_clear()


def redact_text(value: str) -> str:
    """`value` with every secret of the current environment replaced."""
    return current_redactor().text(value)
