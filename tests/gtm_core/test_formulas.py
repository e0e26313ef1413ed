"""Unit tests of gtm_core.formulas beyond the golden table: the float64 cancellation
traps (pinned, with the reason), both backends' types, and the limits the rewritten
forms must respect."""

from __future__ import annotations

import math

import mpmath
import pytest

from gtm_core import formulas as F
from gtm_core.errors import InvalidParameter


def _rel(a, b):
    return abs(float(a) - float(b)) / abs(float(b))


def test_backends_return_float_or_mpf():
    assert isinstance(F.lambda_left(10, 0.05), float)
    assert isinstance(F.lambda_left(10, "0.05", dps=30), mpmath.mpf)
    assert isinstance(F.lemma11_threshold(0.01, 0.01, 1.5), int)
    assert isinstance(F.lemma11_threshold(0.01, 0.01, 1.5, dps=None), int)
    assert isinstance(F.direction(0.5, 1.5, 2.0), int)
    assert isinstance(F.right_tail_valid(10, 0.05), bool)


@pytest.mark.parametrize("dps", [0, 4, -1, 2.5, True, "30"])
def test_bad_precision_is_a_typed_error(dps):
    with pytest.raises(InvalidParameter, match="dps"):
        F.lambda_left(1, 0.5, dps=dps)


def test_mpmath_path_takes_decimal_strings_exactly():
    with mpmath.workdps(50):
        exact = F.lambda_left("282", "0.05", dps=50)
        binary = F.lambda_left(282, 0.05, dps=50)  # the double nearest 0.05
    assert exact != binary
    assert abs(exact - binary) / exact < 1e-15


# -- lambda_right near its validity boundary: ill-conditioned, pinned --------------


def test_lambda_right_is_ill_conditioned_near_the_validity_boundary():
    """At y = x+1 just above 2 ln(1/alpha), lambda^r ~ 0 and depends on ln(1/alpha)
    with condition number ~ sqrt(2yL)/(2 lambda^r). A one-ulp error in the float64
    logarithm alone moves it by far more than 1e-12: this is why the golden points
    keep |y - 2L| >= y/4. The loss is what the condition number predicts, no more."""
    x = 199.0
    alpha = math.exp(-100.0 + 1e-7)  # 2 ln(1/alpha) = 200 - 2e-7 = y - 2e-7
    got = F.lambda_right(x, alpha)
    with mpmath.workdps(60):
        want = F.lambda_right(x, alpha, dps=60)  # the same binary inputs, exactly
        y, L = mpmath.mpf(x) + 1, -mpmath.log(mpmath.mpf(alpha))
        cond = mpmath.sqrt(2 * y * L) / (2 * abs(want))
    rel = _rel(got, want)
    assert rel > 1e-12  # float64 cannot meet the golden tolerance here ...
    assert rel < 4 * float(cond) * 2.0**-52  # ... and loses only what conditioning explains


def test_lambda_right_rewritten_form_matches_the_printed_formula():
    for x, alpha in [(282, 0.0076), (10, 0.5), (1e5, 1e-20), (0.5, 0.9), (3, 0.01)]:
        y, L = x + 1, -math.log(alpha)
        printed = y - math.sqrt(2 * y * L)  # equation (4) as printed
        assert F.lambda_right(x, alpha) == pytest.approx(printed, rel=1e-12, abs=1e-12 * y)


# -- Pareto truncated moments near sigma = 1 and sigma = 2 --------------------------


@pytest.mark.parametrize("sigma", [1 + 1e-9, 1 - 1e-9, 1 + 1e-6])
def test_truncated_mean_has_no_cancellation_near_sigma_one(sigma):
    W = 1e6
    with mpmath.workdps(50):
        want = F.pareto_truncated_mean(mpmath.mpf(sigma), W, dps=50)
    naive = sigma / (sigma - 1) - W ** (1 - sigma) / (sigma - 1)  # Lemma 12(3a) as printed
    assert _rel(F.pareto_truncated_mean(sigma, W), want) < 1e-13
    if abs(sigma - 1) < 1e-8:
        assert _rel(naive, want) > 1e-9  # the printed form cancels catastrophically


