"""Early verdicts (audits.early_stop): the sequential test's level by exact computation, its power on a
flagrant violation, and the verdict JSON when no early stop happens."""

import math

import numpy as np
import pytest

from audits.early_stop import (EARLY_SHARE, critical_count, final_alpha, look_alpha, sequential_false_alarm,
                               take_look)
from audits.statistics import conditional_loss_lower_bound
from gtm_core.errors import InvalidParameter


def _doubling(first: int, looks: int) -> list[int]:
    """Witness totals k_A + k_B at the engine's looks: the runs double from look to look."""
    return [first * 2 ** k for k in range(looks)]


def test_the_levels_of_the_looks_and_the_final_look_sum_to_alpha():
    """Basel: sum_k 6 / (pi^2 k^2) = 1, so the interim looks spend alpha EARLY_SHARE and the final look the rest
    (partial sums checked against the tail bound 1/K of sum_{k > K} 1/k^2)."""
    alpha = 0.05
    k = np.arange(1, 1_000_001, dtype=float)
    interim = float(np.sum(alpha * EARLY_SHARE * 6 / (math.pi ** 2 * k * k)))
    assert interim <= alpha * EARLY_SHARE
    assert alpha * EARLY_SHARE - interim <= alpha * EARLY_SHARE * 6 / math.pi ** 2 / 1e6
    assert look_alpha(1, alpha) == pytest.approx(alpha * EARLY_SHARE * 6 / math.pi ** 2, rel=1e-15)
    assert final_alpha(alpha, True) + alpha * EARLY_SHARE == pytest.approx(alpha, rel=1e-15)
    assert final_alpha(alpha, False) == alpha  # without early verdicts: the fixed-sample test
    with pytest.raises(InvalidParameter, match="look"):
        look_alpha(0, alpha)


@pytest.mark.parametrize("alpha", [0.05, 1e-3])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_the_sequential_false_alarm_rate_is_at_most_alpha_by_exact_computation(alpha, epsilon):
    """Calibration, exact: the probability that some look (or the final one) declares a violation on a witness
    whose loss is exactly the claim (the worst case of the null), computed by the dynamic program of
    sequential_false_alarm over the binomial walk of k_A given the totals, is <= alpha for doubling schedules
    from 5 and 40 event runs at the first look (9 looks, the last final) and from 300 (6 looks) and a random increasing
    schedule (seed 29). Power companion: the same computation with every look at alpha (naive repeated
    testing) exceeds alpha - the computation sees the inflation the spending prevents."""
    rng = np.random.default_rng(29)
    schedules = [_doubling(5, 9), _doubling(40, 9), _doubling(300, 6),
                 [int(x) for x in np.cumsum(rng.integers(20, 2000, size=8))]]
    for totals in schedules:
        assert sequential_false_alarm(totals, epsilon, alpha) <= alpha
    naive = sequential_false_alarm(_doubling(40, 9), epsilon, alpha, levels=[alpha] * 9)
    assert naive > 1.5 * alpha


def test_the_exact_false_alarm_computation_matches_simulated_walks():
    """sequential_false_alarm against 200 000 simulated witness walks at the boundary theta = e/(1 + e) (claim
    1), each judged by take_look at every look but the last and by the final look's bound: two-sided
    binomial test at alpha = 1e-3, seed 29; power companion: the same simulations reject the value computed
    for claim 0.8 (a wrong law)."""
    from scipy import stats

    alpha, epsilon, totals = 0.05, 1.0, _doubling(20, 6)
    theta = math.e / (1 + math.e)
    rng = np.random.default_rng(29)
    trials = 200_000
    steps = np.diff([0] + totals)
    walks = np.cumsum(rng.binomial(steps, theta, size=(trials, len(steps))), axis=1)
    rejected = np.zeros(trials, dtype=bool)
    for j, total in enumerate(totals):
        level = final_alpha(alpha, True) if j == len(totals) - 1 else look_alpha(j + 1, alpha)
        rejected |= np.asarray(conditional_loss_lower_bound(walks[:, j], total - walks[:, j], level)) > epsilon
    exact = sequential_false_alarm(totals, epsilon, alpha)
    assert stats.binomtest(int(rejected.sum()), trials, exact).pvalue > 1e-3
    wrong = sequential_false_alarm(totals, 0.8, alpha)
    assert stats.binomtest(int(rejected.sum()), trials, wrong).pvalue < 1e-3


def test_the_critical_count_is_where_a_look_clears_the_claim():
    assert critical_count(10, 1.0, look_alpha(3, 0.05)) == 11  # 10 event runs cannot clear the claim at this level
    for total in (30, 137, 4000):
        c = critical_count(total, 1.0, look_alpha(3, 0.05))
        assert take_look(3, 1000, c, total - c, 0.05, 0, 0.0).bound > 1.0
        assert not take_look(3, 1000, c - 1, total - c + 1, 0.05, 0, 0.0).bound > 1.0


