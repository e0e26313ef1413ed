"""Every parameter formula of the paper, one function each.

Each function takes a keyword ``dps``: ``None`` computes in float64, an integer
computes with mpmath at that many decimal digits (see :mod:`gtm_core.numeric`).
The same source code serves both, so the float64 path and the golden values
cannot drift apart. Integer-valued results (thresholds ``c``) are Python ints.

Float64 policy: a result beyond the float64 range raises ``OverflowError`` (the
planners turn it into a typed ``UnsupportedConfiguration``); it is never silently
returned as a wrong finite number. Where the printed formula subtracts nearly equal
terms, the function evaluates an algebraically equal cancellation-free form
(lambda_right, the truncated Pareto moments); where the *value* itself is
ill-conditioned (lambda_right near its validity boundary, Theorem 29's bound near
zero) tests/gtm_core/test_formulas.py pins the loss and its explanation.
Golden values: tests/golden/formulas.json (generator next to it).

Paper: "Near-Optimal Generalized Private Testing" (Chaturvedi, Henzinger,
Upadhyay).
"""

from __future__ import annotations

from .errors import FormulaOverflow, FormulaZeroDivision  # noqa: F401  (their old home; re-exported)
from .formula_guard import guarded
from .numeric import backend
from .zeta import zeta as zeta_series

# Every public formula below carries @guarded (gtm_core.formula_guard): arguments must be finite
# reals, arithmetic failures become typed errors, NaN / complex results are refused.
zeta = guarded(zeta_series)

__all__ = [
    "zeta",
    "omega",
    "step_failure_probability",
    "lambda_left",
    "lambda_right",
    "right_tail_valid",
    "lemma11_root",
    "lemma11_threshold",
    "base_rate_above",
    "base_rate_below",
    "theorem21_tau1",
    "theorem21_tau2",
    "theorem21_mu1",
    "theorem21_noise_range",
    "rejection_threshold",
    "direction",
    "pareto_shape",
    "theorem21_A_tilde",
    "lemma22_lambda_bar",
    "expected_lambda",
    "theorem23_tau1",
    "theorem23_mu1",
    "theorem23_tau2",
    "theorem23_noise_range",
    "theorem23_expost_loss",
    "purification_crossover",
    "purified_probability",
    "purification_slack_bound",
    "lower_bound_delta_prime",
    "theorem29_alpha_sum",
    "corollary30_Lambda0",
    "corollary30_rejection_threshold",
    "corollary30_odds_ratio",
    "theorem31_expected_evaluations",
    "lemma19_good_event_failure",
    "pareto_tail",
    "pareto_moment",
    "pareto_truncated_mean",
    "pareto_truncated_second_moment",
]


# ---------------------------------------------------------------------------
# Definition 7: failure-probability allocation
# ---------------------------------------------------------------------------


@guarded
def omega(t: int, *, dps: int | None = None):
    """Definition 7(1): omega_t = 1 / (zeta * t * ln^3(t+2)); sum_t omega_t = 1."""
    m = backend(dps)
    with m.context():
        tt = m.num(t)
        return 1 / (zeta(dps=dps) * tt * m.log(tt + 2) ** 3)


@guarded
def step_failure_probability(t: int, beta, *, dps: int | None = None):
    """Definition 7(2): beta_t = omega_t * beta, so that sum_t beta_t = beta."""
    m = backend(dps)
    with m.context():
        return omega(t, dps=dps) * m.num(beta)


# ---------------------------------------------------------------------------
# Equations (3)-(4) and Lemma 10(3): Poisson mean thresholds
# ---------------------------------------------------------------------------


@guarded
def lambda_left(x, alpha, *, dps: int | None = None):
    """Equation (3): lambda^l(x, alpha) = x + L + sqrt(2 x L + L^2), L = ln(1/alpha).

    Lemma 10(3a): if lambda >= lambda^l(c, alpha) then Pr[Po(lambda) <= c] <= alpha.
    """
    m = backend(dps)
    with m.context():
        x = m.num(x)
        L = -m.log(m.num(alpha))
        return x + L + m.sqrt(2 * x * L + L * L)