def test_truncated_moments_are_continuous_through_the_special_points():
    W = 1e4
    at_one = F.pareto_truncated_mean(1.0, W)
    assert at_one == pytest.approx(1 + math.log(W), rel=1e-15)
    assert F.pareto_truncated_mean(1 + 1e-12, W) == pytest.approx(at_one, rel=1e-10)
    at_two = F.pareto_truncated_second_moment(2.0, W)
    assert at_two == pytest.approx(1 + 2 * math.log(W), rel=1e-15)
    assert F.pareto_truncated_second_moment(2 - 1e-12, W) == pytest.approx(at_two, rel=1e-10)
    naive = lambda s: (2 * W ** (2 - s) - s) / (2 - s)  # noqa: E731  (Lemma 12(3b) as printed)
    assert _rel(naive(2 - 1e-12), at_two) > 1e-6


def test_truncated_mean_extends_below_sigma_one():
    # E[min(w, W)] for sigma = 1/2 by direct integration: int_1^W u (1/2) u^{-3/2} du + W W^{-1/2}
    W = 100.0
    assert F.pareto_truncated_mean(0.5, W) == pytest.approx((math.sqrt(W) - 1) + math.sqrt(W))


# -- Theorem 29 where its right-hand side crosses zero -----------------------------


def test_theorem29_alpha_sum_near_zero_is_ill_conditioned():
    """(1/eps)(ln a + ln b) - 2 crosses zero; there float64 loses ~|terms|/|value| ulps,
    which is why golden points keep |value| >= 1e-3 |terms|."""
    eps, beta, T = 1.0, 0.05, 1
    # solve for delta = 0 with value ~ 0: ln(1/(2 beta)) * 2 / eps = 2 -> beta = 1/(2e)
    beta = 1 / (2 * math.e) * (1 + 1e-9)
    got = F.theorem29_alpha_sum(eps, 0.0, beta, T)
    with mpmath.workdps(50):
        want = F.theorem29_alpha_sum(eps, 0, beta, T, dps=50)
    assert abs(want) < 1e-8
    assert _rel(got, want) > 1e-12
    assert abs(float(want) - got) < 8 * 2.0**-52 * 2  # absolute error stays at the ulp level


# -- small facts the planners rely on ----------------------------------------------


def test_rejection_threshold_flipped_branch_is_never_near_zero():
    """When the flipped branch 1 - x(1-p*) wins, it is >= 1 - p* (no cancellation)."""
    for p in (0.5, 0.9, 0.99, 0.999999):
        for x in (1.0, 1.0001, 1.5, 3.0, 1e3):
            pb = F.rejection_threshold(p, x, 1.0)
            if pb != p / x:
                assert pb >= 1 - p


def test_theorem23_eps_t_zero_limits():
    assert F.theorem23_tau2(0, 2, 0.01) == math.inf
    assert F.theorem23_noise_range(0, 1, 2, 0.05) == 1
    assert F.theorem23_expost_loss(True, 0, 1, 2, 0.01) == 1
    assert F.theorem23_tau2(0, 2, 0.01, dps=30) == mpmath.inf


def test_lemma11_threshold_float_path_agrees_away_from_ties():
    for alpha, beta, gamma in [(0.0076, 0.0076, 1.5), (1e-10, 0.3, 1.01), (0.4, 1e-20, 2.0)]:
        assert F.lemma11_threshold(alpha, beta, gamma, dps=None) == F.lemma11_threshold(
            alpha, beta, gamma
        )


# -- errata ------------------------------------------------------------------------


def test_erratum_remark32_exponent_of_one_over_beta():
    """Remark 32 writes the amortized upper bound of Lemma 22 as
    O(sigma/(sigma-1) (1/beta)^{eps_1/(theta eps)} ln(T/beta) / (p* (gamma-1)^2)).
    Lemma 22 itself (and Theorem 21(3)) has Lambda_0 = (4/beta)^{(1+2/theta) eps_1/eps}: the
    exponent is (theta+2) eps_1/(theta eps), not eps_1/(theta eps). The remark's conclusion
    ((1/beta)^{Theta(eps_1/eps)} for fixed theta) is unaffected. We implement Lemma 22."""
    eps, eps_1, theta, gamma, p_star, t = 1.0, 0.1, 1.0, 1.5, 0.5, 10
    b1, b2 = 1e-3, 1e-9
    a1 = F.theorem21_A_tilde(t, eps, eps_1, theta, gamma, b1, p_star, 1.0)
    a2 = F.theorem21_A_tilde(t, eps, eps_1, theta, gamma, b2, p_star, 1.0)
    log_ratio = math.log(t / b2) / math.log(t / b1)
    exponent = math.log(a2 / a1 / log_ratio) / math.log(b1 / b2)
    assert exponent == pytest.approx((1 + 2 / theta) * eps_1 / eps, rel=1e-12)  # Lemma 22: 0.3
    assert abs(exponent - eps_1 / (theta * eps)) > 0.1  # Remark 32 as printed: 0.1


