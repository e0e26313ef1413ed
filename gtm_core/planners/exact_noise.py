"""Exact calibration integrated over the per-step noise: the ``exact_noise`` planner (beyond the paper).

Theorem 21 spends its failure probability beta as (proof of Theorem 21, Lemma 19 with c_G = 1/4):

* beta/4 on eta_1 > mu_1 (once),
* per step t, beta_t/4 on the eta_{2,t} tail (the factor (4/beta_t)^{eps_t tau_2} of Lambda_t),
  beta_t/4 on the Poisson Type II tail and beta_t/4 on the Poisson Type I tail,

with sum_t beta_t = beta (Definition 7). This planner keeps *everything* the user sees from
Theorem 21 - tau_1, mu_1, tau_2, Lambda_t, the flipping rule s_t and the claimed rejection
threshold p_bar_t - and chooses c_t, rho_t so that two *exact* per-step probabilities, integrated
over eta_{2,t} and the Poisson count (the closed form of :mod:`gtm_core.exact`), meet the budgets:

  (II) Pr[continue at t | eta_1 = mu_1, p_t = p*_t]   <= beta^II_t = beta_t/4,
  (I)  Pr[halt at t     | eta_1 = 0,   p_t = p_bar_t] <= beta^I_t  = beta_t/2
       (Theorem 21's eta_{2,t}-tail share and Poisson Type I share, merged).

Why these two points are the worst cases (conventions of :mod:`gtm_core.exact` and Algorithm 1 in
:mod:`gtm_core.reference`: lambda_t = rho e^{eps s (mu_1 - eta_1 + eta_2)}, the count of +1 outputs
of the *fed* mechanism is K ~ Po(lambda r) with r = p (s=+1) or 1 - p (s=-1); s=+1 halts iff
K >= c+1, s=-1 halts iff K <= c):

* s = +1: the count mean a w, a = rho r e^{eps (mu_1 - x)}, w = e^{eps eta_2} ~ Pareto(sigma);
  Pr[continue] = E_w Pr[Po(a w) <= c] decreases in a. a decreases in x and increases in r, so the
  continue probability increases in x and decreases in p: on {eta_1 <= mu_1} and p >= p* it is at
  most its value at (x = mu_1, r = p*); the halt probability for p <= p_bar and any x >= 0 is at
  most its value at (x = 0, r = p_bar).
* s = -1: the count mean b / w, b = rho r e^{-eps (mu_1 - x)}; Pr[continue] = E_w Pr[Po(b/w) >= c+1]
  increases in b, b increases in x and in r = 1 - p, so again continue is increasing in x and
  decreasing in p: worst Type II at (x = mu_1, r = 1 - p*), worst Type I at (x = 0, r = 1 - p_bar).

Union bound (adaptive streams included: given eta_1 and the history, step t's eta_{2,t} and count
are fresh): Pr[some step fails] <= Pr[eta_1 > mu_1] + sum_t (beta_t/4 + beta_t/2) <= beta/4 + 3 beta/4
= beta, i.e. Theorem 21 items (1)-(2) hold simultaneously with probability >= 1 - beta, with the
same p_bar_t. Privacy is unchanged: Lemma 17 holds for every c_t, rho_t. Item (3) (lambda_t <= rho_t
Lambda_t on the good event G, Pr[G^c] <= beta/2 by Lemma 19) is unchanged too, with the smaller rho_t.

Search (float64, fast): for each c, the base rate that meets one inequality with equality
(s = +1: the smallest rho meeting (II); s = -1: the smallest rho meeting (I) - both are the cheapest
rho, since E[N_t] is proportional to rho), then the smallest c whose rho also meets the other
inequality (bisection on c in [0, c_theorem21]; Theorem 21's own (c, rho) satisfies both, see
``tests``). Certification: both inequalities at the stored float rho, with python-flint ``arb``
balls of the exact engine (``StepEval``, 160 bits; :mod:`gtm_core.planners.exact_noise_certificate`); the
whole ball must lie below the budget.
A step that cannot be certified raises :class:`UnsupportedConfiguration`; none is returned
uncertified.

Float closed forms (derived in :mod:`gtm_core.exact`): with pmf(c; m) = m^c e^{-m}/c!,

  s = +1: continue = Q(c+1, a) - T_+,  T_+ = a^sigma Gamma(c+1-sigma, a)/c!
                                        = pmf(c; a) a int_0^inf exp((c+1-sigma) v - a (e^v - 1)) dv,
  s = -1: continue = P(c+1, b) - T_-,  T_- = b^{-sigma} gamma(c+1+sigma, b)/c!
                                        = pmf(c; b) b int_0^inf exp(b (1 - e^{-v}) - (c+1+sigma) v) dv.

The incomplete gamma forms are used through scipy when nothing under- or overflows; otherwise (and
always for c+1-sigma <= 0, where scipy's incomplete gamma functions do not apply) the integrals,
whose integrands are log-concave in v, by a Gauss-Legendre rule on the window where the exponent is
within 60 of its maximum (accurate to ~1e-12 for every shape).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special

from .. import formulas as F
from ..config import GTMConfig
from ..errors import UnsupportedConfiguration
from . import rounding as R
from .exact_noise_certificate import StepCertificate, certify_step
from .steps import StepPlan, finish_step, lemma11_c
from .theorem21 import theorem21_noise

__all__ = [
    "step_probabilities_float",
    "calibrate",
    "exact_noise_step",
    "step_certificate",
]

_WINDOW = 60.0          # the quadrature window: exponent within this of its maximum
_SEARCH_MARGIN = 1e-7   # the float search aims at budget * (1 - margin), so certification rarely nudges
# c_t of the last planned step per (gtm parameters, per-step inputs): only a starting point of the
# search for the next step (the result does not depend on it; see _search)
_C_HINTS: dict = {}


def _composite_rule(edges) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on [0, 1] of 24-point Gauss-Legendre panels between the given edges."""
    x, w = np.polynomial.legendre.leggauss(24)
    e = np.asarray(edges, dtype=float)
    a, b = e[:-1, None], e[1:, None]
    return ((a + b) / 2 + (b - a) / 2 * x).ravel(), ((b - a) / 2 * w).ravel()


