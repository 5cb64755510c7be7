"""Loading a target by name: a shipped one, or ``package.module:attribute`` for your own.

A failure while importing or building a user's target is reported as an :class:`AuditError`
that says *what* failed: the module itself not found (a path problem), or the module found
and something inside it failing (one of its own imports, a syntax error, a crash in the
factory), with the last frames of the traceback, so the user does not chase a PYTHONPATH
problem that is not there.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path

from cavbench.audit._protocol import AuditError
from cavbench.audit._spec import TargetSpec
from cavbench.audit.targets import SHIPPED

_IMPORTLIB = str(Path(importlib.__file__).parent)
_FRAMES = 3
"""Traceback frames quoted in an error (the innermost ones, importlib's own left out)."""


def _last_frames(exc: BaseException) -> str:
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(("<frozen importlib", _IMPORTLIB)) and f.filename != __file__
    ][-_FRAMES:]
    lines = [f"    {f.filename}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames]
    if isinstance(exc, SyntaxError) and exc.filename:
        lines.append(f"    {exc.filename}:{exc.lineno}: {(exc.text or '').strip()}")
    return "\n".join(lines)


def _is_the_module_itself(exc: ImportError, module_name: str) -> bool:
    """True when ``module_name`` (or one of its parent packages) was not found at all."""
    missing = exc.name
    return (
        isinstance(exc, ModuleNotFoundError)
        and missing is not None
        and (module_name == missing or module_name.startswith(missing + "."))
    )


def _import(name: str, module_name: str) -> object:
    cwd = str(Path.cwd())
    if cwd not in sys.path:  # `module:attribute` resolves from the current folder too
        sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        if _is_the_module_itself(exc, module_name):
            raise AuditError(
                f"--target {name!r}: cannot find module {module_name!r} ({exc}) "
                "(fix: run from the folder that holds it, or put it on PYTHONPATH)"
            ) from exc
        raise AuditError(
            f"--target {name!r}: module {module_name!r} was found, but an import inside it "
            f"failed: {type(exc).__name__}: {exc}\n{_last_frames(exc)}\n"
            f"(fix: install or correct {exc.name or 'the failing import'!r}; "
            "PYTHONPATH is not the problem)"
        ) from exc
    except Exception as exc:  # a syntax error or a crash at import time, inside the module
        raise AuditError(
            f"--target {name!r}: importing {module_name!r} raised "
            f"{type(exc).__name__}: {exc}\n{_last_frames(exc)}\n(fix: the error is in that module)"
        ) from exc


def load_target(name: str) -> TargetSpec:
    """A shipped target by name, or ``package.module:attribute`` for your own.

    The attribute may be a :class:`TargetSpec`, a function returning one, or a target
    factory (a zero-argument callable returning a new target each call).
    """
    if name in SHIPPED:
        return SHIPPED[name]()
    if ":" not in name:
        raise AuditError(
            f"--target {name!r}: no such shipped target "
            f"(fix: one of {', '.join(SHIPPED)}, or module:attribute for your own)"
        )
    module_name, _, attr = name.partition(":")
    module = _import(name, module_name)
    obj = getattr(module, attr, None)
    if obj is None:
        raise AuditError(f"--target {name!r}: {module_name} has no attribute {attr!r}")
    if isinstance(obj, TargetSpec):
        return obj
    if not callable(obj):
        raise AuditError(f"--target {name!r}: {attr} is neither a TargetSpec nor callable")
    try:
        made = obj()
    except Exception as exc:
        raise AuditError(
            f"--target {name!r}: calling {attr}() raised {type(exc).__name__}: {exc}\n"
            f"{_last_frames(exc)}\n(fix: {attr} must build a target or a TargetSpec "
            "without arguments)"
        ) from exc
    if isinstance(made, TargetSpec):
        return made
    target_name = getattr(made, "name", name)
    return TargetSpec(
        name=str(target_name),
        description=f"user target {name} (checks only; no injectable oracle)",
        correct=obj,
    )
