"""Shared fixtures of the certificate tests: a small certificate (no external witness supplied; those
run in tests/audits/cli/test_certify.py) and its JSON document."""

import json

import pytest

from audits.certify import certify
from gtm_core import GTMConfig


@pytest.fixture(scope="module")
def small_cert():
    return certify(GTMConfig.load("examples/default.toml"), horizon=30, quick=True, seconds=3, seed=11, progress=False,
                   witnesses={})


@pytest.fixture(scope="module")
def document(small_cert):
    return json.loads(small_cert.to_json())
