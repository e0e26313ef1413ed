"""The audit engine on in-process targets: result object, reproducibility, validation."""

import numpy as np
import pytest

from audits.auditor import AuditResult, audit, run_audit
from audits.power.broken import variant
from audits.targets import CallableTarget, SimulatorTarget
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def test_result_fields_and_reproducible_with_sample_budget(plan):
    t = SimulatorTarget(plan)
    kw = dict(epsilon=1.0, eps_t=0.1, seconds=None, max_samples=900_000, seed=3, progress=False, max_T=10)
    a = audit(t, **kw)
    b = audit(t, **kw)
    assert isinstance(a, AuditResult)
    d = a.to_dict()
    for key in ("verdict", "epsilon_claimed", "epsilon_lower_bound", "confidence", "witness", "samples", "seconds"):
        assert key in d
    assert a.epsilon_lower_bound == b.epsilon_lower_bound and a.witness == b.witness
    assert a.samples <= 900_000 and a.verdict == "no-violation-found"
    w = d["witness"]
    assert w["probability"]["lower"] <= w["probability"]["estimate"]
    assert w["probability_prime"]["upper"] >= w["probability_prime"]["estimate"]
    assert "AuditResult(verdict=" in repr(a)


def test_broken_in_process_flagged(plan):
    r = audit(SimulatorTarget(plan, variant("step-noise-quarter")), epsilon=1.0, eps_t=0.1, seconds=None,
              max_samples=2_000_000, seed=1, progress=False, max_T=10)
    assert r.violation and r.epsilon_lower_bound > 1.2


def test_callable_target_that_ignores_its_input_is_private():
    def constant(p, n, seed):
        return np.random.default_rng(seed).integers(0, len(p) + 1, n)

    # a false "violation" happens with probability <= 1 - confidence: at 0.999 this seeded test can
    # fail by chance with probability <= 1e-3 (calibration at 0.95 is benchmarks/bench_audit_calibration)
    r = audit(CallableTarget(constant, max_T=5), epsilon=0.0, eps_t=0.1, seconds=None, max_samples=400_000,
              seed=0, progress=False, confidence=0.999)
    assert r.verdict == "no-violation-found"


def test_time_budget_is_respected(plan):
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=4, seed=0, progress=False)
    assert r.seconds < 4 + 2.0


@pytest.mark.parametrize("kw,msg", [
    (dict(epsilon=1.0, eps_t=0.0), "eps_t"),
    (dict(epsilon=1.0, eps_t=0.1, confidence=1.5), "confidence"),
    (dict(epsilon=-1.0, eps_t=0.1), "epsilon"),
    (dict(epsilon=1.0, eps_t=0.1, seconds=None), "budget"),
])
def test_bad_arguments(plan, kw, msg):
    with pytest.raises(InvalidParameter, match=msg):
        audit(SimulatorTarget(plan), progress=False, **kw)


def test_audit_parameters_are_the_configuration_claims():
    from audits.auditor import audit_parameters
    from gtm_core import GTMConfig, make_plan

    cfg = GTMConfig.load("examples/default.toml")
    assert audit_parameters(cfg) == (1.0, 0.1)
    # theorem23 is ex-post: the claim audited is the largest halting loss up to the horizon
    t23 = GTMConfig.load("examples/theorem23.toml").with_changes(horizon=30)
    plan = make_plan(t23)
    eps, eps_t = audit_parameters(t23)
    assert eps == max(plan.claimed_loss(t, True) for t in range(1, 31)) > plan.claimed_loss(1, True)
    per_step = cfg.with_changes(horizon=3, eps_t=[0.1, 0.0, 0.2])
    assert audit_parameters(per_step)[1] == [0.1, 0.0, 0.2]


def test_eps_t_zero_at_some_steps_is_audited_with_identical_neighbours_there(plan):
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=[0.1, 0.0, 0.1], seconds=None, max_samples=40_000,
              seed=1, progress=False, max_T=3)
    w = r.witness
    if len(w.input_a) >= 2:
        assert w.input_a[1] == w.input_b[1]  # eps_2 = 0: the second step cannot differ
    with pytest.raises(InvalidParameter, match="every step"):
        audit(SimulatorTarget(plan), epsilon=1.0, eps_t=[0.0, 0.0], seconds=None, max_samples=40_000,
              progress=False)
    with pytest.raises(InvalidParameter, match="eps_t"):
        audit(SimulatorTarget(plan), epsilon=1.0, eps_t=[0.1, -0.1], seconds=None, max_samples=40_000,
              progress=False)


