"""The GTM as an OpenDP interactive measurement: its privacy map and measure per budget policy, queries
refused before any evaluation, composition inside OpenDP's compositors, feature flags, and the
statistical audit of the measurement end to end (halting index as the output)."""

import math

import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp import OpenDPMechanism
from audits.integrations.opendp_audit import audit_measurement
from audits.integrations.opendp_gtm import (
    GTMSession,
    MissingOpenDPFeature,
    gtm_output_measure,
    gtm_privacy_map,
    halting_index,
    make_gtm,
)
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import GTMError, InvalidParameter, UnsupportedConfiguration
from gtm_core.reference import GTMRun

FEATURES = ("contrib", "honest-but-curious")
SPACE = (dp.atom_domain(T=bool), dp.discrete_distance())


@pytest.fixture(autouse=True)
def features():
    """The tests enable the features make_user_measurement needs (the module never does)."""
    dp.enable_features(*FEATURES)
    yield
    dp.enable_features(*FEATURES)


def _rr(p=0.75):
    return dp.m.make_randomized_response_bool(p)


def _config(eps_t, *, epsilon=20.0, horizon=3, policy=None, **stream):
    gtm = {"epsilon": epsilon, "theta": 1.0, "gamma": 2.0, "beta": 0.2}
    if policy is not None:
        gtm["evaluation_budget"] = policy
    return GTMConfig.from_dict({"gtm": gtm, "stream": {"p_star": 0.6, "horizon": horizon, "eps_t": eps_t, **stream}})


class _Counted:
    """A binary query that counts its own invocations (to show a refusal evaluated nothing)."""

    def __init__(self, eps=math.log(3)):
        self.calls = 0
        rr = _rr(math.exp(eps) / (1 + math.exp(eps)))

        def function(x):
            self.calls += 1
            return rr(x)

        self.measurement = dp.m.make_user_measurement(*SPACE, dp.max_divergence(), function=function,
                                                      privacy_map=lambda d: rr.map(d), TO=bool)


def test_privacy_map_gives_the_configuration_epsilon_and_refuses_larger_d_in():
    gtm = make_gtm(_config(_rr().map(1)), *SPACE)
    assert gtm.output_measure == dp.max_divergence()
    assert gtm.map(1) == 20.0 and gtm.map(0) == 20.0
    with pytest.raises(dp.OpenDPException, match="exceeds the distance the GTM was built for"):
        gtm.map(2)
    wide = make_gtm(_config(_rr().map(2)), *SPACE, d_in=2)
    assert wide.map(2) == 20.0


def test_each_budget_policy_reports_its_measure():
    pure = make_gtm(_config(0.1, epsilon=1.0, horizon=10), *SPACE)
    assert pure.output_measure == dp.max_divergence() and pure.map(1) == 1.0
    cfg = GTMConfig.load("examples/unsafe_budget.toml")
    plan = make_plan(cfg)
    capped = make_gtm(cfg, *SPACE)
    assert capped.output_measure == dp.approximate(dp.max_divergence())
    eps, delta = capped.map(1)
    assert eps == plan.worst_claimed_loss() and delta == plan.privacy_delta() and delta > 0


def test_query_refused_before_any_evaluation_when_its_map_exceeds_the_plan():
    gtm = make_gtm(_config(0.5), *SPACE)
    q = gtm(True)
    counted = _Counted(math.log(3))  # eps_t = ln 3 > planned 0.5
    with pytest.raises(dp.OpenDPException, match="above the step's planned eps_t"):
        q(counted.measurement)
    assert counted.calls == 0


def test_query_on_another_space_or_not_a_measurement_is_refused():
    gtm = make_gtm(_config(_rr().map(1)), *SPACE)
    q = gtm(True)
    other = dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance()
    count = other >> dp.t.then_count() >> dp.m.then_laplace(20.0) >> dp.new_function(lambda c: c > 2, TO=bool)
    with pytest.raises(dp.OpenDPException, match="the GTM was built on domain"):
        q(count)
    with pytest.raises(dp.OpenDPException, match="must be an OpenDP Measurement"):
        q("not a measurement")


def _constant(value: bool, like):
    """A query that always answers `value`, declaring `like`'s privacy map (a constant is 0-DP, so any
    declared map is sound): with a seeded GTM run the answers are then deterministic. OpenDP's own
    measurements draw from the OS CSPRNG, which no seed fixes."""
    return dp.m.make_user_measurement(*SPACE, dp.max_divergence(), function=lambda x: value,
                                      privacy_map=lambda d: like.map(d), TO=bool)


