"""Rigorous checks behind ``gtm certify``: every certified inequality of a plan, evaluated on
the *deployed* float64 numbers with exact rationals or python-flint ``arb`` balls.

A float64 number is a dyadic rational, so ``arb(x)`` holds it exactly; every transcendental
quantity (logarithms, square roots, exponentials, incomplete gamma functions) is an ``arb``
ball proved to contain the true value, and ``a <= b`` on balls is ``True`` only when it holds
for every point of both balls. Nothing here compares floats.

The checks follow the proofs of the paper:

* Lemma 19(2): Lambda_t >= exp(eps_t (mu_1 + tau_{2,t} ln(4/beta_t)))  (c_G = 1/4);
* Lemma 11: lambda^l(c, alpha) <= gamma lambda^r(c, beta) and c + 1 > 2 max(ln 1/alpha, ln 1/beta);
* Lemma 20: the base-rate identity (rho p* >= lambda^l(c, beta^II) for s = +1,
  rho q* <= lambda^r(c, beta^II) for s = -1) and the continuation chain actually used
  (s = +1: rho Lambda p_bar <= lambda^r(c, beta^I); s = -1: (rho/Lambda)(1 - p_bar) >= lambda^l(c, beta^I));
* the exact Poisson tails at the worst Poisson mean the good event allows (a second, direct
  witness of the Type I / Type II budgets, no Chernoff bound involved);
* exact_noise planner only (instead of the three items above): the per-step error probabilities
  integrated exactly over eta_2,t and the Poisson count at their worst points,
  Pr[continue | eta_1 = mu_1, p = p*] <= beta^II_t and Pr[halt | eta_1 = 0, p = p_bar] <= beta^I_t
  (beta^I_t = beta_t/2 merges Theorem 21's eta_2-tail and Type I shares);
* Lemma 22(1): the evaluation budget is at least e * lambda_bar_t with lambda_bar_t >= ln(4/beta_t);
* Lemma 24(2) / Corollary 25: phi_t >= delta_t / (e^{eps_t} - 1 + 2 delta_t), phi_t <= 1/2, and the
  shifted thresholds p*_t + phi_t < 1, p_bar_t - phi_t > 0.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction

import numpy as np
from flint import arb, ctx

from gtm_core import formulas as F
from gtm_core.config import PARAMETERIZATIONS
from gtm_core.numeric import lower_float, upper_float
from gtm_core.planners.budget import lambda_tail
from gtm_core.zeta import zeta_enclosure

ARB_PREC = 256  # bits; every quantity here needs far fewer, the rest is headroom

# A rejection threshold this small relative to the target makes the test useless: the
# continuation guarantee only covers mechanisms that almost never answer +1. Documented in the
# README; `gtm certify` refuses a configuration whose p_bar_t / p*_t drops below it at some step
# up to the horizon, and `gtm plan` warns about it (exit 1).
THRESHOLD_RATIO_FLOOR = 1e-4


def first_unusable_step(plan):
    """The first step t <= horizon whose rejection threshold is unusable, p_bar_t < THRESHOLD_RATIO_FLOOR
    x p*_t (its :class:`~gtm_core.planners.StepPlan`), or None. A float screening for ``gtm plan`` and the
    refusal's fix search - the certificate checks the same inequality in arb balls. With constant
    eps_t and p*_t the ratio decreases in t, so step T decides and the first bad step is bisected;
    with per-step lists every step is looked at."""
    T = plan.horizon
    stream = plan.config.stream

    def bad(t):
        sp = plan.step(t)
        return not sp.p_bar >= THRESHOLD_RATIO_FLOOR * sp.p_star

    if any(isinstance(getattr(stream, n), tuple) for n in ("eps_t", "p_star")):
        return next((plan.step(t) for t in range(1, T + 1) if bad(t)), None)
    if not bad(T):
        return None
    lo, hi = 0, T  # bad(hi), and no step <= lo is bad
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if bad(mid) else (mid, hi)
    return plan.step(hi)

# planners that pick c_t, rho_t from the Chernoff thresholds of Lemma 11 / Lemma 20; the others
# (exact, exact_noise) pick them from exact tails, so those identities do not apply to them
CHERNOFF_PLANNERS = frozenset({"theorem21", "theorem23"})


@contextlib.contextmanager
def arb_precision(bits: int = ARB_PREC):
    old = ctx.prec
    ctx.prec = bits
    try:
        yield
    finally:
        ctx.prec = old


def exact(x) -> arb:
    """A float64 (or int) as an exact arb (float64 values are dyadic rationals)."""
    if isinstance(x, int):
        return arb(x)
    return arb(float(x))


def log_inv(alpha: float) -> arb:
    """ln(1/alpha) for a float alpha."""
    return -exact(alpha).log()


# lambda^l / lambda^r in arb: deliberately an independent transcription of equations (3)-(4) next to
# gtm_core.formulas (float64 / mpmath) - a certificate evaluates them as balls, never as floats; the
# two are cross-checked in tests/proofs/test_plan_checks.py.
def lambda_left(c: int, alpha: float) -> arb:
    """Equation (3): lambda^l(c, alpha) = c + L + sqrt(2cL + L^2), L = ln(1/alpha)."""
    L = log_inv(alpha)
    cc = arb(int(c))
    return cc + L + (2 * cc * L + L * L).sqrt()


def lambda_right(c: int, alpha: float) -> arb:
    """Equation (4): lambda^r(c, alpha) = c + 1 - sqrt(2(c+1)L)."""
    L = log_inv(alpha)
    y = arb(int(c) + 1)
    return y - (2 * y * L).sqrt()


def noise_range_needed(eps_t: float, mu1: float, tau2: float, beta_t: float) -> arb:
    """Lemma 19(2) with c_G = 1/4: exp(eps_t (mu_1 + tau_2 ln(4/beta_t)))."""
    if eps_t == 0:
        return arb(1)
    return (exact(eps_t) * (exact(mu1) + exact(tau2) * (arb(4).log() + log_inv(beta_t)))).exp()


def poisson_cdf(c: int, mean: arb) -> arb:
    """Pr[Po(mean) <= c] = Q(c + 1, mean) (regularised upper incomplete gamma)."""
    if mean <= 0:
        return arb(1)
    return mean.gamma_upper(arb(int(c) + 1), regularized=1)


def poisson_sf(c: int, mean: arb) -> arb:
    """Pr[Po(mean) >= c + 1] = 1 - Q(c + 1, mean). (arb's regularised *lower* incomplete gamma
    loses all accuracy when it is tiny and c is large; 1 - Q is accurate to the working
    precision in absolute terms, which is what a comparison with beta^I needs.)"""
    if mean <= 0:
        return arb(0)
    return 1 - mean.gamma_upper(arb(int(c) + 1), regularized=1)


def poisson_chernoff_sf(k: int, mean: arb) -> arb:
    """Chernoff bound Pr[Po(L) >= k] <= e^{-L} (e L / k)^k for k > L (else the trivial 1)."""
    kk = arb(int(k))
    if not mean < kk:
        return arb(1)
    return (-mean + kk * (1 + mean.log() - kk.log())).exp()


# report values are rounded outward: a float >= (upper) or <= (lower) every point of the ball
upper = upper_float
lower = lower_float
_float_up = upper


# ---------------------------------------------------------------------------
# per-step checks
# ---------------------------------------------------------------------------


def step_checks(sp, *, tau1: float, mu1: float, gamma: float, parameterization: str,
                epsilon_c: float | None = None, c_h: float | None = None,
                budget_factor: float | None = None) -> dict:
    """Every certified inequality of one planned step. Returns ``{check: bool | None}``
    (None = not applicable) plus a few rigorous report values under ``"values"``."""
    out: dict = {}
    values: dict = {}
    with arb_precision():
        # Lemma 19(2): the noise range the accuracy proof assumes
        Lam = exact(sp.Lambda)
        out["noise_range"] = bool(Lam >= noise_range_needed(sp.eps_t, mu1, sp.tau2, sp.beta_t)) and bool(Lam >= 1)
        out.update(_lemma11_checks(sp, gamma, parameterization))
        tails, tail_values = _accuracy_tail_checks(sp, parameterization, mu1)
        out.update(tails)
        values.update(tail_values)
        # thresholds: a usable rejection threshold
        p_bar, p_star = exact(sp.p_bar), exact(sp.p_star)
        out["threshold_positive"] = bool(p_bar > 0) and bool(p_bar < p_star)
        out["threshold_ratio"] = bool(p_bar >= exact(THRESHOLD_RATIO_FLOOR) * p_star)
        # flipping rule of Theorem 21/23, kept by the exact-tail planner (exact rationals)
        if parameterization in PARAMETERIZATIONS:
            x = Fraction(gamma) * Fraction(sp.Lambda)
            ps = Fraction(sp.p_star)
            out["flipping_rule"] = (sp.s == 1) == (x * (1 - ps) > ps)
        else:
            out["flipping_rule"] = None
        out["lemma22_budget"], cost_values = _cost_checks(sp, budget_factor)
        values.update(cost_values)
        out.update(_purification_checks(sp))
        out["expost_halting_loss"] = _expost_halting_check(sp, c_h) if parameterization == "theorem23" else None
    out["values"] = values
    return out


def _lemma11_checks(sp, gamma: float, parameterization: str) -> dict:
    """Lemma 11's gap and tail validity and Lemma 20's base-rate and continuation chains, for the
    Chernoff planners (None for the others, whose accuracy does not rest on them)."""
    names = ("lemma11_gap", "lemma11_tail_validity", "base_rate", "continuation_chain")
    if parameterization not in CHERNOFF_PLANNERS:
        return dict.fromkeys(names)
    g, Lam, rho, c = exact(gamma), exact(sp.Lambda), exact(sp.rho), int(sp.c)
    p_star, p_bar = exact(sp.p_star), exact(sp.p_bar)
    if sp.s == 1:
        alpha, beta = sp.beta_II, sp.beta_I  # Lemma 20(1): (alpha, beta) = (beta^II, beta^I)
    else:
        alpha, beta = sp.beta_I, sp.beta_II  # Lemma 20(2): (alpha, beta) = (beta^I, beta^II)
    out = {"lemma11_gap": bool(lambda_left(c, alpha) <= g * lambda_right(c, beta)),
           "lemma11_tail_validity": bool(arb(c + 1) > 2 * log_inv(sp.beta_I).max(log_inv(sp.beta_II)))}
    if sp.s == 1:
        out["base_rate"] = bool(rho * p_star >= lambda_left(c, sp.beta_II))
        out["continuation_chain"] = bool(rho * Lam * p_bar <= lambda_right(c, sp.beta_I))
    else:
        out["base_rate"] = bool(rho * (1 - p_star) <= lambda_right(c, sp.beta_II))
        out["continuation_chain"] = bool((rho / Lam) * (1 - p_bar) >= lambda_left(c, sp.beta_I))
    return out


def _accuracy_tail_checks(sp, parameterization: str, mu1: float) -> tuple[dict, dict]:
    """The per-step error tails the planner's accuracy rests on, and their rigorous upper bounds.

    ``horizon``: one union bound over the horizon inside the eta_1 integral
    (audits.certify.horizon_claims), so no per-step tail applies here. ``exact_noise``: c_t, rho_t
    are calibrated on the per-step error probabilities integrated over eta_2,t (the eta_2 tail share
    merged into beta^I), checked in arb. Otherwise: the exact Poisson tails at the worst mean the
    good event allows (the direct witness)."""
    names = ("poisson_halting_tail", "poisson_continuation_tail",
             "integrated_halting_tail", "integrated_continuation_tail")
    out = dict.fromkeys(names)
    if parameterization == "horizon":
        return out, {"type_II_bound": None, "type_I_bound": None}
    if parameterization == "exact_noise":
        noise = noise_integrated_tails(sp, mu1=mu1)
        out["integrated_halting_tail"] = noise.type_II_certified
        out["integrated_continuation_tail"] = noise.type_I_certified
        return out, {"type_II_bound": noise.type_II_upper, "type_I_bound": noise.type_I_upper}
    Lam, rho, c = exact(sp.Lambda), exact(sp.rho), int(sp.c)
    p_star, p_bar = exact(sp.p_star), exact(sp.p_bar)
    if sp.s == 1:
        halt_err = poisson_cdf(c, rho * p_star)            # lambda >= rho, p >= p*
        cont_err = poisson_sf(c, rho * Lam * p_bar)        # lambda <= rho Lambda, p <= p_bar
    else:
        halt_err = poisson_sf(c, rho * (1 - p_star))       # lambda <= rho, q <= q*
        cont_err = poisson_cdf(c, (rho / Lam) * (1 - p_bar))  # lambda >= rho/Lambda, q >= 1 - p_bar
    out["poisson_halting_tail"] = bool(halt_err <= exact(sp.beta_II))
    out["poisson_continuation_tail"] = bool(cont_err <= exact(sp.beta_I))
    return out, {"type_II_bound": _float_up(halt_err), "type_I_bound": _float_up(cont_err)}


def _cost_checks(sp, budget_factor: float | None) -> tuple[bool | None, dict]:
    """Lemma 22's evaluation budget against e * lambda_bar, and the rigorous count-mean range.

    On the good event lambda_t <= rho Lambda (s = +1) or rho (s = -1). The planner's lambda_max is
    that product rounded to nearest; the certificate reports a rigorous upper bound instead and
    checks the budget against it (None when the budget factor is below e by design)."""
    Lam, rho = exact(sp.Lambda), exact(sp.rho)
    lam_hi = rho * Lam if sp.s == 1 else rho
    values = {"lambda_max_upper": upper(lam_hi),
              "lambda_range": [lower(rho), upper(lam_hi)] if sp.s == 1 else [lower(rho / Lam), upper(rho)]}
    if budget_factor is not None and budget_factor < math.e:
        return None, values
    lam_bar = _arb_max(lam_hi, arb(4).log() + log_inv(sp.beta_t))
    return bool(arb(int(sp.evaluation_budget)) >= arb(1).exp() * lam_bar), values


def _purification_checks(sp) -> dict:
    """Purification (Lemma 24(2) with c = 1; Corollary 25): the crossover phi_t is large enough and
    leaves a gap on both sides (None when the step's input is pure)."""
    if not sp.delta_t > 0:
        return {"purification_crossover": None, "purification_gap": None}
    need = exact(sp.delta_t) / (exact(sp.eps_t).expm1() + 2 * exact(sp.delta_t))
    phi = exact(sp.phi)
    return {"purification_crossover": bool(phi >= need) and bool(phi <= arb(1) / 2),
            "purification_gap": bool(exact(sp.p_bar) - phi > 0) and bool(exact(sp.p_star) + phi < 1)}


def _expost_halting_check(sp, c_h: float) -> bool:
    """Theorem 23: halting at t costs at most eps_C + C_H eps_t ln(4/beta_t); the halting part of
    the loss is 2/tau_2 (0 without step noise)."""
    halt_loss = arb(0) if math.isinf(sp.tau2) else 2 / exact(sp.tau2)
    rhs = exact(c_h) * exact(sp.eps_t) * (arb(4).log() + log_inv(sp.beta_t))
    return bool(halt_loss <= rhs)


def noise_integrated_tails(sp, *, mu1: float):
    """The exact_noise planner's two per-step inequalities, re-checked from the deployed step numbers
    with the exact engine's arb closed form (gtm_core.planners.exact_noise_certificate.certify_step):
    Pr[continue | eta_1 = mu_1, p = p*] <= beta^II_t and Pr[halt | eta_1 = 0, p = p_bar] <= beta^I_t,
    both integrated exactly over eta_2,t and the Poisson count."""
    from gtm_core.planners.exact_noise_certificate import certify_step

    return certify_step(sp.s, sp.c, sp.rho, eps_t=sp.eps_t, tau2=sp.tau2, mu1=mu1, p_star=sp.p_star,
                        p_bar=sp.p_bar, beta_I=sp.beta_I, beta_II=sp.beta_II, t=sp.t)


def _arb_max(a: arb, b: arb) -> arb:
    """A ball containing max(a, b)."""
    return a.max(b)


def step_names() -> tuple[str, ...]:
    return (
        "noise_range", "lemma11_gap", "lemma11_tail_validity", "base_rate", "continuation_chain",
        "poisson_halting_tail", "poisson_continuation_tail", "integrated_halting_tail",
        "integrated_continuation_tail", "threshold_positive", "threshold_ratio",
        "flipping_rule", "lemma22_budget", "purification_crossover", "purification_gap",
        "expost_halting_loss",
    )


# ---------------------------------------------------------------------------
# global checks
# ---------------------------------------------------------------------------


def pure_epsilon(tau1: float, tau2s, epsilon: float) -> tuple[bool, Fraction]:
    """Lemma 17 / Theorem 21 in exact rationals: max_t 1/tau1 + 2/tau2_t <= eps."""
    worst = max(1 / Fraction(tau1) + (0 if math.isinf(t2) else 2 / Fraction(t2)) for t2 in tau2s)
    return worst <= Fraction(epsilon), worst


def eta1_tail(mu1: float, tau1: float, beta: float) -> tuple[bool, float]:
    """Lemma 19(1): Pr[eta_1 > mu_1] = exp(-mu_1/tau_1) <= beta/4 (rigorous)."""
    with arb_precision():
        p = (-(exact(mu1) / exact(tau1))).exp()
        return bool(p <= exact(beta) / 4), _float_up(p)


def failure_allocation(mu1: float, tau1: float, rows, beta: float, *, sample_complexity_share: bool,
                       noise_tails_merged: bool = False):
    """Union bound of Theorem 21/23 over the horizon, rigorous:
    exp(-mu1/tau1) + sum_{t<=T} (beta_t/4 + beta^I_t + beta^II_t [+ beta_t/6 for Theorem 23's
    evaluation-count event]) <= beta. Returns (ok, total upper bound, parts).

    ``noise_tails_merged`` (exact_noise planner): beta^I_t already covers the eta_2,t tail (its
    Type I probability is integrated over eta_2,t), so the separate beta_t/4 noise share is 0."""
    with arb_precision():
        eta = (-(exact(mu1) / exact(tau1))).exp()
        good = arb(0)
        typ1 = arb(0)
        typ2 = arb(0)
        cnt = arb(0)
        for r in rows:
            if not noise_tails_merged:
                good += exact(r["beta_t"]) / 4
            typ1 += exact(r["beta_I"])
            typ2 += exact(r["beta_II"])
            if sample_complexity_share:
                cnt += exact(r["beta_t"]) / 6
        total = eta + good + typ1 + typ2 + cnt
        parts = {
            "eta1_tail": _float_up(eta),
            "noise_tails": _float_up(good),
            "type_I": _float_up(typ1),
            "type_II": _float_up(typ2),
        }
        if sample_complexity_share:
            parts["evaluation_count"] = _float_up(cnt)
        return bool(total <= exact(beta)), _float_up(total), parts


def zeta_allocation(rows, beta: float) -> dict:
    """How much of beta the horizon uses, with a rigorous enclosure of zeta (gtm_core.zeta.zeta_enclosure,
    arb ball)."""
    with arb_precision():
        S = arb(0)
        for r in rows:
            S += exact(r["beta_t"])
        ball, method = zeta_ball()
        return {
            "sum_beta_t_upper": _float_up(S),
            "fraction_of_beta_upper": _float_up(S / exact(beta)),
            "zeta_lower": lower(ball),
            "zeta_upper": upper(ball),
            "zeta_method": method,
        }


def zeta_ball() -> tuple[arb, str]:
    """A ball proved to contain zeta = sum_j 1/(j ln^3(j+2)) (Definition 7), with its method."""
    return arb(zeta_enclosure(30)), "gtm_core.zeta.zeta_enclosure (Euler-Maclaurin, arb)"


# ---------------------------------------------------------------------------
# cost
# ---------------------------------------------------------------------------


def expected_lambda(sp, *, tau1: float, mu1: float) -> float:
    """Lemma 12(2): E[lambda_t] of step ``sp`` (float64; :func:`gtm_core.formulas.expected_lambda`)."""
    return float(F.expected_lambda(sp.s, sp.rho, sp.eps_t, tau1, sp.tau2, mu1))


def _lambda_tail_arb(L: float, sp, tau1: float, mu1: float) -> arb:
    """Pr[lambda_t > L] (gtm_core.budget's Pareto-ratio formula) as a ball.

    Deliberately a second, independent transcription: the float64 formula of :mod:`gtm_core.budget`
    picks L, this arb enclosure certifies the bound at that L (a certificate never trusts a float)."""
    rho, eps = exact(sp.rho), sp.eps_t
    if eps == 0:
        return arb(1) if sp.rho > L else arb(0)
    s1 = 1 / (exact(eps) * exact(tau1))
    s2 = None if math.isinf(sp.tau2) else 1 / (exact(eps) * exact(sp.tau2))
    e = exact(eps) * exact(mu1)
    if sp.s == 1:
        y = exact(L) / (rho * e.exp())
        num, den = s2, s1  # W / V with W ~ Par(s2), V ~ Par(s1)
    else:
        y = exact(L) / (rho * (-e).exp())
        num, den = s1, s2  # V / W

    def above(y):  # y >= 1
        if num is None:
            return arb(0)
        if den is None:
            return (-num * y.log()).exp()
        return (-num * y.log()).exp() * den / (num + den)

    def below(y):  # y < 1
        if num is None:
            return 1 - (den * y.log()).exp()
        if den is None:
            return arb(1)
        return 1 - num / (num + den) * (den * y.log()).exp()

    if y >= 1:
        return above(y)
    if y < 1:
        return below(y)
    a, b = above(y), below(y)
    return _arb_max(a, b)


def budget_exceed_bound(sp, *, tau1: float, mu1: float, budget: int | None = None) -> float:
    """A rigorous upper bound on Pr[N_t > budget]: min_L Pr[lambda_t > L] + Pr[Po(L) >= budget + 1],
    the Poisson tail by the Chernoff bound e^{-L} (eL/k)^k. The minimising L is found on a
    float grid (any L gives a valid bound); the bound at that L is evaluated in ball arithmetic."""
    B = int(sp.evaluation_budget if budget is None else budget)
    k = B + 1
    with arb_precision(128):
        if sp.eps_t == 0:
            return min(1.0, upper(poisson_chernoff_sf(k, exact(sp.rho))))
        grid = B * np.geomspace(1e-3, 0.999, 200)
        tails = lambda_tail(grid, s=sp.s, rho=sp.rho, eps_t=sp.eps_t, tau1=tau1, mu1=mu1, tau2=sp.tau2)
        chern = np.exp(np.minimum(0.0, -grid + k * (1 + np.log(grid) - math.log(k))))
        L = float(grid[int(np.argmin(tails + chern))])
        bound = _lambda_tail_arb(L, sp, tau1, mu1) + poisson_chernoff_sf(k, exact(L))
        return min(1.0, upper(bound))