_RIGHT_X, _RIGHT_W = _composite_rule([0.0, 0.05, 0.2, 0.5, 1.0])  # graded away from the peak
_LEFT_X, _LEFT_W = _composite_rule([0.0, 1 / 3, 2 / 3, 1.0])


# ---------------------------------------------------------------------------
# float64 closed forms (search only; every claim is certified in arb afterwards)
# ---------------------------------------------------------------------------


def _log_integral_concave(psi, dpsi, psi_vec, v_peak: float) -> float:
    """ln int_0^inf exp(psi(v)) dv for a strictly concave psi with its maximum on [0, inf) at v_peak.

    ``psi``, ``dpsi`` are scalar (math) functions, ``psi_vec`` is psi on numpy arrays. The window is
    the level set psi >= psi(v_peak) - _WINDOW, an interval since psi is concave; its edges come from
    Newton's method, which on a concave function approaches a level crossing monotonically from
    outside (a first step from inside overshoots outwards), so every edge used lies outside the
    level set and the discarded mass is below e^{-_WINDOW} of the peak's. The window is split at
    the peak into graded panels of 24-point Gauss-Legendre."""
    p0 = psi(v_peak)
    level = p0 - _WINDOW

    def edge(v: float, lower: float) -> float:
        for _ in range(200):
            f = psi(v) - level
            d = dpsi(v)
            v_new = max(v - f / d, lower)
            if f > 0:  # inside: Newton overshoots outwards; at most double the distance to the peak
                reach = 2 * abs(v - v_peak) + 1.0
                v_new = min(max(v_new, v_peak - reach), v_peak + reach, 700.0)
            elif abs(v_new - v) <= 1e-2 * abs(v - v_peak):
                return v
            v = v_new
        return v  # pragma: no cover - Newton converges in a few steps here

    if v_peak > 0 and psi(0.0) < level:
        v_lo = edge(max(v_peak - 1.0, 0.5 * v_peak), 0.0)
    else:
        v_lo = 0.0
    v_hi = edge(v_peak + 1.0, v_peak)
    total = float(np.dot(np.exp(psi_vec(v_peak + (v_hi - v_peak) * _RIGHT_X) - p0), _RIGHT_W)) * (v_hi - v_peak)
    if v_peak > v_lo:
        total += float(np.dot(np.exp(psi_vec(v_lo + (v_peak - v_lo) * _LEFT_X) - p0), _LEFT_W)) * (v_peak - v_lo)
    return p0 + math.log(total)


