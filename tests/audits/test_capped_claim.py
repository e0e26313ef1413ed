"""The claim an audit tests (audits.capped_claim) and tests of the tester on the capped GTM.

The deployment is the one where refusals were measured to break pure DP: eps = 1, eps_t = 0.5,
theta = 1, gamma = 2, beta = 0.05, p* = 0.5 (docs/deployment.md). Every audit here runs at
confidence 0.95 (alpha = 0.05) with the seed it states; the target is the vectorised deployed GTM
(audits.capped_target, its law checked against the exact engine in test_capped_target.py)."""

from __future__ import annotations

import pytest

from audits.capped_claim import (APPROXIMATE, HOCKEY_STICK, LOSS, PURE, PrivacyClaim, audit_claim, outcome_code,
                                 privacy_claim, stream_pairs)
from audits.capped_target import DeployedSimulatorTarget
from audits.pair_search import Candidate
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter

CONFIDENCE = 0.95  # alpha = 0.05 for every audit below
SEED = 1
# the pair of docs/deployment.md: halt at step 1 has probability 3.185e-7 vs 3.681e-4 under refusal
# (exact loss 7.05); 1.649e-7 is just beyond the neighbour ratio e^0.5, so the neighbour 1.6487e-7
ISSUE_PAIR = Candidate((1.6487e-7,), (1e-7,), "user")


def plan_for(policy: str):
    return make_plan(GTMConfig.from_dict({
        "gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 2.0, "beta": 0.05,
                "evaluation_budget": policy},
        "stream": {"eps_t": 0.5, "p_star": 0.5, "horizon": 10},
    }))


@pytest.fixture(scope="module")
def capped():
    return plan_for("refuse")


def _audit(plan, claim, confidence=CONFIDENCE, **kw):
    return audit_claim(DeployedSimulatorTarget(plan), claim, eps_t=0.5, seconds=None, seed=SEED,
                       confidence=confidence, **kw)


def test_the_claim_follows_the_policy(capped):
    c = privacy_claim(capped)
    assert (c.measure, c.method, c.epsilon) == (APPROXIMATE, HOCKEY_STICK, 1.0)
    assert c.delta == capped.privacy_delta() > 0  # the planner's one implementation, not re-derived
    assert c.statement() == f'claim: (1, {c.delta:.3g})-DP because evaluation_budget = "refuse"'
    forced = privacy_claim(capped, claim="pure")
    assert (forced.measure, forced.method, forced.delta) == (PURE, HOCKEY_STICK, 0.0)
    assert "forced" in forced.statement() and "(1, 0.0111)" in forced.statement()
    pure = privacy_claim(plan_for("none"))
    assert (pure.measure, pure.method, pure.delta) == (PURE, LOSS, 0.0)
    assert pure.statement() == 'claim: 1-DP (pure) because evaluation_budget = "none"'
    approx = privacy_claim(plan_for("none"), claim="approximate")  # forced: delta = 0, the hockey-stick test
    assert (approx.measure, approx.method, approx.delta) == (APPROXIMATE, HOCKEY_STICK, 0.0)


def test_bad_claims_are_refused(capped):
    with pytest.raises(InvalidParameter, match="claim must be one of"):
        privacy_claim(capped, claim="renyi")
    with pytest.raises(InvalidParameter, match="nothing to audit"):  # delta = 78.9 here
        privacy_claim(make_plan(GTMConfig.load("examples/unsafe_budget.toml")))
    with pytest.raises(InvalidParameter, match="method must be hockey-stick"):
        PrivacyClaim(APPROXIMATE, 1.0, 0.01, "x", LOSS)
    with pytest.raises(InvalidParameter, match="delta must be 0 for a pure claim"):
        PrivacyClaim(PURE, 1.0, 0.01, "x", LOSS)


def test_outcome_codes_and_pairs():
    assert [outcome_code(h) for h in (3, 0, -2)] == ["halt@3", "continue", "refused@2"]
    pairs = stream_pairs(0.5, 1, [ISSUE_PAIR])
    assert pairs[0] == ([1.6487e-7], [1e-7])
    assert len({frozenset((tuple(a), tuple(b))) for a, b in pairs}) == len(pairs)  # each unordered pair once


def test_capped_gtm_passes_its_eps_delta_claim_and_the_search_sees_the_refusal_gap(capped):
    claim = privacy_claim(capped)
    r = _audit(capped, claim).result
    assert r.verdict == "no-violation-found"
    # power: the bound is not 0 by default - the search found a grid pair with the refusal gap on halt@1
    assert 5e-5 < r.delta_lower_bound < claim.delta
    assert r.witness["event_outputs"] == ["halt@1"]


def test_power_delta_declared_1000_times_too_small_is_flagged(capped):
    claim = privacy_claim(capped)
    small = PrivacyClaim(APPROXIMATE, claim.epsilon, claim.delta / 1000, "declared delta / 1000", HOCKEY_STICK)
    r = _audit(capped, small).result
    assert r.violation and r.delta_lower_bound > small.delta


def test_power_forced_pure_claim_is_flagged_by_the_search(capped):
    r = _audit(capped, privacy_claim(capped, claim="pure"))
    assert r.violation and r.result.delta_lower_bound > 0
    assert r.to_dict()["claim"]["measure"] == PURE


def test_the_issue_pair_given_by_the_user_is_flagged(capped):
    # the pair of the measurement (p = 1e-7 vs its neighbour), passed as a user-given pair: halt@1 has
    # delta(1) >= 3.681e-4 - e * 3.185e-7, far above delta / 1000 and above 0
    claim = privacy_claim(capped)
    for declared in (claim.delta / 1000, 0.0):
        small = PrivacyClaim(APPROXIMATE, claim.epsilon, declared, "declared", HOCKEY_STICK)
        r = _audit(capped, small, extra_candidates=[ISSUE_PAIR]).result
        assert r.violation, declared
        # the finer first-round grid (the fine family) may hold a pair at least as strong as the user's: the
        # witness is a one-step pair at small p on halt@1 either way
        assert r.witness["event_outputs"] == ["halt@1"] and len(r.witness["input"]) == 1
        assert max(r.witness["input"][0], r.witness["input_prime"][0]) < 1e-6
        # a sound lower bound stays below the delta the plan proves (the true delta(1) is between them)
        assert 2.5e-4 < r.delta_lower_bound < claim.delta, r.delta_lower_bound


def test_uncapped_gtm_passes_its_pure_claim():
    plan = plan_for("none")
    # the claim is attained almost exactly on the grid's tight pairs (exact loss 0.9993 at halt=2 of one),
    # so at confidence 0.95 a correct GTM is flagged about 5% of the time: test at alpha = 0.001, seed SEED
    r = _audit(plan, privacy_claim(plan), confidence=0.999, max_samples=200_000, max_T=3)
    assert r.verdict == "no-violation-found" and r.result.epsilon_lower_bound <= 1.0
    # the power companion is test_the_issue_pair_given_by_the_user_is_flagged: the same (1, 0) test on the
    # same pair flags the capped law; the uncapped law has no refusal gap there
    zero = PrivacyClaim(PURE, 1.0, 0.0, "pure, tested as delta = 0", HOCKEY_STICK)
    assert not _audit(plan, zero, extra_candidates=[ISSUE_PAIR]).violation
