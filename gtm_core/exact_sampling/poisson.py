"""Exact Poisson sampling by inversion with a lazily known mean, and exact Bernoulli draws
of a dyadic probability (purification's crossover).

Poisson: N = min{n >= 0 : U <= F(n; lambda)}, F(n; lambda) = Pr[Po(lambda) <= n]
= Q(n + 1, lambda) (regularised upper incomplete gamma, DLMF 8.4.10), U a lazy uniform and
lambda a :class:`LazyReal`. Each comparison "U <= F(n; lambda)" is decided only when the ball
of U lies entirely on one side of the ball of F(n; lambda) (arb, rigorous); otherwise both are
refined (more bits of the same U and of the lazy reals behind lambda, higher precision) and the
comparison is repeated. A float64 quantile only *proposes* where to start looking; the answer is
fixed by the certified comparisons alone, so the number of arb evaluations is about two (plus
O(log) when the proposal is off), independent of the size of N.
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
from flint import arb, ctx

from ..validation import check_nonnegative_int, check_probability
from .bits import BitSource
from .lazy import GUARD_BITS, MAX_BITS, LazyReal, LazyUniform, PrecisionLimitExceeded

__all__ = [
    "START_PREC",
    "poisson_cdf",
    "poisson_pmf",
    "poisson_inverse",
    "bernoulli_count",
]

#: Bits of every uniform (and of the working precision) before the first comparison.
START_PREC = 64

_NORMAL = NormalDist()


def poisson_cdf(n: int, lam: arb) -> arb:
    """F(n; lambda) = Pr[Po(lambda) <= n] = Q(n + 1, lambda) (DLMF 8.4.10), as an arb ball at
    the caller's working precision; 0 for n < 0."""
    if n < 0:
        return arb(0)
    return lam.gamma_upper(n + 1, regularized=1)


def poisson_pmf(n: int, lam: arb) -> arb:
    """Pr[Po(lambda) = n] = exp(-lambda + n ln lambda - ln n!) as an arb ball (n >= 0)."""
    if n == 0:
        return (-lam).exp()
    return (-lam + lam.log() * n - arb(n + 1).lgamma()).exp()


#: Largest distance walked from an anchor CDF value with pmf terms instead of a new evaluation.
WALK = 64


class _CdfCache:
    """F(n; lambda) at one precision: one incomplete-gamma evaluation at an anchor, neighbours by
    adding or subtracting pmf terms (F(n) = F(a) + sum_{a<j<=n} p(j)); all in arb."""

    def __init__(self, lam: arb):
        self.lam = lam
        self.anchor: int | None = None
        self.f_anchor: arb | None = None
        self.p_anchor: arb | None = None

    def __call__(self, n: int) -> arb:
        if n < 0:
            return arb(0)
        a = self.anchor
        if a is None or abs(n - a) > WALK:
            self.anchor, self.f_anchor, self.p_anchor = n, poisson_cdf(n, self.lam), None
            return self.f_anchor
        if n == a:
            return self.f_anchor
        if self.p_anchor is None:
            self.p_anchor = poisson_pmf(a, self.lam)
        lam, f, p = self.lam, self.f_anchor, self.p_anchor
        if n > a:
            for j in range(a + 1, n + 1):
                p = p * lam / j
                f = f + p
        else:
            for j in range(a, n, -1):  # F(j - 1) = F(j) - p(j); p(j - 1) = p(j) j / lambda
                f = f - p
                p = p * j / lam
        return f


def _proposal(u: float, lam: float) -> float:
    """A float guess of the Poisson quantile at u (never decides anything: only where the
    certified search starts). Exact float inversion for small lambda, Cornish-Fisher beyond."""
    if not (lam > 0) or not math.isfinite(lam):
        return 0.0 if not lam > 0 else math.inf
    u = min(max(u, 1e-300), 1 - 1e-16)
    if lam < 50:
        term = math.exp(-lam)
        cdf, k = term, 0
        while cdf < u and k < 1000:
            k += 1
            term *= lam / k
            cdf += term
        return k + 0.5  # rounded by the caller's ceil(g - 0.5)
    z = _NORMAL.inv_cdf(u)
    sq = math.sqrt(lam)
    return lam + z * sq + (z * z - 1) / 6 + (z ** 3 - 7 * z) / (72 * sq)


