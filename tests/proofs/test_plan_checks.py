"""The rigorous checks behind `gtm certify`: they pass on planned steps and are sharp - each one
fails when its inequality is broken by a relative 1e-12 (and passes just inside the boundary)."""

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from flint import arb

from proofs import plan_checks as C
from gtm_core import GTMConfig, make_plan


def _plan(param="theorem21", **stream):
    g = {"gamma": 1.5, "beta": 0.05, "parameterization": param}
    if param == "theorem23":
        g.update(epsilon_c=1.0, c_h=2.0)
    else:
        g.update(epsilon=1.0, theta=1.0)
    s = {"eps_t": 0.1, "p_star": 0.5, "horizon": 50}
    s.update(stream)
    return make_plan(GTMConfig.from_dict({"gtm": g, "stream": s}))


def _checks(plan, sp):
    g = plan.config.gtm
    return C.step_checks(sp, tau1=plan.tau1, mu1=plan.mu1, gamma=g.gamma, parameterization=plan.parameterization,
                         epsilon_c=g.epsilon_c, c_h=g.c_h, budget_factor=g.evaluation_budget_factor)


@pytest.mark.parametrize("param", ["theorem21", "theorem23"])
@pytest.mark.parametrize("stream", [dict(), dict(p_star=0.95, eps_t=0.01), dict(delta_t=1e-6),
                                    dict(p_star=0.05, eps_t=0.3)])
def test_planned_steps_pass_every_applicable_check(param, stream):
    plan = _plan(param, **stream)
    for t in (1, 2, 7, 50):
        out = _checks(plan, plan.step(t))
        out.pop("values")
        failing = [k for k, v in out.items() if v is False]
        # p* = 0.05 with eps_t = 0.3 makes the threshold vanish (ratio < floor): that check alone may fail
        if stream.get("eps_t") == 0.3:
            failing = [k for k in failing if k != "threshold_ratio"]
        assert failing == [], (param, stream, t, failing)
        assert set(out) == set(C.step_names())


def _broken(sp, **changes):
    return dataclasses.replace(sp, **changes)


def test_base_rate_check_is_sharp():
    plan = _plan()
    sp = plan.step(3)
    assert sp.s == 1
    exact_rho = float(C.lambda_left(sp.c, sp.beta_II).mid()) / sp.p_star
    assert _checks(plan, _broken(sp, rho=exact_rho * (1 + 1e-12)))["base_rate"] is True
    assert _checks(plan, _broken(sp, rho=exact_rho * (1 - 1e-12)))["base_rate"] is False


def test_continuation_chain_check_is_sharp():
    plan = _plan()
    sp = plan.step(3)
    with C.arb_precision():
        limit = float((C.lambda_right(sp.c, sp.beta_I) / (C.exact(sp.rho) * C.exact(sp.Lambda))).mid())
    assert _checks(plan, _broken(sp, p_bar=limit * (1 - 1e-12)))["continuation_chain"] is True
    assert _checks(plan, _broken(sp, p_bar=limit * (1 + 1e-12)))["continuation_chain"] is False


def test_flipped_variant_checks_are_sharp():
    plan = _plan(p_star=0.95, eps_t=0.01)
    sp = plan.step(5)
    assert sp.s == -1
    q = 1 - sp.p_star
    with C.arb_precision():
        rho_max = float((C.lambda_right(sp.c, sp.beta_II) / C.exact(q)).mid())
        pbar_max = float((1 - C.lambda_left(sp.c, sp.beta_I) * C.exact(sp.Lambda) / C.exact(sp.rho)).mid())
    assert _checks(plan, _broken(sp, rho=rho_max * (1 + 1e-12)))["base_rate"] is False
    assert _checks(plan, _broken(sp, p_bar=pbar_max + 1e-12))["continuation_chain"] is False
    assert _checks(plan, _broken(sp, p_bar=pbar_max - 1e-9))["continuation_chain"] is True


def test_noise_range_check_is_sharp():
    plan = _plan()
    sp = plan.step(10)
    need = float(C.noise_range_needed(sp.eps_t, plan.mu1, sp.tau2, sp.beta_t).mid())
    assert _checks(plan, _broken(sp, Lambda=need * (1 - 1e-12)))["noise_range"] is False
    assert _checks(plan, _broken(sp, Lambda=need * (1 + 1e-12)))["noise_range"] is True


