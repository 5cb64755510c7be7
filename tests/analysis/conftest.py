"""Fixtures for the analysis tests: synthetic tables with the table contract's schema."""

from __future__ import annotations

import pytest

from analysis import SyntheticTables, ablation_standin


@pytest.fixture(scope="session")
def ablation() -> SyntheticTables:
    """A stand-in with exactly the core-v1 ablation's headline counts (one episode per task)."""
    return ablation_standin()


@pytest.fixture(scope="session")
def ablation_repeated() -> SyntheticTables:
    """The same outcomes, two seeds x three repetitions per scenario (240 episodes/profile)."""
    return ablation_standin(repetitions=3, seeds=(0, 1))