# ---------------------------------------------------------------------------
# budget stops (docs/protocol.md: -t = stopped at step t on the evaluation budget)
# ---------------------------------------------------------------------------


def _with_stops(plan, stop_probability):
    """A deployment whose runs halt as the GTM's do, except that a share stop at step 1 on their
    evaluation budget (outcome -1), with probability ``stop_probability(p)``."""
    sim = SimulatorTarget(plan)

    def fn(p, n, seed):
        halt = sim.sample(p, n, seed).halt.copy()
        halt[np.random.default_rng([seed, 1]).random(n) < stop_probability(p)] = -1
        return halt

    return CallableTarget(fn)


def test_stops_that_do_not_depend_on_the_data_are_private(plan):
    # a correct deployment's budget decision depends on the noise only: the same stop rate on
    # every stream. alpha = 1 - confidence = 0.05, seed 0.
    r = audit(_with_stops(plan, lambda p: 0.05), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=200_000,
              seed=0, progress=False)
    assert r.verdict == "no-violation-found"


def test_stops_that_depend_on_the_data_are_flagged(plan):
    # power companion: a budget check that looks at the data (stop rate (p_1 / 0.3)^12, a factor
    # e^1.2 between neighbours at eps_t = 0.1) leaks through the stop outcome alone
    r = audit(_with_stops(plan, lambda p: min(1.0, (p[0] / 0.3) ** 12)), epsilon=1.0, eps_t=0.1, seconds=None,
              max_samples=200_000, seed=0, progress=False)
    T = len(r.witness.input_a)  # the witness is a budget-stop event: codes T + t (named "stop" or level-set(-t))
    assert r.violation and r.witness.event_codes and all(c > T for c in r.witness.event_codes)


def test_the_reference_gtm_is_audited_through_its_budget_stops():
    # the README snippet's ReferenceTarget on a plan whose runs often stop on their budget: stops are
    # outcomes, never an EvaluationBudgetExceeded out of the audit
    from audits.targets import ReferenceTarget

    plan = make_plan(GTMConfig.load("examples/unsafe_budget.toml"))
    r = audit(ReferenceTarget(plan), epsilon=1.0, eps_t=0.001, seconds=None, max_samples=8_000, seed=0,
              progress=False, max_T=3)
    stops = {e.event: e for e in r.per_event}["stop"]
    assert stops.count > 0 and stops.count_prime > 0


def test_slow_target_uses_its_whole_time_budget(plan):
    """A correct but slow deployment (0.05 s per request): the audit re-plans its estimation phase from
    the measured throughput and uses >= 90% of a 10 s budget; the JSON records the share."""
    import time as _time

    inner = SimulatorTarget(plan)

    def slow(p, n, seed):
        _time.sleep(0.05)
        return inner.sample(p, n, seed).halt

    r = audit(CallableTarget(slow, max_T=10), epsilon=1.0, eps_t=0.1, seconds=10, seed=0, progress=False, max_T=10)
    budget = r.search["budget"]
    assert budget["time_share_used"] >= 0.9 and r.seconds >= 9.0 and r.seconds < 10 + 3.0
    assert budget["final_runs_per_input"] > 0


def test_budget_too_small_is_reported(plan):
    """4000 runs in all give at most 4000 hits on any event, so the conditional test can never exceed
    ln(4000 / -ln(0.05)) ~ 7.2: a claim of 8 cannot be refuted, and the JSON says so (warning + the best
    reachable bound). Companion: with 1e6 runs and the claim 1 the budget is meaningful, no warning."""
    r = audit(SimulatorTarget(plan), epsilon=8.0, eps_t=0.1, seconds=None, max_samples=4000, seed=0,
              progress=False, max_T=3)
    budget = r.search["budget"]
    assert not budget["meaningful"] and "budget too small" in budget["warning"]
    assert budget["best_reachable_bound"] is None or budget["best_reachable_bound"] < 8.0
    big = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=1_000_000, seed=0,
                progress=False, max_T=3)
    assert big.search["budget"]["meaningful"] and big.search["budget"]["warning"] is None


