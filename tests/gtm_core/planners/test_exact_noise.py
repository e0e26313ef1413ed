"""The exact_noise planner (gtm_core/exact_noise_calibration.py).

Statistical checks (reference GTM, Algorithm 1, with eta_1 fixed through ``GTM.restore``): exact
binomial tests at ALPHA = 1e-3 with fixed seeds; each has a power companion on a deliberately wrong
plan (rho halved or doubled) that the same test must reject.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from flint import arb
from scipy import stats

from gtm_core import GTMConfig, make_plan, planners
from gtm_core.planners import exact_noise as XN
from gtm_core.planners.exact_noise_certificate import StepCertificate, certify_step
from gtm_core.errors import UnsupportedConfiguration
from gtm_core.exact import StepEval, StepModel, working_precision
from gtm_core.planners.exact_tails import expected_evaluations
from gtm_core.evaluation import BernoulliMechanism, Negated
from gtm_core.reference import GTM

ALPHA = 1e-3
N_RUNS = 30_000


def _config(parameterization="exact_noise", *, gamma=1.5, p_star=0.5, eps_t=0.1, horizon=1000, epsilon=1.0,
            theta=1.0, beta=0.05) -> GTMConfig:
    return GTMConfig.from_dict({
        "gtm": {"epsilon": epsilon, "theta": theta, "gamma": gamma, "beta": beta,
                "parameterization": parameterization},
        "stream": {"eps_t": eps_t, "p_star": p_star, "horizon": horizon},
    })


# (gamma, p*, eps_t): direct, direct at the edges of p*, flipped (p* = 0.95, eps_t = 0.01), no noise
GRID = [(1.5, 0.5, 0.1), (1.25, 0.1, 0.1), (2.0, 0.9, 0.1), (1.5, 0.95, 0.01), (2.0, 0.95, 0.01),
        (1.5, 0.5, 0.0), (1.5, 0.3, 0.25)]


# ---------------------------------------------------------------------------
# the float closed forms used by the search, against the exact engine's arb balls


@pytest.mark.parametrize("s", [1, -1])
def test_float_closed_forms_match_the_exact_engine(s):
    """Both code paths (scipy incomplete gamma; log-concave quadrature for c+1-sigma <= 0 or when scipy
    under/overflows), every sign, heavy and light Pareto tails, no noise."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for c in (0, 1, 3, 13, 44, 200):
        for eps in (0.0, 1e-4, 0.02, 0.1, 0.3):
            tau2 = 3.0
            for mean in np.exp(rng.uniform(math.log(1e-4), math.log(4 * (c + 10)), 4)):
                with working_precision(160):
                    ev = StepEval(StepModel(0, s, c, float(mean), eps, tau2, arb(1)), arb(1.0), 160)
                    balls = ev.probs(arb(1.0))  # x = mu_1: the count-mean scale is rho r = mean
                floats = XN.step_probabilities_float(s, c, float(mean), None if eps == 0 else 1 / (eps * tau2))
                for f, b in zip(floats, balls):
                    ref = float(b.mid())
                    if ref > 1e-280:
                        worst = max(worst, abs(f - ref) / ref)
    assert worst < 1e-8


# ---------------------------------------------------------------------------
# certificates


@pytest.mark.parametrize("gamma,p_star,eps_t", GRID)
def test_certificates_hold_and_keep_theorem21s_guarantee(gamma, p_star, eps_t):
    cn = _config(gamma=gamma, p_star=p_star, eps_t=eps_t)
    p21 = make_plan(_config("theorem21", gamma=gamma, p_star=p_star, eps_t=eps_t))
    pn = make_plan(cn)
    assert (pn.tau1, pn.mu1) == (p21.tau1, p21.mu1)
    for t in (1, 10, 100, 1000):
        sn, s21 = pn.step(t), p21.step(t)
        # the claimed guarantee is theorem21's: same threshold, noise, Lambda and flipping rule
        assert (sn.p_bar, sn.Lambda, sn.tau2, sn.s, sn.beta_t) == (s21.p_bar, s21.Lambda, s21.tau2, s21.s, s21.beta_t)
        assert sn.beta_I == sn.beta_t / 2 and sn.beta_II == sn.beta_t / 4
        cert = XN.step_certificate(cn, t)
        assert cert["certified"] and cert["type_I_certified"] and cert["type_II_certified"]
        assert (cert["c"], cert["rho"], cert["s"]) == (sn.c, sn.rho, sn.s)
        assert cert["type_II_upper"] <= sn.beta_II and cert["type_I_upper"] <= sn.beta_I
        # cheaper than theorem21 (c and expected evaluations)
        assert sn.c <= s21.c
        assert expected_evaluations(pn, t) < expected_evaluations(p21, t)


