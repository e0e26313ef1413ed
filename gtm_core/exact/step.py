"""One step of Algorithm 1 as the exact engine sees it: the closed form of the continuation
probability h_t(x) given eta_1 = x (module docstring of :mod:`gtm_core.exact`), and its
independent finite-sum check."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import mpmath
from flint import arb

from ..errors import UnsupportedConfiguration
from ..formulas import purification_map
from .arb import (
    bits_for_dps,
    lgamma_int,
    log_lower_reg_upper,
    lower_gamma_scaled,
    lower_reg_int,
    probabilities_as_arb,
    to_arb,
    to_mpf,
    working_precision,
)
from .closed_form import ClosedFormStep, use_closed_form


# ---------------------------------------------------------------------------
# the per-step continuation probability h_i(x)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StepModel:
    """One step as the exact engine sees it (exact binary values of the plan's floats).

    ``r`` is the success probability the GTM's count uses: p for s=+1, 1-p for s=-1.
    ``budget`` is the evaluation budget the deployed run enforces at this step
    (:meth:`gtm_core.planners.Plan.enforced_budget`; None: Algorithm 1, no cap).
    """

    t: int
    s: int
    c: int
    rho: Any
    eps: Any
    tau2: Any
    r: Any
    budget: int | None = None

    @property
    def noiseless(self) -> bool:
        return float(self.eps) == 0.0


class StepEval:
    """Precomputed arb constants of one step at a working precision."""

    def __init__(self, step: StepModel, mu1: arb, bits: int):
        self.step = step
        self.s, self.c = step.s, step.c
        self.bits = bits
        with working_precision(bits):
            self.rho = to_arb(step.rho)
            self.r = to_arb(step.r)
            self.eps = to_arb(step.eps)
            self.lnfac = lgamma_int(self.c + 1)
            if step.noiseless:
                self.sigma = None
                self.const = _poisson_pair(self.s, self.c, self.rho * self.r, bits)
            else:
                tau2 = step.tau2
                if tau2 is None or (isinstance(tau2, float) and math.isinf(tau2)):
                    raise UnsupportedConfiguration(
                        f"step {step.t}: tau2=inf with eps_t={float(step.eps)!r} > 0 has no density"
                    )
                self.sigma = 1 / (self.eps * to_arb(tau2))
                if self.r == 0 or not (self.r > 0):
                    # r = 0: the count is identically 0 (Po(0)); handled exactly below
                    self.lnA = None
                else:
                    self.lnA = (self.rho * self.r).log() + self.s * self.eps * mu1
                self.tau2_exact = to_arb(tau2)
                if self.s == 1:
                    self.shape = arb(self.c + 1) - self.sigma
                    if self.shape > 0:
                        self.gamma_shape = self.shape.gamma()
                        self.lg_shape1 = (self.shape + 1).lgamma()
                else:
                    self.shape = arb(self.c + 1) + self.sigma
                    self.lg_shape = self.shape.lgamma()
        # dispatch (closed_form.use_closed_form): the guarded-precision evaluator where it applies
        noisy = getattr(self, "lnA", None) is not None
        self.closed = ClosedFormStep(step, mu1, bits) if noisy and use_closed_form(step) else None

    def shape_now(self) -> arb:
        """c+1 -+ sigma recomputed at the current working precision (eps, tau2 are exact)."""
        return arb(self.c + 1) - self.s * (1 / (self.eps * self.tau2_exact))

    def transition_x(self) -> float | None:
        """x where the count mean equals c (a break point for the quadrature)."""
        if self.sigma is None or self.lnA is None:
            return None
        # s (lnA - s eps x) = ln(c+1)  ->  x = (lnA - s ln(c+1)) ... solve ln a = ln(c+1)
        lnA = float(self.lnA.mid())
        eps = float(self.eps.mid())
        return self.s * (lnA - math.log(self.c + 1)) / eps

    def probs(self, x: arb) -> tuple[arb, arb]:
        """(continue, halt) probabilities of this step given eta_1 = x, as arb balls."""
        if self.sigma is None:
            return self.const
        if self.lnA is None:  # r = 0: K_t = 0 surely
            return (arb(1), arb(0)) if self.s == 1 else (arb(0), arb(1))
        if self.closed is not None:
            return self.closed.probs(x)
        bits = self.bits
        for _ in range(6):
            with working_precision(bits):
                cont, halt = self._probs(x, bits)
            if min(cont.rel_accuracy_bits(), halt.rel_accuracy_bits()) >= self.bits - 30:
                return cont, halt
            bits = 2 * bits
        return cont, halt

    def _probs(self, x: arb, bits: int) -> tuple[arb, arb]:
        s, c, sigma = self.s, self.c, self.sigma
        if s == 1:
            la = self.lnA - self.eps * x
            a = la.exp()
            tail = (sigma * la - self.lnfac).exp() * self._upper_gamma_shape(a, la, bits)
            if a < c + 1:
                halt = self._lower_plus(a, tail, bits)
                return 1 - halt, halt
            cont = a.gamma_upper(c + 1, regularized=1) - tail
            return cont, 1 - cont
        lb = self.lnA + self.eps * x
        b = lb.exp()
        # b^{-sigma} gamma(c+1+sigma, b) / c! = b^{-sigma} (Gamma(shape)/c!) P(shape, b)
        tail = (-sigma * lb + self.lg_shape - self.lnfac).exp() * lower_gamma_scaled(self.shape_now, b, bits, True)
        if b > c + 1:
            halt = b.gamma_upper(c + 1, regularized=1) + tail
            return 1 - halt, halt
        cont = lower_reg_int(c + 1, b, bits) - tail
        return cont, 1 - cont

    def _upper_gamma_shape(self, a: arb, la: arb, bits: int) -> arb:
        """Gamma(c+1-sigma, a) (s = +1).  Far below the shape (a << c+1-sigma) it is
        Gamma(shape) (1 - P(shape, a)) with P(shape, a) below the working precision: then
        the bound P(s, a) <= a^s e^-a / Gamma(s+1) / (1 - a/(s+1)) (series with a geometric
        majorant) replaces the incomplete gamma function, as a ball."""
        shape = self.shape
        if shape > 0:
            sf, af = float(shape.mid()), float(a.mid()) * (1 + 1e-12)
            if 0 < af < 0.9 * sf:
                r = af / sf
                # r may underflow to 0 for subnormal a: then the bound path is certainly taken
                decay = sf * (r - 1 - math.log(r)) if r > 0 else math.inf
                if decay > (bits + 10) * math.log(2) + math.log(10.0 / (1 - af / (sf + 1))):
                    # the float test only chooses the path; the bound used is computed in arb
                    ub = (shape * la - a - self.lg_shape1).exp() / (1 - a / (shape + 1))
                    half = ub.upper() / 2
                    return self.gamma_shape * (1 - half + arb(0, half))
        return a.gamma_upper(shape)

    def _lower_plus(self, a: arb, tail: arb, bits: int) -> arb:
        """P(c+1, a) + tail, skipping P (as a radius) when it is below the working precision."""
        c1 = self.c + 1
        lp = log_lower_reg_upper(c1, float(a.mid()) * (1 + 1e-12))
        tail_mag = float(tail.mid())
        if tail_mag > 0 and lp < math.log(tail_mag) - (bits + 20) * math.log(2) and lp > -1e300:
            # the float test only chooses the path; the bound added is computed in arb
            with working_precision(bits):
                exact_ub = (c1 * a.log() - a - arb(c1 + 1).lgamma()).exp() / (1 - a / (c1 + 1))
            return tail + arb(0, exact_ub.upper())
        return lower_reg_int(c1, a, bits) + tail


def step_probabilities_ball(model: StepModel, mu1: Any, xs: Sequence[Any], bits: int) -> list[tuple[arb, arb]]:
    """(continue, halt) of one step given eta_1 = x, for every x in ``xs``, as arb balls at ``bits``
    of precision: the closed form of :class:`StepEval` (Lemma 15(1) integrated over eta_2 and the
    Poisson count), for callers that certify their own inequalities (e.g. the ``horizon`` planner,
    :mod:`gtm_core.planners.horizon`)."""
    with working_precision(bits):
        ev = StepEval(model, to_arb(mu1), bits)
        return [ev.probs(to_arb(x)) for x in xs]


def _poisson_pair(s: int, c: int, m: arb, bits: int) -> tuple[arb, arb]:
    """(continue, halt) with no noise: K ~ Po(m); s=+1 continues iff K <= c, s=-1 iff K >= c+1."""
    if m == 0:
        F, notF = arb(1), arb(0)
    else:
        F = m.gamma_upper(c + 1, regularized=1)
        notF = lower_reg_int(c + 1, m, bits)
    return (F, notF) if s == 1 else (notF, F)


def enforced_budget(plan, sp) -> int | None:
    """The budget the deployed run enforces at step ``sp.t``: the plan's policy
    (:meth:`gtm_core.planners.Plan.enforced_budget`); None for plans without one."""
    policy = getattr(plan, "enforced_budget", None)
    return None if policy is None else policy(sp)


def step_models(plan, p: Sequence[Any]) -> list[StepModel]:
    """The engine's view of steps 1..len(p) of a plan for the stream p (budget policy included)."""
    ps = probabilities_as_arb("p", p)
    models = []
    for t, pt in enumerate(ps, start=1):
        sp = plan.step(t)
        q = pt
        if float(getattr(sp, "delta_t", 0.0) or 0.0) > 0:
            # purification (Lemma 24 (13)): the GTM is fed p~ = (1 - 2 phi) p + phi
            q = purification_map(pt, to_arb(sp.phi))
        r = q if sp.s == 1 else 1 - q
        models.append(StepModel(t=t, s=sp.s, c=int(sp.c), rho=sp.rho, eps=sp.eps_t, tau2=sp.tau2, r=r,
                                budget=enforced_budget(plan, sp)))
    return models


def continuation_probability(plan, t: int, p_t: Any, x: Any, *, dps: int = 30) -> tuple[mpmath.mpf, mpmath.mpf]:
    """h_t(x) and 1 - h_t(x) (closed form) for p_t at eta_1 = x, as mpmath numbers."""
    bits = bits_for_dps(dps)
    sp = plan.step(t)
    with working_precision(bits):
        pt = to_arb(p_t)
        r = pt if sp.s == 1 else 1 - pt
        ev = StepEval(StepModel(t, sp.s, int(sp.c), sp.rho, sp.eps_t, sp.tau2, r), to_arb(plan.mu1), bits)
        cont, halt = ev.probs(to_arb(x))
    return to_mpf(cont, dps), to_mpf(halt, dps)


def continuation_probability_finite_sum(s: int, c: int, rho, r, eps, tau2, mu1, x, *, dps: int = 40):
    """Independent mpmath check of h(x): the finite sum of upper incomplete gamma functions.

    s = +1:  h = sum_{k=0}^{c} E_w[e^{-aw} (aw)^k / k!] = sum_k sigma a^sigma Gamma(k - sigma, a) / k!,
    with Gamma(k - sigma, a) generated by the recurrence
    Gamma(s+1, a) = s Gamma(s, a) + a^s e^{-a} (upwards from Gamma(-sigma, a)).
    s = -1:  h = 1 - sum_k E_w[e^{-b/w} (b/w)^k / k!] = 1 - sum_k sigma b^{-sigma} gamma(k + sigma, b) / k!,
    with gamma(s+1, b) = s gamma(s, b) - b^s e^{-b}.
    """
    with mpmath.workdps(dps + 3 * c // 2 + 30):
        sigma = 1 / (mpmath.mpf(eps) * mpmath.mpf(tau2))
        m0 = mpmath.mpf(rho) * mpmath.mpf(r)
        if s == 1:
            a = m0 * mpmath.exp(mpmath.mpf(eps) * (mpmath.mpf(mu1) - mpmath.mpf(x)))
            G = mpmath.gammainc(-sigma, a)  # Gamma(-sigma, a)
            total = mpmath.mpf(0)
            fact = mpmath.mpf(1)
            for k in range(c + 1):
                if k > 0:
                    fact *= k
                total += G / fact
                sk = k - sigma
                G = sk * G + mpmath.power(a, sk) * mpmath.exp(-a)
            h = sigma * mpmath.power(a, sigma) * total
        else:
            b = m0 * mpmath.exp(-mpmath.mpf(eps) * (mpmath.mpf(mu1) - mpmath.mpf(x)))
            g = mpmath.gammainc(sigma, 0, b)  # gamma(sigma, b)
            total = mpmath.mpf(0)
            fact = mpmath.mpf(1)
            for k in range(c + 1):
                if k > 0:
                    fact *= k
                total += g / fact
                sk = k + sigma
                g = sk * g - mpmath.power(b, sk) * mpmath.exp(-b)
            h = 1 - sigma * mpmath.power(b, -sigma) * total
        return +h