def test_search_section_lists_families_and_skipped_regions(plan):
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=300_000, seed=2,
              progress=False, max_T=4)
    s = r.search
    assert {"grid", "mixed", "laplace"} <= set(s["families"])
    assert s["families"]["grid"]["scored"] == s["families"]["grid"]["proposed"]  # the first round sees all
    cov = s["coverage"]
    assert cov["probability_range"] == [1e-9, 1 - 1e-9] and cov["lengths"] == [1, 2, 3, 4]
    assert all(item["reason"] for item in cov["skipped"])


def test_the_first_round_grows_with_the_sample_budget():
    """Issue 20: a leak on an event of probability ~3e-3 is seen < 3 times in 1000 runs with probability 0.42,
    so the first (coverage) round is sized to the budget, not capped at n0."""
    from types import SimpleNamespace

    from audits.auditor import FIRST_ROUND_MAX_FACTOR, MIN_FIRST_ROUND, first_round_runs
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

    from audits.auditor import without_timings
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
    """Issue 20 / power suite: the coverage grid's thousands of pairs are sized together; the structured
    families (constant, mixed, ramp, laplace) are sized over their own inputs and get more runs each."""
    plan = make_plan(GTMConfig.load("examples/default.toml"))
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=4_000_000, seed=1,
              progress=False, max_T=10)
    grid, structured = r.search["first_round_runs_per_input"], r.search["first_round_runs_per_input_structured"]
    assert 50 <= grid < 1000 and structured >= 1000 and structured % grid == 0


def _refined_pairs_sampled(plan) -> tuple[int, int]:
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=6_000_000, seed=2,
              progress=False, max_T=50)
    fams = r.search["families"]
    return r.search["rounds"], sum(f["scored"] for name, f in fams.items() if name.endswith("+refined"))


def test_refinements_are_sampled_after_a_large_first_round(plan):
    """Issue 20 (power suite): at max-T 50 the coverage grid is ~8k pairs; a quarter of them cost as much
    as the whole first round, so the budget ran out inside the second round before its refinements (last
    in the round) were sampled. The refinements now come first."""
    rounds, refined = _refined_pairs_sampled(plan)
    assert rounds >= 2 and refined > 0


def test_refinement_check_has_power(plan, monkeypatch):
    """Companion: with the survivors first (the old order) the check above fails."""
    import audits.auditor as A

    monkeypatch.setattr(A, "next_round_pool", lambda problem, survivors, fresh: survivors + fresh)
    rounds, refined = _refined_pairs_sampled(plan)
    assert refined == 0


def _scored(score: float, T: int, k: int):
    """A scored pair of stream length T (distinct inputs by k) for the validation-pool tests."""
    from audits.auditor import ScoredCandidate
    from audits.search import Candidate

    p = tuple([0.1 + 0.001 * k] * T)
    return ScoredCandidate(score, Candidate(p, tuple(x + 0.05 for x in p), "mixed"), f"halt={T}", np.ones(1, bool))


def _pool(explore: bool):
    from audits.auditor import GTMProblem, Selection, validation_pool

    ranked = tuple(_scored(5.0 - 0.1 * k, 2, k) for k in range(10))  # the last round: refinements of one T=2 pair
    long_pair = _scored(3.4, 4, 99)  # a T=4 pair scored in an earlier round only
    latest = tuple(sorted(ranked + (long_pair,), key=lambda s: -s.score))
    problem = GTMProblem(SimulatorTarget(make_plan(GTMConfig.load("examples/default.toml"))), 0.1, max_T=10)
    problem.explore = explore
    sel = Selection(ranked=ranked, best=ranked[0], rounds=2, pairs_examined=11, latest=latest)
    return validation_pool(problem, sel), long_pair


def test_validation_keeps_the_best_pair_of_a_stream_length_the_last_round_lost():
    """Issue 20 (power suite, step-noise-reused): the refinements of a short strong pair filled the last
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
    """Issue 20 (power suite, audit seed 4, 3e7 samples): the T=4 pair of true loss 10 is the witness
    (bound 9.5); with refinements sampled first it had been 6.09 (a T=2 pair of loss 6.2)."""
    assert _reused_bound() > 8.5


@pytest.mark.slow
def test_step_noise_reused_check_has_power(monkeypatch):
    """Companion: without the stream-length slots the same audit ends on the T=2 pair (bound < 7)."""
    import audits.auditor as A

    monkeypatch.setattr(A, "VALIDATION_SHAPES", 0)
    assert _reused_bound() < 7