# the engine ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plan():
    from gtm_core import GTMConfig, make_plan

    return make_plan(GTMConfig.load("examples/default.toml"))


def test_a_flagrant_violation_stops_early_in_far_fewer_runs_than_the_budget(plan):
    """Power companion: the deliberately broken GTM without step noise (audits.power.broken), audit seed 0,
    a 4e6-run budget: with early verdicts the audit stops at an interim look with a violation after at most
    a fifth of the budget (a flagrant pair ended the selection, and the coverage section says so); without, the
    same audit spends it all and finds the same verdict."""
    from audits.gtm_audit import audit
    from audits.power.broken import variant
    from audits.targets import SimulatorTarget

    budget = 4_000_000
    early = audit(SimulatorTarget(plan, variant("no-step-noise")), epsilon=1.0, eps_t=0.1, seconds=None,
                  max_samples=budget, seed=0, progress=False, early_stop=True)
    full = audit(SimulatorTarget(plan, variant("no-step-noise")), epsilon=1.0, eps_t=0.1, seconds=None,
                 max_samples=budget, seed=0, progress=False)
    assert early.verdict == full.verdict == "violation"
    record = early.early_stop
    assert record.stopped_look is not None and record.samples == early.samples <= budget / 5
    assert full.samples > 0.9 * budget and full.early_stop is None
    look = record.looks[record.stopped_look - 1]
    assert early.witness.loss_bound == look.bound == pytest.approx(float(conditional_loss_lower_bound(
        early.witness.count_a, early.witness.count_b, look_alpha(look.look, 0.05))), rel=1e-12)
    doc = early.to_dict()["early_stop"]
    assert doc["time_to_verdict"]["early"] is True and doc["time_to_verdict"]["samples"] == early.samples
    # the selection was ended by a flagrant pair: the coverage section says why pairs went unsampled
    assert record.selection_ended_early
    skipped = early.to_dict()["search"]["coverage"]["skipped"]
    assert any("a flagrant pair ended the selection" in s["reason"] for s in skipped)


def test_without_an_early_stop_the_verdict_json_keeps_its_meaning(plan):
    """The correct GTM (no violation: no look clears the claim), audit seed 3, a 2e5-run budget, max-T 3. With
    early verdicts the JSON has the same keys plus ``early_stop`` (no stopping look; the time to verdict is the
    whole audit's), and its bound is the conditional test's at 0.9 alpha, recomputable from the JSON's counts.
    Without, no ``early_stop`` key, the bound is the fixed-sample test's at alpha, and the JSON is the pre-change
    engine's (commit 56bd2bc) bit for bit: golden values recorded from that commit."""
    from audits.gtm_audit import audit
    from audits.targets import SimulatorTarget

    kw = dict(epsilon=1.0, eps_t=0.1, seconds=None, max_samples=200_000, seed=3, progress=False, max_T=3)
    off = audit(SimulatorTarget(plan), **kw).to_dict()
    on = audit(SimulatorTarget(plan), early_stop=True, **kw).to_dict()
    assert "early_stop" not in off and list(on) == list(off) + ["early_stop"]
    assert off["verdict"] == on["verdict"] == "no-violation-found"
    # golden: the pre-change engine's audit of this seed and budget
    assert off["epsilon_lower_bound"] == 0.9412644843550744 and off["samples"] == 198840
    w = off["witness"]
    assert (w["probability"]["count"], w["probability_prime"]["count"], w["event"]) == (2204, 803, "level-set(2)")
    assert w["loss_bound"] == float(conditional_loss_lower_bound(2204, 803, 0.05))
    e, w = on["early_stop"], on["witness"]
    assert e["stopped_look"] is None and e["time_to_verdict"]["early"] is False and e["looks"]
    assert e["time_to_verdict"]["samples"] == on["samples"] and e["alpha_final"] == pytest.approx(0.045)
    assert all(x["bound"] is None or x["bound"] <= 1.0 for x in e["looks"])
    assert w["loss_bound"] == float(conditional_loss_lower_bound(w["probability"]["count"],
                                                                 w["probability_prime"]["count"], e["alpha_final"]))


@pytest.mark.slow
def test_early_verdicts_raise_no_false_alarm_on_the_correct_gtm(plan):
    """Calibration on the engine (a companion of the exact computation above): the correct GTM, audit seeds
    0..9, 4e5 runs each, confidence 0.999 (alpha = 1e-3: the ten audits' false-alarm probability is <= 1e-2),
    early verdicts on: no violation, and every witness test has its looks."""
    from audits.gtm_audit import audit
    from audits.targets import SimulatorTarget

    for seed in range(10):
        r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=400_000, seed=seed,
                  progress=False, confidence=0.999, max_T=5, early_stop=True)
        assert r.verdict == "no-violation-found", seed
        assert r.early_stop.stopped_look is None and r.early_stop.looks