def _tail_plus(c: int, a: float, sigma: float) -> float:
    """T_+ = a^sigma Gamma(c+1-sigma, a)/c! (s = +1), in float64."""
    k = c + 1 - sigma
    la = math.log(a)
    if k > 0:  # scipy's regularised Q(k, a) when nothing under- or overflows
        q = float(special.gammaincc(k, a))
        e = sigma * la + math.lgamma(k) - math.lgamma(c + 1)
        if q > 1e-280 and e < 700:
            return math.exp(e) * q
    v_peak = max(0.0, math.log(k / a)) if k > 0 else 0.0
    lpmf = c * la - a - math.lgamma(c + 1)
    li = _log_integral_concave(lambda v: k * v - a * math.expm1(v), lambda v: k - a * math.exp(v),
                               lambda v: k * v - a * np.expm1(v), v_peak)
    return math.exp(lpmf + la + li)


def _tail_minus(c: int, b: float, sigma: float) -> float:
    """T_- = b^{-sigma} gamma(c+1+sigma, b)/c! (s = -1), in float64."""
    k = c + 1 + sigma
    lb = math.log(b)
    pk = float(special.gammainc(k, b))  # scipy's regularised P(k, b) when nothing under- or overflows
    e = -sigma * lb + math.lgamma(k) - math.lgamma(c + 1)
    if pk > 1e-280 and e < 700:
        return math.exp(e) * pk
    v_peak = max(0.0, math.log(b / k)) if b > k else 0.0
    lpmf = c * lb - b - math.lgamma(c + 1)
    li = _log_integral_concave(lambda v: -b * math.expm1(-v) - k * v, lambda v: b * math.exp(-v) - k,
                               lambda v: -b * np.expm1(-v) - k * v, v_peak)
    return math.exp(lpmf + lb + li)


def step_probabilities_float(s: int, c: int, mean: float, sigma: float | None) -> tuple[float, float]:
    """(continue, halt) of one step in float64, given the count-mean scale of :mod:`gtm_core.exact`:
    ``mean`` = a (s = +1, count mean a w) or b (s = -1, count mean b / w); ``sigma`` = 1/(eps_t tau_2)
    (None: no noise, eps_t = 0)."""
    if mean <= 0:
        return (1.0, 0.0) if s == 1 else (0.0, 1.0)
    Q = float(special.gammaincc(c + 1, mean))  # Pr[Po(mean) <= c]
    P = float(special.gammainc(c + 1, mean))   # Pr[Po(mean) >= c+1]
    if sigma is None:
        return (Q, P) if s == 1 else (P, Q)
    if s == 1:
        tail = _tail_plus(c, mean, sigma)
        return max(Q - tail, 0.0), min(P + tail, 1.0)
    tail = _tail_minus(c, mean, sigma)
    return max(P - tail, 0.0), min(Q + tail, 1.0)


# ---------------------------------------------------------------------------
# the step's two inequalities
# ---------------------------------------------------------------------------