def test_flipped_grid_point_is_flipped():
    assert make_plan(_config(p_star=0.95, eps_t=0.01)).step(1).s == -1


@pytest.mark.parametrize("gamma,p_star,eps_t", [(1.5, 0.5, 0.1), (1.5, 0.95, 0.01), (1.5, 0.5, 0.0)])
def test_theorem21s_own_step_meets_both_inequalities(gamma, p_star, eps_t):
    """Soundness bookkeeping: Theorem 21's (c, rho) satisfies (I) with beta_t/2 and (II) with beta_t/4
    (its union bound implies them), so exact_noise only re-spends the same budget - and the search's
    upper end for c is feasible."""
    p21 = make_plan(_config("theorem21", gamma=gamma, p_star=p_star, eps_t=eps_t))
    for t in (1, 100):
        sp = p21.step(t)
        cert = certify_step(sp.s, sp.c, sp.rho, eps_t=sp.eps_t, tau2=sp.tau2, mu1=p21.mu1, p_star=sp.p_star,
                               p_bar=sp.p_bar, beta_I=sp.beta_t / 2, beta_II=sp.beta_t / 4)
        assert cert.certified


def test_certificate_is_not_vacuous():
    """Power of the ball-arithmetic certificate: half the base rate breaks (II) (s=+1), a smaller c or a
    doubled base rate breaks (I); for the flipped variant the directions swap."""
    cn = _config()
    sp = make_plan(cn).step(1)
    kw = dict(eps_t=sp.eps_t, tau2=sp.tau2, mu1=make_plan(cn).mu1, p_star=sp.p_star, p_bar=sp.p_bar,
              beta_I=sp.beta_I, beta_II=sp.beta_II)
    assert certify_step(sp.s, sp.c, sp.rho, **kw).certified
    assert not certify_step(sp.s, sp.c, sp.rho / 2, **kw).type_II_certified
    assert not certify_step(sp.s, sp.c, sp.rho * 2, **kw).type_I_certified
    assert not certify_step(sp.s, sp.c - 1, sp.rho, **kw).certified
    cf = _config(p_star=0.95, eps_t=0.01)
    pf = make_plan(cf)
    sf = pf.step(1)
    kw = dict(eps_t=sf.eps_t, tau2=sf.tau2, mu1=pf.mu1, p_star=sf.p_star, p_bar=sf.p_bar,
              beta_I=sf.beta_I, beta_II=sf.beta_II)
    assert sf.s == -1 and certify_step(sf.s, sf.c, sf.rho, **kw).certified
    assert not certify_step(sf.s, sf.c, sf.rho * 2, **kw).type_II_certified  # more continuing
    assert not certify_step(sf.s, sf.c, sf.rho / 2, **kw).type_I_certified   # more halting


def test_step_certificate_serialised_form_round_trips():
    """certify_step's frozen value: its serialised form (the keys `gtm certify` reports), round trip."""
    cn = _config()
    plan = make_plan(cn)
    sp = plan.step(1)
    cert = certify_step(sp.s, sp.c, sp.rho, eps_t=sp.eps_t, tau2=sp.tau2, mu1=plan.mu1, p_star=sp.p_star,
                           p_bar=sp.p_bar, beta_I=sp.beta_I, beta_II=sp.beta_II)
    d = cert.to_dict()
    assert list(d) == ["s", "c", "rho", "type_II", "type_I", "type_II_upper", "type_I_upper", "beta_II", "beta_I",
                       "type_II_certified", "type_I_certified", "certified", "type_II_point", "type_I_point",
                       "precision_bits"]
    assert d["certified"] is (cert.type_II_certified and cert.type_I_certified)
    assert StepCertificate.from_dict(d) == cert
    # the reported text ball (12 digits, widened radius) contains the tight float upper bound
    text_ball = arb(cert.type_II)
    assert bool(text_ball.lower() <= cert.type_II_upper) and bool(cert.type_II_upper <= text_ball.upper())


