"""One step of the deployed mechanism M' under the "refuse" evaluation budget, as the exact engine sees it.

Algorithm 1 at step t draws eta_2 ~ Exp(tau_2), sets lambda = rho exp(eps_t s (mu_1 - eta_1 + eta_2)),
N ~ Po(lambda), and counts the +1's K among N evaluations of the fed (for s = -1: negated) mechanism.
The "refuse" policy (:meth:`gtm_core.planners.Plan.enforced_budget`) refuses the step when N > B,
before evaluating anything, and the run ends in its terminal failed state. Given eta_1 = x the step has
three outcomes: continue, halt, refused. This module gives their probabilities as arb balls.

Thinning: given lambda, K ~ Po(lambda r) and L = N - K ~ Po(lambda (1 - r)) are independent (r as in
:class:`gtm_core.exact.step.StepModel`). Write J = Pr[K <= c, N > B] (integrated over eta_2). Then

  s = +1 (halt iff K > c):   continue = h - J,        halt = (1 - h) - R + J,
  s = -1 (halt iff K <= c):  continue = h - R + J,    halt = (1 - h) - J,

where h is the untruncated continuation probability (the closed form of :mod:`.step`) and
R = Pr[N > B] is the refusal probability, itself that closed form with c = B and r = 1 (K = N).
Only J needs a new integral (:class:`BudgetCorrection`).

The correction J
----------------
Pointwise, j(lambda) = Pr[K <= c, N > B] = sum_{k<=c} Pr[K = k] Pr[L > B - k], computed from one
incomplete gamma function Pr[L > B] = P(B+1, lambda (1-r)) and the Poisson recurrences
Pr[L > n-1] = Pr[L > n] + Pr[L = n], Pr[L = n-1] = Pr[L = n] n / m (positive terms only). j is at
most min(Pr[N > B], Pr[K <= c]), increasing resp. decreasing in lambda, so outside a window
[lambda_a, lambda_b] (checked in arb) j <= tau = 2^-(2 bits + 64); the window is empty unless
r is below about c / B. In u = ln lambda the law of eta_2 is the density
sigma e^{-sigma s (u - u_0(x))} on s (u - u_0(x)) >= 0, u_0(x) = ln rho + s eps (mu_1 - x),
sigma = 1 / (eps tau_2), so

  J(x) = e^{sigma s (u_0(x) - u_ref)} int_{window, s (u - u_0(x)) >= 0} g(u) du + [0, tau],
  g(u) = sigma e^{-sigma s (u - u_ref)} j(e^u).

The integral of g over the window is computed once per step (adaptive Gauss-Legendre panels,
:func:`gtm_core.exact.quadrature.integrate_panels`); x only rescales it, except where u_0(x) falls
inside the window, where the panels on the supported side are summed and the cut panel is integrated
anew. The panel error estimate is that of the engine's non-certified mode (so ``certified=True`` is
not offered with a budget). With eps = 0 the step has no noise and j(rho) is used directly.
"""

from __future__ import annotations

import dataclasses
import math

from flint import arb

from ..errors import UnsupportedConfiguration
from .arb import lower_reg_int, to_arb, working_precision
from .quadrature import gl_panel_with_error, integrate_panels
from .step import StepEval, StepModel

# Extra bits of the window integrand's evaluations, and how much tighter than 2^-bits its panels'
# tolerance is (relative): its rounding must not look like unresolved structure to the outer panels.
GUARD_BITS = 48
TOLERANCE_EXTRA_BITS = 8
# Extra bits of the untruncated and refusal closed forms: halt = (1 - h) - R + J cancels (the
# refusals are most of the untruncated halts at a tiny p), and R's closed form at c = B ~ 10^9
# carries ln B! ~ 10^10, which costs ~35 bits of its relative accuracy.
BASE_EXTRA_BITS = 24
REFUSAL_EXTRA_BITS = 64

__all__ = ["BudgetCorrection", "BudgetedStepEval", "budget_window", "refusal_model", "thinned_refusal_overlap"]


def refusal_model(model: StepModel) -> StepModel:
    """The step whose 'halting' is refusal: count threshold c = B and r = 1, so the count is N itself
    (the closed form of :mod:`.step` then gives Pr[N <= B] and Pr[N > B], Lemma 22's event)."""
    return dataclasses.replace(model, c=int(model.budget), r=arb(1), budget=None)


def thinned_refusal_overlap(m: arb, r: arb, c: int, B: int, bits: int) -> arb:
    """j(m) = Pr[K <= c, K + L > B] for independent K ~ Po(m r), L ~ Po(m (1 - r)) (Poisson thinning),
    as sum_{k<=c} Pr[K = k] Pr[L > B - k] with the positive recurrences of the module docstring."""
    with working_precision(bits + 20):
        m1 = m * r
        m2 = m * (1 - r)
        if m2 == 0:  # r = 1: N = K <= c < ... only if c > B can both hold
            if c <= B:
                return arb(0)
            return lower_reg_int(B + 1, m1, bits) - lower_reg_int(c + 1, m1, bits)
        U = poisson_upper_tail(B, m2, bits)  # Pr[L > B]
        pmf_L = (B * m2.log() - m2 - arb(B + 1).lgamma()).exp()  # Pr[L = B]
        pK = (-m1).exp()
        total = pK * U
        for k in range(1, c + 1):
            n = B - k + 1  # U(n - 1) = U(n) + Pr[L = n]
            if n >= 0:
                U = U + pmf_L
                pmf_L = pmf_L * n / m2 if n > 0 else arb(0)
            else:
                U = arb(1)
            pK = pK * m1 / k
            total += pK * U
        return total


