"""Exact-tail calibration: the ``exact`` planner (beyond the paper; formerly ``gtm_core.exact_calibration``).

Same noise as Theorem 21 (tau_1, tau_2, mu_1, Lambda_t, beta^I = beta^II = beta_t/4,
the flipping rule), but c_t and rho_t come from *exact* Poisson tails instead of
the Chernoff thresholds lambda^l, lambda^r of equations (3)-(4):

  lambda_exact^l(c, a): the lambda with Pr[Po(lambda) <= c] = a  (left tail),
  lambda_exact^r(c, a): the lambda with Pr[Po(lambda) >= c+1] = a (right tail).

Direct variant (s = +1, Lemma 20(1) with exact tails): the smallest c with
lambda_exact^l(c, beta^II) <= gamma lambda_exact^r(c, beta^I), rho = lambda_exact^l(c, beta^II)/p*.
Then (a) lambda >= rho, p >= p*  =>  Pr[K <= c] <= Pr[Po(rho p*) <= c] <= beta^II, and
(b) lambda <= rho Lambda, p <= p*/(gamma Lambda)  =>  Pr[K >= c+1] <= Pr[Po(rho p*/gamma) >= c+1] <= beta^I.

Flipped variant (s = -1, symmetric to Lemma 20(2), target q* = 1 - p*): the smallest c with
lambda_exact^l(c, beta^I) <= gamma lambda_exact^r(c, beta^II), rho = lambda_exact^r(c, beta^II)/q*.
Then (a) lambda <= rho, q <= q*  =>  Pr[K >= c+1] <= Pr[Po(rho q*) >= c+1] <= beta^II, and
(b) lambda >= rho/Lambda, q >= gamma Lambda q*  =>  Pr[K <= c] <= Pr[Po(gamma rho q*) <= c] <= beta^I.

The two tail inequalities actually used, (a) and (b) at the float rho stored in the
plan, are certified with python-flint ball arithmetic before a step is returned;
the planner raises :class:`UnsupportedConfiguration` rather than return an
uncertified step.  Privacy is unchanged (Lemma 17 holds for any c_t, rho_t), and
the accuracy statement of Theorem 21 holds verbatim since only (a), (b) are used.
"""

from __future__ import annotations

import functools
import math

from flint import arb
from scipy import special

from .. import formulas as F
from ..config import GTMConfig
from ..errors import UnsupportedConfiguration
from ..exact.arb import lower_reg_int, working_precision
from . import rounding as R
from .steps import StepPlan, finish_step
from .theorem21 import theorem21_noise

__all__ = [
    "lambda_exact_left",
    "lambda_exact_right",
    "exact_threshold",
    "certify_tails",
    "exact_step",
    "expected_evaluations",
]

_CERT_BITS = 160


def lambda_exact_left(c: int, a: float) -> float:
    """lambda with Pr[Po(lambda) <= c] = a, i.e. Q(c+1, lambda) = a (float64)."""
    return float(special.gammainccinv(c + 1, a))


def lambda_exact_right(c: int, a: float) -> float:
    """lambda with Pr[Po(lambda) >= c+1] = a, i.e. P(c+1, lambda) = a (float64)."""
    return float(special.gammaincinv(c + 1, a))


def _condition(c: int, a_left: float, a_right: float, gamma: float) -> bool:
    return lambda_exact_left(c, a_left) <= gamma * lambda_exact_right(c, a_right)


def exact_threshold(a_left: float, a_right: float, gamma: float) -> int:
    """Smallest integer c >= 0 with lambda_exact^l(c, a_left) <= gamma lambda_exact^r(c, a_right).

    The ratio lambda^l/lambda^r decreases to 1 as c grows, so the condition is monotone;
    found by doubling then bisection, then checked one step down.
    """
    if _condition(0, a_left, a_right, gamma):
        return 0
    hi = 1
    while not _condition(hi, a_left, a_right, gamma):
        hi *= 2
        if hi > 10**8:
            raise UnsupportedConfiguration(f"no exact threshold below 1e8 for gamma={gamma!r}")
    lo = hi // 2  # condition false at lo (or lo = 0 checked above)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _condition(mid, a_left, a_right, gamma):
            hi = mid
        else:
            lo = mid
    return hi