@guarded
def lambda_right(x, alpha, *, dps: int | None = None):
    """Equation (4): lambda^r(x, alpha) = x + 1 - sqrt(2 (x+1) ln(1/alpha)).

    Lemma 10(3b): if c + 1 >= 2 ln(1/alpha) and lambda <= lambda^r(c, alpha) then
    Pr[Po(lambda) >= c + 1] <= alpha.

    Evaluated as y (y - 2L) / (y + sqrt(2 y L)), y = x + 1, which is the same number
    without the subtraction of two nearly equal terms. Near the validity boundary
    y = 2L the value itself is ill-conditioned in L (relative condition number
    ~ sqrt(2yL) / (2 lambda^r)): no formula can do better there in float64.
    """
    m = backend(dps)
    with m.context():
        y = m.num(x) + 1
        L = -m.log(m.num(alpha))
        return y * (y - 2 * L) / (y + m.sqrt(2 * y * L))


@guarded
def right_tail_valid(x, alpha, *, dps: int | None = None) -> bool:
    """Lemma 10(3b) validity condition: x + 1 >= 2 ln(1/alpha)."""
    m = backend(dps)
    with m.context():
        return bool(m.num(x) + 1 >= -2 * m.log(m.num(alpha)))


# ---------------------------------------------------------------------------
# Lemma 11: Poisson overhead control
# ---------------------------------------------------------------------------


@guarded
def lemma11_root(alpha, beta, gamma, *, dps: int | None = None):
    """Lemma 11: the larger root r of (gamma-1) m^2 - (sqrt(2A) + gamma sqrt(2B)) m - 2A,

    r = (a + sqrt(a^2 + 8 (gamma-1) A)) / (2 (gamma-1)), a = sqrt(2A) + gamma sqrt(2B),
    with A = ln(1/alpha), B = ln(1/beta).
    """
    m = backend(dps)
    with m.context():
        A = -m.log(m.num(alpha))
        B = -m.log(m.num(beta))
        g = m.num(gamma)
        a = m.sqrt(2 * A) + g * m.sqrt(2 * B)
        return (a + m.sqrt(a * a + 8 * (g - 1) * A)) / (2 * (g - 1))


@guarded
def lemma11_threshold(alpha, beta, gamma, *, dps: int | None = 50) -> int:
    """Lemma 11: c = max(floor(2 max(A, B)), ceil(r^2)).

    (The first term never wins: r >= sqrt(2A) + gamma sqrt(2B) >= sqrt(2 max(A, B)),
    so c = ceil(r^2); we keep the paper's expression.)

    Computed at ``dps`` digits (default 50) because floor/ceil must be exact: if
    2 max(A, B) or r^2 lies within 10^-(dps-10) (relative) of an integer, the
    computation is repeated at twice the precision (up to 800 digits), so the
    rounding direction is never decided by the last digits. float64
    (``dps=None``) is allowed but can be off by one at such near-ties.
    """
    if dps is None:
        m = backend(None)
        A, B = -m.log(m.num(alpha)), -m.log(m.num(beta))
        r = lemma11_root(alpha, beta, gamma)
        return int(max(m.floor(2 * max(A, B)), m.ceil(r * r)))
    backend(dps)  # validates dps
    digits = int(dps)
    while True:
        m = backend(digits)
        with m.context():
            A, B = -m.log(m.num(alpha)), -m.log(m.num(beta))
            r = lemma11_root(alpha, beta, gamma, dps=digits)
            lo, hi = 2 * max(A, B), r * r
            tol = m.power(10, -(digits - 10)) * max(1, hi)
            if min(abs(lo - round(lo)), abs(hi - round(hi))) > tol:
                return int(max(m.floor(lo), m.ceil(hi)))
        if digits >= 800:
            raise ArithmeticError(
                f"Lemma 11 threshold undecided at {digits} digits (an exact integer tie?)"
            )
        digits *= 2


# ---------------------------------------------------------------------------
# Lemma 20: base rates
# ---------------------------------------------------------------------------


@guarded
def base_rate_above(c, beta_II, p_star, *, dps: int | None = None):
    """Lemma 20(1), above threshold (s = +1): rho = lambda^l(c, beta^II) / p*."""
    m = backend(dps)
    with m.context():
        return lambda_left(c, beta_II, dps=dps) / m.num(p_star)


@guarded
def base_rate_below(c, beta_II, p_star, *, dps: int | None = None):
    """Lemma 20(2), below threshold (s = -1): rho = lambda^r(c, beta^II) / p*.

    For the flipped variant of Theorem 21/23 the target is q* = 1 - p*.
    """
    m = backend(dps)
    with m.context():
        return lambda_right(c, beta_II, dps=dps) / m.num(p_star)


