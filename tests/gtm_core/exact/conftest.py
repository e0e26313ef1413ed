"""Fixtures of the exact engine's tests."""

from __future__ import annotations

import pytest

from gtm_core import GTMConfig, make_plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


@pytest.fixture(scope="module")
def flipped_plan():
    return make_plan(GTMConfig.load("examples/flipped.toml"))
