"""Exact transcript distribution of the GTM (Lemma 17, equations (9)-(12)).

For a plan and a Bernoulli stream p_1..p_T (p_t = Pr[M_t = +1] of the original
mechanism) this module computes, at a chosen precision, the probability of
every transcript: "continue through t" (all outputs -s_1..-s_t) and "halt
exactly at t" (outputs -s_1..-s_{t-1}, s_t).  Every number carries an error
bound; the privacy ratios of two neighbouring streams are compared with the
bounds (6) and (7) of Lemma 17.

The closed form (derived here, checked against nested quadrature in the tests)
-----------------------------------------------------------------------------
Condition on eta_1 = x.  By Lemma 15(1) step i continues with probability
g_i(Z_i), a Poisson CDF at c_i with mean lambda_i(Z_i) r_i, where r_i = p_i for
the direct variant (s_i = +1) and r_i = q_i = 1 - p_i for the flipped one (the
GTM is fed the negated mechanism).  Write w = e^{eps_i eta_2} ~ Pareto(sigma),
sigma = 1/(eps_i tau_{2,i}) (Pr[w > u] = u^{-sigma}, u >= 1), G ~ Gamma(c+1, 1)
and use F(c; m) = Pr[Po(m) <= c] = Pr[G > m].

* s = +1: the count mean is a w with a = rho r e^{eps (mu_1 - x)}, and
  h(x) = Pr[G > a w] = E_G[(1 - (G/a)^{-sigma}) 1{G > a}]
       = Q(c+1, a) - a^sigma Gamma(c+1-sigma, a) / c!,
  halting 1 - h(x) = P(c+1, a) + a^sigma Gamma(c+1-sigma, a) / c!.
* s = -1: the count mean is b / w with b = rho r e^{-eps (mu_1 - x)}, and
  h(x) = Pr[G <= b / w] = E_G[(1 - (G/b)^sigma) 1{G <= b}]
       = P(c+1, b) - b^{-sigma} gamma(c+1+sigma, b) / c!,
  halting 1 - h(x) = Q(c+1, b) + b^{-sigma} gamma(c+1+sigma, b) / c!.

Here P, Q are the regularised lower/upper incomplete gamma functions, so
Q(c+1, m) is exactly the Poisson CDF F(c; m).  Expanding F(c; a w) as the
finite sum of Poisson terms gives the equivalent "finite sum of upper
incomplete gamma functions" sigma a^sigma sum_k Gamma(k - sigma, a)/k!; the
recurrence Gamma(s+1, a) = s Gamma(s, a) + a^s e^{-a} telescopes it into the
single term above (see :func:`continuation_probability_finite_sum`, used as an
independent check).  With eps_i = 0 there is no noise: h = F(c; rho r) (s=+1)
or 1 - F(c; rho r) (s=-1), a constant.

Both h and 1 - h are increasing/decreasing in x (more shared noise eta_1
means a smaller count mean above threshold, a larger one below), so the
transcript probabilities are the one-dimensional integrals

  C_t = int_0^inf prod_{i<=t} h_i(x) f_1(x) dx,
  H_t = int_0^inf prod_{i<t} h_i(x) (1 - h_t(x)) f_1(x) dx,   f_1 = Exp(tau_1) density,

computed together on one adaptive Gauss-Legendre grid (all 2T integrands share
the evaluations of h_i at each node), with a rigorous bound for the tail
beyond the last node (monotonicity: h_i <= 1, 1 - h_t decreasing).

Arithmetic is python-flint ``arb`` ball arithmetic throughout, so rounding is
accounted for rigorously.  The quadrature error is either *estimated* (default:
comparison of each panel with its two halves) or, with ``certified=True``,
*bounded rigorously* through the Gauss-Legendre remainder theorem on a
Bernstein ellipse, with |h| bounded on the ellipse by real evaluations (see
:func:`_ellipse_bound`).  Results are reported as mpmath numbers at ``dps``
digits, with their error bound and the arb ball.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import mpmath
from flint import arb, ctx

from .errors import InvalidParameter, UnsupportedConfiguration

__all__ = [
    "NotNeighbouring",
    "Probability",
    "TranscriptDistribution",
    "PrivacyRow",
    "PrivacyReport",
    "StepModel",
    "continuation_probability",
    "continuation_probability_finite_sum",
    "transcript_distribution",
    "privacy_ratios",
    "check_neighbouring",
    "neighbour_interval",
    "step_error_probabilities",
    "exact_rejection_threshold",
    "step_probabilities_ball",
]


class NotNeighbouring(InvalidParameter):
    """Two streams are not neighbouring under the declared eps_t (DESIGN.md)."""


# ---------------------------------------------------------------------------
# small arb helpers
# ---------------------------------------------------------------------------


class _prec:
    """Context manager setting python-flint's working precision (bits)."""

    def __init__(self, bits: int):
        self.bits = int(bits)

    def __enter__(self):
        self.old = ctx.prec
        ctx.prec = self.bits
        return self

    def __exit__(self, *exc):
        ctx.prec = self.old
        return False