def test_answers_halt_or_continue_and_refuses_after_halt_and_past_the_horizon():
    rr = _rr()
    gtm = make_gtm(_config(rr.map(1)), *SPACE)
    q = gtm(True)
    assert q(rr) in (True, False)  # OpenDP's randomized response: Pr[+1] = 0.75 >= p* = 0.6
    # a query answering +1 always, on a seeded run: Theorem 21 halts at step 1 (deterministic here)
    seeded = make_gtm(_config(rr.map(1)), *SPACE, new_run=lambda plan: GTMRun(plan, seed=1))
    sq = seeded(True)
    assert sq(_constant(True, rr)) is True
    with pytest.raises(dp.OpenDPException, match="halted at step 1"):
        sq(_constant(True, rr))
    # a query answering -1 always: no evaluation is ever +1, so the run continues through the horizon
    low = make_gtm(_config(rr.map(1), horizon=2), *SPACE, new_run=lambda plan: GTMRun(plan, seed=3))
    lq = low(False)
    assert [lq(_constant(False, rr)), lq(_constant(False, rr))] == [False, False]
    with pytest.raises(dp.OpenDPException, match="past the configuration's horizon"):
        lq(_constant(False, rr))


def test_approximate_queries_go_through_purification():
    rr = _rr()
    approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.c.make_pureDP_to_zCDP(rr)), 1e-6)
    eps, delta = approx.map(1)
    gtm = make_gtm(_config(eps, delta_t=1e-6), *SPACE, new_run=lambda plan: GTMRun(plan, seed=2))
    assert make_plan(_config(eps, delta_t=1e-6)).step(1).phi > 0  # the step purifies (Lemma 24)
    assert gtm(True)(approx) in (True, False)
    strict = make_gtm(_config(eps), *SPACE)  # planned delta_t = 0 does not cover delta = 1e-6
    with pytest.raises(dp.OpenDPException, match="delta_t=1e-06"):
        strict(True)(approx)


def test_composition_charges_the_sum():
    rr = _rr()
    gtm = make_gtm(_config(rr.map(1)), *SPACE)
    count = dp.m.make_randomized_response_bool(0.6)
    adaptive = dp.c.make_adaptive_composition(*SPACE, dp.max_divergence(), d_in=1,
                                              d_mids=[gtm.map(1), rr.map(1), count.map(1)])
    assert adaptive.map(1) == pytest.approx(20.0 + rr.map(1) + count.map(1), rel=1e-12)
    compositor = adaptive(True)
    child = compositor(gtm)
    assert compositor(rr) in (True, False) and compositor(count) in (True, False)
    assert child(rr) in (True, False)  # the GTM's queryable answers after the later queries (concurrent)
    odometer = dp.c.make_fully_adaptive_composition(*SPACE, dp.max_divergence())(False)
    odometer(gtm)
    odometer(rr)
    odometer(count)
    assert odometer.privacy_loss(1) == pytest.approx(20.0 + rr.map(1) + count.map(1), rel=1e-12)


def test_missing_features_raise_a_typed_error_naming_the_feature():
    dp.disable_features("honest-but-curious")
    with pytest.raises(MissingOpenDPFeature, match="honest-but-curious") as exc:
        make_gtm(_config(0.5), *SPACE)
    assert exc.value.feature == "honest-but-curious" and isinstance(exc.value, UnsupportedConfiguration)
    assert "honest-but-curious" not in dp.GLOBAL_FEATURES  # the module did not enable it
    dp.disable_features("contrib")
    with pytest.raises(MissingOpenDPFeature, match="'contrib'"):
        make_gtm(_config(0.5), *SPACE)
    assert "contrib" not in dp.GLOBAL_FEATURES


def test_bad_arguments_are_typed_errors():
    with pytest.raises(InvalidParameter, match="config"):
        make_gtm({"gtm": {}}, *SPACE)
    with pytest.raises(InvalidParameter, match="input_domain"):
        make_gtm(_config(0.5), "bool", SPACE[1])
    with pytest.raises(InvalidParameter, match="d_in"):
        make_gtm(_config(0.5), *SPACE, d_in=0)
    assert issubclass(MissingOpenDPFeature, GTMError)


def test_session_repr_shows_no_secret():
    plan = make_plan(_config(0.5))
    session = GTMSession(plan, True, *SPACE, 1, GTMRun(plan, seed=1))
    assert "next_step=1" in repr(session) and "True" not in repr(session).replace("halted=False", "")