def poisson_upper_tail(B: int, m: arb, bits: int) -> arb:
    """Pr[Po(m) > B] = P(B+1, m), accurate to about ``bits``.

    At counts near 10^9 the incomplete gamma function loses tens of bits (and 1 - Q cancels), and
    python-flint's propagation of the argument's radius is far too wide there. So the function is
    evaluated at the exact midpoint of ``m``, with the precision raised while that improves the ball,
    and the radius r of ``m`` is added by the mean value theorem: d/dm Pr[Po(m) > B] = Pr[Po(m) = B],
    so the error is at most r sup_ball Pr[Po(m) = B] (an arb enclosure over the ball)."""
    mid = arb(m.mid())
    extra, v, acc = 32, None, -math.inf
    for _ in range(6):
        with working_precision(bits + extra):
            w = lower_reg_int(B + 1, mid, bits + extra)
        acc_w = w.rel_accuracy_bits() if w != 0 else bits
        improved = acc_w >= acc + 8
        if v is None or acc_w > acc:
            v, acc = w, acc_w
        if acc >= bits - 8 or not improved:
            break
        extra = 2 * extra + max(0, bits - acc)
    if m.rad() != 0:
        with working_precision(bits):
            pmf = (B * m.log() - m - arb(B + 1).lgamma()).exp()
            v = v + arb(0, (m.rad() * pmf).upper())
    return v


def _chernoff_log_upper(mean: float, k: float) -> float:
    """ln of the Chernoff bound exp(-mean h(k / mean)), h(v) = v ln v - v + 1, of a Poisson tail
    beyond k (upper tail for k > mean, lower for k < mean; only used to place the window)."""
    v = k / mean
    return -mean * (v * math.log(v) - v + 1) if v > 0 else -mean


def budget_window(r: float, c: int, B: int, log_tau: float) -> tuple[float, float] | None:
    """Float guesses (ln lambda_a, ln lambda_b) of the window outside which j <= tau: Pr[N > B] <= tau
    below lambda_a, Pr[K <= c] <= tau above lambda_b (Chernoff, then checked in arb by the caller).
    None when the two regions cover everything (then j <= tau for every lambda)."""
    target = log_tau - 5.0
    lo, hi = 0.0, math.log(B + 1)
    for _ in range(200):  # largest lambda < B+1 with the upper-tail bound <= tau
        mid = (lo + hi) / 2
        if _chernoff_log_upper(math.exp(mid), B + 1) <= target:
            lo = mid
        else:
            hi = mid
    ua = lo
    if r <= 0:
        return ua, math.inf
    lo, hi = math.log((c + 1) / r), math.log((c + 1) / r) + 50.0
    for _ in range(200):  # smallest lambda with the lower-tail bound of K <= tau
        mid = (lo + hi) / 2
        if _chernoff_log_upper(math.exp(mid) * r, c) <= target:
            hi = mid
        else:
            lo = mid
    ub = hi
    return None if ua >= ub else (ua, ub)