def test_uncertifiable_step_raises_instead_of_returning(monkeypatch):
    cn = _config(horizon=5, gamma=1.3)
    planners.clear_caches()

    def never(st, c, rho):
        return StepCertificate(s=st.s, c=c, rho=rho, type_II="1", type_I="1", type_II_upper=1.0,
                                  type_I_upper=1.0, beta_II=st.beta_II, beta_I=st.beta_I,
                                  type_II_certified=False, type_I_certified=False, precision_bits=160)

    monkeypatch.setattr(XN, "_certify", never)
    with pytest.raises(UnsupportedConfiguration, match="could not certify"):
        XN.calibrate(cn, 1)
    with pytest.raises(UnsupportedConfiguration):
        make_plan(cn)
    planners.clear_caches()


# ---------------------------------------------------------------------------
# the search


@pytest.mark.parametrize("gamma,p_star,eps_t,t", [(1.5, 0.5, 0.1, 1), (1.5, 0.5, 0.1, 100), (1.5, 0.95, 0.01, 10),
                                                  (2.0, 0.5, 0.0, 10), (1.5, 0.3, 0.25, 1)])
def test_feasibility_is_monotone_in_c_and_c_is_minimal(gamma, p_star, eps_t, t):
    """The search assumes feasibility is monotone in c; scanned here on every c up to c_t + 30."""
    cn = _config(gamma=gamma, p_star=p_star, eps_t=eps_t)
    st = XN._Step(cn, t)
    c = make_plan(cn).step(t).c
    flags = [XN._feasible(st, k)[0] for k in range(0, c + 31)]
    assert not any(flags[:c]) and all(flags[c:])
    assert XN._feasible(st, st.c21)[0]
    # the same c from any starting hint (galloping) and without one
    assert XN._search(st) == c
    for hint in (0, max(c - 7, 0), c, c + 1, c + 50, 3 * c + 1):
        assert XN._search(st, hint) == c


def test_plan_does_not_depend_on_the_order_steps_are_planned():
    cn = _config(horizon=60, p_star=0.4)

    def fresh():
        planners.clear_caches()
        return make_plan(cn)

    forward = [fresh().step(t) for t in range(1, 61)]
    plan = fresh()
    backward = {t: plan.step(t) for t in range(60, 0, -1)}
    plan = fresh()
    scattered = {t: plan.step(t) for t in (37, 2, 60, 11, 1, 59)}
    for t, sp in enumerate(forward, start=1):
        assert backward[t] == sp
        if t in scattered:
            assert scattered[t] == sp


def test_noiseless_steps_are_poisson_only():
    """eps_t = 0: h is a Poisson CDF; (II) is Pr[Po(rho p*) <= c] <= beta_t/4 and (I) is
    Pr[Po(rho p_bar) >= c+1] <= beta_t/2 with p_bar = p*/gamma (Lambda = 1)."""
    cn = _config(eps_t=0.0)
    sp = make_plan(cn).step(3)
    assert sp.Lambda == 1.0 and sp.s == 1
    assert stats.poisson.cdf(sp.c, sp.rho * sp.p_star) <= sp.beta_II
    assert stats.poisson.sf(sp.c, sp.rho * sp.p_bar) <= sp.beta_I
    assert stats.poisson.sf(sp.c - 1, XN._base_rate(XN._Step(cn, 3), sp.c - 1) * sp.p_bar) > sp.beta_I


# ---------------------------------------------------------------------------
# the benchmark's evaluation target, from plans