class _Step:
    """The numbers one step's calibration needs (all from Theorem 21's plan of the same config)."""

    def __init__(self, config: GTMConfig, t: int):
        g = config.gtm
        n = theorem21_noise(config, t)
        spec, tau1, mu1, tau2, beta_t, Lambda = n.spec, n.tau1, n.mu1, n.tau2, n.beta_t, n.Lambda
        # Theorem 21's flipping rule and its c_t (Lemma 11 at beta_t/4, beta_t/4): the search's upper end
        s = F.direction(spec.p_star, g.gamma, Lambda)
        c21 = lemma11_c(beta_t / 4, beta_t / 4, g.gamma)
        p_bar = R.round_rejection_threshold(
            F.rejection_threshold(spec.p_star, g.gamma, Lambda), s, spec.p_star, g.gamma, Lambda
        )
        self.config, self.spec, self.t = config, spec, t
        self.s, self.c21 = s, c21
        self.tau1, self.mu1, self.tau2 = tau1, mu1, tau2
        self.beta_t, self.Lambda, self.p_bar = beta_t, Lambda, p_bar
        self.beta_I, self.beta_II = beta_t / 2, beta_t / 4
        self.eps = spec.eps_t
        self.sigma = None if spec.eps_t == 0 else 1.0 / (spec.eps_t * tau2)
        p_star = spec.p_star
        # the count-mean scale per unit rho at the two worst-case points
        if s == 1:
            self.unit_II = p_star                                     # a = rho p* at x = mu_1
            self.unit_I = p_bar * math.exp(spec.eps_t * mu1)          # a = rho p_bar e^{eps mu_1} at x = 0
        else:
            self.unit_II = 1 - p_star                                 # b = rho (1-p*) at x = mu_1
            self.unit_I = (1 - p_bar) * math.exp(-spec.eps_t * mu1)   # b = rho (1-p_bar) e^{-eps mu_1} at x = 0

    # float64 versions of the two error probabilities
    def type_II(self, c: int, rho: float) -> float:
        return step_probabilities_float(self.s, c, rho * self.unit_II, self.sigma)[0]

    def type_I(self, c: int, rho: float) -> float:
        return step_probabilities_float(self.s, c, rho * self.unit_I, self.sigma)[1]


def _solve_rho(fn, target: float, rho_hint: float) -> float:
    """The rho where fn(rho), decreasing in rho, crosses target: Brent on ln fn - ln target
    (nearly linear in ln rho) after bracketing outwards from the hint."""
    lt = math.log(target)

    def g(lr: float) -> float:
        v = fn(math.exp(lr))
        return (math.log(v) if v > 0 else -745.0) - lt

    x0 = math.log(rho_hint)
    g0 = g(x0)
    if g0 == 0:
        return rho_hint
    direction = 1.0 if g0 > 0 else -1.0  # above target: a larger rho is needed
    step = 0.01
    for _ in range(200):
        x1 = x0 + direction * step
        g1 = g(x1)
        if (g1 > 0) != (g0 > 0) or g1 == 0:
            break
        x0, g0, step = x1, g1, step * 2
    else:  # pragma: no cover - fn is monotone with limits 1 and 0
        raise UnsupportedConfiguration("exact_noise calibration: could not bracket the base rate")
    lo, hi = (x0, x1) if x0 < x1 else (x1, x0)
    return math.exp(optimize.brentq(g, lo, hi, xtol=1e-11, rtol=1e-12, maxiter=200))


def _base_rate(st: _Step, c: int, hint: float | None = None) -> float:
    """The cheapest rho meeting the tied inequality at c (s=+1: (II); s=-1: (I)), with a margin."""
    # hint without one: the noiseless Poisson quantile (Pr[Po(m) <= c] = target)
    if st.s == 1:
        # (II): continue at x = mu_1, r = p* decreases in rho: smallest rho with type_II <= target
        target = st.beta_II * (1 - _SEARCH_MARGIN)
        hint = hint or float(special.gammainccinv(c + 1, target)) / st.unit_II
        return _solve_rho(lambda r: st.type_II(c, r), target, hint)
    # (I): halt at x = 0, r = 1 - p_bar decreases in rho: smallest rho with type_I <= target
    target = st.beta_I * (1 - _SEARCH_MARGIN)
    hint = hint or float(special.gammainccinv(c + 1, target)) / st.unit_I
    return _solve_rho(lambda r: st.type_I(c, r), target, hint)