def to_arb(x: Any) -> arb:
    """Exact conversion where possible: floats/ints exactly, decimal strings as tight balls."""
    if isinstance(x, arb):
        return x
    if isinstance(x, bool):
        raise InvalidParameter(f"expected a number, got {x!r}")
    if isinstance(x, int):
        return arb(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise InvalidParameter(f"expected a finite number, got {x!r}")
        return arb(x)
    if isinstance(x, Fraction):
        return arb(x.numerator) / arb(x.denominator)
    if isinstance(x, mpmath.mpf):
        return arb(mpmath.nstr(x, mpmath.mp.dps + 5, min_fixed=-1, max_fixed=-1))
    if isinstance(x, str):
        try:
            return arb(x.strip())
        except Exception:
            raise InvalidParameter(f"expected a number, got {x!r}") from None
    try:
        return arb(float(x))
    except Exception:
        raise InvalidParameter(f"expected a number, got {x!r}") from None


def _to_mpf(x: arb, dps: int) -> mpmath.mpf:
    with mpmath.workdps(dps + 10):
        return mpmath.mpf(x.mid().str(dps + 8, radius=False))


def _rad_mpf(x: arb) -> mpmath.mpf:
    return mpmath.mpf(x.rad().str(5, radius=False)) if x.rad() != 0 else mpmath.mpf(0)


def _lgamma_int(n: int) -> arb:
    return arb(n).lgamma()


def _lower_gamma(s: arb, z: arb, bits: int) -> arb:
    """Lower incomplete gamma gamma(s, z) for s > 0, z > 0, as an arb ball.

    (python-flint's ``gamma_lower`` is unreliable for large s with moderate z,
    so it is computed here: Gamma(s) - Gamma(s, z) with enough guard bits when
    the cancellation is mild, else the series z^s e^{-z} sum_k z^k/(s)_{k+1}
    with a geometric bound on its tail.)
    """
    return _lower_gamma_scaled(s, z, bits, regularized=False)


def _lower_reg_int(c1: int, z: arb, bits: int) -> arb:
    """P(c1, z) = Pr[Po(z) >= c1] (regularised lower incomplete gamma, integer order)."""
    return _lower_gamma_scaled(arb(c1), z, bits, regularized=True)


def _lower_gamma_scaled(s, z: arb, bits: int, regularized: bool) -> arb:
    """``s`` may be an arb or a zero-argument callable returning s at the current precision
    (needed when s is not exact: Gamma(s) - Gamma(s, z) amplifies the radius of s)."""
    s_fn = s if callable(s) else (lambda: s)
    s = s_fn()
    sf, zf = float(s.mid()), float(z.mid())
    if zf >= sf:
        guard = 10
    else:
        r = zf / sf
        guard = int(sf * (r - 1 - math.log(r)) / math.log(2)) + 10 if r > 0 else 10**9
    if guard <= 400:
        with _prec(bits + guard):
            s = s_fn()
            if regularized:
                return 1 - z.gamma_upper(s, regularized=1)
            return s.gamma() - z.gamma_upper(s)
    # series: terms t_k = z^k / (s (s+1) ... (s+k)); ratio z/(s+k+1) <= z/s < 1
    with _prec(bits + 20):
        term = 1 / s
        total = term
        k = 0
        eps_target = arb(2) ** (-(bits + 10))
        while True:
            k += 1
            term = term * z / (s + k)
            total += term
            if k > 5 and term < eps_target * total:
                ratio = z / (s + k + 1)
                tail = term * ratio / (1 - ratio)
                total += arb(0, tail.upper())
                break
            if k > 100000:  # pragma: no cover - cannot happen for z < s
                raise UnsupportedConfiguration("lower incomplete gamma series did not converge")
        lead = s * z.log() - z
        if regularized:
            lead -= s.lgamma()
        return lead.exp() * total


def _log_lower_reg_upper(c1: int, zf: float) -> float:
    """Float upper bound of ln P(c1, z) for z < c1 + 1 (first Poisson term over 1 - ratio)."""
    if zf <= 0:
        return -math.inf
    ratio = zf / (c1 + 1)
    return c1 * math.log(zf) - zf - math.lgamma(c1 + 1) - math.log1p(-ratio)


# ---------------------------------------------------------------------------
# the per-step continuation probability h_i(x)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StepModel:
    """One step as the exact engine sees it (exact binary values of the plan's floats).

    ``r`` is the success probability the GTM's count uses: p for s=+1, 1-p for s=-1.
    """

    t: int
    s: int
    c: int
    rho: Any
    eps: Any
    tau2: Any
    r: Any

    @property
    def noiseless(self) -> bool:
        return float(self.eps) == 0.0


class _StepEval:
    """Precomputed arb constants of one step at a working precision."""

    def __init__(self, step: StepModel, mu1: arb, bits: int):
        self.step = step
        self.s, self.c = step.s, step.c
        self.bits = bits
        with _prec(bits):
            self.rho = to_arb(step.rho)
            self.r = to_arb(step.r)
            self.eps = to_arb(step.eps)
            self.lnfac = _lgamma_int(self.c + 1)
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
        bits = self.bits
        for _ in range(6):
            with _prec(bits):
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
        tail = (-sigma * lb + self.lg_shape - self.lnfac).exp() * _lower_gamma_scaled(self.shape_now, b, bits, True)
        if b > c + 1:
            halt = b.gamma_upper(c + 1, regularized=1) + tail
            return 1 - halt, halt
        cont = _lower_reg_int(c + 1, b, bits) - tail
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
                if sf * (r - 1 - math.log(r)) > (bits + 10) * math.log(2) + math.log(10.0 / (1 - af / (sf + 1))):
                    # the float test only chooses the path; the bound used is computed in arb
                    ub = (shape * la - a - self.lg_shape1).exp() / (1 - a / (shape + 1))
                    half = ub.upper() / 2
                    return self.gamma_shape * (1 - half + arb(0, half))
        return a.gamma_upper(shape)

    def _lower_plus(self, a: arb, tail: arb, bits: int) -> arb:
        """P(c+1, a) + tail, skipping P (as a radius) when it is below the working precision."""
        c1 = self.c + 1
        lp = _log_lower_reg_upper(c1, float(a.mid()) * (1 + 1e-12))
        tail_mag = float(tail.mid())
        if tail_mag > 0 and lp < math.log(tail_mag) - (bits + 20) * math.log(2) and lp > -1e300:
            # the float test only chooses the path; the bound added is computed in arb
            with _prec(bits):
                exact_ub = (c1 * a.log() - a - arb(c1 + 1).lgamma()).exp() / (1 - a / (c1 + 1))
            return tail + arb(0, exact_ub.upper())
        return _lower_reg_int(c1, a, bits) + tail


def step_probabilities_ball(model: StepModel, mu1: Any, xs: Sequence[Any], bits: int) -> list[tuple[arb, arb]]:
    """(continue, halt) of one step given eta_1 = x, for every x in ``xs``, as arb balls at ``bits``
    of precision: the closed form above (Lemma 15(1) integrated over eta_2 and the Poisson count),
    for callers that certify their own inequalities (e.g. :mod:`gtm_core.horizon_calibration`)."""
    with _prec(bits):
        ev = _StepEval(model, to_arb(mu1), bits)
        return [ev.probs(to_arb(x)) for x in xs]


def _poisson_pair(s: int, c: int, m: arb, bits: int) -> tuple[arb, arb]:
    """(continue, halt) with no noise: K ~ Po(m); s=+1 continues iff K <= c, s=-1 iff K >= c+1."""
    if m == 0:
        F, notF = arb(1), arb(0)
    else:
        F = m.gamma_upper(c + 1, regularized=1)
        notF = _lower_reg_int(c + 1, m, bits)
    return (F, notF) if s == 1 else (notF, F)


# ---------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------


def _check_stream(name: str, p: Sequence[Any]) -> list[arb]:
    if isinstance(p, (str, bytes)) or not hasattr(p, "__len__"):
        raise InvalidParameter(f"{name} must be a sequence of probabilities, got {p!r}")
    if len(p) == 0:
        raise InvalidParameter(f"{name} must not be empty")
    out = []
    for i, v in enumerate(p):
        a = to_arb(v)
        if not (a >= 0 and a <= 1):
            raise InvalidParameter(f"{name}[{i + 1}] must be in [0, 1], got {v!r}")
        out.append(a)
    return out


def step_models(plan, p: Sequence[Any]) -> list[StepModel]:
    """The engine's view of steps 1..len(p) of a plan for the stream p."""
    ps = _check_stream("p", p)
    models = []
    for t, pt in enumerate(ps, start=1):
        sp = plan.step(t)
        q = pt
        if float(getattr(sp, "delta_t", 0.0) or 0.0) > 0:
            # purification (Lemma 24 (13)): the GTM is fed p~ = (1 - 2 phi) p + phi
            phi = to_arb(sp.phi)
            q = (1 - 2 * phi) * pt + phi
        r = q if sp.s == 1 else 1 - q
        models.append(StepModel(t=t, s=sp.s, c=int(sp.c), rho=sp.rho, eps=sp.eps_t, tau2=sp.tau2, r=r))
    return models


def continuation_probability(plan, t: int, p_t: Any, x: Any, *, dps: int = 30) -> tuple[mpmath.mpf, mpmath.mpf]:
    """h_t(x) and 1 - h_t(x) (closed form) for p_t at eta_1 = x, as mpmath numbers."""
    bits = _bits(dps)
    sp = plan.step(t)
    with _prec(bits):
        pt = to_arb(p_t)
        r = pt if sp.s == 1 else 1 - pt
        ev = _StepEval(StepModel(t, sp.s, int(sp.c), sp.rho, sp.eps_t, sp.tau2, r), to_arb(plan.mu1), bits)
        cont, halt = ev.probs(to_arb(x))
    return _to_mpf(cont, dps), _to_mpf(halt, dps)


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


# ---------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Probability:
    """A probability with its error bound: value +- error (ball = arb enclosure)."""

    value: mpmath.mpf
    error: mpmath.mpf
    ball: Any = field(repr=False, compare=False)

    def __float__(self) -> float:
        return float(self.value)

    def significant_digits(self) -> float:
        if self.value == 0:
            return 0.0
        if self.error == 0:
            return math.inf
        return float(-mpmath.log10(self.error / abs(self.value)))


@dataclass(frozen=True)
class TranscriptDistribution:
    """Probabilities of every transcript of a run of length T.

    ``halt[t-1]`` = Pr[halt exactly at t]; ``cont[t-1]`` = Pr[continue through t].
    The distribution of the run is (halt[0..T-1], cont[T-1]), which sums to 1.
    """

    T: int
    halt: tuple[Probability, ...]
    cont: tuple[Probability, ...]
    dps: int
    certified: bool
    nodes: int
    seconds: float

    def total(self) -> Probability:
        balls = [h.ball for h in self.halt] + [self.cont[-1].ball]
        with _prec(_bits(self.dps) + 20):
            tot = sum(balls[1:], balls[0])
        return _prob(tot, self.dps)

    def run_distribution(self) -> list[mpmath.mpf]:
        """[Pr[never halts within T], Pr[halt at 1], ..., Pr[halt at T]] (simulator layout)."""
        return [self.cont[-1].value] + [h.value for h in self.halt]

    def min_significant_digits(self) -> float:
        return min(p.significant_digits() for p in self.halt + self.cont)

    def to_dict(self) -> dict:
        return {
            "T": self.T,
            "dps": self.dps,
            "certified": self.certified,
            "nodes": self.nodes,
            "seconds": self.seconds,
            "halt": [mpmath.nstr(h.value, self.dps) for h in self.halt],
            "halt_error": [mpmath.nstr(h.error, 3) for h in self.halt],
            "cont": [mpmath.nstr(c.value, self.dps) for c in self.cont],
            "cont_error": [mpmath.nstr(c.error, 3) for c in self.cont],
        }


def _prob(ball: arb, dps: int) -> Probability:
    """value: the ball's midpoint to dps+8 digits; error: an upper bound on |true - value|
    (the radius printed to 5 digits, rounded up, plus the value's own rounding)."""
    value = _to_mpf(ball, dps)
    with mpmath.workdps(dps + 10):
        error = _rad_mpf(ball) * (1 + mpmath.mpf(2) ** -10) + abs(value) * mpmath.mpf(10) ** -(dps + 7)
    return Probability(value=value, error=error, ball=ball)


def _bits(dps: int) -> int:
    return int(math.ceil(dps * math.log2(10))) + 24


# ---------------------------------------------------------------------------
# the integrator
# ---------------------------------------------------------------------------

_GL_CACHE: dict[tuple[int, int], list[tuple[arb, arb]]] = {}


def _gl_nodes(n: int, bits: int) -> list[tuple[arb, arb]]:
    key = (n, bits)
    if key not in _GL_CACHE:
        with _prec(bits):
            _GL_CACHE[key] = [arb.legendre_p_root(n, k, weight=True) for k in range(n)]
    return _GL_CACHE[key]


class _Integrand:
    """All 2T integrands (halt_1, cont_1, ..., halt_T, cont_T) at one node."""

    def __init__(self, evals: list[_StepEval], tau1: arb, bits: int):
        self.evals = evals
        self.tau1 = tau1
        self.bits = bits
        self.count = 0
        self.floor: list[arb] | None = None  # per-step skip thresholds

    def __call__(self, x: arb) -> list[arb]:
        self.count += 1
        T = len(self.evals)
        out: list[arb] = []
        with _prec(self.bits):
            P = (-x / self.tau1).exp() / self.tau1
            for i, ev in enumerate(self.evals):
                if self.floor is not None and P < self.floor[i]:
                    # everything later is in [0, P]: negligible, add it as a radius
                    pad = arb(0, P.upper())
                    out.extend([pad] * (2 * (T - i)))
                    return out
                cont, halt = ev.probs(x)
                out.append(P * halt)
                P = P * cont
                out.append(P)
        return out


def _gl_panel(f: _Integrand, lo: arb, hi: arb, n: int, bits: int) -> list[arb]:
    nodes = _gl_nodes(n, bits)
    with _prec(bits):
        mid = (lo + hi) / 2
        hl = (hi - lo) / 2
        acc = None
        for xk, wk in nodes:
            v = f(mid + hl * xk)
            w = wk * hl
            if acc is None:
                acc = [w * u for u in v]
            else:
                acc = [a + w * u for a, u in zip(acc, v)]
    return acc


def _mag(b: arb) -> float:
    """|b| as a float (upper bound of the absolute value), 0 for exact zero."""
    u = abs(b).upper()
    return float(u.mid()) if u.is_finite() else math.inf


def transcript_distribution(
    plan,
    p: Sequence[Any],
    *,
    dps: int = 25,
    certified: bool = False,
    nodes_per_panel: int | None = None,
    max_panels: int = 4000,
) -> TranscriptDistribution:
    """Exact probabilities of all 2T transcripts for the stream p (length T <= horizon).

    ``dps``: target significant digits for every transcript probability.
    ``certified``: rigorous enclosures (Gauss-Legendre remainder bounds on
    Bernstein ellipses) instead of the coefficient-decay error estimate (see ``_gl_panel_with_error``).
    """
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 5 or dps > 500:
        raise InvalidParameter(f"dps must be an integer in [5, 500], got {dps!r}")
    T = len(p)
    horizon = getattr(plan, "horizon", None)
    if horizon is not None and T > horizon:
        raise InvalidParameter(f"stream length {T} exceeds the plan's horizon={horizon}")
    start = time.process_time()
    bits = _bits(dps)
    with _prec(bits):
        models = step_models(plan, p)
        tau1 = to_arb(plan.tau1)
        mu1 = to_arb(plan.mu1)
        evals = [_StepEval(m, mu1, bits) for m in models]
    f = _Integrand(evals, tau1, bits)
    rel_tol = mpmath.mpf(10) ** (-dps)

    # the last node X: beyond it the tail is bounded rigorously (and must be negligible)
    tau1f, mu1f = float(plan.tau1), float(plan.mu1)
    trans = [ev.transition_x() for ev in evals]
    trans = sorted({round(x, 1) for x in trans if x is not None and x > 0})
    X = max([mu1f] + trans) + tau1f * (dps + 8) * math.log(10)
    edges = _initial_edges(trans, mu1f, tau1f, X)
    edges = sorted(set(edges))
    if certified:
        n = nodes_per_panel or max(12, int(dps * 0.8))
        panels = _integrate_certified(f, evals, tau1, edges, n, bits, rel_tol, max_panels)
    else:
        n = nodes_per_panel or max(16, int(dps * 1.6))
        panels, edges = _integrate_estimated(f, edges, n, bits, rel_tol, max_panels, tau1f)
    with _prec(bits + 20):
        totals = [sum((pv[j] for pv in panels), arb(0)) for j in range(2 * T)]
        # rigorous tail on [X, inf)
        Xa = arb(edges[-1])
        eX = (-Xa / tau1).exp()
        Pc = arb(1)
        for i, ev in enumerate(evals):
            cont, halt = ev.probs(Xa)
            # halt_t tail in [0, (1 - h_t(X)) e^{-X/tau1}]; cont_t tail in [prod h(X) e^{-X/tau1}, e^{-X/tau1}]
            totals[2 * i] += arb(0, (halt * eX).upper())
            Pc = Pc * cont
            lo_c = (Pc * eX).lower()
            hi_c = eX.upper()
            totals[2 * i + 1] += (lo_c + hi_c) / 2 + arb(0, ((hi_c - lo_c) / 2).upper())
    halts = tuple(_prob(totals[2 * i], dps) for i in range(T))
    conts = tuple(_prob(totals[2 * i + 1], dps) for i in range(T))
    return TranscriptDistribution(
        T=T,
        halt=halts,
        cont=conts,
        dps=dps,
        certified=certified,
        nodes=f.count,
        seconds=time.process_time() - start,
    )


def _initial_edges(trans: list[float], mu1: float, tau1: float, X: float) -> list[float]:
    """Panel edges: the transition points (count mean = c), panels of width <= 2 tau1 up to
    the last transition (or mu1), then geometrically growing panels (the integrand is
    a smooth exponential decay there) up to X."""
    core_end = min(max([mu1] + trans) + 2 * tau1, X)
    breaks = sorted({0.0, core_end, *[x for x in trans if 0 < x < core_end]})
    width = max(tau1, 1.0) * 2.0
    edges = [breaks[0]]
    for b in breaks[1:]:
        a = edges[-1]
        if b - a < width / 4 and b != core_end:
            continue  # a break this close to the last edge only makes a sliver panel
        k = max(1, int(math.ceil((b - a) / width)))
        edges.extend(a + (b - a) * j / k for j in range(1, k + 1))
    w = width
    while edges[-1] < X:
        w = min(2 * w, 16 * tau1)
        edges.append(min(edges[-1] + w, X))
    return sorted(set(edges))


def _legendre_tail_rows(n: int, bits: int) -> list[list[arb]]:
    """Rows L[m][k] = (2m+1)/2 w_k P_m(x_k) for the top four degrees m = n-1 .. n-4.

    With the n Gauss-Legendre values v_k of a function on [-1, 1], sum_k L[m][k] v_k is
    the degree-m Legendre coefficient of its interpolating polynomial (the rule is exact
    for P_m times a polynomial of degree n-1).
    """
    key = (n, bits, "tail")
    if key not in _GL_CACHE:
        nodes = _gl_nodes(n, bits)
        with _prec(bits):
            _GL_CACHE[key] = [
                [(2 * m + 1) * w * arb.legendre_p(x, m) / 2 for x, w in nodes] for m in range(n - 1, n - 5, -1)
            ]
    return _GL_CACHE[key]


def _gl_panel_with_error(f: _Integrand, lo: arb, hi: arb, n: int, bits: int) -> tuple[list[arb], list[float]]:
    """n-point Gauss-Legendre integrals of every component on [lo, hi] and an error estimate
    from the decay of the interpolant's Legendre coefficients (no extra evaluations).

    For f analytic in the Bernstein ellipse E_rho the Legendre coefficients fall like
    rho^-m and the n-point rule's error like rho^-2n (Trefethen, Approximation Theory and
    Approximation Practice, ch. 8 and 19).  With A1 = max(|a_{n-1}|, |a_{n-2}|),
    A2 = max(|a_{n-3}|, |a_{n-4}|) and r = sqrt(A1/A2) (capped at 1), the estimate is
    2 h A1 r^(n-2): the expected error ~ 2 h A1 r^(n+1) times a safety factor r^-3.  A panel
    that does not resolve its integrand has r ~ 1 and an estimate ~ its last coefficient,
    so it gets split.  Rounding noise enters through the balls' radii.
    """
    nodes = _gl_nodes(n, bits)
    rows = _legendre_tail_rows(n, bits)
    with _prec(bits):
        mid = (lo + hi) / 2
        hl = (hi - lo) / 2
        values = [f(mid + hl * xk) for xk, _ in nodes]
        h = 2 * _mag(hl)
        integrals: list[arb] = []
        errors: list[float] = []
        for j in range(len(values[0])):
            col = [v[j] for v in values]
            integrals.append(hl * sum((wk * u for (_, wk), u in zip(nodes, col)), arb(0)))
            a = [_mag(sum((lk * u for lk, u in zip(row, col)), arb(0))) for row in rows]
            A1, A2 = max(a[0], a[1]), max(a[2], a[3])
            if A1 == 0:
                errors.append(0.0)
                continue
            r = 1.0 if A2 <= A1 else math.sqrt(A1 / A2)
            errors.append(h * A1 * r ** (n - 2))
    return integrals, errors


def _integrate_estimated(f, edges, n, bits, rel_tol, max_panels, tau1):
    """Adaptive Gauss-Legendre panels with the coefficient-decay error estimate of
    :func:`_gl_panel_with_error` (a panel is accepted when its estimate is below a quarter
    of the tolerance relative to the component's total, else halved; the estimate is added
    to the panel as a radius, so every result carries it).

    The core panels (up to the last transition point + 2 tau1) are integrated first; their
    totals fix how far the exponentially decaying tail must be followed:
    X = tau1 ln(8 / (tol min_j total_j)), so the rigorously bounded remainder beyond X is
    below tol/8 of every component (never beyond the ``edges`` given).
    Returns the panels and the edges actually used (the last one is X).
    """
    tol = float(rel_tol)
    core_end = edges[0]
    for a, b in zip(edges[:-1], edges[1:]):
        if b - a > 2.0 * max(tau1, 1.0) * 1.000001:
            break
        core_end = b
    core = [e for e in edges if e <= core_end]
    done: list[list[arb]] = []
    est: list[float] | None = None

    def run(todo, m_nodes):
        nonlocal est
        while todo:
            vals = [(lo, hi, *_gl_panel_with_error(f, lo, hi, m_nodes, bits)) for lo, hi in todo]
            if est is None:
                est = [sum(_mag(v[2][j]) for v in vals) for j in range(len(vals[0][2]))]
                # skip steps whose running product is negligible for every later component
                f.floor = _skip_floors(est, bits)
            nxt = []
            for lo, hi, integrals, errs in vals:
                ok = all(e <= tol * s / 4 for e, s in zip(errs, est))
                if ok or len(done) + len(nxt) > max_panels or float((hi - lo).mid()) < 1e-6:
                    with _prec(bits):
                        done.append([v + arb(0, e) for v, e in zip(integrals, errs)])
                else:
                    with _prec(bits):
                        mid = (lo + hi) / 2
                    nxt.extend([(lo, mid), (mid, hi)])
            todo = nxt

    run([(arb(a), arb(b)) for a, b in zip(core[:-1], core[1:])], n)
    positive = [s for s in est if s > 0]
    X = edges[-1]
    if positive:
        X = min(X, max(core_end, tau1 * math.log(8 / (tol * min(positive)))))
    tail = [e for e in edges if core_end < e < X] + ([X] if X > core_end else [])
    bounds = [core_end] + tail
    run([(arb(a), arb(b)) for a, b in zip(bounds[:-1], bounds[1:])], n)
    return done, core + tail


def _skip_floors(est: list[float], bits: int) -> list[arb]:
    """floor[i]: a running product below it is negligible for all components >= step i."""
    T = len(est) // 2
    floors = []
    running = math.inf
    mins = [0.0] * T
    for i in range(T - 1, -1, -1):
        running = min(running, est[2 * i], est[2 * i + 1])
        mins[i] = running
    for i in range(T):
        v = mins[i] * 2.0 ** (-(bits + 16))
        floors.append(arb(v) if v > 0 and math.isfinite(v) else arb(0))
    return floors


# ---------------------------------------------------------------------------
# certified quadrature: Gauss-Legendre remainder bound on a Bernstein ellipse
# ---------------------------------------------------------------------------


def _ellipse_abs_bounds(ev: _StepEval, xl: float, xr: float, Y: float) -> tuple[arb, arb]:
    """Upper bounds on |h(x)| and |1 - h(x)| over {Re x in [xl, xr], |Im x| <= Y}.

    With theta = eps Y < pi/2 the count mean m = a w (or b/w) has |arg m| <= theta.
    Integrating u^c e^{-u} along the ray / horizontal line from m (Re u >= |u| cos theta):
      |Gamma(c+1, m)| <= cos(theta)^{-c} Gamma(c+1, |m| cos theta),
      |gamma(c+1, m)| <= cos(theta)^{-(c+1)} gamma(c+1, |m| cos theta),
    and the same for non-integer orders (exponent max(s-1, 0) / s).  |a^sigma| = |a|^sigma.
    Each bound is monotone in |m|, so it is evaluated at the extreme |m| of the region.
    Also |Q| <= 1 + |P| and |P| <= 1 + |Q| (Q + P = 1), whichever is smaller.
    """
    if ev.sigma is None:
        cont, halt = ev.const
        return abs(cont), abs(halt)
    if ev.lnA is None:
        return arb(1), arb(1)
    s, c, sigma = ev.s, ev.c, ev.sigma
    theta = ev.eps * Y
    cs = theta.cos()
    lnfac = ev.lnfac
    one = arb(1)
    if s == 1:
        m_lo = (ev.lnA - ev.eps * xr).exp()  # smallest |a|
        m_hi = (ev.lnA - ev.eps * xl).exp()  # largest |a|
    else:
        m_lo = (ev.lnA + ev.eps * xl).exp()
        m_hi = (ev.lnA + ev.eps * xr).exp()
    bits = ev.bits
    c1 = arb(c + 1)
    Qb = cs ** (-c) * (m_lo * cs).gamma_upper(c1, regularized=1)  # |Q(c+1, m)|
    Pb = cs ** (-(c + 1)) * _lower_reg_int(c + 1, m_hi * cs, bits)  # |P(c+1, m)|
    Qabs = _min(Qb, one + Pb)
    Pabs = _min(Pb, one + Qb)
    shape = ev.shape
    if s == 1:
        # |a^sigma Gamma(shape, a)| / c!
        k = cs ** (-max(float(shape.mid()) - 1, 0.0)) if float(shape.mid()) > 1 else arb(1)
        G1 = k * (m_lo * cs).gamma_upper(shape)
        if shape > 0:
            G2 = shape.gamma() + cs ** (-shape) * _lower_gamma_scaled(ev.shape_now, m_hi * cs, bits, False)
            G = _min(G1, G2)
        else:
            G = G1
        tail = (sigma * m_hi.log() - lnfac).exp() * G
        return Qabs + tail, Pabs + tail
    # s = -1: |b^{-sigma} gamma(shape, b)| / c!
    g1 = cs ** (-shape) * _lower_gamma_scaled(ev.shape_now, m_hi * cs, bits, False)
    g2 = shape.gamma() + cs ** (-(shape - 1)) * (m_lo * cs).gamma_upper(shape)
    g = _min(g1, g2)
    tail = (-sigma * m_lo.log() - lnfac).exp() * g
    return Pabs + tail, Qabs + tail


def _min(a: arb, b: arb) -> arb:
    ua, ub = a.upper(), b.upper()
    return ua if ua < ub else ub


def _ellipse_bound(evals, tau1: arb, lo: float, hi: float, rho_e: float, bits: int) -> list[arb]:
    """Upper bounds M_j on |integrand_j| over the Bernstein ellipse E_rho of [lo, hi]."""
    L = (hi - lo) / 2
    mid = (hi + lo) / 2
    a_semi = L * (rho_e + 1 / rho_e) / 2
    Y = L * (rho_e - 1 / rho_e) / 2
    xl, xr = mid - a_semi, mid + a_semi
    with _prec(bits):
        fmax = (-arb(xl) / tau1).exp() / tau1
        out = []
        P = fmax
        for ev in evals:
            if ev.sigma is not None and float(ev.eps.mid()) * Y >= 1.2:
                return [arb("inf")] * (2 * len(evals))
            hb, hh = _ellipse_abs_bounds(ev, arb(xl), arb(xr), arb(Y))
            out.append((P * hh).upper())
            P = (P * hb).upper()
            out.append(P)
    return out


def _integrate_certified(f, evals, tau1, edges, n, bits, rel_tol, max_panels):
    """Gauss-Legendre panels with the rigorous remainder |E| <= L 64 M / (15 (1 - rho^-2) rho^{2n})."""
    tol = float(rel_tol)
    todo = [(a, b) for a, b in zip(edges[:-1], edges[1:])]
    done: list[list[arb]] = []
    est: list[float] | None = None
    while todo:
        nxt = []
        vals = []
        for a, b in todo:
            vals.append((a, b, _gl_panel(f, arb(a), arb(b), n, bits)))
        if est is None:
            m = len(vals[0][2])
            est = [sum(_mag(v[2][j]) for v in vals) for j in range(m)]
            f.floor = _skip_floors(est, bits)
        m = len(est)
        for a, b, pv in vals:
            best = None
            for rho_e in (1.5, 2.5, 4.0, 7.0):
                Ms = _ellipse_bound(f.evals, tau1, a, b, rho_e, bits)
                with _prec(bits):
                    factor = arb((b - a) / 2) * 64 / (15 * (1 - arb(rho_e) ** -2) * arb(rho_e) ** (2 * n))
                    errs = [(M * factor).upper() for M in Ms]
                if best is None or _worst(errs, est) < _worst(best, est):
                    best = errs
            ok = all(_mag(e) <= tol * est[j] / 4 for j, e in enumerate(best))
            if ok or len(done) + len(nxt) > max_panels or (b - a) < 1e-6:
                with _prec(bits):
                    if not all(e.is_finite() for e in best):
                        # no usable ellipse: every integrand lies in [0, f1(a)] on the panel
                        top = (arb(b - a) * (-arb(a) / tau1).exp() / tau1).upper()
                        done.append([arb(0, top) for _ in pv])
                    else:
                        done.append([v + arb(0, e) for v, e in zip(pv, best)])
            else:
                mid = (a + b) / 2
                nxt.extend([(a, mid), (mid, b)])
        todo = nxt
    return done


def _worst(errs, est) -> float:
    w = 0.0
    for e, s in zip(errs, est):
        me = _mag(e)
        if s > 0:
            w = max(w, me / s)
        elif me > 0:
            w = math.inf
    return w


# ---------------------------------------------------------------------------
# privacy ratios (Lemma 17 (6)-(7))
# ---------------------------------------------------------------------------


def neighbour_interval(p: float, eps_t: float) -> tuple[float, float]:
    """All p' with p'/p and (1-p')/(1-p) in [e^-eps, e^eps] (DESIGN.md neighbouring rule)."""
    e = math.exp(eps_t)
    lo = max(p / e, 1 - e * (1 - p))
    hi = min(p * e, 1 - (1 - p) / e)
    return max(lo, 0.0), min(hi, 1.0)


def check_neighbouring(p: Sequence[Any], p_prime: Sequence[Any], eps: Sequence[Any]) -> None:
    """Raise :class:`NotNeighbouring` unless every step satisfies the eps_t ratio rule (rigorously)."""
    if len(p) != len(p_prime):
        raise NotNeighbouring(f"p and p_prime must have the same length, got {len(p)} and {len(p_prime)}")
    with _prec(200):
        ps = _check_stream("p", p)
        qs = _check_stream("p_prime", p_prime)
        for t, (a, b) in enumerate(zip(ps, qs), start=1):
            e = to_arb(eps[t - 1])
            E = e.exp()
            ok = _ratio_ok(a, b, E) and _ratio_ok(1 - a, 1 - b, E)
            if not ok:
                raise NotNeighbouring(
                    f"step {t}: p={p[t - 1]!r} and p_prime={p_prime[t - 1]!r} are not neighbours at "
                    f"eps_t={float(eps[t - 1])!r} (need p'/p and (1-p')/(1-p) in [e^-eps_t, e^eps_t])"
                )


def _ratio_ok(a: arb, b: arb, E: arb) -> bool:
    # b/a in [1/E, E] with 0/0 allowed; certified: a <= E b and b <= E a
    if a == 0 and b == 0:
        return True
    return bool((a <= E * b) and (b <= E * a))


@dataclass(frozen=True)
class PrivacyRow:
    kind: str  # "continue" or "halt"
    t: int
    P: Probability
    P_prime: Probability
    log_ratio: mpmath.mpf  # ln(P / P')
    log_ratio_error: mpmath.mpf
    bound: float  # Lemma 17: 1/tau1 (continue) or 1/tau1 + 2/tau2_t (halt), from plan.claimed_loss
    ok: bool  # |ln(P/P')| <= bound, certified by the error bound

    @property
    def slack(self) -> float:
        return float(self.bound - abs(self.log_ratio))

    def to_dict(self, dps: int) -> dict:
        return {
            "transcript": self.kind,
            "t": self.t,
            "P": mpmath.nstr(self.P.value, dps),
            "P_error": mpmath.nstr(self.P.error, 3),
            "P_prime": mpmath.nstr(self.P_prime.value, dps),
            "P_prime_error": mpmath.nstr(self.P_prime.error, 3),
            "log_ratio": mpmath.nstr(self.log_ratio, min(dps, 20)),
            "log_ratio_error": mpmath.nstr(self.log_ratio_error, 3),
            "bound": self.bound,
            "ok": self.ok,
        }


@dataclass(frozen=True)
class PrivacyReport:
    rows: tuple[PrivacyRow, ...]
    dist: TranscriptDistribution
    dist_prime: TranscriptDistribution

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def worst(self) -> PrivacyRow:
        return max(self.rows, key=lambda r: abs(r.log_ratio) - r.bound)

    def max_loss(self, kind: str | None = None) -> PrivacyRow:
        rows = [r for r in self.rows if kind is None or r.kind == kind]
        return max(rows, key=lambda r: abs(r.log_ratio))


def privacy_ratios(plan, p, p_prime, *, dps: int = 25, certified: bool = False) -> PrivacyReport:
    """ln(P/P') of every transcript of two neighbouring streams, against Lemma 17 (6)-(7)."""
    if len(p) != len(p_prime):
        raise NotNeighbouring(f"p and p_prime must have the same length, got {len(p)} and {len(p_prime)}")
    eps = [plan.step(t).eps_t for t in range(1, len(p) + 1)]
    check_neighbouring(p, p_prime, eps)
    d1 = transcript_distribution(plan, p, dps=dps, certified=certified)
    d2 = transcript_distribution(plan, p_prime, dps=dps, certified=certified)
    rows = []
    bits = _bits(dps)
    for t in range(1, len(p) + 1):
        for kind, A, B in (("halt", d1.halt[t - 1], d2.halt[t - 1]), ("continue", d1.cont[t - 1], d2.cont[t - 1])):
            bound = float(plan.claimed_loss(t, kind == "halt"))
            with _prec(bits):
                if A.ball > 0 and B.ball > 0:
                    lr = A.ball.log() - B.ball.log()
                    ok = bool(abs(lr) <= arb(bound))
                    lr_val, lr_err = _to_mpf(lr, dps), _rad_mpf(lr)
                elif A.ball == 0 and B.ball == 0:
                    lr_val, lr_err, ok = mpmath.mpf(0), mpmath.mpf(0), True
                else:
                    lr_val, lr_err, ok = mpmath.mpf("nan"), mpmath.inf, False
            rows.append(PrivacyRow(kind, t, A, B, lr_val, lr_err, bound, ok))
    return PrivacyReport(rows=tuple(rows), dist=d1, dist_prime=d2)


# ---------------------------------------------------------------------------
# exact accuracy: per-step Type I / Type II probabilities, exact rejection threshold
# ---------------------------------------------------------------------------


def _single_step_halt(plan, t: int, p_t, dps: int) -> Probability:
    """Pr[step t outputs s_t] for p_t, integrating over eta_1 and eta_{2,t} (step t in isolation)."""

    class _OneStep:
        tau1 = plan.tau1
        mu1 = plan.mu1
        horizon = None

        @staticmethod
        def step(i):
            return plan.step(t)

    d = transcript_distribution(_OneStep, [p_t], dps=dps)
    return d.halt[0]


def step_error_probabilities(plan, t: int, *, dps: int = 20) -> dict:
    """Exact per-step error probabilities of step t (no union bound, eta_1 and eta_2 integrated).

    Type I: Pr[halt at t] with p_t = p_bar_t (the paper's rejection threshold; halting
    probability increases in p_t, so this is the worst case below p_bar_t).
    Type II: Pr[continue at t] with p_t = p*_t (worst case above p*_t).
    Both are for step t run on its own (its marginal over eta_1), so they include the
    shared-noise failure (eta_1 > mu_1 etc., Pr[G^c] <= beta/2 by Lemma 19(1)) that the paper
    charges once for all steps; compare with beta^I_t / beta^II_t plus that share.
    """
    sp = plan.step(t)
    t1 = _single_step_halt(plan, t, sp.p_bar, dps)
    t2h = _single_step_halt(plan, t, sp.p_star, dps)
    with _prec(_bits(dps)):
        t2 = 1 - t2h.ball
    return {
        "t": t,
        "p_bar": sp.p_bar,
        "p_star": sp.p_star,
        "type_I": t1,
        "type_II": _prob(t2, dps),
        "beta_I": sp.beta_I,
        "beta_II": sp.beta_II,
        "beta_t": sp.beta_t,
    }


def exact_rejection_threshold(plan, t: int, *, budget: float | None = None, dps: int = 15, iterations: int = 40) -> dict:
    """Largest p with exact Pr[halt at t | p] <= budget (default beta^I_t), by bisection.

    The halting probability is increasing in p (Lemma 15 monotonicity), so bisection
    on [0, p*] is valid.  Returns the bracket and the paper's p_bar for comparison.
    """
    sp = plan.step(t)
    b = sp.beta_I if budget is None else float(budget)
    lo, hi = 0.0, float(sp.p_star)
    if float(_single_step_halt(plan, t, hi, dps).value) <= b:
        return {"t": t, "p_exact": hi, "bracket": (hi, hi), "p_bar": sp.p_bar, "budget": b}
    for _ in range(iterations):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 2
        if hi - lo <= 1e-6 * hi:
            break
        if float(_single_step_halt(plan, t, mid, dps).value) <= b:
            lo = mid
        else:
            hi = mid
    return {"t": t, "p_exact": lo, "bracket": (lo, hi), "p_bar": sp.p_bar, "budget": b}
