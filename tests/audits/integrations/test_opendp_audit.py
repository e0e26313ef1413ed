"""Auditing OpenDP measurements against their own privacy maps: the power companions (a map smaller
than the true loss is flagged; correct mechanisms are not, and their bound approaches the claim).
Claims, neighbours and output codes are tested in test_opendp_claims/_neighbours/_coding.py.

Statistics: OpenDP's noise cannot be seeded, so the verdicts are random even with a fixed audit seed.
Tests that expect *no* violation on a mechanism whose loss equals its claim use confidence 0.999
(alpha = 0.001: a false alarm in at most 1 run in 1000); tests that expect a violation use 0.95 on a
mechanism whose true loss is twice its claim. Audit seeds are stated in each test (SEED_CORRECT below).
"""


import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp_audit import audit_measurement, engine_seed
from gtm_core.errors import InvalidParameter

dp.enable_features("contrib", "honest-but-curious")

# The engine's seed is the audit seed mixed with fresh OS entropy (engine_seed), so the estimation phase's
# Poisson run counts are random whatever seed a test states; 4 is kept from before that change.
SEED_CORRECT = 4

BOOLS = (dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance())


def _laplace_count(scale=1.0):
    return BOOLS >> dp.t.then_count() >> dp.m.then_laplace(scale)


def _halved_claim():
    """Broken on purpose: a Laplace count of scale 1 (true loss 1) declaring a map of eps / 2."""
    true = _laplace_count(1.0)
    return dp.m.make_user_measurement(*BOOLS, dp.max_divergence(), function=lambda x: true(x),
                                      privacy_map=lambda d: 0.5 * d, TO=int)


def test_engine_seed_takes_fresh_entropy_unless_replayed():
    """A fixed audit seed must not fix the Poisson run counts while OpenDP's noise stays random
    (benchmarks/results/opendp_catalogue.md: a fixed imbalance of 2.3 sd gives 19% false alarms at alpha 0.05)."""
    seeds = {engine_seed(4)[0] for _ in range(8)}
    assert len(seeds) == 8
    mixed, entropy = engine_seed(4, 12345)
    assert (mixed, entropy) == engine_seed(4, 12345) and mixed != engine_seed(5, 12345)[0]
    with pytest.raises(InvalidParameter, match="poisson_entropy"):
        engine_seed(4, -1)
    rr = dp.m.make_randomized_response_bool(0.75)
    d = audit_measurement(rr, seconds=2, seed=0, confidence=0.999, poisson_entropy=7).to_dict()
    assert d["poisson_entropy"] == 7 and d["seed"] == 0


# --- power companions ------------------------------------------------------------------------------


def test_map_smaller_than_the_true_loss_is_flagged():
    """Laplace count of scale 1 declaring eps = 0.5 (true loss 1): flagged at alpha = 0.05, seed 0."""
    result = audit_measurement(_halved_claim(), seconds=12, seed=0)
    assert result.verdict == "violation" and result.epsilon_lower_bound > 0.5
    d = result.to_dict()
    assert d["claim"]["kind"] == "pure" and d["witness"]["input"] != d["witness"]["input_prime"]
    assert {"verdict", "epsilon_claimed", "epsilon_lower_bound", "confidence", "witness", "samples", "seconds"} <= set(d)
    assert "<html" in result.report_html()


def test_correct_randomized_response_is_not_flagged():
    """eps = ln 3 exactly (tight): alpha = 0.001, seed 4."""
    rr = dp.m.make_randomized_response_bool(0.75)
    result = audit_measurement(rr, seconds=6, seed=SEED_CORRECT, confidence=0.999)
    assert result.verdict == "no-violation-found"
    assert 0 < result.epsilon_lower_bound <= rr.map(1)


def test_zcdp_claim_is_audited_on_its_implied_curve():
    """A Gaussian count (rho-zCDP) against the (eps, delta(eps)) points rho implies; alpha = 0.001, seed 4."""
    gauss = BOOLS >> dp.t.then_count() >> dp.m.then_gaussian(1.0)
    result = audit_measurement(gauss, seconds=8, seed=SEED_CORRECT, confidence=0.999)
    assert result.verdict == "no-violation-found" and len(result.points) == len(result.claim.points)
    d = result.to_dict()
    assert d["delta_lower_bound"] <= d["delta_claimed"] and d["claim"]["rho"] == gauss.map(1)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["randomized-response", "randomized-response-categorical", "laplace-count"])
def test_correct_mechanisms_bound_approaches_the_claim_within_60s(name):
    """alpha = 0.05, seed 4, 60 s: the bound reaches 0.9 x the claim on the mechanisms that attain it (the
    confirmation phase spends half the time on the witness: audits/integrations/opendp_budget.py; over
    seeds 1..5 in benchmarks/results/opendp_catalogue.md, "Mechanisms that attain their claim, over seeds":
    the run docs/opendp.md quotes, which supersedes benchmarks/results/opendp_tight_seeds.md), and the wall
    time keeps to the budget."""
    m = {"randomized-response": lambda: dp.m.make_randomized_response_bool(0.75),
         "randomized-response-categorical": lambda: dp.m.make_randomized_response(["a", "b", "c"], 0.6),
         "laplace-count": lambda: _laplace_count(1.0)}[name]()
    result = audit_measurement(m, seconds=60, seed=SEED_CORRECT)
    claim = result.claim.points[0].epsilon
    assert result.seconds <= 60 * 1.02 + 1
    share = 0.9
    assert result.epsilon_lower_bound >= share * claim, (result.epsilon_lower_bound, claim)