def _other_margin(st: _Step, c: int, rho: float) -> float:
    """ln(probability / target) of the untied inequality (<= 0: met)."""
    if st.s == 1:
        v, target = st.type_I(c, rho), st.beta_I * (1 - _SEARCH_MARGIN)
    else:
        v, target = st.type_II(c, rho), st.beta_II * (1 - _SEARCH_MARGIN)
    return (math.log(v) if v > 0 else -745.0) - math.log(target)


def _feasible(st: _Step, c: int, hint: float | None = None) -> tuple[bool, float, float]:
    """(c feasible?, its rho, the untied inequality's log margin)."""
    rho = _base_rate(st, c, hint)
    if not (math.isfinite(rho) and rho > 0):
        return False, rho, math.inf
    m = _other_margin(st, c, rho)
    return m <= 0, rho, m


def _search(st: _Step, c_hint: int | None = None) -> int:
    """Smallest feasible c. The untied inequality's log margin m(c) decreases with c (feasibility is
    monotone in c; tests/gtm_core/planners/test_exact_noise.py scans it), so the answer is the c
    with c - 1 infeasible and c feasible, whatever the path: bracketed from ``c_hint`` (the previous
    step's c, galloping) or by [0, Theorem 21's c] (doubled if needed), then regula falsi (Illinois)
    on the integers until the bracket is one wide."""
    if c_hint is not None:
        ok, rho, m = _feasible(st, c_hint)
        if ok:
            hi, rho_hi, m_hi, step = c_hint, rho, m, 1
            while True:
                if hi == 0:
                    return 0
                lo = max(hi - step, 0)
                ok, rho_lo, m_lo = _feasible(st, lo, rho_hi)
                if not ok:
                    break
                hi, rho_hi, m_hi, step = lo, rho_lo, m_lo, step * 2
        else:
            lo, rho_lo, m_lo, step = c_hint, rho, m, 1
            while True:
                hi = lo + step
                if hi > 10**7:
                    raise UnsupportedConfiguration(
                        f"step t={st.t}: exact_noise calibration found no c_t <= 1e7 meeting both budgets")
                ok, rho_hi, m_hi = _feasible(st, hi, rho_lo)
                if ok:
                    break
                lo, rho_lo, m_lo, step = hi, rho_hi, m_hi, step * 2
        return _refine(st, lo, hi, rho_lo, m_lo, rho_hi, m_hi)
    hi = max(st.c21, 1)
    ok, rho_hi, m_hi = _feasible(st, hi)
    while not ok:
        hi *= 2
        if hi > 10**7:
            raise UnsupportedConfiguration(
                f"step t={st.t}: exact_noise calibration found no c_t <= 1e7 meeting both budgets"
            )
        ok, rho_hi, m_hi = _feasible(st, hi)
    ok, rho_lo, m_lo = _feasible(st, 0)
    if ok:
        return 0
    return _refine(st, 0, hi, rho_lo, m_lo, rho_hi, m_hi)


def _refine(st: _Step, lo: int, hi: int, rho_lo: float, m_lo: float, rho_hi: float, m_hi: float) -> int:
    """lo infeasible, hi feasible: narrow to hi - lo = 1 (Illinois on m against ln(c + 1))."""
    side = 0
    while hi - lo > 1:
        if math.isfinite(m_lo) and math.isfinite(m_hi) and m_lo > m_hi:
            x_lo, x_hi = math.log1p(lo), math.log1p(hi)  # m is closer to linear in ln(c + 1)
            guess = math.expm1(x_hi - m_hi * (x_hi - x_lo) / (m_hi - m_lo))
            mid = min(max(int(round(guess)), lo + 1), hi - 1)
        else:
            mid = (lo + hi) // 2
        hint = rho_lo + (rho_hi - rho_lo) * (mid - lo) / (hi - lo)
        ok, rho, m = _feasible(st, mid, hint)
        if ok:
            hi, rho_hi, m_hi = mid, rho, m
            if side == 1:
                m_lo /= 2  # Illinois: halve the stale end's weight
            side = 1
        else:
            lo, rho_lo, m_lo = mid, rho, m
            if side == -1:
                m_hi /= 2
            side = -1
    return hi