# -- Lemma 11's integer threshold at near-ties ----------------------------------------


def _alpha_with_r_squared(n: int, delta: str, beta: str = "0.01", gamma: str = "2") -> str:
    """A decimal alpha for which Lemma 11's r^2 = n + delta (to 190 digits)."""
    with mpmath.workdps(200):
        B, g = -mpmath.log(mpmath.mpf(beta)), mpmath.mpf(gamma)

        def r2(A):
            a = mpmath.sqrt(2 * A) + g * mpmath.sqrt(2 * B)
            return ((a + mpmath.sqrt(a * a + 8 * (g - 1) * A)) / (2 * (g - 1))) ** 2

        A = mpmath.findroot(lambda A: r2(A) - (n + mpmath.mpf(delta)), 5)
        return mpmath.nstr(mpmath.exp(-A), 190)


@pytest.mark.parametrize("delta,want", [("1e-60", 101), ("-1e-60", 100), ("1e-120", 101)])
def test_lemma11_threshold_escalates_precision_at_near_ties(delta, want):
    """r^2 within 1e-60 of the integer 100: 50 digits cannot decide the ceiling; the
    function must notice and recompute at higher precision."""
    alpha = _alpha_with_r_squared(100, delta)
    assert F.lemma11_threshold(alpha, "0.01", "2") == want
    assert F.lemma11_threshold(alpha, "0.01", "2", dps=30) == want


def test_lemma11_first_term_is_never_the_maximum():
    """Observation (not an erratum): r >= a = sqrt(2A) + gamma sqrt(2B) >= sqrt(2 max(A, B)),
    so ceil(r^2) >= floor(2 max(A, B)) always and c = ceil(r^2); Lemma 11(2) follows from
    c >= r^2 >= 2 max(A, B) with the +1 to spare."""
    import random

    rng = random.Random(11)
    for _ in range(300):
        alpha, beta = (math.exp(-rng.uniform(0.01, 70)) for _ in range(2))
        gamma = 1 + rng.uniform(1e-3, 1)
        A, B = -math.log(alpha), -math.log(beta)
        r = F.lemma11_root(alpha, beta, gamma)
        assert r * r >= 2 * max(A, B)
        assert F.lemma11_threshold(alpha, beta, gamma) == math.ceil(r * r) or abs(r * r - round(r * r)) < 1e-9


def _required_C_A(t, beta, eps=1.0, theta=1.0, gamma=1.5, eps_t=0.1, p_star=0.5):
    """Smallest C_A for which Theorem 21(3)'s lambda_t <= A~_t w_t holds at the worst point
    of G_0 (eta_1 = 0): lambda_t / w_t = rho_t e^{eps_t mu_1} (s=+1) or rho_t (s=-1)."""
    bt = F.step_failure_probability(t, beta)
    lam = F.theorem21_noise_range(eps_t, eps, theta, beta, bt)
    s = F.direction(p_star, gamma, lam)
    if s == 1:
        c = F.lemma11_threshold(bt / 4, bt / 4, gamma)
        worst = F.base_rate_above(c, bt / 4, p_star) * math.exp(eps_t * F.theorem21_mu1(eps, theta, beta))
    else:
        c = F.lemma11_threshold(bt / 4, bt / 4, gamma)
        worst = F.base_rate_below(c, bt / 4, 1 - p_star)
    return worst / F.theorem21_A_tilde(t, eps, eps_t, theta, gamma, beta, p_star, 1.0)


def test_erratum_theorem21_item3_needs_beta_bounded_away_from_one():
    """Theorem 21(3) claims lambda_t <= A~_t w_t with A~_t proportional to ln(t/beta) for a
    *universal* C_A and any beta in (0, 1). At t = 1, ln(t/beta) -> 0 as beta -> 1 while
    rho_1 >= ln(4/beta_1)/p* stays >= 1.88/p*, so no fixed C_A works. The proof converts
    O(ln(1/beta_t)) into O(ln(t/beta)), which needs ln(t/beta) bounded below - Lemma 22 adds
    the hypothesis beta <= 1/e explicitly; Theorem 21(3) needs it too."""
    # with beta <= 1/e the required constant stays bounded (here < 60) for all t
    for beta in (1e-12, 1e-6, 1e-3, 0.05, 1 / math.e):
        for t in (1, 2, 10, 1000, 10**6):
            assert _required_C_A(t, beta) < 60
    # without it, at t = 1 it grows without bound (~ 1/ln(1/beta))
    assert _required_C_A(1, 0.99) > 1000
    assert _required_C_A(1, 1 - 1e-6) > 1e7
    assert _required_C_A(1, 1 - 1e-6) > 1000 * _required_C_A(1, 0.99)


