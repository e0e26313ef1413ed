"""The audit engine (audits.audit_engine): selection, validation and estimation, through GTM audits."""

import numpy as np
import pytest

from audits.gtm_audit import audit
from audits.power.broken import variant
from audits.targets import CallableTarget, SimulatorTarget
from gtm_core import GTMConfig, make_plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def test_slow_target_uses_its_whole_time_budget(plan):
    """A correct but slow deployment (0.05 s per request): the audit re-plans its estimation phase from
    the measured throughput and uses >= 90% of a 10 s budget; the JSON records the share."""
    import time as _time

    inner = SimulatorTarget(plan)

    def slow(p, n, seed):
        _time.sleep(0.05)
        return inner.sample(p, n, seed).halt

    r = audit(CallableTarget(slow, max_T=10), epsilon=1.0, eps_t=0.1, seconds=10, seed=0, progress=False, max_T=10)
    budget = r.to_dict()["search"]["budget"]
    assert budget["time_share_used"] >= 0.9 and r.seconds >= 9.0 and r.seconds < 10 + 3.0
    assert budget["final_runs_per_input"] > 0


def test_the_first_round_grows_with_the_sample_budget():
    """A leak on an event of probability ~3e-3 is seen < 3 times in 1000 runs with probability 0.42,
    so the first (coverage) round is sized to the budget, not capped at n0."""
    from types import SimpleNamespace

    from audits.audit_engine import FIRST_ROUND_MAX_FACTOR, MIN_FIRST_ROUND, first_round_runs
    from audits.sampling import AuditSettings

    def runs(max_samples, n_inputs=2833):
        s = AuditSettings(epsilon=1.0, seconds=None, max_samples=max_samples, seed=0, confidence=0.95,
                          selection_share=0.4, validation_share=0.15, n0=1000)
        return first_round_runs(SimpleNamespace(initial_samples=None), None, s, [], n_inputs)

    assert runs(2 * 10**6) == int(0.5 * 0.4 * 2e6 / 2833)  # small budgets: what the budget allows
    assert runs(4000, n_inputs=10**6) == MIN_FIRST_ROUND
    assert runs(2 * 10**8) == int(0.5 * 0.4 * 2e8 / 2833) > 10 * 1000  # large budgets buy more than n0
    assert runs(10**11) == FIRST_ROUND_MAX_FACTOR * 1000


def test_a_sample_budget_audit_with_the_exact_oracle_is_a_function_of_its_seed():
    """The oracle (exact worst-case search) is budgeted by attempts when the audit has a sample budget, and its
    starts run through the executor's map: two runs, one of them with a counting mapper, agree."""
    import json

    from audits.audit_results import without_timings
    from audits.execution import InProcess

    class Counting(InProcess):
        mapped = 0

        def map_ordered(self, fn, items, *, deadline=None):
            Counting.mapped += len(items)
            return super().map_ordered(fn, items, deadline=deadline)

    plan = make_plan(GTMConfig.load("examples/default.toml"))
    kw = dict(epsilon=1.0, eps_t=0.1, seconds=None, max_samples=40_000, seed=4, progress=False, max_T=3,
              oracle_plan=plan, oracle_seconds=1.0)
    a = audit(SimulatorTarget(plan), **kw).to_dict()
    b = audit(SimulatorTarget(plan), executor=Counting(), **kw).to_dict()
    assert Counting.mapped > 0
    assert json.dumps(without_timings(a), sort_keys=True) == json.dumps(without_timings(b), sort_keys=True)
    assert a["search"]["families"].get("exact-oracle", {}).get("proposed", 0) >= 1


def test_the_grid_does_not_starve_the_structured_families():
    """Power suite: the coverage grid's thousands of pairs are sized together; the structured
    families (constant, mixed, ramp, laplace) are sized over their own inputs and get more runs each."""
    plan = make_plan(GTMConfig.load("examples/default.toml"))
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=4_000_000, seed=1,
              progress=False, max_T=10)
    search = r.to_dict()["search"]
    grid, structured = search["first_round_runs_per_input"], search["first_round_runs_per_input_structured"]
    assert 50 <= grid < 1000 and structured >= 1000 and structured % grid == 0


def _refined_pairs_sampled(plan) -> tuple[int, int]:
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=6_000_000, seed=2,
              progress=False, max_T=50)
    fams = r.to_dict()["search"]["families"]
    return r.to_dict()["search"]["rounds"], sum(f["scored"] for name, f in fams.items() if name.endswith("+refined"))