def _certify(st: _Step, c: int, rho: float) -> StepCertificate:
    return certify_step(st.s, c, rho, eps_t=st.eps, tau2=st.tau2, mu1=st.mu1, p_star=st.spec.p_star,
                        p_bar=st.p_bar, beta_I=st.beta_I, beta_II=st.beta_II, t=st.t)


def calibrate(config: GTMConfig, t: int) -> tuple[_Step, int, float, StepCertificate]:
    """(step data, c, rho, certificate) of step t; raises UnsupportedConfiguration if uncertifiable."""
    st = _Step(config, t)
    key = (config.gtm, st.spec.eps_t, st.spec.p_star, st.spec.delta_t)
    c = _search(st, _C_HINTS.get(key))
    if len(_C_HINTS) > 10_000:
        _C_HINTS.clear()
    _C_HINTS[key] = c
    for c_try in (c, c + 1, c + 2, c + 4):
        # the stored rho comes from the canonical solve (no path-dependent hint), so a step's plan
        # does not depend on which steps were planned before it
        ok, rho, _ = _feasible(st, c_try)
        if not ok:
            continue
        for k in range(4):
            # s=+1: a larger rho only helps (II); s=-1: a larger rho only helps (I) - the tied one
            r = rho * (1 + k * 1e-9) if k else rho
            cert = _certify(st, c_try, r)
            if cert.certified:
                return st, c_try, r, cert
            if not cert.tied_certified(st.s):
                continue  # the tied inequality: nudge rho up
            break  # the other one fails: a larger c is needed
    raise UnsupportedConfiguration(
        f"step t={t}: exact_noise calibration could not certify c={c}, rho={rho!r} "
        f"(p_star={st.spec.p_star!r}, eps_t={st.eps!r})"
    )


@functools.lru_cache(maxsize=100_000)
def _calibrated(config: GTMConfig, t: int) -> tuple[_Step, int, float, StepCertificate]:
    return calibrate(config, t)


def exact_noise_step(config: GTMConfig, t: int) -> StepPlan:
    """The ``exact_noise`` planner: Theorem 21's noise, Lambda_t, s_t and p_bar_t; c_t, rho_t from the
    exact per-step error probabilities integrated over eta_{2,t} (certified in arb)."""
    g = config.gtm
    if g.epsilon is None or g.theta is None:
        raise UnsupportedConfiguration("parameterization 'exact_noise' needs epsilon and theta (as theorem21)")
    st, c, rho, _cert = _calibrated(config, t)
    lam_max = R.round_product_up(rho, st.Lambda) if st.s == 1 else rho
    sp = finish_step(config, st.spec, s=st.s, c=c, rho=rho, tau1=st.tau1, mu1=st.mu1, tau2=st.tau2,
                 Lambda=st.Lambda, lam_max=lam_max, beta_t=st.beta_t, beta_I=st.beta_I, beta_II=st.beta_II)
    if sp.p_bar != st.p_bar:  # pragma: no cover - finish_step computes p_bar exactly as _Step does
        raise UnsupportedConfiguration(f"step t={t}: p_bar mismatch between the calibration and the plan")
    return sp


def step_certificate(config: GTMConfig, t: int) -> dict:
    """The ball-arithmetic certificate of step t's (I) and (II), with Theorem 21's c_t, rho_t for reference."""
    st, c, rho, cert = _calibrated(config, t)
    return {**cert.to_dict(), "t": t, "beta_t": st.beta_t, "p_bar": st.p_bar, "p_star": st.spec.p_star,
            "c_theorem21": st.c21}


def clear_cache() -> None:
    """Forget this module's memoised results (benchmarks that time a cold start call this)."""
    _calibrated.cache_clear()
    _C_HINTS.clear()
