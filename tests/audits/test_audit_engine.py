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
    import audits.audit_engine as A

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