def test_erratum_theorem23_item3_same_missing_hypothesis():
    """Theorem 23(3): N_t <= O(Lambda_t ln(t/beta) / (p* (gamma-1)^2)) (s = +1). Its proof bounds
    N_t by e rho_t Lambda_t with rho_t >= ln(6/beta_t)/p*, so the hidden constant
    rho_t Lambda_t / (Lambda_t ln(t/beta) / (p* (gamma-1)^2)) must be bounded - it is for
    beta <= 1/e, not as beta -> 1 at t = 1."""

    def ratio(t, beta, gamma=1.5, p_star=0.5):
        bt = F.step_failure_probability(t, beta)
        c = F.lemma11_threshold(bt / 6, bt / 6, gamma)
        rho = F.base_rate_above(c, bt / 6, p_star)
        return rho / (math.log(t / beta) / (p_star * (gamma - 1) ** 2))

    assert max(ratio(t, b) for t in (1, 2, 100, 10**6) for b in (1e-9, 0.05, 1 / math.e)) < 60
    assert ratio(1, 1 - 1e-6) > 1e7


# --- E[lambda_t] written once ---------------------------------------------------------------------


def _old_expected_lambda(sp, *, tau1, mu1):  # the earlier formula, pinned
    if sp.eps_t == 0:
        return float(sp.rho)
    s1 = 1.0 / (sp.eps_t * tau1)
    s2 = math.inf if math.isinf(sp.tau2) else 1.0 / (sp.eps_t * sp.tau2)
    if sp.s == 1:
        if s2 <= 1:
            return math.inf
        ew = 1.0 if math.isinf(s2) else s2 / (s2 - 1)
        return float(sp.rho * math.exp(sp.eps_t * mu1) * ew * s1 / (s1 + 1))
    if s1 <= 1:
        return math.inf
    ew = 1.0 if math.isinf(s2) else s2 / (s2 + 1)
    return float(sp.rho * math.exp(-sp.eps_t * mu1) * s1 / (s1 - 1) * ew)


def test_expected_lambda_matches_the_old_copy_and_mpmath():
    import glob

    from gtm_core.config import GTMConfig
    from gtm_core.errors import GTMError
    from gtm_core.planners import make_plan

    checked = 0
    for path in sorted(glob.glob("examples/*.toml")):
        try:
            plan = make_plan(GTMConfig.load(path))
        except GTMError:
            continue
        for t in (1, 2, 3, 10, 1000):
            if plan.parameterization == "horizon" and t > plan.horizon:
                continue  # the horizon planner plans steps 1..T only
            sp = plan.step(t)
            args = (sp.s, sp.rho, sp.eps_t, plan.tau1, sp.tau2, plan.mu1)
            old = _old_expected_lambda(sp, tau1=plan.tau1, mu1=plan.mu1)
            new = F.expected_lambda(*args)
            assert new == old or (math.isinf(new) and math.isinf(old))
            hi = F.expected_lambda(*args, dps=40)
            assert (math.isinf(old) and hi == mpmath.inf) or abs(hi - old) <= 1e-13 * old
            checked += 1
    assert checked >= 20
    # s = -1 with sigma1 <= 1: the moment diverges
    assert F.expected_lambda(-1, 1.0, 1.0, 2.0, 1.0, 0.0) == math.inf
    assert F.expected_lambda(1, 2.0, 0.0, 1.0, math.inf, 0.0) == 2.0
    assert F.expected_lambda(1, 2.0, 0.5, 1.0, math.inf, 0.0) == 2.0 * 2 / 3


def test_formulas_carry_the_guard_visibly():
    import inspect

    src = inspect.getsource(F)
    assert "globals()[" not in src  # no import-time rebinding
    for name in F.__all__:
        fn = getattr(F, name)
        assert hasattr(fn, "__wrapped__"), name
    with pytest.raises(F.FormulaZeroDivision):
        F.omega(0)