def test_lemma11_check_fails_for_a_too_small_threshold():
    plan = _plan()
    sp = plan.step(1)
    assert _checks(plan, _broken(sp, c=sp.c // 2))["lemma11_gap"] is False
    assert _checks(plan, _broken(sp, c=3))["lemma11_tail_validity"] is False


def test_poisson_tail_checks_detect_a_wrong_rate():
    plan = _plan()
    sp = plan.step(2)
    out = _checks(plan, _broken(sp, rho=sp.rho * 0.9))  # halting gets too weak
    assert out["poisson_halting_tail"] is False
    out = _checks(plan, _broken(sp, p_bar=sp.p_bar * 1.3))  # continuation claimed too high
    assert out["poisson_continuation_tail"] is False


def test_budget_check_is_sharp():
    plan = _plan()
    sp = plan.step(4)
    lam_bar = max(sp.rho * sp.Lambda, math.log(4 / sp.beta_t))
    assert _checks(plan, _broken(sp, evaluation_budget=math.floor(math.e * lam_bar) - 1))["lemma22_budget"] is False
    assert _checks(plan, _broken(sp, evaluation_budget=math.ceil(math.e * lam_bar) + 1))["lemma22_budget"] is True


def test_purification_checks_are_sharp():
    plan = _plan(delta_t=1e-6)
    sp = plan.step(1)
    need = sp.delta_t / (math.expm1(sp.eps_t) + 2 * sp.delta_t)
    assert _checks(plan, _broken(sp, phi=need * (1 - 1e-12)))["purification_crossover"] is False
    assert _checks(plan, _broken(sp, phi=need * (1 + 1e-12)))["purification_crossover"] is True
    assert _checks(plan, _broken(sp, phi=sp.p_bar))["purification_gap"] is False


def test_expost_check_is_sharp():
    plan = _plan("theorem23")
    sp = plan.step(6)
    limit = 2 / (2.0 * sp.eps_t * math.log(4 / sp.beta_t))
    assert _checks(plan, _broken(sp, tau2=limit * (1 - 1e-12)))["expost_halting_loss"] is False
    assert _checks(plan, _broken(sp, tau2=limit * (1 + 1e-12)))["expost_halting_loss"] is True


def test_pure_epsilon_in_exact_rationals():
    plan = _plan()
    tau2 = plan.step(1).tau2
    ok, worst = C.pure_epsilon(plan.tau1, [tau2], 1.0)
    assert ok and worst <= 1
    ok, worst = C.pure_epsilon(plan.tau1, [math.nextafter(tau2, 0)], 1.0)
    assert not ok and worst > Fraction(1)


def test_eta1_tail_and_failure_allocation():
    plan = _plan()
    ok, p = C.eta1_tail(plan.mu1, plan.tau1, 0.05)
    assert ok and p <= 0.0125 + 1e-18
    ok, _ = C.eta1_tail(plan.tau1 * math.log(80) * (1 - 1e-12), plan.tau1, 0.05)
    assert not ok
    rows = [plan.step(t).to_dict() for t in range(1, 51)]
    ok, total, parts = C.failure_allocation(plan.mu1, plan.tau1, rows, 0.05, sample_complexity_share=False)
    assert ok and total <= 0.05
    assert total == pytest.approx(sum(parts.values()), rel=1e-12)
    bad = [dict(r, beta_I=r["beta_I"] * 4) for r in rows]
    assert not C.failure_allocation(plan.mu1, plan.tau1, bad, 0.05, sample_complexity_share=False)[0]


def test_zeta_ball_contains_zeta():
    ball, _ = C.zeta_ball()
    assert C.lower(ball) <= 1.2330926408131823 <= C.upper(ball)
    assert 1 < C.lower(ball) and C.upper(ball) < 1.25


@pytest.mark.parametrize("p_star,eps_t", [(0.5, 0.1), (0.95, 0.01)])
def test_expected_evaluations_match_numerical_integration(p_star, eps_t):
    """Lemma 12 closed form vs. direct integration of E[rho exp(eps s (mu1 - eta1 + eta2))]."""
    plan = _plan(p_star=p_star, eps_t=eps_t)
    sp = plan.step(3)
    closed = C.expected_lambda(sp, tau1=plan.tau1, mu1=plan.mu1)

    def mgf(a, tau):  # E[e^{a eta}], eta ~ Exp(tau), by quadrature
        val, _ = integrate.quad(lambda x: math.exp(a * x - x / tau) / tau, 0, math.inf)
        return val

    s, e = sp.s, sp.eps_t
    direct = sp.rho * math.exp(s * e * plan.mu1) * mgf(-s * e, plan.tau1) * mgf(s * e, sp.tau2)
    assert closed == pytest.approx(direct, rel=1e-9)


def test_expected_evaluations_infinite_when_the_moment_diverges():
    plan = _plan(eps_t=0.4)  # sigma2 = 1/(0.4 * 3) < 1
    assert C.expected_lambda(plan.step(1), tau1=plan.tau1, mu1=plan.mu1) == math.inf


def test_budget_exceed_bound_is_a_valid_upper_bound():
    """Monte Carlo (seed 7, 200k runs): the empirical Pr[N > budget] lies below the bound.
    The lower 1 - 1e-6 Clopper-Pearson limit must not exceed the bound (alpha = 1e-6).
    Power companion: a bound that ignores the noise (Poisson tail at rho alone) is exceeded."""
    plan = _plan(eps_t=0.2)
    sp = plan.step(1)
    budget = int(sp.rho * 1.5)
    bound = C.budget_exceed_bound(sp, tau1=plan.tau1, mu1=plan.mu1, budget=budget)
    rng = np.random.default_rng(7)
    n = 200_000
    lam = sp.rho * np.exp(sp.eps_t * (plan.mu1 - rng.exponential(plan.tau1, n) + rng.exponential(sp.tau2, n)))
    k = int((rng.poisson(np.minimum(lam, 1e15)) > budget).sum())
    lower = stats.beta.ppf(1e-6, k, n - k + 1) if k else 0.0
    assert lower <= bound
    naive = float(stats.poisson.sf(budget, sp.rho))
    assert lower > naive


def test_rigorous_budget_bound_agrees_with_the_planner():
    plan = _plan()
    for t in (1, 20):
        sp = plan.step(t)
        rig = C.budget_exceed_bound(sp, tau1=plan.tau1, mu1=plan.mu1)
        assert rig >= sp.budget_exceed_probability * 0.5
        assert rig <= max(10 * sp.budget_exceed_probability, 1e-300)


@pytest.mark.parametrize("stream", [dict(), dict(p_star=0.95, eps_t=0.01), dict(eps_t=0.0)])
def test_exact_noise_steps_are_checked_on_the_noise_integrated_probabilities(stream):
    plan = _plan("exact_noise", **stream)
    for t in (1, 50):
        sp = plan.step(t)
        out = _checks(plan, sp)
        values = out.pop("values")
        assert out["integrated_halting_tail"] is True and out["integrated_continuation_tail"] is True
        for name in ("lemma11_gap", "base_rate", "continuation_chain", "poisson_halting_tail",
                     "poisson_continuation_tail"):
            assert out[name] is None  # Chernoff / good-event tails: not what this planner rests on
        assert all(v is not False for v in out.values()), out
        assert values["type_II_bound"] <= sp.beta_II and values["type_I_bound"] <= sp.beta_I
        # power: the wrong base rate fails the noise-integrated check
        wrong = dataclasses.replace(sp, rho=sp.rho / 2 if sp.s == 1 else sp.rho * 2)
        assert _checks(plan, wrong)["integrated_halting_tail"] is False
        wrong = dataclasses.replace(sp, rho=sp.rho * 2 if sp.s == 1 else sp.rho / 2)
        assert _checks(plan, wrong)["integrated_continuation_tail"] is False
    # other planners do not get the noise-integrated checks
    out = _checks(_plan("theorem21"), _plan("theorem21").step(1))
    assert out["integrated_halting_tail"] is None and out["poisson_halting_tail"] is True


def test_merged_failure_allocation_is_exactly_the_exact_noise_accounting():
    plan = _plan("exact_noise", horizon=1000)
    rows = [plan.step(t).to_dict() for t in range(1, 1001)]
    ok, total, parts = C.failure_allocation(plan.mu1, plan.tau1, rows, 0.05, sample_complexity_share=False,
                                            noise_tails_merged=True)
    assert ok and parts["noise_tails"] == 0.0 and total <= 0.05
    # charging Theorem 21's beta_t/4 noise share on top of the merged beta^I_t = beta_t/2 overspends
    ok2, total2, _ = C.failure_allocation(plan.mu1, plan.tau1, rows, 0.05, sample_complexity_share=False)
    assert not ok2 and total2 > 0.05


@pytest.mark.parametrize("c,alpha", [(0, 0.05), (3, 1e-3), (40, 0.0125), (1000, 1e-9)])
def test_arb_lambda_enclosures_contain_the_formulas_values(c, alpha):
    """plan_checks' arb transcription of equations (3)-(4) (independent on purpose) contains the
    mpmath value of gtm_core.formulas at 50 digits; a wrong alpha is not contained (power)."""
    import mpmath

    from gtm_core import formulas as F

    with C.arb_precision():
        for ball, fn in ((C.lambda_left(c, alpha), F.lambda_left), (C.lambda_right(c, alpha), F.lambda_right)):
            def near(x):  # the 50-digit value as a ball of radius 1e-40 relative
                return arb(mpmath.nstr(x, 45), abs(float(x)) * 1e-40)

            assert ball.overlaps(near(fn(c, alpha, dps=50)))
            assert not ball.overlaps(near(fn(c, alpha * 1.001, dps=50)))
