"""Errors of the gateway and the lazy import of its optional dependencies."""

from __future__ import annotations

import importlib
from types import ModuleType

from cavbench.errors import CavBenchError


class GatewayError(CavBenchError):
    """The gateway could not be served or a candidate could not be run. Raised by
    `cavbench.gateway`."""


class NonLoopbackBindError(GatewayError):
    """A gateway was asked to bind to a host that is not loopback. Raised before binding."""

    def __init__(self, host: str, why: str) -> None:
        self.host = host
        self.why = why
        super().__init__(
            f"gateway host {host!r}: refused, {why}; the gateway serves an unauthenticated "
            "capability document and episode state, so it binds to loopback only "
            "(fix: use 127.0.0.1, ::1 or localhost)"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.host, self.why))


class MissingExtraError(GatewayError):
    """An optional dependency of the gateway is not installed."""

    def __init__(self, module: str, extra: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(
            f"{module} is not installed; it is needed for cavbench's {extra} gateway "
            f"(fix: pip install 'cavbench[{extra}]')"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.module, self.extra))


def require_extra(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or say which extra to install."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.split(".", maxsplit=1)[0] == exc.name.split(".")[0]:
            raise MissingExtraError(module, extra) from exc
        raise