def certify_tails(s: int, c: int, rho: float, p_star: float, gamma: float, beta_I: float, beta_II: float) -> dict:
    """Ball-arithmetic certificate of the two tail inequalities (a) and (b) of this module.

    Returns the enclosures and whether each inequality is certified (True only if the
    whole ball lies on the right side).
    """
    with working_precision(_CERT_BITS):
        rho_a = arb(rho)
        g = arb(gamma)
        if s == 1:
            m_halt = rho_a * arb(p_star)  # Pr[Po(m) <= c] <= beta_II
            halt = m_halt.gamma_upper(c + 1, regularized=1)
            m_cont = m_halt / g  # Pr[Po(m) >= c+1] <= beta_I
            cont = lower_reg_int(c + 1, m_cont, _CERT_BITS)
        else:
            q_star = 1 - arb(p_star)
            m_halt = rho_a * q_star  # Pr[Po(m) >= c+1] <= beta_II
            halt = lower_reg_int(c + 1, m_halt, _CERT_BITS)
            m_cont = g * rho_a * q_star  # Pr[Po(m) <= c] <= beta_I
            cont = m_cont.gamma_upper(c + 1, regularized=1)
        halt_ok = bool(halt <= arb(beta_II))
        cont_ok = bool(cont <= arb(beta_I))
    return {
        "s": s,
        "c": c,
        "rho": rho,
        "type_II_tail": halt.str(12),
        "type_I_tail": cont.str(12),
        "beta_II": beta_II,
        "beta_I": beta_I,
        "type_II_certified": halt_ok,
        "type_I_certified": cont_ok,
        "certified": halt_ok and cont_ok,
    }


def _calibrate(s: int, p_star: float, gamma: float, beta_I: float, beta_II: float) -> tuple[int, float, dict]:
    """(c, rho, certificate) for one step, with a certified rho stored as a float."""
    if s == 1:
        c = exact_threshold(beta_II, beta_I, gamma)
    else:
        c = exact_threshold(beta_I, beta_II, gamma)
    for c_try in (c, c + 1, c + 2):
        if s == 1:
            rho = lambda_exact_left(c_try, beta_II) / p_star
            nudges = [math.nextafter(rho * (1 + k * 1e-13), math.inf) for k in range(0, 6)]
        else:
            rho = lambda_exact_right(c_try, beta_II) / (1 - p_star)
            nudges = [math.nextafter(rho * (1 - k * 1e-13), 0.0) for k in range(0, 6)]
        for r in nudges:
            cert = certify_tails(s, c_try, r, p_star, gamma, beta_I, beta_II)
            if cert["certified"]:
                return c_try, r, cert
    raise UnsupportedConfiguration(
        f"exact-tail calibration could not certify c={c} for p_star={p_star!r}, gamma={gamma!r}"
    )


@functools.lru_cache(maxsize=100_000)
def _certificate(config: GTMConfig, t: int) -> tuple[int, int, float, dict]:
    g = config.gtm
    n = theorem21_noise(config, t)
    spec, beta_t = n.spec, n.beta_t
    beta_I = beta_II = beta_t / 4
    s = F.direction(spec.p_star, g.gamma, n.Lambda)
    c, rho, cert = _calibrate(s, spec.p_star, g.gamma, beta_I, beta_II)
    return s, c, rho, cert


def exact_step(config: GTMConfig, t: int) -> StepPlan:
    """The ``exact`` planner: Theorem 21's noise, exact-tail c_t and rho_t (certified)."""
    g = config.gtm
    if g.epsilon is None or g.theta is None:
        raise UnsupportedConfiguration("parameterization 'exact' needs epsilon and theta (as theorem21)")
    n = theorem21_noise(config, t)  # Theorem 21's rounded noise, as the plan's tau_1, mu_1
    spec, tau1, mu1, tau2, beta_t, Lambda = n.spec, n.tau1, n.mu1, n.tau2, n.beta_t, n.Lambda
    beta_I = beta_II = beta_t / 4
    s, c, rho, _cert = _certificate(config, t)
    lam_max = R.round_product_up(rho, Lambda) if s == 1 else rho
    return finish_step(config, spec, s=s, c=c, rho=rho, tau1=tau1, mu1=mu1, tau2=tau2, Lambda=Lambda,
                   lam_max=lam_max, beta_t=beta_t, beta_I=beta_I, beta_II=beta_II)


def step_certificate(config: GTMConfig, t: int) -> dict:
    """The ball-arithmetic certificate of step t's two tail inequalities."""
    return dict(_certificate(config, t)[3])


def expected_evaluations(plan, t: int) -> float:
    """E[N_t] = E[lambda_t] for step t run on its own (Algorithm 1, eta_1 ~ Exp(tau1), eta_2 ~ Exp(tau2)):
    :func:`gtm_core.formulas.expected_lambda` (Lemma 12(2)) at the plan's step; +inf when a moment
    does not exist (eps tau >= 1)."""
    sp = plan.step(t)
    return float(F.expected_lambda(sp.s, sp.rho, sp.eps_t, plan.tau1, sp.tau2, plan.mu1))


def clear_cache() -> None:
    """Forget this module's memoised results (benchmarks that time a cold start call this)."""
    _certificate.cache_clear()
