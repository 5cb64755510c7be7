"""Built-in packs: `scenarios/<id>/` in a source checkout, `cavbench/_packs/<id>/` in a wheel."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from cavbench.errors import SelectionError
from cavbench.scenarios._loader import ScenarioPack, load_pack_dir

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def builtin_pack_root() -> Path:
    """Where the built-in packs live for this installation."""
    for candidate in (_PACKAGE_DIR / "_packs", _PACKAGE_DIR.parent / "scenarios"):
        if candidate.is_dir():
            return candidate
    raise SelectionError("no built-in scenario packs found (reinstall cavbench)")


def builtin_pack_ids() -> tuple[str, ...]:
    root = builtin_pack_root()
    return tuple(sorted(p.name for p in root.iterdir() if (p / "pack.json").is_file()))


@cache
def _load_builtin(pack_id: str) -> ScenarioPack:
    return load_pack_dir(builtin_pack_root() / pack_id)


def load_pack(pack: str | Path) -> ScenarioPack:
    """Load a pack by built-in id (`core-v1`, `mock`) or from a directory."""
    text = str(pack)
    if isinstance(pack, str) and text in builtin_pack_ids():
        return _load_builtin(text)
    path = Path(pack)
    if path.is_dir():
        return load_pack_dir(path)
    raise SelectionError(
        f"pack {text!r}: neither a built-in pack ({', '.join(builtin_pack_ids())}) "
        "nor a directory holding pack.json and scenarios/"
    )