# ---------------------------------------------------------------------------
# Lemma 19 and Theorem 21
# ---------------------------------------------------------------------------


@guarded
def lemma19_good_event_failure(mu1, tau1, beta, c_G="0.25", *, dps: int | None = None):
    """Lemma 19(1): Pr[G^c] <= exp(-mu1/tau1) + c_G * sum_t beta_t = exp(-mu1/tau1) + c_G beta."""
    m = backend(dps)
    with m.context():
        return m.exp(-m.num(mu1) / m.num(tau1)) + m.num(c_G) * m.num(beta)


@guarded
def theorem21_tau1(epsilon, theta, *, dps: int | None = None):
    """Theorem 21 (proof): 1/tau_1 = theta eps / (theta + 2)."""
    m = backend(dps)
    with m.context():
        th = m.num(theta)
        return (th + 2) / (th * m.num(epsilon))


@guarded
def theorem21_tau2(epsilon, theta, *, dps: int | None = None):
    """Theorem 21 (proof): 2/tau_2 = 2 eps / (theta + 2), i.e. tau_2 = (theta + 2)/eps."""
    m = backend(dps)
    with m.context():
        return (m.num(theta) + 2) / m.num(epsilon)


@guarded
def theorem21_mu1(epsilon, theta, beta, *, dps: int | None = None):
    """Theorem 21 (proof): mu_1 = tau_1 ln(4/beta)."""
    m = backend(dps)
    with m.context():
        return theorem21_tau1(epsilon, theta, dps=dps) * m.log(4 / m.num(beta))


@guarded
def theorem21_noise_range(eps_t, epsilon, theta, beta, beta_t, *, dps: int | None = None):
    """Theorem 21: Lambda_t = (4/beta)^{(eps_t/eps)(1 + 2/theta)} (4/beta_t)^{(eps_t/eps)(2 + theta)}.

    Equals Lemma 19(2)'s exp(eps_t (mu_1 + tau_2 ln(4/beta_t))) with c_G = 1/4.
    """
    m = backend(dps)
    with m.context():
        ratio = m.num(eps_t) / m.num(epsilon)
        th = m.num(theta)
        return m.power(4 / m.num(beta), ratio * (1 + 2 / th)) * m.power(
            4 / m.num(beta_t), ratio * (2 + th)
        )


@guarded
def rejection_threshold(p_star, gamma, Lambda, *, dps: int | None = None):
    """Theorems 21(2) and 23(2): p_bar = max(p*/(gamma Lambda), 1 - gamma Lambda (1 - p*)).

    The first term is the direct variant (s=+1), the second the flipped one (s=-1).
    No cancellation: the flipped term wins only when x = gamma Lambda <= p*/(1-p*),
    and then it is >= 1 - p*.
    """
    m = backend(dps)
    with m.context():
        p = m.num(p_star)
        x = m.num(gamma) * m.num(Lambda)
        return max(p / x, 1 - x * (1 - p))


@guarded
def direction(p_star, gamma, Lambda, *, dps: int | None = None) -> int:
    """Flipping rule (proof of Theorem 21): s_t = +1 iff gamma Lambda_t (1 - p*_t) > p*_t, else -1.

    Identity behind it: p*/x - (1 - x(1-p*)) = (1-p*)(x-1)(x - p*/(1-p*)) / x, x = gamma Lambda.
    """
    m = backend(dps)
    with m.context():
        p = m.num(p_star)
        return 1 if m.num(gamma) * m.num(Lambda) * (1 - p) > p else -1


@guarded
def pareto_shape(epsilon, eps_t, theta, *, dps: int | None = None):
    """Theorem 21(3): w_t = e^{eps_t eta_{2,t}} ~ Par(sigma_t), sigma_t = eps / (eps_t (theta + 2))."""
    m = backend(dps)
    with m.context():
        return m.num(epsilon) / (m.num(eps_t) * (m.num(theta) + 2))


