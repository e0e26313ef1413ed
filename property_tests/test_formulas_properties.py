"""Hypothesis: gtm_core.formulas (and the planners built on them) obey the paper's lemmas
over the whole parameter box.

Inequalities that certify something (Lemma 11's gap, Lemma 20's base-rate bound, the
planned numbers against Lemma 20, GTM against the Corollary 30 floor) are decided with
arb ball arithmetic (python-flint): a comparison is True only if it holds for every
point of the balls. Exact Poisson tails come from mpmath's regularized incomplete gamma
function at 30 digits and are cross-checked against scipy.stats.poisson.
"""

from __future__ import annotations

import contextlib
import math
import os
from fractions import Fraction

import mpmath
import pytest
from flint import arb, ctx
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from gtm_core import formulas as F
from gtm_core.errors import UnsupportedConfiguration
from gtm_core.planners import make_plan

from .strategies import (
    configs,
    failure_probabilities,
    gammas,
    log_uniform,
    noise_ranges,
    targets,
    theorem21_parameters,
    theorem23_parameters,
)

# GTM_PROPERTY_SCALE=10 multiplies the number of examples (a stress run; default 1 keeps
# this file under ~30 s on a loaded 2-core machine).
_SCALE = float(os.environ.get("GTM_PROPERTY_SCALE", "1"))
FAST = settings(max_examples=int(60 * _SCALE), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=int(20 * _SCALE), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def balls(prec: int = 256):
    old = ctx.prec
    ctx.prec = prec
    try:
        yield
    finally:
        ctx.prec = old


# --- arb versions of equations (3)-(4), written from the paper -----------------------


def aL(alpha) -> arb:
    return -arb(alpha).log()


def a_lambda_left(c, alpha) -> arb:
    L = aL(alpha)
    return arb(c) + L + (2 * arb(c) * L + L * L).sqrt()


def a_lambda_right(c, alpha) -> arb:
    y = arb(c) + 1
    return y - (2 * y * aL(alpha)).sqrt()


# --- Lemma 11 ------------------------------------------------------------------------


@FAST
@given(failure_probabilities(), failure_probabilities(), gammas())
def test_lemma11_gap_and_validity(alpha, beta, gamma):
    """Lemma 11(1)-(2): lambda^l(c, alpha) <= gamma lambda^r(c, beta) and c + 1 > 2 max(A, B)."""
    c = F.lemma11_threshold(alpha, beta, gamma)
    with balls():
        assert a_lambda_left(c, alpha) <= arb(gamma) * a_lambda_right(c, beta)
        A, B = aL(alpha), aL(beta)
        assert arb(c) + 1 > 2 * A and arb(c) + 1 > 2 * B


@FAST
@given(failure_probabilities(), failure_probabilities(), gammas())
def test_lemma11_c_is_order_ln_over_gamma_minus_one_squared(alpha, beta, gamma):
    """Lemma 11(3) with the constants of its proof: r <= (2a + sqrt(8(gamma-1)A)) / (2(gamma-1))."""
    A, B = -math.log(alpha), -math.log(beta)
    a = math.sqrt(2 * A) + gamma * math.sqrt(2 * B)
    r = F.lemma11_root(alpha, beta, gamma)
    assert r <= (2 * a + math.sqrt(8 * (gamma - 1) * A)) / (2 * (gamma - 1)) * (1 + 1e-12)
    c = F.lemma11_threshold(alpha, beta, gamma)
    assert c <= max(2 * (A + B), (r + 1) ** 2)


# --- Lemma 10(3)-(4): the Chernoff thresholds really bound exact Poisson tails ------


def _cdf(c: int, lam):
    """Pr[Po(lam) <= c] = Q(c+1, lam) (regularized upper incomplete gamma)."""
    return mpmath.gammainc(c + 1, lam, mpmath.inf, regularized=True)


def _sf(c: int, lam):
    """Pr[Po(lam) >= c+1] = P(c+1, lam) (regularized lower incomplete gamma)."""
    return mpmath.gammainc(c + 1, 0, lam, regularized=True)


counts = st.one_of(st.integers(0, 30), st.integers(0, 100_000))


@FAST
@given(counts, failure_probabilities(1e-30, 0.99))
def test_left_threshold_bounds_the_exact_poisson_cdf(c, alpha):
    """Lemma 10(3a): Pr[Po(lambda^l(c, alpha)) <= c] <= alpha."""
    with mpmath.workdps(30):
        lam = F.lambda_left(c, alpha, dps=30)
        assert _cdf(c, lam) <= alpha
    if alpha > 1e-250:
        assert stats.poisson.cdf(c, float(lam)) <= alpha * (1 + 1e-9)


@FAST
@given(counts, failure_probabilities(1e-30, 0.99))
def test_right_threshold_bounds_the_exact_poisson_sf_when_valid(c, alpha):
    """Lemma 10(3b): if c + 1 >= 2 ln(1/alpha) then Pr[Po(lambda^r(c, alpha)) >= c+1] <= alpha."""
    assume(F.right_tail_valid(c, alpha, dps=30))
    with mpmath.workdps(30):
        lam = F.lambda_right(c, alpha, dps=30)
        assert lam >= 0  # validity is exactly lambda^r >= 0
        assert _sf(c, lam) <= alpha
    if alpha > 1e-250:
        assert stats.poisson.sf(c, float(lam)) <= alpha * (1 + 1e-9)


@FAST
@given(log_uniform(1e-3, 1e6), failure_probabilities(1e-30, 0.99), st.floats(0, 1.5))
def test_algebraic_inversion(x, alpha, u):
    """Lemma 10(4): for x + 1 > 2L, lambda <= lambda^r(x) <=> x + 1 >= lambda^l(lambda)."""
    with mpmath.workdps(40):
        assume(mpmath.mpf(x) + 1 > 2 * -mpmath.log(alpha))
        lam_r = F.lambda_right(x, alpha, dps=40)
        lam = lam_r * mpmath.mpf(u)
        assume(abs(lam - lam_r) > mpmath.mpf(10) ** -25 * (x + 1))  # not at the boundary
        left = lam <= lam_r
        right = mpmath.mpf(x) + 1 >= F.lambda_left(lam, alpha, dps=40)
        assert left == right


# --- Theorem 21 / 23: flipping rule, Lambda_t, privacy split -------------------------


@FAST
@given(targets(), gammas(), noise_ranges())
def test_flipping_rule_picks_the_larger_rejection_threshold(p_star, gamma, Lambda):
    with mpmath.workdps(30):
        s = F.direction(p_star, gamma, Lambda, dps=30)
        x = mpmath.mpf(gamma) * mpmath.mpf(Lambda)
        direct, flipped = mpmath.mpf(p_star) / x, 1 - x * (1 - mpmath.mpf(p_star))
        assert (direct >= flipped) if s == 1 else (flipped >= direct)
        p_bar = F.rejection_threshold(p_star, gamma, Lambda, dps=30)
        assert p_bar == max(direct, flipped)
        assert 0 < p_bar <= p_star
    assert F.direction(p_star, gamma, Lambda) == s  # float64 agrees away from exact ties


@FAST
@given(theorem21_parameters())
def test_theorem21_noise_range_is_at_least_one_and_grows_with_t(p):
    bt, bt1 = (F.step_failure_probability(t, p["beta"]) for t in (p["t"], p["t"] + 1))
    try:
        lam = F.theorem21_noise_range(p["eps_t"], p["epsilon"], p["theta"], p["beta"], bt)
        lam1 = F.theorem21_noise_range(p["eps_t"], p["epsilon"], p["theta"], p["beta"], bt1)
    except OverflowError:
        assume(False)
    assert lam >= 1 and lam1 >= lam
    assert F.theorem21_noise_range(0.0, p["epsilon"], p["theta"], p["beta"], bt) == 1


@FAST
@given(theorem23_parameters())
def test_theorem23_noise_range_is_at_least_one_and_bounded(p):
    try:
        lam = F.theorem23_noise_range(p["eps_t"], p["epsilon_c"], p["c_h"], p["beta"])
    except OverflowError:  # float64 cannot hold it; the planner turns this into a typed error
        assume(False)
    assert lam >= 1
    if p["eps_t"] > 0:
        # Lambda_t = (4/beta)^{eps_t/eps_C} e^{2/C_H}: constant in t (the point of Theorem 23)
        assert lam >= math.exp(2 / p["c_h"]) * (1 - 1e-15)


@FAST
@given(theorem21_parameters())
def test_theorem21_privacy_split_sums_to_epsilon(p):
    with mpmath.workdps(40):
        tau1 = F.theorem21_tau1(p["epsilon"], p["theta"], dps=40)
        tau2 = F.theorem21_tau2(p["epsilon"], p["theta"], dps=40)
        assert abs(1 / tau1 + 2 / tau2 - p["epsilon"]) <= mpmath.mpf(10) ** -35 * p["epsilon"]


@FAST
@given(theorem23_parameters())
def test_theorem23_cancellation(p):
    with mpmath.workdps(40):
        bt = F.step_failure_probability(p["t"], p["beta"], dps=40)
        tau2 = F.theorem23_tau2(p["eps_t"], p["c_h"], bt, dps=40)
        if p["eps_t"] == 0:
            assert mpmath.isinf(tau2)
            return
        product = p["eps_t"] * tau2 * mpmath.log(4 / bt)
        assert abs(product - 2 / mpmath.mpf(p["c_h"])) <= mpmath.mpf(10) ** -35 * product


# --- Lemma 20: base rates ----------------------------------------------------------


@FAST
@given(failure_probabilities(1e-30, 1 / math.e), failure_probabilities(1e-30, 1 / math.e),
       gammas(), targets())
def test_lemma20_base_rate_lower_bound(beta_I, beta_II, gamma, p_star):
    """Lemma 20: if beta^I, beta^II <= 1/e then rho >= max(L^I, L^II)/p* in both directions
    (and the intermediate bounds of its proof: rho p* >= L^I + 2L^II, resp. L^I + L^II - 1/2)."""
    with balls():
        LI, LII = aL(beta_I), aL(beta_II)
        # above threshold: c from Lemma 11 with (alpha, beta) = (beta^II, beta^I)
        c = F.lemma11_threshold(beta_II, beta_I, gamma)
        rho_p = a_lambda_left(c, beta_II)  # = rho p*
        assert rho_p >= LI + 2 * LII
        assert rho_p / arb(p_star) >= LI.max(LII) / arb(p_star)
        # below threshold: (alpha, beta) = (beta^I, beta^II), rho p* = lambda^r(c, beta^II)
        c = F.lemma11_threshold(beta_I, beta_II, gamma)
        rho_p = a_lambda_right(c, beta_II)
        assert rho_p >= LI + LII - arb(1) / 2
        assert rho_p >= LI.max(LII)


@FAST
@given(failure_probabilities(1e-30, 0.9), failure_probabilities(1e-30, 0.9), gammas(), targets(),
       noise_ranges(1e4))
def test_lemma20_halting_and_continuation_conditions(beta_I, beta_II, gamma, p_star, Lambda):
    """Lemma 20 as used by Theorem 21: with the paper's c and rho, at the worst-case lambda the
    thinned mean is on the right side of the Chernoff thresholds (arb, rigorous)."""
    with balls():
        g, Lam, p = arb(gamma), arb(Lambda), arb(p_star)
        c = F.lemma11_threshold(beta_II, beta_I, gamma)  # s = +1
        rho = a_lambda_left(c, beta_II) / p
        assert rho * p >= a_lambda_left(c, beta_II) - arb(10) ** -60  # halting at lambda = rho
        # continuation at lambda = rho Lambda, p = p*/(gamma Lambda)
        assert rho * Lam * (p / (g * Lam)) <= a_lambda_right(c, beta_I)
        c = F.lemma11_threshold(beta_I, beta_II, gamma)  # s = -1 (on the negated mechanism)
        rho = a_lambda_right(c, beta_II) / p
        # continuation at lambda = rho / Lambda, p = gamma Lambda p*
        assert (rho / Lam) * (g * Lam * p) >= a_lambda_left(c, beta_I)


# --- failure-probability allocation --------------------------------------------------


def _plan_or_skip(config):
    try:
        return make_plan(config)
    except UnsupportedConfiguration:
        assume(False)


@SLOW
@given(configs(max_horizon=20))
def test_beta_allocation_sums_to_at_most_beta(config):
    """Union bound of Theorems 21/23: Pr[G^c] + sum_t (beta^I_t + beta^II_t) [+ sum_t beta_t/6
    for Theorem 23's sample-complexity event] <= beta, over the planned horizon and in the
    limit (sum_t beta_t = beta by Definition 7). Exact rational arithmetic on the floats."""
    plan = _plan_or_skip(config)
    beta = Fraction(config.gtm.beta)
    T = min(config.stream.horizon, 20)
    per_step = Fraction(0)
    ratio = None
    for t in range(1, T + 1):
        try:
            st_ = plan.step(t)
        except UnsupportedConfiguration:  # a later step's Lambda_t overflows float64
            assume(False)
        spent = Fraction(st_.beta_I) + Fraction(st_.beta_II)
        if config.gtm.parameterization == "theorem23":
            spent += Fraction(st_.beta_t) / 6  # Pr[N_t >= e lambda_bar_t | G]
        per_step += spent
        r = spent / Fraction(st_.beta_t)
        ratio = r if ratio is None else max(ratio, r)
        assert Fraction(st_.beta_t) < beta
    # Pr[G^c] <= e^{-mu1/tau1} + beta/4 (Lemma 19(1)), enclosed in arb from the planned floats:
    # a float evaluation of it can land ulps above beta/2 although mu1 is rounded so it is below.
    with balls():
        good = (-(arb(plan.mu1) / arb(plan.tau1))).exp() + _arb_of(beta) / 4
        assert good + _arb_of(per_step) <= _arb_of(beta)
        # infinite horizon: the planned beta_t are rounded so sum_t beta_t <= beta (Definition 7),
        # hence the total is at most good + ratio * beta - no float tolerance
        assert good + _arb_of(ratio) * _arb_of(beta) <= _arb_of(beta)


def _arb_of(q: Fraction) -> arb:
    """An exact rational as an arb ball (exact when its denominator is a power of 2)."""
    return arb(q.numerator) / q.denominator


# --- Corollary 30: odds-ratio form and GTM against the lower bound -------------------


@FAST
@given(targets(), log_uniform(1.0, 1e6), st.floats(1e-6, 1.0))
def test_corollary30_odds_ratio_is_implied_by_the_casewise_bound(p_star, Lambda0, u):
    with mpmath.workdps(30):
        floor = F.corollary30_rejection_threshold(p_star, Lambda0, dps=30)
        p_bar = floor * mpmath.mpf(u)  # any threshold satisfying the case-wise bound
        p, L0 = mpmath.mpf(p_star), mpmath.mpf(Lambda0)
        half = mpmath.mpf(1) / 2
        slack = 1 + mpmath.mpf(10) ** -25
        if p <= half and p_bar <= half:
            assert p / p_bar * slack >= L0
        elif p >= half and p_bar >= half:
            assert (1 - p_bar) / (1 - p) * slack >= L0
        else:
            assert 1 / (4 * p_bar * (1 - p)) * slack >= L0
        assert F.corollary30_odds_ratio(p_star, p_bar, dps=30) * slack >= L0


@FAST
@given(theorem21_parameters(max_t=10**9))
def test_gtm_rejection_threshold_never_beats_the_corollary30_floor(p):
    """Theorem 21's p_bar_T (the uniform threshold over T steps, constant eps_t, delta = 0)
    is at most the largest p_bar Corollary 30 allows: an upper bound cannot beat a lower bound.
    Both sides at 40 digits (error < 1e-35); we require a relative gap > 1e-30, so a true gap
    smaller than the computation error would fail the test rather than pass it."""
    T, beta = p["t"], p["beta"]
    assume(beta < 0.5)
    with mpmath.workdps(40):
        bt = F.step_failure_probability(T, beta, dps=40)
        lam = F.theorem21_noise_range(p["eps_t"], p["epsilon"], p["theta"], beta, bt, dps=40)
        p_bar = F.rejection_threshold(p["p_star"], p["gamma"], lam, dps=40)
        L0 = F.corollary30_Lambda0(p["eps_t"], p["epsilon"], 0, beta, T, dps=40)
        floor = F.corollary30_rejection_threshold(p["p_star"], L0, dps=40)
        assert floor - p_bar > floor * mpmath.mpf(10) ** -30, (p_bar, floor)
        # and the odds-ratio form of the lower bound holds for GTM's threshold
        assert F.corollary30_odds_ratio(p["p_star"], p_bar, dps=40) >= L0


# --- Lemma 24: purification ----------------------------------------------------------


@FAST
@given(log_uniform(1e-4, 5.0), log_uniform(1e-12, 0.5), st.sampled_from([1, 1.5, 2, 3]),
       st.floats(0, 1))
def test_purified_mechanism_is_pure_dp(eps, delta, c, p_prime):
    """Lemma 24(2): with phi = delta/(e^{c eps} - 1 + 2 delta), the worst neighbour
    p = min(1, e^eps p' + delta) gives p~ <= e^{c eps} p~'; and |p~ - p| <= delta/eps."""
    with mpmath.workdps(40):
        phi = F.purification_crossover(eps, delta, c, dps=40)
        assert phi <= mpmath.mpf(1) / 2
        pp = mpmath.mpf(p_prime)
        p = min(mpmath.mpf(1), mpmath.exp(eps) * pp + delta)
        tp = F.purified_probability(p, phi, dps=40)
        tpp = F.purified_probability(pp, phi, dps=40)
        assert tp <= mpmath.exp(c * mpmath.mpf(eps)) * tpp * (1 + mpmath.mpf(10) ** -35)
        if c == 1:
            assert abs(tp - p) <= F.purification_slack_bound(eps, delta, dps=40)


# --- Pareto facts (Lemma 12) ---------------------------------------------------------


@FAST
@given(log_uniform(1.01, 50.0), log_uniform(1.0, 1e8))
def test_truncated_mean_is_below_the_untruncated_mean(sigma, W):
    """Lemma 12(3a): E[min(w, W)] <= sigma/(sigma-1), increasing in W, >= 1."""
    m = F.pareto_truncated_mean(sigma, W)
    assert 1 - 1e-15 <= m <= F.pareto_moment(1, sigma) * (1 + 1e-13)
    assert F.pareto_truncated_mean(sigma, W * 2) >= m * (1 - 1e-15)


@FAST
@given(log_uniform(0.05, 50.0), log_uniform(1.0, 1e8))
def test_truncated_second_moment_bounds(sigma, W):
    """Lemma 12(3b): the three regimes' bounds, and E[min(w,W)^2] >= E[min(w,W)]^2."""
    m2 = F.pareto_truncated_second_moment(sigma, W)
    m1 = F.pareto_truncated_mean(sigma, W)
    assert m2 >= m1 * m1 * (1 - 1e-12)
    if 1 < sigma < 2:
        assert m2 <= 2 / (2 - sigma) * W ** (2 - sigma) * (1 + 1e-12)
    elif sigma > 2:
        assert m2 <= sigma / (sigma - 2) * (1 + 1e-12)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_pareto_tail_at_one_and_below(sigma):
    assert F.pareto_tail(1.0, sigma) == 1.0
    assert F.pareto_tail(0.3, sigma) == 1.0