class BudgetCorrection:
    """J(x) = Pr[K <= c, N > B | eta_1 = x] of one step (module docstring), as an arb ball."""

    def __init__(self, model: StepModel, mu1: arb, bits: int, nodes: int, rel_tol: float):
        self.model = model
        self.s, self.c, self.B = model.s, int(model.c), int(model.budget)
        self.bits = bits
        self.nodes = nodes
        with working_precision(bits):
            self.rho = to_arb(model.rho)
            self.r = to_arb(model.r)
            self.eps = to_arb(model.eps)
            self.mu1 = mu1
            self.tau = arb(2) ** (-(2 * bits + 64))
            self.noiseless = model.noiseless
            self.r_zero = self.r == 0
            if self.noiseless or self.r_zero:
                self.panels = None
                return
        with working_precision(bits + GUARD_BITS):  # the window integrand's constant, at its precision
            self.sigma = 1 / (to_arb(model.eps) * to_arb(model.tau2))
        self._build_window(rel_tol)

    def _build_window(self, rel_tol: float) -> None:
        bits = self.bits
        log_tau = -(2 * bits + 64) * math.log(2)
        w = budget_window(float(self.r.mid()), self.c, self.B, log_tau)
        self.panels = []
        if w is None:
            return
        ua, ub = w
        with working_precision(bits):
            # the window's edges are certified: below ua Pr[N > B] <= tau, above ub Pr[K <= c] <= tau
            la = arb(ua).exp()
            if not lower_reg_int(self.B + 1, la, bits) <= self.tau:
                raise UnsupportedConfiguration(f"step {self.model.t}: the budget window's lower edge failed its check")
            if math.isfinite(ub):
                lb = arb(ub).exp()
                if not (lb * self.r).gamma_upper(self.c + 1, regularized=1) <= self.tau:
                    raise UnsupportedConfiguration(
                        f"step {self.model.t}: the budget window's upper edge failed its check")
            else:  # pragma: no cover - r > 0 always gives a finite edge
                raise UnsupportedConfiguration(f"step {self.model.t}: no upper edge for the budget window")
        self.ua, self.ub, self.u_ref = ua, ub, ua
        pts = {ua, ub}
        rf = float(self.r.mid())
        for centre, width in ((math.log(self.B + 1), 1 / math.sqrt(self.B + 1)),
                              (math.log((self.c + 1) / rf), 1 / math.sqrt(self.c + 1))):
            for k in (0, 1, 2, 4, 8, 16, 32, 64, 128):
                for x in (centre - k * width, centre + k * width):
                    if ua < x < ub:
                        pts.add(x)
        edges = sorted(pts)
        self.panels = integrate_panels(self.g, edges, self.nodes, bits + GUARD_BITS, rel_tol, 2000)

    def g(self, u: arb) -> list[arb]:
        """The window integrand sigma e^{-sigma s (u - u_ref)} j(e^u) (one component), evaluated with
        guard bits so that its rounding stays far below the panels' tolerance."""
        bits = self.bits + GUARD_BITS
        with working_precision(bits):
            dens = self.sigma * (-self.sigma * self.s * (u - self.u_ref)).exp()
            return [dens * thinned_refusal_overlap(u.exp(), self.r, self.c, self.B, bits)]

    def at(self, x: arb, refused: arb) -> arb:
        """J(x); ``refused`` = Pr[N > B | x] (J equals it when r = 0: K = 0 surely)."""
        if self.r_zero:
            return refused
        with working_precision(self.bits):
            if self.noiseless:
                return thinned_refusal_overlap(self.rho, self.r, self.c, self.B, self.bits)
            if not self.panels:
                return arb(0, self.tau.upper())
            s = self.s
            u0 = self.rho.log() + s * self.eps * (self.mu1 - x)
            u0f = float(u0.mid())
            # supported side: u >= u0 (s = +1) or u <= u0 (s = -1)
            if (s == 1 and u0f >= self.ub) or (s == -1 and u0f <= self.ua):
                return arb(0, self.tau.upper())
            total = arb(0)
            for lo, hi, val in self.panels:
                if (s == 1 and lo >= u0f) or (s == -1 and hi <= u0f):
                    total += val
                elif lo < u0f < hi:
                    a, b = (u0, arb(hi)) if s == 1 else (arb(lo), u0)
                    ints, errs = gl_panel_with_error(self.g, a, b, self.nodes, self.bits + GUARD_BITS)
                    total += ints[0] + arb(0, errs[0])
            scale = (self.sigma * s * (u0 - self.u_ref)).exp()
            return scale * total + arb(0, self.tau.upper())


class BudgetedStepEval:
    """A step of M' given eta_1 = x: (continue, halt, refused) as arb balls (module docstring)."""

    width = 3

    def __init__(self, model: StepModel, mu1: arb, bits: int, nodes: int, rel_tol: float):
        self.step = model
        self.s = model.s
        self.bits = bits
        self.base = StepEval(dataclasses.replace(model, budget=None), mu1, bits + BASE_EXTRA_BITS)
        self.refusal = StepEval(refusal_model(model), mu1, bits + REFUSAL_EXTRA_BITS)
        self.correction = BudgetCorrection(model, mu1, bits, nodes, rel_tol)

    def transition_x(self) -> float | None:
        """x where the count mean equals c (as :meth:`StepEval.transition_x`)."""
        return self.base.transition_x()

    def budget_transition_x(self) -> float | None:
        """x where the mean of N equals B + 1 (a break point: refusals switch on or off there)."""
        return self.refusal.transition_x()

    def probs(self, x: arb) -> tuple[arb, arb, arb]:
        """(continue, halt, refused) of this step given eta_1 = x."""
        cont_u, halt_u = self.base.probs(x)
        a, b = self.refusal.probs(x)
        refused = b if self.s == 1 else a
        J = self.correction.at(x, refused)
        with working_precision(self.bits + BASE_EXTRA_BITS):
            if self.s == 1:
                cont, halt = cont_u - J, halt_u - refused + J
            else:
                cont, halt = cont_u - refused + J, halt_u - J
            # each is a probability: intersect with [0, 1] where the ball straddles an end
            return _clip(cont), _clip(halt), _clip(refused)


def _clip(b: arb) -> arb:
    """The ball intersected with [0, 1] (it encloses a probability), still a ball."""
    if b >= 0 and b <= 1:
        return b
    lo = b.lower() if b.lower() > 0 else arb(0)
    up = b.upper() if b.upper() < 1 else arb(1)
    return (lo + up) / 2 + arb(0, ((up - lo) / 2).upper())
