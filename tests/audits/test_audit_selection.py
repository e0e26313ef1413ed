"""audits.audit_selection: the fine family's first round is sized by a fitted request cost, not by scaling n0."""

from types import SimpleNamespace

import pytest

from audits.audit_selection import PILOT_SECOND_SIZE, first_round_runs, request_cost_model
from audits.sampling import AuditSettings


def test_request_cost_model_recovers_fixed_and_per_run_cost():
    # 10 inputs: n = 1000 runs each, then a top-up of 3000 more each (one request each time)
    fixed, per_run = request_cost_model(10 * (2e-4 + 1e-7 * 1000), 10 * (2e-4 + 1e-7 * 3000), 10, 1000, 4000)
    assert fixed == pytest.approx(2e-4) and per_run == pytest.approx(1e-7)
    # timing noise that makes the fixed cost negative (or the top-up no slower): no fixed cost, the average rate
    assert request_cost_model(1e-3, 1.0, 1, 1000, 4000) == (0.0, pytest.approx(1e-6))
    assert request_cost_model(1e-3, 1e-3, 1, 1000, 4000) == (0.0, pytest.approx(1e-6))


class _Clock:
    def __init__(self):
        self.t = 0.0

    def elapsed(self):
        return self.t


class _Book:
    """Every request costs FIXED + PER_RUN * n seconds on a simulated clock."""

    FIXED, PER_RUN = 2e-4, 1e-7

    def __init__(self):
        self.clock, self.nsel = _Clock(), {}

    def ensure(self, inp, n, n_codes):
        have = self.nsel.get(inp, 0)
        if have < n:
            self.clock.t += self.FIXED + self.PER_RUN * (n - have)
            self.nsel[inp] = n


def test_an_own_share_buys_the_runs_the_fitted_cost_affords():
    problem = SimpleNamespace(initial_samples=None, inputs=lambda c: (c, -c),
                              events=lambda c: SimpleNamespace(n_codes=2))
    settings = AuditSettings(epsilon=1.0, seconds=60.0, max_samples=None, seed=0, confidence=0.95,
                             selection_share=0.5, validation_share=0.15, n0=1000)
    book, n_inputs = _Book(), 10_000
    pilot = list(range(1, 25))
    runs = first_round_runs(problem, book, settings, pilot, n_inputs, share=0.2, pilot=pilot)
    pilot_time = 48 * (2 * _Book.FIXED + _Book.PER_RUN * PILOT_SECOND_SIZE * 1000)
    exact = ((0.2 * 60 - pilot_time) / n_inputs - _Book.FIXED) / _Book.PER_RUN
    assert runs == int(exact)
    # scaling the n0 pilot alone (the coarse rounds' rule) would buy fewer: its per-run cost includes the fixed cost
    assert runs > 1000 * (0.2 * 60) / (n_inputs * (_Book.FIXED + _Book.PER_RUN * 1000)) * 1.5


def test_fine_pairs_that_survive_the_screen_are_scored_on_their_first_round_samples():
    """Narrow planted seed 22 (length 1, a band 1.9 moves wide at p ~ 1 - 1e-8, loss 1.41, leak probability 2.7e-3):
    the fine round's screen keeps the band's pairs, and they are scored in full on the samples they have, so the
    fine family holds a projected bound above the claim after round 1 (before: its survivors kept the screen's
    -inf until a later round reached them, and a round cut by the budget never did). Sample budget, seed 7:
    deterministic."""
    from audits.gtm_audit import audit
    from audits.power.planted import PlantedDeployment, plant_narrow
    from audits.targets import CallableTarget
    from gtm_core import GTMConfig
    from gtm_core.planners import make_plan

    plan = make_plan(GTMConfig.load("examples/default.toml"))
    region = plant_narrow(plan, 22)
    assert region.T == 1
    r = audit(CallableTarget(PlantedDeployment(plan, region), max_T=1), epsilon=plan.epsilon,
              eps_t=plan.step(1).eps_t, max_samples=45_000_000, seed=7, progress=False, max_T=1, claimed_plan=plan,
              early_stop=True)
    fine = r.search.families["fine"]
    assert fine.scored == fine.proposed and fine.best_score > plan.epsilon
    assert r.search.coverage.searched["fine_first_round"]["runs_per_input"] == 10_500
    assert r.violation


def _scored(score, family, k, explore=None):
    import numpy as np

    from audits.audit_scoring import ScoredCandidate
    from audits.pair_search import Candidate

    p = (0.1 + 0.001 * k,)
    return ScoredCandidate(score, Candidate(p, (p[0] + 0.05,), family), "halt=1", np.ones(1, bool),
                           explore=score if explore is None else explore)


def test_refinements_are_shared_out_per_search_lane():
    """Six fine pairs ahead of every coarse pair by score and by point estimate: the coarse lane's best three of
    each ranking are still refined (before the lanes, every refinement slot went to the fine pairs)."""
    from audits.audit_selection import REFINE_TOP, refinement_parents, search_lane

    fine = [_scored(1.2 - 0.01 * k, "fine+refined" if k else "fine", k) for k in range(6)]
    coarse = [_scored(1.0 - 0.01 * k, "grid+refined", 10 + k, explore=0.5 + 0.1 * k) for k in range(6)]
    screened = _scored(float("-inf"), "fine", 30, explore=9.0)  # a screened pair has no score: never refined by score
    scores = fine + coarse + [screened]
    by_explore = sorted(fine + coarse, key=lambda s: -s.explore)
    parents = refinement_parents(scores, by_explore)
    assert [search_lane(s.candidate) for s in fine] == ["fine"] * 6 and search_lane(coarse[0].candidate) == "coarse"
    assert parents[:REFINE_TOP] == coarse[:REFINE_TOP]
    ids = {id(s) for s in parents}
    assert all(id(s) in ids for s in coarse[-REFINE_TOP:])  # the coarse lane's best by point estimate
    assert parents[2 * REFINE_TOP:3 * REFINE_TOP] == fine[:REFINE_TOP]
    assert id(screened) not in ids
    # companion (power): one lane for all - the old rule, the best three of each ranking overall - refines no
    # coarse pair here
    overall = scores[:REFINE_TOP] + by_explore[:REFINE_TOP]
    assert not {id(s) for s in overall} & {id(s) for s in coarse}
