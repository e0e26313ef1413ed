"""The exact engine's law of the deployed mechanism under the "refuse" budget (gtm_core.exact.budgeted):
refusals break pure DP at step 1; the (eps, delta) claim is checked with the hockey-stick divergence."""

from __future__ import annotations

import dataclasses
import math

import mpmath
import pytest
from flint import arb

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import UnsupportedConfiguration
from gtm_core.exact import transcript_distribution
from gtm_core.exact.privacy import (approximate_dp_check, approximate_dp_from, hockey_stick_delta,
                                   hockey_stick_delta_ball, ratio_report)

# 1.649e-7 (the outside measurement) is NOT a neighbour: 1.649 > e^0.5 = 1.64872; use 1.6487e-7
P, P_NB = 1e-7, 1.6487e-7
DPS = 12


def plan_for(policy: str, horizon: int = 10):
    return make_plan(GTMConfig.from_dict({
        "gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 2.0, "beta": 0.05,
                "evaluation_budget": policy},
        "stream": {"eps_t": 0.5, "p_star": 0.5, "horizon": horizon},
    }))


@pytest.fixture(scope="module")
def laws():
    out = {}
    for policy in ("refuse", "none"):
        plan = plan_for(policy)
        assert P_NB / P < math.exp(plan.step(1).eps_t)
        out[policy] = (plan, {p: transcript_distribution(plan, [p], dps=DPS) for p in (P, P_NB)})
    return out


def test_truncation_breaks_pure_dp(laws):
    plan, d = laws["refuse"]
    a, b = d[P].halt[0], d[P_NB].halt[0]
    loss = float(abs(mpmath.log(a.value / b.value)))
    assert float(a.value) == pytest.approx(3.185e-7, rel=1e-3)
    assert float(b.value) == pytest.approx(3.6805e-4, rel=1e-3)
    assert loss == pytest.approx(7.0523, abs=2e-3)
    assert a.error < 1e-9 * a.value and b.error < 1e-9 * b.value


def test_untruncated_is_private_and_unchanged(laws):
    plan, d = laws["none"]
    assert not d[P].refused and "refused" not in d[P].to_dict()
    loss = float(abs(mpmath.log(d[P].halt[0].value / d[P_NB].halt[0].value)))
    assert loss == pytest.approx(0.3333, abs=2e-4)


def test_outcomes_sum_to_one(laws):
    for policy in ("refuse", "none"):
        for dist in laws[policy][1].values():
            tot = dist.total()
            assert abs(tot.value - 1) <= tot.error + mpmath.mpf(10) ** -(DPS - 1)
    plan, d = laws["refuse"]
    # refusal at step 1 is the noise's event: the same on both streams, and below the planner's bound
    r1, r2 = d[P].refused[0], d[P_NB].refused[0]
    assert abs(r1.value - r2.value) <= r1.error + r2.error
    assert float(r1.value) <= plan.step(1).budget_exceed_probability


@pytest.mark.slow  # five truncated multi-step laws: minutes of overlap integrals
def test_multi_step_laws_sum_to_one_and_refusals_match_across_streams():
    plan = plan_for("refuse")
    for stream in ([0.3, 0.6], [1e-7, 0.2, 0.5]):
        d = transcript_distribution(plan, stream, dps=10)
        assert len(d.refused) == len(stream)
        tot = d.total()
        assert abs(tot.value - 1) <= tot.error + mpmath.mpf(10) ** -9
        # cont_t = cont_{t+1} + halt_{t+1} + refused_{t+1}
        for t in range(1, len(stream)):
            rhs = d.cont[t].value + d.halt[t].value + d.refused[t].value
            assert abs(d.cont[t - 1].value - rhs) <= 1e-8 * d.cont[t - 1].value
    # at a moderate p the budget practically never bites the halting event: the law is Algorithm 1's
    # minus the refusals
    none = transcript_distribution(plan_for("none"), [0.3, 0.6], dps=10)
    d = transcript_distribution(plan, [0.3, 0.6], dps=10)
    assert float(d.halt[0].value) == pytest.approx(float(none.halt[0].value), rel=1e-2)


def test_hockey_stick_delta_at_the_pair(laws):
    plan, d = laws["refuse"]
    eps = plan.worst_claimed_loss()
    fwd, err = hockey_stick_delta(d[P_NB], d[P], eps)
    # by hand: only the halting outcome can exceed e^eps times its neighbour's probability here
    E = mpmath.exp(eps)
    by_hand = sum(max(0, d[P_NB].outcomes()[o].value - E * d[P].outcomes()[o].value) for o in (0, 1, -1))
    assert abs(fwd - by_hand) <= err
    assert fwd > 1e-4  # the truncation's loss is real mass: halting at P_NB that P cannot match
    check = approximate_dp_check(plan, [P], [P_NB], dps=DPS)
    assert check.pure_loss > plan.epsilon  # not pure DP
    assert check.delta_claimed == pytest.approx(plan.privacy_delta())
    assert check.ok == bool(check.delta_ball <= arb(check.delta_claimed))
    assert check.ok  # the (eps, delta) claim holds on this pair


def test_untruncated_pair_has_zero_delta(laws):
    plan, d = laws["none"]
    fwd, err = hockey_stick_delta(d[P], d[P_NB], plan.epsilon)
    assert fwd == 0


def test_certified_mode_is_refused_under_a_budget():
    with pytest.raises(UnsupportedConfiguration, match="certified"):
        transcript_distribution(plan_for("refuse"), [0.3], dps=10, certified=True)


def test_pure_claim_is_flagged_and_approximate_claim_holds_at_the_pair(laws):
    """The tester: the capped law at the pair violates the pure eps claim (halting, 7.05 > 1) and satisfies
    its (eps, delta) claim; the uncapped law satisfies eps on every transcript."""
    plan, d = laws["refuse"]
    report = ratio_report(plan, d[P], d[P_NB], DPS)
    assert {r.kind for r in report.rows} == {"halt", "continue", "refused"}
    assert not report.ok and report.max_loss().kind == "halt"
    check = approximate_dp_from(plan, d[P], d[P_NB])
    assert check.ok and check.direction == "p'||p"
    assert check.delta_ball.upper() >= check.delta - check.delta_error  # the ball encloses the mpmath value
    assert 3.67e-4 < check.delta_upper < 3.68e-4
    # a mutated (smaller) claim below the delta found is refused
    mutated = dataclasses.replace(check, delta_claimed=check.delta_upper / 2)
    assert not mutated.ok
    plan_n, dn = laws["none"]
    assert ratio_report(plan_n, dn[P], dn[P_NB], DPS).ok


def test_hockey_stick_ball_straddling_zero_is_bounded_by_its_upper_end():
    from gtm_core.exact.results import Probability, TranscriptDistribution

    def dist(values):
        ps = tuple(Probability(mpmath.mpf(v), mpmath.mpf(r), arb(v) + arb(0, r)) for v, r in values)
        return TranscriptDistribution(T=1, halt=(ps[0],), cont=(ps[1],), dps=10, certified=False, nodes=0,
                                      seconds=0.0)

    a = dist([(0.5, 1e-3), (0.5, 1e-3)])
    b = dist([(0.5, 1e-3), (0.5, 1e-3)])
    ball = hockey_stick_delta_ball(a, b, 0.0)  # both outcomes' differences straddle 0
    assert ball.upper() >= 2 * 2e-3 * 0.99  # [0, upper] of each straddling difference, summed
    assert hockey_stick_delta_ball(a, b, 1.0) == 0  # e^1 Q - P is certainly positive: nothing counted
