"""`cavbench-sweep [OVERRIDES] [-m]` (or `python -m cavbench.sweep`): run a study as a Hydra sweep.

One Hydra job = one cell (profile × adapter × scenario subset × scoring rule × seed block ×
any swept factor). Each job writes its tables and `manifest.json` into the cell's folder,
`<output.root>/<output.name>/profile=…/adapter=…/…` (or under `hydra.sweep.dir` when set).
Running the same command again skips complete cells and redoes the rest. Config tree:
`conf/` in a checkout, `cavbench/conf` in an installed wheel; add your own with
`--config-dir DIR` or `hydra.searchpath=[file://DIR]`; see `docs/configuration.md`.

    cavbench-sweep -m experiment=ablation
    cavbench-sweep -m profile=glob(*) seeds.count=5 hydra/launcher=joblib
    eval "$(cavbench-sweep -sc install=bash)"     # tab completion of overrides
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import typing
from collections.abc import Sequence

import hydra

from cavbench.study import SweepConfig, config_dir, task

LAUNCHER_EXTRAS = {
    "slurm": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "ray": ("ray", "ray"),
}
"""`hydra/launcher=X` -> (the module it needs, the cavbench extra that installs it)."""


def _open_keys(node: type) -> tuple[frozenset[str], frozenset[str]]:
    """A schema dataclass's field names, and those of them that are open dicts."""
    hints = typing.get_type_hints(node)
    names = {f.name for f in dataclasses.fields(node)}
    open_ = {n for n in names if typing.get_origin(hints[n]) is dict}
    return frozenset(names), frozenset(open_)


def unknown_added_key(key: str, schema: type = SweepConfig) -> str | None:
    """The part of a `+key=value` override that the schema does not declare, or None.

    Hydra's `+` adds a key even where the structured schema is closed, so a typo such as
    `+seeds.cout=3` would otherwise be accepted and ignored. Keys under an open dict
    (`factors`, `adapter.factory`) and under `hydra` are allowed.

    >>> unknown_added_key("seeds.cout")
    'seeds.cout'
    >>> unknown_added_key("factors.temperature") is None
    True
    """
    parts = key.split(".")
    if len(parts) < 2 or parts[0] == "hydra" or "/" in key:
        return None  # `+group=option` adds to the defaults list: Hydra checks it
    node: type = schema
    for depth, part in enumerate(parts):
        names, open_ = _open_keys(node)
        if part in open_:
            return None
        if part not in names:
            return ".".join(parts[: depth + 1])
        hint = typing.get_type_hints(node)[part]
        if not dataclasses.is_dataclass(hint):
            return None if depth == len(parts) - 1 else ".".join(parts[: depth + 2])
        node = typing.cast(type, hint)
    return None


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def check_arguments(argv: Sequence[str]) -> str | None:
    """What is wrong with the command line before Hydra composes anything, or None."""
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep:
            continue
        if key.startswith("+"):
            bad = unknown_added_key(key.lstrip("+"))
            if bad is not None:
                return (
                    f"Could not override '{key.lstrip('+')}': key '{bad}' is not in the sweep "
                    "config schema (a typo?). `+` adds keys only under factors.* or "
                    "adapter.factory.* (fix: check the spelling, see docs/configuration.md)"
                )
        if key.lstrip("+~") == "hydra/launcher":
            need = LAUNCHER_EXTRAS.get(value)
            if need is not None and not _importable(need[0]):
                return (
                    f"hydra/launcher={value} needs the [{need[1]}] extra, which is not installed "
                    f"(fix: pip install 'cavbench[{need[1]}]')"
                )
    return None


def main() -> None:
    """Parse Hydra's command line and run the job(s)."""
    problem = check_arguments(sys.argv[1:])
    if problem is not None:
        print(f"ERROR: {problem}", file=sys.stderr)
        sys.exit(1)
    hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(task)()


if __name__ == "__main__":
    main()
