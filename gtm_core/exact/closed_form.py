"""The per-step law of Algorithm 1 given eta_1 = x in closed form, evaluated at guarded precision.

One step continues with probability h(x) = E_w[Pr[Po(m w^s) <= c]] (s = +1) or E_w[Pr[Po(m / w) >= c+1]]
(s = -1), where w = e^{eps_t eta_2}, eta_2 ~ Exp(tau_2), is Pareto(sigma) on [1, inf) with
sigma = 1 / (eps_t tau_2) (Pr[w > v] = v^-sigma) and m is the count mean without eta_2:
a = rho r e^{eps_t (mu_1 - x)} for s = +1, b = rho r e^{-eps_t (mu_1 - x)} for s = -1 (the module docstring of
:mod:`gtm_core.exact`, Lemma 15(1)).

Derivation (the substitution u = m w)
-------------------------------------
The Poisson CDF is a finite sum, Pr[Po(mu) <= c] = sum_{k<=c} e^{-mu} mu^k / k!, so h is a finite sum of
Pareto expectations of single Poisson terms. For s = +1 put u = a w (u >= a, density
sigma a^sigma u^{-sigma-1}):

  E_w[e^{-a w} (a w)^k / k!] = sigma a^sigma / k! int_a^inf u^{k - sigma - 1} e^{-u} du
                              = sigma a^sigma Gamma(k - sigma, a) / k!                    (D_k)

an *upper* incomplete gamma function with the shifted order k - sigma (any real order: a > 0, so the
integral converges at both ends). For s = -1 put u = b / w (0 < u <= b, density sigma b^-sigma u^{sigma-1}):

  E_w[e^{-b/w} (b/w)^k / k!] = sigma b^-sigma / k! int_0^b u^{k + sigma - 1} e^{-u} du
                              = sigma b^-sigma gamma(k + sigma, b) / k!                   (F_k)

a *lower* incomplete gamma function with order k + sigma > 0. Hence, with every term positive,

  s = +1:  continue = sum_{k=0}^{c} D_k              (:func:`continue_direct_sum`)
  s = -1:  halt     = sum_{k=0}^{c} F_k              (:func:`halt_flipped_sum`)

and the recurrences Gamma(v+1, a) = v Gamma(v, a) + a^v e^{-a}, gamma(v+1, b) = v gamma(v, b) - b^v e^{-b}
telescope the sums into one incomplete gamma each:

  s = +1:  continue = Q(c+1, a) - a^sigma Gamma(c+1-sigma, a) / c!     (:func:`continue_direct`)
           halt     = P(c+1, a) + a^sigma Gamma(c+1-sigma, a) / c!     (:func:`halt_direct`)
  s = -1:  continue = P(c+1, b) - b^-sigma gamma(c+1+sigma, b) / c!    (:func:`continue_flipped`)
           halt     = Q(c+1, b) + b^-sigma gamma(c+1+sigma, b) / c!    (:func:`halt_flipped`)

(P, Q: regularised lower / upper incomplete gamma functions; Q(c+1, m) = Pr[Po(m) <= c]). The evaluator
computes the rare side (the smaller probability: halt for a < c+1, continue for a >= c+1, and the mirror
for s = -1) by its formula and the other as 1 minus it, so a tiny probability keeps its relative accuracy;
the subtracting forms cancel ~log2(m / sigma) bits, which the guard bits absorb. The finite sums cost
c + 1 incomplete gammas against one; they are the independent second formula of the tests, and the
evaluator intersects them in only for c <= :data:`SUM_MAX_C` (measured slower: never by default).

Integer and near-integer orders
-------------------------------
sigma is a rational number (eps_t and tau_2 are binary floats), so every order k - sigma, c+1-sigma is an
exact rational. An order that *is* an integer n <= 0 is evaluated at the exact integer (arb's incomplete
gamma is entire in the order for a > 0: Gamma(-n, a) = a^-n E_{n+1}(a)); nothing divides by the
distance to the integer. An order *near* an integer n <= 0 loses about log2(1/distance) bits inside
arb (its evaluation passes through Gamma(v) - gamma(v, a)); the enclosure stays rigorous and
:class:`ClosedFormStep` raises the precision (recomputing every constant from the exact inputs) until
the result meets the requested accuracy. The property tests (``property_tests/test_closed_form_properties.py``)
hold these formulas against an independent quadrature over eta_2 on a grid that includes c+1-sigma at and
near integers.

Why this evaluator exists next to :class:`gtm_core.exact.step.StepEval`
----------------------------------------------------------------------
Both use the same identities; the difference is precision handling. :class:`StepEval` rounds its
constants (ln(rho r) + s eps mu_1, sigma) once at the working precision and evaluates at the
quadrature node's ball x; arb's incomplete gamma functions propagate the radius of a ball argument
crudely (an absolute derivative bound), so at small count means (the small-c designs: c = 2, a ~ 1e-6)
the result keeps only ~20-40 of 58 bits, the precision retries cannot help (the constants stay rounded)
and the eta_1 quadrature's error estimate sees the radii as unresolved structure and splits panels
(13 024 nodes instead of 160 on a 2-step transcript of ``examples/horizon.toml``). Here the constants
are recomputed from the exact inputs at the working precision plus :data:`GUARD_BITS`, every formula is
evaluated at exact points, and a ball x is covered by monotonicity: continue is non-decreasing and halt
non-increasing in x for both directions, i.e. both are monotone in the log count mean ln a (ln b), so
the values at the two endpoints of its ball (x's radius, r's radius) enclose every value on it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from flint import arb, ctx

from ..errors import InvalidParameter
from .arb import lower_gamma_scaled, lower_reg_int, to_arb, working_precision

__all__ = [
    "GUARD_BITS",
    "SHAPE_SWITCH",
    "SUM_MAX_C",
    "inexact_field",
    "ClosedFormStep",
    "exact_sigma",
    "order_ball",
    "direct_term",
    "flipped_term",
    "continue_direct_sum",
    "halt_flipped_sum",
    "halt_direct",
    "continue_direct",
    "halt_flipped",
    "continue_flipped",
    "use_closed_form",
]

# Extra bits over the caller's precision for every constant and formula (absorbs the cancellation of
# Q(c+1, a) - tail, ~log2(a / sigma) bits, and arb's radius propagation through the incomplete gammas).
GUARD_BITS = 64
# The engine (:func:`use_closed_form`) takes this evaluator when c + 1 - sigma < SHAPE_SWITCH. Measured
# (3-step transcripts of examples/horizon.toml's design family at 10 digits, sigma = 2.83, s = +1;
# benchmarks/bench_exact.py): StepEval takes 0.8-50 s at c = 2, 0.2-3.5 s at c = 3, 0.3 s at c = 4, 0.06-0.08 s
# at c = 6, 0.012-0.02 s at c = 10..200; this evaluator 0.02-0.06 s at every c <= 10 and 0.04-0.23 s at
# c = 60..1019 (two endpoint evaluations at 64 guard bits). The crossing is at c + 1 - sigma ~ 4-5. StepEval
# keeps the large-c steps (and the refusal model of an enforced budget, c = B ~ 1e9).
SHAPE_SWITCH = 5.0
# The positive finite sums (c + 1 incomplete gammas) replace the telescoped side only up to this c.
SUM_MAX_C = -1


def exact_sigma(eps: Any, tau2: Any) -> Fraction | None:
    """sigma = 1 / (eps tau2) as an exact rational when both are binary floats / ints / fractions
    (None otherwise: then sigma is only known as a ball)."""
    try:
        fe, ft = Fraction(eps), Fraction(tau2)
    except (TypeError, ValueError):
        return None
    if fe <= 0 or ft <= 0:
        return None
    return 1 / (fe * ft)


def inexact_field(step) -> tuple[str, Any]:
    """(name, value) of the first of ``step.eps``, ``step.tau2`` that is not an exact positive number
    (why :func:`exact_sigma` has no rational sigma)."""
    for name in ("eps", "tau2"):
        value = getattr(step, name)
        try:
            ok = Fraction(value) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            return name, value
    return "eps", step.eps


def order_ball(order: Fraction | arb, bits: int) -> arb:
    """An incomplete-gamma order as a ball at ``bits``: an exact integer stays exact (no rounding
    across the pole structure of Gamma(v) at v = 0, -1, ...); another rational is rounded at ``bits``."""
    if isinstance(order, Fraction):
        if order.denominator == 1:
            return arb(order.numerator)
        with working_precision(bits):
            return arb(order.numerator) / arb(order.denominator)
    return order


def direct_term(k: int, sigma: arb, order: arb, a: arb, la: arb) -> arb:
    """D_k = sigma a^sigma Gamma(k - sigma, a) / k! (s = +1, module docstring), ``order`` = k - sigma,
    ``la`` = ln a."""
    return sigma * (sigma * la - arb(k + 1).lgamma()).exp() * a.gamma_upper(order)


def flipped_term(k: int, sigma: arb, order_fn, b: arb, lb: arb, bits: int) -> arb:
    """F_k = sigma b^-sigma gamma(k + sigma, b) / k! (s = -1, module docstring); ``order_fn()`` gives
    k + sigma at the current precision, ``lb`` = ln b."""
    return sigma * (-sigma * lb - arb(k + 1).lgamma()).exp() * lower_gamma_scaled(order_fn, b, bits, False)


def continue_direct_sum(c: int, sigma: arb, orders: list[arb], a: arb, la: arb) -> arb:
    """s = +1: continue = sum_{k=0}^{c} sigma a^sigma Gamma(k - sigma, a) / k! (positive terms;
    ``orders[k]`` = k - sigma)."""
    return sum((direct_term(k, sigma, orders[k], a, la) for k in range(c + 1)), arb(0))


def halt_flipped_sum(c: int, sigma: arb, order_fns: list, b: arb, lb: arb, bits: int) -> arb:
    """s = -1: halt = sum_{k=0}^{c} sigma b^-sigma gamma(k + sigma, b) / k! (positive terms;
    ``order_fns[k]()`` = k + sigma)."""
    return sum((flipped_term(k, sigma, order_fns[k], b, lb, bits) for k in range(c + 1)), arb(0))


def halt_direct(c: int, sigma: arb, shape: arb, a: arb, la: arb, lnfac: arb, bits: int) -> arb:
    """s = +1: halt = P(c+1, a) + a^sigma Gamma(c+1-sigma, a) / c! (``shape`` = c+1-sigma; the sum
    of the D_k telescoped by Gamma(v+1, a) = v Gamma(v, a) + a^v e^{-a}, subtracted from 1). Positive
    terms: the form for a < c+1, where halting is the rare side."""
    return _lower_reg(c + 1, a, bits) + _direct_tail(sigma, shape, a, la, lnfac)


def continue_direct(c: int, sigma: arb, shape: arb, a: arb, la: arb, lnfac: arb) -> arb:
    """s = +1: continue = Q(c+1, a) - a^sigma Gamma(c+1-sigma, a) / c! (the telescoped
    sum_k D_k); the form for a >= c+1, where continuing is the rare side (it cancels ~log2(a / sigma)
    bits, covered by :data:`GUARD_BITS`)."""
    return a.gamma_upper(c + 1, regularized=1) - _direct_tail(sigma, shape, a, la, lnfac)


def continue_flipped(c: int, sigma: arb, shape_fn, b: arb, lb: arb, lnfac: arb, bits: int) -> arb:
    """s = -1: continue = P(c+1, b) - b^-sigma gamma(c+1+sigma, b) / c! (``shape_fn()`` = c+1+sigma;
    1 minus the sum of the F_k telescoped by gamma(v+1, b) = v gamma(v, b) - b^v e^{-b}); the form for
    b <= c+1, where continuing is the rare side."""
    return _lower_reg(c + 1, b, bits) - _flipped_tail(sigma, shape_fn, b, lb, lnfac, bits)


def halt_flipped(c: int, sigma: arb, shape_fn, b: arb, lb: arb, lnfac: arb, bits: int) -> arb:
    """s = -1: halt = Q(c+1, b) + b^-sigma gamma(c+1+sigma, b) / c! (the telescoped sum_k F_k;
    positive terms, the form for b > c+1)."""
    return b.gamma_upper(c + 1, regularized=1) + _flipped_tail(sigma, shape_fn, b, lb, lnfac, bits)


def _direct_tail(sigma: arb, shape: arb, a: arb, la: arb, lnfac: arb) -> arb:
    """a^sigma Gamma(c+1-sigma, a) / c!."""
    return (sigma * la - lnfac).exp() * a.gamma_upper(shape)


def _flipped_tail(sigma: arb, shape_fn, b: arb, lb: arb, lnfac: arb, bits: int) -> arb:
    """b^-sigma gamma(c+1+sigma, b) / c!."""
    return (-sigma * lb - lnfac).exp() * lower_gamma_scaled(shape_fn, b, bits, False)


def _lower_reg(c1: int, z: arb, bits: int) -> arb:
    """P(c1, z) for z < c1 (arb's own lower incomplete gamma for small orders, whose radius propagation
    is tight; the engine's :func:`gtm_core.exact.arb.lower_reg_int` for large ones)."""
    if c1 <= 64 and z < c1:
        return z.gamma_lower(c1, regularized=1)
    return lower_reg_int(c1, z, bits)


def use_closed_form(step) -> bool:
    """The engine's dispatch rule (:class:`gtm_core.exact.step.StepEval`): this evaluator for a noisy
    step (eps_t > 0, finite tau_2, eps_t and tau_2 exact numbers so sigma is an exact rational) with
    r > 0 and c + 1 - sigma < :data:`SHAPE_SWITCH` (either direction; the small-c steps, where
    StepEval's once-rounded constants cost it its accuracy); StepEval's own evaluation otherwise."""
    if float(step.eps) == 0.0 or isinstance(step.tau2, float) and math.isinf(step.tau2):
        return False
    sigma = exact_sigma(step.eps, step.tau2)
    if sigma is None or not float(step.c + 1 - sigma) < SHAPE_SWITCH:
        return False
    return bool(to_arb(step.r) > 0)


class ClosedFormStep:
    """(continue, halt) of one noisy step given eta_1 = x, as arb balls (module docstring).

    ``step``: a :class:`gtm_core.exact.step.StepModel` with eps > 0, r > 0 and exact eps, tau2;
    ``mu1``: eta_1's shift (an exact number or a ball); ``bits``: the caller's precision. Every value is
    accurate to about ``bits`` relative bits (the evaluation is repeated with doubled guard bits, up to
    four times, when it is not; the result is a rigorous enclosure either way).
    """

    def __init__(self, step, mu1: Any, bits: int):
        self.step = step
        self.s, self.c = int(step.s), int(step.c)
        self.bits = int(bits)
        self.mu1 = mu1
        self.sigma_q = exact_sigma(step.eps, step.tau2)
        if self.sigma_q is None:
            name, value = inexact_field(step)
            raise InvalidParameter(f"{name} must be an exact positive number (float, int or Fraction) for "
                                   f"ClosedFormStep, got {value!r}: StepEval takes ball inputs (use_closed_form "
                                   f"decides)")
        self._consts: dict[int, tuple] = {}

    def constants(self, prec: int) -> tuple:
        """(ln(rho r) + s eps mu_1, eps, sigma, the telescoped order, its recomputation, ln c!) at ``prec``,
        each rounded once from the exact inputs."""
        if prec not in self._consts:
            st, s, c = self.step, self.s, self.c
            with working_precision(prec):
                eps = to_arb(st.eps)
                lnA = (to_arb(st.rho) * to_arb(st.r)).log() + s * eps * to_arb(self.mu1)
                sigma = order_ball(self.sigma_q, prec)
                shape_q = Fraction(c + 1) - s * self.sigma_q
                shape = order_ball(shape_q, prec)
                lnfac = arb(c + 1).lgamma()
            self._consts[prec] = (lnA, eps, sigma, shape, shape_q, lnfac)
        return self._consts[prec]

    def log_mean(self, x: arb, prec: int) -> arb:
        """The log count mean without eta_2 at eta_1 = x: ln a = lnA - eps x (s = +1) or
        ln b = lnA + eps x (s = -1), as a ball carrying the radii of x and of the step's inputs."""
        lnA, eps = self.constants(prec)[:2]
        with working_precision(prec):
            return lnA - self.s * eps * x

    def at_point(self, lm: arb, prec: int) -> tuple[arb, arb]:
        """(continue, halt) at an exact log count mean ``lm``, computed at ``prec`` bits: the positive-term
        form of the rare side, 1 minus it for the other, and (c <= :data:`SUM_MAX_C`) the finite sum
        intersected."""
        _, _, sigma, shape, shape_q, lnfac = self.constants(prec)
        c, sq = self.c, self.sigma_q
        with working_precision(prec):
            if self.s == 1:
                la = lm
                a = la.exp()
                if a < c + 1:
                    halt = halt_direct(c, sigma, shape, a, la, lnfac, prec)
                    cont = 1 - halt
                else:
                    cont = continue_direct(c, sigma, shape, a, la, lnfac)
                    halt = 1 - cont
                if c <= SUM_MAX_C:
                    orders = [order_ball(Fraction(k) - sq, prec) for k in range(c + 1)]
                    cont = _intersect(cont, continue_direct_sum(c, sigma, orders, a, la))
                    halt = _intersect(halt, 1 - cont)
                return cont, halt
            lb = lm
            b = lb.exp()

            def shape_fn(q=shape_q):
                return order_ball(q, ctx.prec)

            if b > c + 1:
                halt = halt_flipped(c, sigma, shape_fn, b, lb, lnfac, prec)
                cont = 1 - halt
            else:
                cont = continue_flipped(c, sigma, shape_fn, b, lb, lnfac, prec)
                halt = 1 - cont
            if c <= SUM_MAX_C:
                fns = [lambda k=k: order_ball(Fraction(k) + sq, ctx.prec) for k in range(c + 1)]
                halt = _intersect(halt, halt_flipped_sum(c, sigma, fns, b, lb, prec))
                cont = _intersect(cont, 1 - halt)
            return cont, halt

    def probs(self, x: arb) -> tuple[arb, arb]:
        """(continue, halt) enclosing every value on the ball x (and on the balls of the step's inputs):
        the values at the two endpoints of the log count mean's ball (exact points), continue and halt
        being monotone in it (module docstring)."""
        x = to_arb(x)
        prec = self.bits + GUARD_BITS
        for attempt in range(5):
            lm = self.log_mean(x, prec)
            pts = [lm] if lm.rad() == 0 else [arb(lm.lower()), arb(lm.upper())]
            vals = [self.at_point(p, prec) for p in pts]
            if attempt == 4 or all(_accurate(cv, hv, self.bits) for cv, hv in vals):
                break
            prec = self.bits + GUARD_BITS * 2 ** (attempt + 1)
        if len(vals) == 1:
            return vals[0]
        with working_precision(prec):
            return vals[0][0].union(vals[1][0]), vals[0][1].union(vals[1][1])


def _accurate(cont: arb, halt: arb, bits: int) -> bool:
    """Both balls carry ~``bits`` relative bits (an exact zero or one counts as accurate)."""
    for v in (cont, halt):
        if v.rad() == 0:
            continue
        if v.rel_accuracy_bits() < bits - 8:
            return False
    return True


def _intersect(u: arb, v: arb) -> arb:
    """The intersection of two enclosures of the same number (the first if they do not overlap,
    which cannot happen for correct enclosures)."""
    return u.intersection(v) if u.overlaps(v) else u