def poisson_inverse(u: LazyUniform, lam: LazyReal, *, limit: int) -> int | None:
    """N = min{n : U <= F(n; lambda)} if N <= limit, else None (N > limit, decided exactly).

    ``lam`` must be positive (its enclosures must not contain non-positive numbers once
    refined). Comparisons are certified in arb; the search starts at a float proposal and
    gallops / bisects from there.
    """
    limit = check_nonnegative_int("limit", limit)
    prec = START_PREC
    lo, hi = 0, None  # certified: lo <= N, and N <= hi when hi is not None
    guess: int | None = None
    last_dir, step, reversed_once = 0, 1, False
    while True:
        ub = u.enclosure(prec)
        lb = lam.enclosure(prec)
        with ctx.workprec(prec + GUARD_BITS):
            if guess is None:
                g = _proposal(float(ub.mid()), float(lb.mid()))
                guess = limit if not math.isfinite(g) else int(min(max(math.ceil(g - 0.5), 0), limit))
            cdf = _CdfCache(lb)
            while True:
                if hi is not None and lo == hi:
                    return lo
                cand = min(max(guess, lo), limit if hi is None else hi - 1)
                if not (lb > 0):  # lambda's ball still touches 0: refine
                    break
                f = cdf(cand)
                if ub <= f:  # certainly U <= F(cand): N <= cand
                    hi, d = cand, -1
                elif ub > f:  # certainly U > F(cand): N > cand
                    if cand >= limit:
                        return None
                    lo, d = cand + 1, +1
                else:
                    break  # undecided at this precision
                if hi is not None and lo == hi:
                    return lo
                if d == last_dir:
                    step *= 2
                else:
                    reversed_once = reversed_once or last_dir != 0
                    step = 1
                last_dir = d
                if reversed_once and hi is not None:
                    guess = (lo + hi - 1) // 2
                elif d > 0:
                    guess = lo + step - 1
                else:
                    guess = hi - step
        if prec >= MAX_BITS:
            raise PrecisionLimitExceeded(f"Poisson inversion needed more than {MAX_BITS} bits")
        prec = min(2 * prec, MAX_BITS)


# ---------------------------------------------------------------------------
# Bernoulli(p) for a dyadic p, vectorised
# ---------------------------------------------------------------------------

_CHUNK = 1 << 20


def _dyadic_words(p: Fraction) -> list[int]:
    """p in [0, 1) dyadic -> its binary expansion in 64-bit words (finite)."""
    words = []
    num, den = p.numerator, p.denominator
    while num:
        num <<= 64
        w, num = divmod(num, den)
        words.append(w)
    return words


def bernoulli_count(p: float, n: int, source: BitSource) -> int:
    """The number of successes among n independent Bernoulli(p) trials, p a float (an exact
    dyadic rational) in [0, 1]: trial i succeeds iff U_i < p, decided by comparing U_i's
    64-bit words with p's binary expansion (Pr[U_i < p] = p exactly). Vectorised in numpy."""
    p = check_probability("p", p)
    n = check_nonnegative_int("n", n)
    if n == 0 or p == 0.0:
        return 0
    if p == 1.0:
        return n
    pw = _dyadic_words(Fraction(p))
    total = 0
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        open_ = m  # trials still tied with p's prefix
        for w in pw:
            words = source.words(open_)
            ww = np.uint64(w)
            total += int(np.count_nonzero(words < ww))
            open_ = int(np.count_nonzero(words == ww))
            if open_ == 0:
                break
        # trials tied with p's whole (finite) expansion have U > p almost surely: failures
    return total