def test_median_cell_uses_at_most_0_6_of_theorem21s_evaluations():
    """Median cell of the bench grid: eps=1, eps1/eps=0.1, p*=0.5, T=100 (beta=0.05, gamma=1.5, theta=1):
    expected evaluations summed over t=1..T, at equal claimed guarantees (same p_bar_t, beta)."""
    kw = dict(p_star=0.5, eps_t=0.1, horizon=100)
    p21, pn = make_plan(_config("theorem21", **kw)), make_plan(_config(**kw))
    e21 = sum(expected_evaluations(p21, t) for t in range(1, 101))
    en = sum(expected_evaluations(pn, t) for t in range(1, 101))
    assert all(pn.step(t).p_bar == p21.step(t).p_bar for t in range(1, 101))
    assert en / e21 <= 0.6
    assert en / e21 < 0.1  # measured 0.079


# ---------------------------------------------------------------------------
# independent check: the reference GTM (Algorithm 1) with eta_1 fixed at the worst point


def _reference_counts(sp, mu1: float, eta1: float, p: float, n: int, seed: int) -> tuple[int, int]:
    """(continues, halts) of n independent runs of step `sp` of the reference GTM with eta_1 = eta1 on a
    Bernoulli(p) mechanism (negated for the flipped variant, as GTMRun does)."""
    rng = np.random.default_rng(seed)
    mech = BernoulliMechanism(p, np.random.default_rng(seed + 1))
    fed = Negated(mech) if sp.s == -1 else mech
    halts = 0
    for _ in range(n):
        g = GTM.restore(rng, eta1=eta1, mu1=mu1, steps_taken=0)
        halts += g.step(fed, None, sp.eps_t, sp.tau2, sp.c, sp.rho, sp.s) == sp.s
    return n - halts, halts


def _exceeds(k: int, n: int, budget: float) -> bool:
    """One-sided exact binomial test of H0: rate <= budget, rejected at ALPHA."""
    return stats.binomtest(k, n, budget, alternative="greater").pvalue < ALPHA


CASES = {"direct": dict(p_star=0.5, eps_t=0.1), "flipped": dict(p_star=0.95, eps_t=0.01)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reference_gtm_type_II_at_eta1_mu1_within_beta_II(case):
    cn = _config(**CASES[case])
    plan = make_plan(cn)
    sp = plan.step(1)
    cont, _ = _reference_counts(sp, plan.mu1, plan.mu1, sp.p_star, N_RUNS, seed=11)
    assert not _exceeds(cont, N_RUNS, sp.beta_II)
    # and it agrees with the certified exact value (two-sided)
    exact = float(arb(XN.step_certificate(cn, 1)["type_II"]).mid())
    assert stats.binomtest(cont, N_RUNS, exact).pvalue >= ALPHA
    # power companion: the base rate moved the wrong way (s=+1: halved, s=-1: doubled) is rejected
    broken = dataclasses.replace(sp, rho=sp.rho / 2 if sp.s == 1 else sp.rho * 2)
    cont_b, _ = _reference_counts(broken, plan.mu1, plan.mu1, sp.p_star, N_RUNS, seed=12)
    assert _exceeds(cont_b, N_RUNS, sp.beta_II)


@pytest.mark.parametrize("case", sorted(CASES))
def test_reference_gtm_type_I_at_eta1_zero_within_beta_I(case):
    cn = _config(**CASES[case])
    plan = make_plan(cn)
    sp = plan.step(1)
    _, halts = _reference_counts(sp, plan.mu1, 0.0, sp.p_bar, N_RUNS, seed=21)
    assert not _exceeds(halts, N_RUNS, sp.beta_I)
    exact = float(arb(XN.step_certificate(cn, 1)["type_I"]).mid())
    assert stats.binomtest(halts, N_RUNS, exact).pvalue >= ALPHA
    # power companion: the base rate moved the wrong way (s=+1: doubled, s=-1: halved) is rejected
    broken = dataclasses.replace(sp, rho=sp.rho * 2 if sp.s == 1 else sp.rho / 2)
    _, halts_b = _reference_counts(broken, plan.mu1, 0.0, sp.p_bar, N_RUNS, seed=22)
    assert _exceeds(halts_b, N_RUNS, sp.beta_I)