def test_refinements_are_sampled_after_a_large_first_round(plan):
    """Power suite: at max-T 50 the coverage grid is ~8k pairs; a quarter of them cost as much
    as the whole first round, so the budget ran out inside the second round before its refinements (last
    in the round) were sampled. The refinements now come first."""
    rounds, refined = _refined_pairs_sampled(plan)
    assert rounds >= 2 and refined > 0


def test_refinement_check_has_power(plan, monkeypatch):
    """Companion: with the survivors first (the old order) the check above fails."""
    import audits.audit_selection as A

    monkeypatch.setattr(A, "next_round_pool", lambda problem, survivors, fresh: survivors + fresh)
    rounds, refined = _refined_pairs_sampled(plan)
    assert refined == 0


def _scored(score: float, T: int, k: int):
    """A scored pair of stream length T (distinct inputs by k) for the validation-pool tests."""
    from audits.audit_scoring import ScoredCandidate
    from audits.pair_search import Candidate

    p = tuple([0.1 + 0.001 * k] * T)
    return ScoredCandidate(score, Candidate(p, tuple(x + 0.05 for x in p), "mixed"), f"halt={T}", np.ones(1, bool))


def _pool(explore: bool):
    from audits.audit_engine import validation_pool
    from audits.audit_scoring import Selection
    from audits.gtm_audit import GTMProblem

    ranked = tuple(_scored(5.0 - 0.1 * k, 2, k) for k in range(10))  # the last round: refinements of one T=2 pair
    long_pair = _scored(3.4, 4, 99)  # a T=4 pair scored in an earlier round only
    latest = tuple(sorted(ranked + (long_pair,), key=lambda s: -s.score))
    problem = GTMProblem(SimulatorTarget(make_plan(GTMConfig.load("examples/default.toml"))), 0.1, max_T=10)
    problem.explore = explore
    sel = Selection(ranked=ranked, best=ranked[0], rounds=2, pairs_examined=11, latest=latest)
    return validation_pool(problem, sel), long_pair


def test_validation_keeps_the_best_pair_of_a_stream_length_the_last_round_lost():
    """Power suite (step-noise-reused): the refinements of a short strong pair filled the last
    round, and the T=4 pair whose rare event has loss 10 never reached validation. Validation now re-ranks
    the last round's best 8 plus the best pair of each stream length they do not cover."""
    top, long_pair = _pool(explore=True)
    assert [sc.score for sc in top[:8]] == [5.0 - 0.1 * k for k in range(8)]
    assert long_pair in top and len(top) == 9


def test_validation_pool_check_has_power():
    """Companion: without the stream-length slots (the SVT problems' rule) the long pair is not re-ranked."""
    top, long_pair = _pool(explore=False)
    assert long_pair not in top and len(top) == 8


def _reused_bound(monkeypatch=None) -> float:
    plan = make_plan(GTMConfig.load("examples/default.toml"))
    from audits.power.broken import simulate_deployment

    d = variant("step-noise-reused")
    fn = lambda p, n, seed: simulate_deployment(plan, d, p, n, np.random.default_rng(seed)).halt  # noqa: E731
    r = audit(CallableTarget(fn, name="step-noise-reused", max_T=50), epsilon=1.0, eps_t=0.1,
              max_samples=30_000_000, seed=4, progress=False, max_T=50)
    return r.epsilon_lower_bound


@pytest.mark.slow
def test_step_noise_reused_reaches_its_rare_strong_event():
    """Power suite (audit seed 4, 3e7 samples): the T=4 pair of true loss 10 is the witness
    (bound 9.5); with refinements sampled first it had been 6.09 (a T=2 pair of loss 6.2)."""
    assert _reused_bound() > 8.5


@pytest.mark.slow
def test_step_noise_reused_check_has_power(monkeypatch):
    """Companion: without the stream-length slots the same audit ends on the T=2 pair (bound < 7)."""
    import audits.audit_engine as A

    monkeypatch.setattr(A, "VALIDATION_SHAPES", 0)
    assert _reused_bound() < 7