@guarded
def theorem21_A_tilde(t, epsilon, eps_t, theta, gamma, beta, p_star, C_A, *, dps: int | None = None):
    """Theorem 21(3): A~_t = C_A ln(t/beta)/(gamma-1)^2 * max((4/beta)^{(1+2/theta) eps_t/eps}/p*, 1/(1-p*)).

    ``C_A`` is the paper's unspecified universal constant; callers pass it explicitly.
    """
    m = backend(dps)
    with m.context():
        g = m.num(gamma)
        p = m.num(p_star)
        shared = m.power(4 / m.num(beta), (1 + 2 / m.num(theta)) * m.num(eps_t) / m.num(epsilon))
        return (
            m.num(C_A) * m.log(m.num(t) / m.num(beta)) / (g - 1) ** 2 * max(shared / p, 1 / (1 - p))
        )


@guarded
def lemma22_lambda_bar(t, gamma, beta, beta_t, p_star, Lambda, C_A, *, dps: int | None = None):
    """Lemma 22(1): lambda_bar_t = max(C_A ln(t/beta)/(gamma-1)^2 * max(Lambda_t/p*, 1/(1-p*)), ln(4/beta_t)).

    ``C_A`` is the paper's universal constant (Theorem 21 proof: C_A = max(gamma C', 2)).
    """
    m = backend(dps)
    with m.context():
        g = m.num(gamma)
        p = m.num(p_star)
        main = m.num(C_A) * m.log(m.num(t) / m.num(beta)) / (g - 1) ** 2 * max(
            m.num(Lambda) / p, 1 / (1 - p)
        )
        return max(main, m.log(4 / m.num(beta_t)))


@guarded(infinite_ok=("tau2",))
def expected_lambda(s, rho, eps_t, tau1, tau2, mu1, *, dps: int | None = None):
    """Lemma 12(2): E[lambda_t] (= E[N_t] for a step that is run, marginal over the noise).

    lambda_t = rho e^{s eps_t (mu1 - eta1 + eta2)}; with V = e^{eps_t eta1} ~ Par(sigma1),
    W = e^{eps_t eta2} ~ Par(sigma2), sigma1 = 1/(eps_t tau1), sigma2 = 1/(eps_t tau2):
    s = +1: E = rho e^{eps mu1} sigma2/(sigma2 - 1) * sigma1/(sigma1 + 1);
    s = -1: E = rho e^{-eps mu1} sigma1/(sigma1 - 1) * sigma2/(sigma2 + 1);
    +inf when the needed moment diverges. tau2 = +inf (no eta2) gives the factor 1;
    eps_t = 0 gives rho.
    """
    m = backend(dps)
    with m.context():
        eps = m.num(eps_t)
        if eps == 0:
            return m.num(rho)
        t2 = m.num(tau2)
        s1 = 1 / (eps * m.num(tau1))
        s2 = m.inf if t2 == m.inf else 1 / (eps * t2)
        if m.num(s) > 0:
            if s2 <= 1:
                return m.inf
            ew = 1 if s2 == m.inf else s2 / (s2 - 1)
            return m.num(rho) * m.exp(eps * m.num(mu1)) * ew * s1 / (s1 + 1)
        if s1 <= 1:
            return m.inf
        ew = 1 if s2 == m.inf else s2 / (s2 + 1)
        return m.num(rho) * m.exp(-eps * m.num(mu1)) * s1 / (s1 - 1) * ew


# ---------------------------------------------------------------------------
# Theorem 23 / Corollary 35: ex-post privacy parameterisation
# ---------------------------------------------------------------------------


@guarded
def theorem23_tau1(epsilon_c, *, dps: int | None = None):
    """Theorem 23 (proof): 1/tau_1 = eps_C."""
    m = backend(dps)
    with m.context():
        return 1 / m.num(epsilon_c)


@guarded
def theorem23_mu1(epsilon_c, beta, *, dps: int | None = None):
    """Theorem 23 (proof): mu_1 = ln(4/beta)/eps_C = tau_1 ln(4/beta)."""
    m = backend(dps)
    with m.context():
        return m.log(4 / m.num(beta)) / m.num(epsilon_c)


@guarded
def theorem23_tau2(eps_t, c_h, beta_t, *, dps: int | None = None):
    """Theorem 23 (proof): tau_{2,t} = 2 / (C_H eps_t ln(4/beta_t)); +inf when eps_t = 0."""
    m = backend(dps)
    with m.context():
        e = m.num(eps_t)
        if e == 0:
            return m.inf
        return 2 / (m.num(c_h) * e * m.log(4 / m.num(beta_t)))


