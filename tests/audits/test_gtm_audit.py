"""The GTM audit (audits.gtm_audit) on in-process targets: result object, reproducibility, validation."""

import numpy as np
import pytest

from audits.audit_results import AuditResult
from audits.gtm_audit import audit
from audits.power.broken import variant
from audits.targets import CallableTarget, SimulatorTarget
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.input_privacy import InputPrivacy


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
    from audits.gtm_audit import audit_parameters
    from gtm_core import GTMConfig, make_plan

    cfg = GTMConfig.load("examples/default.toml")
    assert audit_parameters(cfg) == (1.0, InputPrivacy.from_user(0.1))
    # theorem23 is ex-post: the claim audited is the largest halting loss up to the horizon
    t23 = GTMConfig.load("examples/theorem23.toml").with_changes(horizon=30)
    plan = make_plan(t23)
    eps, eps_t = audit_parameters(t23)
    assert eps == max(plan.claimed_loss(t, True) for t in range(1, 31)) > plan.claimed_loss(1, True)
    per_step = cfg.with_changes(horizon=3, eps_t=[0.1, 0.0, 0.2])
    assert audit_parameters(per_step)[1] == InputPrivacy.from_user([0.1, 0.0, 0.2])
    assert audit_parameters(per_step)[1].to_json() == [0.1, 0.0, 0.2]


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


@pytest.mark.slow  # 35-75 s on the shared 2-core machine (durations of the 2026-12-04 run)
def test_the_reference_gtm_is_audited_through_its_budget_stops():
    # the README snippet's ReferenceTarget on a plan whose runs often stop on their budget: stops are
    # outcomes, never an EvaluationBudgetExceeded out of the audit
    from audits.targets import ReferenceTarget

    plan = make_plan(GTMConfig.load("examples/unsafe_budget.toml"))
    r = audit(ReferenceTarget(plan), epsilon=1.0, eps_t=0.001, seconds=None, max_samples=8_000, seed=0,
              progress=False, max_T=3)
    stops = {e.event: e for e in r.per_event}["stop"]
    assert stops.count > 0 and stops.count_prime > 0


def test_search_section_lists_families_and_skipped_regions(plan):
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=300_000, seed=2,
              progress=False, max_T=4)
    s = r.to_dict()["search"]
    assert {"grid", "mixed", "laplace"} <= set(s["families"])
    assert s["families"]["grid"]["scored"] == s["families"]["grid"]["proposed"]  # the first round sees all
    cov = s["coverage"]
    assert cov["probability_range"] == [1e-9, 1 - 1e-9] and cov["lengths"] == [1, 2, 3, 4]
    assert all(item["reason"] for item in cov["skipped"])


def test_a_per_step_eps_t_caps_the_streams_to_its_length(plan):
    """No eps_t is guessed past a per-step list (gtm_core.input_privacy): streams have at most L steps,
    and extra candidates longer than the list are refused up front."""
    from audits.gtm_audit import GTMProblem
    from audits.pair_search import Candidate

    problem = GTMProblem(SimulatorTarget(plan), [0.1, 0.2], max_T=50)
    assert problem.max_T == 2 and max(c.T for c in problem.initial_candidates()) == 2
    long_pair = Candidate((0.1, 0.1, 0.1), (0.11, 0.11, 0.11), "extra")
    with pytest.raises(InvalidParameter, match="extra_candidates: a pair of 3 steps, but eps_t has 2"):
        GTMProblem(SimulatorTarget(plan), [0.1, 0.2], extra_candidates=[long_pair])
    assert GTMProblem(SimulatorTarget(plan), 0.1, max_T=2, extra_candidates=[long_pair]).max_T == 2


@pytest.mark.parametrize("kw,msg", [
    (dict(seed=-1), "seed must be a non-negative integer"),
    (dict(max_T=0), "max_T must be a positive integer"),
    (dict(max_samples=3999), "max_samples must be >= 4000, got 3999"),
    (dict(seconds=-1.0, max_samples=None), "seconds must be a number of seconds"),
    (dict(eps_t=[]), "eps_t must be a number or a non-empty list"),
])
def test_check_audit_arguments_names_the_bad_argument(kw, msg):
    from audits.gtm_audit import check_audit_arguments

    args = dict(epsilon=1.0, eps_t=0.1, seconds=None, max_samples=40_000, confidence=0.95, seed=0, max_T=3)
    with pytest.raises(InvalidParameter, match=msg):
        check_audit_arguments(**{**args, **kw})
    assert check_audit_arguments(**args) == InputPrivacy.from_user(0.1)

