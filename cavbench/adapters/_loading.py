"""`load_adapter("MODULE:FACTORY")`: a user's adapter named on the command line."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from cavbench.adapters._protocol import ExecutionAdapter
from cavbench.errors import ConfigError


def load_adapter(spec: str) -> ExecutionAdapter:
    """`--adapter MODULE:FACTORY`: import MODULE (the working directory is importable, as
    with `python -m`), call FACTORY() and check that it returns an ExecutionAdapter."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"--adapter {spec!r}: expected MODULE:FACTORY (fix: e.g. --adapter my_agents:make)"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        factory: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"--adapter {spec!r}: cannot import {module_name!r} ({exc}) (fix: install it, or "
            "run from the folder that holds it)"
        ) from exc
    for part in attr.split("."):
        factory = getattr(factory, part, None)
    if not callable(factory):
        raise ConfigError(f"--adapter {spec!r}: {module_name} has no callable {attr!r}")
    try:
        adapter = factory()
    except Exception as exc:
        raise ConfigError(f"--adapter {spec!r}: {attr}() raised {exc!r}") from exc
    if not isinstance(adapter, ExecutionAdapter):
        raise ConfigError(
            f"--adapter {spec!r}: {attr}() returned {type(adapter).__name__}, which lacks "
            "name/version/run (fix: return an ExecutionAdapter, see docs/adapter-authoring.md)"
        )
    return adapter