def test_a_planted_band_one_move_wide_is_flagged(plan):
    """A narrow planted band (tests of the tester): one neighbour move wide (half width 0.5), single steps,
    leak probability 2e-3 on the loaded input, loss 3, centred between two coarse-grid levels (the coarse
    grid alone is 14.8 moves apart here). The fine family's first round (10 500 runs per input at this
    budget: keep probability >= 0.9, audits.audit_scoring.first_round_keep_probability) ranks it on; audit
    seed 4, sample budget 4.3e7 (reproducible), confidence 0.95."""
    from audits.pair_search import GRID_LEVELS
    from audits.power.planted import PlantedDeployment, narrow_region, planted_pair, true_loss

    lo, hi = GRID_LEVELS[10], GRID_LEVELS[11]  # ~2.7e-3 and ~1.2e-2: the centre ~5.6e-3, 7 moves from each
    centre = float(1 / (1 + np.sqrt((1 - lo) / lo * (1 - hi) / hi)))  # the logit midpoint
    region = narrow_region(plan, seed=0, T=1, centre=centre, half_width=0.5, directions=(1,), pattern="constant",
                           loss=3.0, q_event=2e-3)
    dep = PlantedDeployment(plan, region)
    loaded, other = planted_pair(region)
    assert true_loss(dep, loaded, other, [region.code]) == pytest.approx(3.0)
    r = audit(CallableTarget(dep, max_T=1), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=43_000_000, seed=4,
              progress=False, max_T=1)
    fine = r.search.coverage.searched["fine_first_round"]
    assert fine["runs_per_input"] == fine["runs_needed"] == 10_500 and fine["keep_probability"] >= 0.9
    assert r.verdict == "violation" and r.epsilon_lower_bound > 1.5
    # the witness is a true violation of the planted law (the leak tapers off outside the band, its loss does not)
    assert true_loss(dep, r.witness.input_a, r.witness.input_b, list(r.witness.event_codes)) > 1.5


def test_a_budget_too_small_for_the_fine_family_says_so_in_the_coverage_section(plan):
    """At 3e5 runs the fine family's 20% share affords ~10 runs per input, fewer than fine_min_runs (2 250: an
    event of probability 1e-2 and loss 2 kept with probability 0.9): it is not run, and the coverage section
    lists it as not sampled with the runs it could have had. Companion (arithmetic): a 1.5e8 budget affords it."""
    from audits.audit_engine import FINE_SHARE, fine_min_runs
    from audits.gtm_audit import GTMProblem
    from audits.pair_search import fine_candidates

    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=300_000, seed=2,
              progress=False, max_T=2)
    cov = r.to_dict()["search"]["coverage"]
    dropped = [s for s in cov["skipped"] if s["region"].startswith("the fine family")]
    assert fine_min_runs(1.0) == 2250
    assert len(dropped) == 1 and "< 2250 runs per input" in dropped[0]["reason"]
    assert "fine" not in r.to_dict()["search"]["families"] and "fine_first_round" not in cov
    problem = GTMProblem(SimulatorTarget(plan), 0.1, max_T=2)
    n_inputs = len({x for c in fine_candidates(0.1, 2) for x in problem.inputs(c)})
    assert FINE_SHARE * 150_000_000 / n_inputs >= 2250 > FINE_SHARE * 300_000 / n_inputs


def _lane_pool(lanes: bool, monkeypatch):
    """The last round of wide planted seed 23 (planted-final-60s): ten fine-family refinements with scores
    just above the claim (tight pairs of the correct GTM, their scores the maxima of noisy first-round
    estimates) ahead of the coarse family's planted pair."""
    import audits.audit_engine as E
    from audits.audit_scoring import ScoredCandidate, Selection
    from audits.gtm_audit import GTMProblem
    from audits.pair_search import Candidate

    def scored(score, family, k):
        p = tuple([0.1 + 0.001 * k] * 3)
        return ScoredCandidate(score, Candidate(p, tuple(x + 0.05 for x in p), family), "halt=3", np.ones(1, bool))

    fine = [scored(1.10 - 0.01 * k, "fine+refined", k) for k in range(10)]
    planted = scored(0.98, "grid+refined", 50)
    ranked = tuple(fine + [planted] + [scored(0.5 - 0.01 * k, "grid", 60 + k) for k in range(5)])
    problem = GTMProblem(SimulatorTarget(make_plan(GTMConfig.load("examples/default.toml"))), 0.1, max_T=10)
    problem.explore = False
    if not lanes:
        monkeypatch.setattr(E, "search_lane", lambda c: "coarse")
    sel = Selection(ranked=ranked, best=ranked[0], rounds=3, pairs_examined=16, latest=ranked)
    return E.validation_pool(problem, sel), planted, fine


def test_validation_shares_its_slots_between_the_search_lanes(monkeypatch):
    top, planted, fine = _lane_pool(True, monkeypatch)
    assert planted in top and len(top) == 8
    assert sum(sc in fine for sc in top) == 4  # half the slots; the best four fine pairs
    assert top[:4] == fine[:4]


def test_validation_lane_check_has_power(monkeypatch):
    """Companion: with one lane (the rule before) the fine pairs take every slot and the planted pair is lost."""
    top, planted, fine = _lane_pool(False, monkeypatch)
    assert planted not in top and top == fine[:8]
