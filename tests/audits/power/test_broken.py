"""Power suite through the subprocess protocol.

Default run: the correct deployment is not flagged and one broken deployment is, with a fixed
sample budget of 1e6 runs (alpha = 0.05, seed 7; a sample budget makes the audit reproducible,
a time budget would make these tests depend on the machine's load). The full suite (every variant, 60 s each, with the numerical
check of which variants are truly not eps-DP) is `python -m benchmarks.bench_audit_power`;
its slow-marked test is below.
"""

import sys

import pytest

from audits.gtm_audit import audit
from audits.power.broken import VARIANTS, Implementation, variant
from audits.targets import SubprocessTarget
from gtm_core.errors import InvalidParameter

SERVE = f"{sys.executable} -m audits.serve examples/default.toml"


def test_variant_lookup():
    assert variant("correct").is_algorithm1
    assert not variant("no-step-noise").is_algorithm1
    with pytest.raises(InvalidParameter, match="broken variant"):
        variant("nope")
    with pytest.raises(InvalidParameter, match="step_noise"):
        Implementation(step_noise="sometimes")


def _audit(name, seconds=None, max_samples=None):
    with SubprocessTarget(f"{SERVE} --broken {name}", timeout=60) as t:
        return audit(t, epsilon=1.0, eps_t=0.1, seconds=seconds, max_samples=max_samples, seed=7, progress=False)


def test_correct_deployment_not_flagged():
    r = _audit("correct", max_samples=1_000_000)
    assert r.verdict == "no-violation-found"
    assert r.epsilon_lower_bound <= 1.0


def test_missing_step_noise_flagged():
    r = _audit("no-step-noise", max_samples=1_000_000)
    assert r.verdict == "violation" and r.epsilon_lower_bound > 1.5


NON_DP = ["shared-noise-per-step", "no-step-noise", "step-noise-quarter", "shared-noise-third",
          "step-noise-reused", "eps-t-halved", "shared-noise-sign"]
STILL_DP = ["correct", "off-by-one-threshold", "no-offset"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NON_DP)
def test_every_non_dp_variant_flagged_within_60s(name):
    assert _audit(name, 55).verdict == "violation"


@pytest.mark.slow
@pytest.mark.parametrize("name", STILL_DP)
def test_dp_variants_not_flagged(name):
    assert _audit(name, 55).verdict == "no-violation-found"


def test_suite_lists_are_complete():
    assert set(NON_DP) | set(STILL_DP) | {"fixed-count"} == set(VARIANTS)
