"""The docstring examples of every `analysis` module run (they are its usage documentation)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import analysis

MODULES = sorted(name for _, name, _ in pkgutil.iter_modules(analysis.__path__, prefix="analysis."))


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest failures in {name}"


def test_the_examples_exist() -> None:
    counted = sum(
        len(doctest.DocTestFinder().find(importlib.import_module(name))) for name in MODULES
    )
    assert counted > 30