@guarded
def theorem23_noise_range(eps_t, epsilon_c, c_h, beta, *, dps: int | None = None):
    """Theorem 23: Lambda_t = (4/beta)^{eps_t/eps_C} e^{2/C_H}.

    Exact cancellation: eps_t tau_{2,t} ln(4/beta_t) = 2/C_H. When eps_t = 0 the
    per-step noise has no effect (lambda_t = rho_t) and Lambda_t = 1.
    """
    m = backend(dps)
    with m.context():
        e = m.num(eps_t)
        if e == 0:
            return m.num(1)
        return m.power(4 / m.num(beta), e / m.num(epsilon_c)) * m.exp(2 / m.num(c_h))


@guarded
def theorem23_expost_loss(halted: bool, eps_t, epsilon_c, c_h, beta_t, *, dps: int | None = None):
    """Theorem 23: eps~(a_1..a_t) = eps_C + C_H eps_t ln(4/beta_t) if a_t = s_t (halt), else eps_C."""
    m = backend(dps)
    with m.context():
        base = m.num(epsilon_c)
        if not halted:
            return base
        return base + m.num(c_h) * m.num(eps_t) * m.log(4 / m.num(beta_t))


# ---------------------------------------------------------------------------
# Lemma 24 / Corollary 25: purification
# ---------------------------------------------------------------------------


@guarded
def purification_crossover(eps_t, delta_t, c=1, *, dps: int | None = None):
    """Lemma 24(2)-(3): phi = delta / (e^{c eps} - 1 + 2 delta) makes the smoothed mechanism (c eps)-DP."""
    m = backend(dps)
    with m.context():
        d = m.num(delta_t)
        return d / (m.expm1(m.num(c) * m.num(eps_t)) + 2 * d)


def purification_map(p, phi):
    """Lemma 24(1), equation (13), on numbers of any type (float, mpmath, arb balls):
    (1 - 2 phi) p + phi. :func:`purified_probability` is the guarded formula; the exact engine
    applies this map to arb balls."""
    return (1 - 2 * phi) * p + phi


@guarded
def purified_probability(p, phi, *, dps: int | None = None):
    """Lemma 24(1), equation (13): p~ = (1 - 2 phi) p + phi."""
    m = backend(dps)
    with m.context():
        return purification_map(m.num(p), m.num(phi))


@guarded
def purification_slack_bound(eps_t, delta_t, *, dps: int | None = None):
    """Lemma 24(3) / Corollary 25: |p~ - p| <= phi <= delta_t / eps_t."""
    m = backend(dps)
    with m.context():
        return m.num(delta_t) / m.num(eps_t)


# ---------------------------------------------------------------------------
# Section 6: lower bounds (reference curves)
# ---------------------------------------------------------------------------


@guarded
def lower_bound_delta_prime(epsilon, delta, *, dps: int | None = None):
    """Definition 26 / Theorem 29: delta' = delta / (e^eps - 1)."""
    m = backend(dps)
    with m.context():
        return m.num(delta) / m.expm1(m.num(epsilon))


@guarded
def theorem29_alpha_sum(epsilon, delta, beta, T, *, dps: int | None = None):
    """Theorem 29, equation (15): alpha_+ + alpha_- >=
    (1/eps)(ln(T / (2(beta + T delta'))) + ln(1/(2(beta + delta')))) - 2."""
    m = backend(dps)
    with m.context():
        dp = lower_bound_delta_prime(epsilon, delta, dps=dps)
        b = m.num(beta)
        TT = m.num(T)
        return (m.log(TT / (2 * (b + TT * dp))) + m.log(1 / (2 * (b + dp)))) / m.num(epsilon) - 2


@guarded
def corollary30_Lambda0(eps_1, epsilon, delta, beta, T, *, dps: int | None = None):
    """Corollary 30: Lambda_0 = e^{-2 eps_1} (T/(2(beta + T delta')) * 1/(2(beta + delta')))^{eps_1/eps}."""
    m = backend(dps)
    with m.context():
        dp = lower_bound_delta_prime(epsilon, delta, dps=dps)
        b = m.num(beta)
        TT = m.num(T)
        e1 = m.num(eps_1)
        inner = TT / (2 * (b + TT * dp)) / (2 * (b + dp))
        return m.exp(-2 * e1) * m.power(inner, e1 / m.num(epsilon))


