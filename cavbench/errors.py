"""The one error hierarchy of cavbench.

Every error a user can cause derives from :class:`CavBenchError`; its message names the
file (or source), the field (a JSON path where there is one) and what to do about it.
"""

from __future__ import annotations


class CavBenchError(Exception):
    """Base class of every error cavbench raises on purpose. The CLI prints it and exits 1."""


class ScenarioError(CavBenchError):
    """A scenario document or pack is malformed. Raised by the scenario loader."""

    def __init__(self, source: str, path: str, problem: str, fix: str = "") -> None:
        self.source = source
        self.path = path
        self.problem = problem
        self.fix = fix
        where = f"{source}: at {path}" if path else source
        message = f"{where}: {problem}"
        if fix:
            message += f" (fix: {fix})"
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        # Errors cross process boundaries (joblib, Ray, SLURM); rebuild from our own arguments.
        return (type(self), (self.source, self.path, self.problem, self.fix))


class UnsupportedSchemaVersion(ScenarioError):
    """A scenario document declares a `schema_version` other than "1.0"."""


class ResourceNotFound(CavBenchError):
    """The runtime was asked for a resource the world does not hold. Raised by the state store."""

    def __init__(self, namespace: str, resource_id: str) -> None:
        self.namespace = namespace
        self.resource_id = resource_id
        super().__init__(
            f"{namespace}:{resource_id}: no such resource in the scenario's world "
            "(fix: add it to world.initial_state or correct the step's namespace/resource_id)"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.namespace, self.resource_id))


class VersionConflict(CavBenchError):
    """An expected version did not match the current one. Raised by the state store."""

    def __init__(self, ref: str, expected: int | None, actual: int | None) -> None:
        self.ref = ref
        self.expected = expected
        self.actual = actual
        super().__init__(f"{ref}: expected version {expected}, found {actual}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.ref, self.expected, self.actual))


class PredicateError(CavBenchError):
    """A predicate could not be evaluated (bad op, non-list collection, uncomparable types)."""


class SelectionError(CavBenchError):
    """A scenario, family, profile or pack selection names nothing that exists."""


class ConfigError(CavBenchError):
    """A sweep or CLI configuration value is invalid."""


class ModelError(CavBenchError):
    """A chat model could not give an answer. Raised by the back ends in `cavbench.models`."""


class ModelInfraError(ModelError):
    """Infrastructure, not the agent, failed: a rate limit, timeout, connection or 5xx error or
    a malformed response that survived the retries. The episode is marked `infra_error`,
    left out of rates and re-run on resume."""

    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        self.detail = detail
        super().__init__(f"model call failed ({kind}) after retries: {detail}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.kind, self.detail))


class ModelRequestError(ModelError):
    """The endpoint refused the request itself (a 4xx other than 429: bad request, unknown
    model, missing key). Raised by the `openai_compatible` back end."""


class CacheMissError(ModelError):
    """An answer was needed that no cache or recording holds, and fetching is not allowed
    (the cache's offline switch, or the `replay` back end). Fails the job, not the episode."""