# --- the statistical audit of make_gtm, end to end -------------------------------------------------
#
# A GTM run evaluates its OpenDP query N_t times through the FFI (about a millisecond each), so a run
# costs tens of milliseconds even on a cheap configuration (exact_noise, eps = 2, eps_t = 0.2: c_t <= 4,
# tens of evaluations per step): a statistically meaningful audit takes minutes, hence slow.

AUDIT_EPS_T = 0.2


def _audit_config():
    rr = _rr(math.exp(AUDIT_EPS_T) / (1 + math.exp(AUDIT_EPS_T)))
    cfg = GTMConfig.from_dict({"gtm": {"epsilon": 2.0, "theta": 1.0, "gamma": 2.0, "beta": 0.3,
                                       "parameterization": "exact_noise"},
                               "stream": {"p_star": 0.5, "horizon": 2, "eps_t": rr.map(1)}})
    return cfg, rr


def _released(gtm, queries):
    """The GTM's halting index as a (non-interactive) OpenDP measurement with the GTM's own map."""
    return dp.m.make_user_measurement(*SPACE, gtm.output_measure, function=lambda x: halting_index(gtm(x), queries),
                                      privacy_map=gtm.map)


class _Unchecked(GTMSession):
    """Broken on purpose: accepts any binary query, whatever its privacy map says."""

    def check(self, query):
        return OpenDPMechanism(query, self.d_in)


@pytest.mark.slow
def test_audit_end_to_end_finds_no_violation_and_flags_a_broken_variant():
    """alpha = 0.05, seed 0, 60 s each. The queries of the correct run are eps_t = 0.2 randomized
    responses, the second negated (Pr[+1] rises on one dataset and falls on the other). The broken
    variant skips the plan check, so a randomized response with eps_t = ln 999 is evaluated by a GTM
    planned for 0.2: on False it never halts, on True it halts at once - far above the claimed 2."""
    cfg, rr = _audit_config()
    gtm = make_gtm(cfg, *SPACE)
    negated = rr >> dp.new_function(lambda b: not b, TO=bool)
    correct = audit_measurement(_released(gtm, [rr, negated]), seconds=60, seed=0)
    assert correct.verdict == "no-violation-found" and correct.epsilon_lower_bound <= 2.0
    plan = make_plan(cfg)
    broken_gtm = dp.m.make_user_measurement(
        *SPACE, gtm_output_measure(plan), privacy_map=gtm_privacy_map(plan, 1),
        function=lambda x: _Unchecked(plan, x, *SPACE, 1, GTMRun(plan)).queryable())
    strong = _rr(0.999)
    broken = audit_measurement(_released(broken_gtm, [strong]), seconds=60, seed=0)
    assert broken.verdict == "violation" and broken.epsilon_lower_bound > 2.0


# --- the broken variant with the per-step noise omitted, built through make_gtm ---------------------------


def test_no_step_noise_variant_goes_through_make_gtm_and_is_truly_not_dp_on_the_step_pair():
    """audits/integrations/opendp_catalogue.py's power companion: the same make_gtm (same map, same plan check)
    whose run draws eta_2,t ~ Exp(1e-9 tau_2). Its claim is the correct one's; a query above the plan is refused
    by it too; and on the step pair (Pr[True] 0.2, 0.2 on True; 0.2 e^0.2, 0.2 e^-0.2 on False) its numerical
    halting law (audits.power.distribution) has loss > 5 at 'halt at step 2', the correct GTM's <= 2.
    Deterministic (no sampling)."""
    from audits.integrations.opendp_catalogue import (STEP_NOISE_FACTOR, STEP_PAIR_EPS_T, STEP_PAIR_P,
                                                      step_pair_config, without_step_noise)
    from audits.power.broken import CORRECT, VARIANTS
    from audits.power.distribution import halting_distribution

    cfg = step_pair_config()
    plan = make_plan(cfg)
    broken_plan = without_step_noise(plan)
    for t in (1, 2):
        assert broken_plan.step(t).tau2 == pytest.approx(plan.step(t).tau2 * STEP_NOISE_FACTOR)
        assert broken_plan.step(t).eps_t == plan.step(t).eps_t and broken_plan.step(t).c == plan.step(t).c
    broken = make_gtm(cfg, *SPACE, new_run=lambda p: GTMRun(without_step_noise(p)))
    assert broken.map(1) == make_gtm(cfg, *SPACE).map(1) == 2.0
    with pytest.raises(dp.OpenDPException, match="above the step's planned"):
        broken(True)(_rr(0.9))  # eps_t = ln 9 > 0.2: refused before any evaluation, as by the correct GTM
    p, e = STEP_PAIR_P, STEP_PAIR_EPS_T
    on_true, on_false = [p, p], [p * math.exp(e), p * math.exp(-e)]
    losses = {}
    for name, d in (("correct", CORRECT), ("no-step-noise", VARIANTS["no-step-noise"])):
        a, b = halting_distribution(plan, on_true, d), halting_distribution(plan, on_false, d)
        losses[name] = math.log(a[2] / b[2])
    assert losses["correct"] <= 2.0 < 5.0 < losses["no-step-noise"], losses