@guarded
def corollary30_odds_ratio(p_star, p_bar, *, dps: int | None = None):
    """Corollary 30, equation (17): the odds ratio (p*/(1-p*)) / (p_bar/(1-p_bar)), which must be >= Lambda_0."""
    m = backend(dps)
    with m.context():
        ps = m.num(p_star)
        pb = m.num(p_bar)
        return (ps / (1 - ps)) / (pb / (1 - pb))


@guarded
def corollary30_rejection_threshold(p_star, Lambda0, *, dps: int | None = None):
    """Largest rejection threshold allowed by Corollary 30, items 1-3 (the case-wise bounds).

    Case 1 (p_bar <= 1/2, p* <= 1/2): p_bar <= p*/Lambda_0.
    Case 2 (both >= 1/2): p_bar <= 1 - Lambda_0 (1 - p*).
    Case 3 (p_bar < 1/2 < p*): p_bar <= 1 / (4 Lambda_0 (1 - p*)).
    Returns the largest p_bar <= p* consistent with the case it falls in (a floor
    that no (eps, delta)-DP tester can beat).
    """
    m = backend(dps)
    with m.context():
        ps = m.num(p_star)
        L0 = m.num(Lambda0)
        half = m.num(1) / 2
        if L0 <= 1:
            return ps
        if ps <= half:
            return ps / L0
        case2 = 1 - L0 * (1 - ps)
        if case2 >= half:
            return case2
        return min(1 / (4 * L0 * (1 - ps)), half)


@guarded
def theorem31_expected_evaluations(p_star, eps_1, epsilon, delta, beta_II, *, dps: int | None = None):
    """Theorem 31: E[N_t] >= e^{-eps_1} / (4 p* (2 (beta^II + delta'))^{eps_1/eps})."""
    m = backend(dps)
    with m.context():
        dp = lower_bound_delta_prime(epsilon, delta, dps=dps)
        e1 = m.num(eps_1)
        return m.exp(-e1) / (
            4 * m.num(p_star) * m.power(2 * (m.num(beta_II) + dp), e1 / m.num(epsilon))
        )


# ---------------------------------------------------------------------------
# Lemma 12: Pareto facts
# ---------------------------------------------------------------------------


@guarded
def pareto_tail(u, sigma, *, dps: int | None = None):
    """Definition 8(5): Pr[w > u] = u^{-sigma} for u >= 1 (and 1 for u < 1)."""
    m = backend(dps)
    with m.context():
        uu = m.num(u)
        if uu <= 1:
            return m.num(1)
        return m.power(uu, -m.num(sigma))


@guarded
def pareto_moment(k, sigma, *, dps: int | None = None):
    """Lemma 12(2): E[w^k] = sigma/(sigma - k) for k < sigma (also k < 0); +inf for k >= sigma."""
    m = backend(dps)
    with m.context():
        kk = m.num(k)
        s = m.num(sigma)
        if kk >= s:
            return m.inf
        return s / (s - kk)


@guarded
def pareto_truncated_mean(sigma, W, *, dps: int | None = None):
    """Lemma 12(3a): E[min(w, W)] = sigma/(sigma-1) - W^{1-sigma}/(sigma-1), W >= 1.

    The paper states it for sigma > 1; the identity holds for every sigma > 0 with
    the limit 1 + ln W at sigma = 1. Evaluated as 1 - expm1((1-sigma) ln W)/(sigma-1),
    the same number without the cancellation of two terms ~ 1/(sigma-1) near sigma = 1.
    """
    m = backend(dps)
    with m.context():
        s = m.num(sigma)
        lw = m.log(m.num(W))
        if s == 1:
            return 1 + lw
        return 1 - m.expm1((1 - s) * lw) / (s - 1)


@guarded
def pareto_truncated_second_moment(sigma, W, *, dps: int | None = None):
    """Lemma 12(3b): E[min(w, W)^2] = (2 W^{2-sigma} - sigma)/(2 - sigma) (sigma != 2), 2 ln W + 1 (sigma = 2).

    Evaluated as 1 + 2 expm1((2-sigma) ln W)/(2-sigma): the same number, continuous
    through sigma = 2 and free of cancellation there.
    """
    m = backend(dps)
    with m.context():
        s = m.num(sigma)
        lw = m.log(m.num(W))
        if s == 2:
            return 2 * lw + 1
        return 1 + 2 * m.expm1((2 - s) * lw) / (2 - s)