@pytest.mark.slow
def test_audit_end_to_end_flags_make_gtm_without_step_noise():
    """alpha = 0.05, seed 0, 240 s (GTM_STEP_PAIR_SECONDS): the auditor flags the make_gtm variant whose run omits the
    per-step noise (loss 5.4 at 'halt at step 2' on the step pair, claim 2). Not within 60 s on this shared
    2-core machine: a GTM run on the step pair makes a few hundred query evaluations through OpenDP's FFI,
    0.2-0.3 s per run at load 6 (docs/opendp.md, "The GTM as an OpenDP interactive measurement")."""
    from audits.integrations.opendp_catalogue import GTM_STEP_PAIR_SECONDS, gtm_no_step_noise

    result = audit_measurement(gtm_no_step_noise(), seconds=GTM_STEP_PAIR_SECONDS, seed=0)
    assert result.verdict == "violation" and result.epsilon_lower_bound > 2.0, result.to_dict()


def test_capped_gtm_composes_as_an_approximate_measurement_and_not_as_a_pure_one():
    # examples/budget/capped.toml: evaluation_budget = "refuse", (1, 0.0111)-DP (docs/deployment.md)
    cfg = GTMConfig.load("examples/budget/capped.toml")
    plan = make_plan(cfg)
    capped = make_gtm(cfg, *SPACE)
    assert capped.output_measure == dp.approximate(dp.max_divergence())
    assert gtm_output_measure(plan) == capped.output_measure
    eps, delta = capped.map(1)
    assert (eps, delta) == (1.0, plan.privacy_delta()) and 0.01 < delta < 0.012
    query = dp.c.make_approximate(_rr(0.6))  # eps_t = ln 1.5 <= the planned 0.5
    adaptive = dp.c.make_adaptive_composition(*SPACE, dp.approximate(dp.max_divergence()), d_in=1,
                                              d_mids=[capped.map(1), query.map(1)])
    eps_sum, delta_sum = adaptive.map(1)
    assert eps_sum == pytest.approx(1.0 + math.log(1.5), rel=1e-12) and delta_sum == pytest.approx(delta, rel=1e-12)
    compositor = adaptive(True)
    compositor(capped)  # the GTM's queryable is built; no step is run here (a step makes ~10^8 evaluations)
    assert compositor(query) in (True, False)
    # a pure compositor cannot take it: OpenDP refuses the measure, so no pure claim leaks out of the GTM
    pure = dp.c.make_adaptive_composition(*SPACE, dp.max_divergence(), d_in=1, d_mids=[1.0])(True)
    with pytest.raises(dp.OpenDPException, match="MeasureMismatch"):
        pure(capped)
    uncapped = make_gtm(GTMConfig.from_dict({**cfg.to_dict(), "gtm": {**cfg.to_dict()["gtm"],
                                                                       "evaluation_budget": "none"}}), *SPACE)
    assert uncapped.output_measure == dp.max_divergence() and uncapped.map(1) == 1.0


def test_the_capped_example_maps_to_its_certified_eps_delta():
    """examples/budget/capped.toml: the map is (1, 0.0111), the delta gtm plan, deploy status and the
    certificate's privacy.approximate state (a non-vacuous delta, unlike unsafe_budget's 74)."""
    cfg = GTMConfig.load("examples/budget/capped.toml")
    gtm = make_gtm(cfg, *SPACE)
    assert gtm.output_measure == dp.approximate(dp.max_divergence())
    eps, delta = gtm.map(1)
    assert eps == 1.0 and delta == make_plan(cfg).privacy_delta() and f"{delta:.3g}" == "0.0111"
    uncapped = GTMConfig.from_dict({**cfg.to_dict(), "gtm": {**cfg.to_dict()["gtm"], "evaluation_budget": "none"}})
    assert make_gtm(uncapped, *SPACE).map(1) == 1.0  # companion: the same design uncapped is pure
