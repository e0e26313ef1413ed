"""Definition 7: zeta = sum_{j>=1} f(j),  f(x) = 1 / (x ln^3(x+2)).

The trap
--------
The series converges like 1/(2 ln^2 J): a sum of the first 10^6 terms is still
off by 2.6e-3, ``mpmath.nsum``'s default extrapolation returns 1.2263... (1.2271...
at 20 digits) and even ``nsum(..., method="euler-maclaurin")`` gives 1.23303...
The true value begins 1.2330926408131823377...

The method (both paths)
-----------------------
Sum the first N-1 terms directly and replace the rest by the Euler-Maclaurin
formula with its remainder theorem (Graham, Knuth, Patashnik, *Concrete
Mathematics*, 2nd ed., Section 9.5: R_{2m} = theta B_{2m+2}/(2m+2)! f^{(2m+1)}(x)|_a^b
with 0 < theta < 1 whenever f^{(2m+2)} >= 0 and f^{(2m+4)} >= 0 on [a, b]), with b -> infinity:

    sum_{j>=N} f(j) = int_N^inf f(x) dx + f(N)/2 - sum_{k=1}^{m} B_{2k}/(2k)! f^{(2k-1)}(N) + R_m,

    R_m = -theta * B_{2m+2}/(2m+2)! * f^{(2m+1)}(N)   for some theta in [0, 1].

Why the remainder bound is *proved*: the remainder theorem needs f^{(2m+2)} and
f^{(2m+4)} >= 0 on [N, inf). Here f is completely monotone on
(0, inf) ((-1)^n f^{(n)} >= 0 for every n), so every even derivative is >= 0:
  * 1/x is completely monotone;
  * ln(x+2) is positive on (0, inf) with completely monotone derivative 1/(x+2),
    i.e. a Bernstein function, and y -> y^{-3} is completely monotone, so the
    composition 1/ln^3(x+2) is completely monotone (Schilling, Song, Vondracek,
    *Bernstein Functions*, Thm. 3.7);
  * products of completely monotone functions are completely monotone (Leibniz).
Letting b -> inf is legitimate because f^{(k)}(b) -> 0 for all k and all other
terms converge, so the remainder lies between 0 and the first omitted term.

The tail integral with x = e^y is

    int_N^inf f = int_{ln N}^inf dy / (y + ln(1 + 2 e^{-y}))^3.

:func:`zeta_enclosure` integrates rigorously (arb's ``acb.integral``) on
[ln N, Y] and bounds the rest analytically: 0 < ln(1 + 2e^{-y}) < 2 e^{-Y} for
y >= Y, hence

    1 / (2 (Y + 2e^{-Y})^2)  <  int_Y^inf dy/(y + ln(1+2e^{-y}))^3  <  1 / (2 Y^2).

Derivatives f^{(k)}(N) come from rigorous power-series arithmetic (arb_series).
The result is a ball *proved* to contain zeta.

:func:`zeta` (float64 or mpmath) is an independent implementation of the same
formula: Taylor coefficients by hand-written power-series arithmetic and the
integral by ``mpmath.quad``. Tests check that it lies inside the enclosure.
Both are cached, so only the first call pays (a few tens of milliseconds).
"""

from __future__ import annotations

import functools
import math

import mpmath

# Direct summation of f(1), ..., f(N-1); Euler-Maclaurin from N on.
_N = 200


def _em_terms_needed(digits: int, N: int) -> int:
    """Number m of Bernoulli terms so the first omitted term is < 10^-(digits+5).

    Uses |B_{2k}|/(2k)! ~ 2/(2 pi)^{2k} and |f^{(2k-1)}(N)| <~ (2k-1)!/N^{2k}, doubled for
    safety. This only *chooses* m; the remainder bound actually used is computed.
    """
    target = -(digits + 5) * math.log(10)
    for m in range(1, 10_000):
        k = m + 1  # the first omitted term
        log_term = math.lgamma(2 * k) + math.log(4) - 2 * k * math.log(2 * math.pi * N)
        if log_term < target:
            return m
    raise ValueError(f"digits={digits} too large for N={N}")  # pragma: no cover


# ---------------------------------------------------------------------------
# Rigorous enclosure (python-flint / arb)
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def zeta_enclosure(digits: int = 40):
    """A python-flint ``arb`` ball proved to contain zeta (Definition 7), of radius
    below 10^-digits.

    See the module docstring for the Euler-Maclaurin remainder argument (f is
    completely monotone) and the rigorous evaluation of the tail integral.
    """
    digits = int(digits)
    if digits < 1:
        raise ValueError(f"digits must be >= 1, got {digits}")
    N = _N if digits <= 400 else 2 * digits
    m = _em_terms_needed(digits, N)
    Y = max(60, int((digits + 10) * math.log(10)) + 1)
    return euler_maclaurin_enclosure(N=N, m=m, Y=Y, prec=int(digits * 3.33) + 64)


def euler_maclaurin_enclosure(*, N: int, m: int, Y: float, prec: int):
    """The enclosure of zeta with explicit knobs: direct sum of f(1..N-1), m Bernoulli
    terms at N (remainder bounded by the first omitted term), the tail integral
    integrated rigorously on [ln N, Y] and bounded analytically beyond Y.

    Any N >= 1, m >= 1, Y > ln N gives a valid (possibly wide) ball; tests use small
    values to show the bound stays honest when it is loose.
    """
    from flint import acb, arb, arb_series, ctx

    if N < 1 or m < 1 or not Y > math.log(N):
        raise ValueError(f"need N >= 1, m >= 1, Y > ln N; got N={N}, m={m}, Y={Y}")
    old_prec, old_cap = ctx.prec, ctx.cap
    try:
        ctx.prec = int(prec)
        ctx.cap = 2 * m + 4

        # head: sum_{j=1}^{N-1} f(j)
        head = arb(0)
        for j in range(1, N):
            x = arb(j)
            head += 1 / (x * (x + 2).log() ** 3)

        # Taylor coefficients a_n = f^{(n)}(N)/n!, n <= 2m+1, by rigorous series arithmetic
        h = arb_series([N, 1], prec=2 * m + 2)
        coeffs = (1 / (h * (h + 2).log() ** 3)).coeffs()
        a = [coeffs[n] if n < len(coeffs) else arb(0) for n in range(2 * m + 2)]

        # f(N)/2 - sum_k B_2k/(2k)! f^(2k-1)(N);  B_2k/(2k)! f^(2k-1) = B_2k a_{2k-1} / (2k)
        em = a[0] / 2
        for k in range(1, m + 1):
            em -= arb.bernoulli(2 * k) * a[2 * k - 1] / (2 * k)
        omitted = -arb.bernoulli(2 * m + 2) * a[2 * m + 1] / (2 * m + 2)
        remainder = omitted * arb(mid=0.5, rad=0.5)  # = theta * omitted, theta in [0, 1]

        # tail integral with x = e^y: rigorous on [ln N, Y], analytic bound beyond Y
        def integrand(y, analytic):
            inner = (1 + 2 * (-y).exp()).log(analytic=analytic)
            return 1 / (y + inner) ** 3

        Ya = arb(Y)
        body = acb.integral(integrand, acb(arb(N).log()), acb(Ya)).real
        upper = 1 / (2 * Ya**2)
        lower = 1 / (2 * (Ya + 2 * (-Ya).exp()) ** 2)
        beyond = lower.union(upper)

        return head + body + beyond + em + remainder
    finally:
        ctx.prec, ctx.cap = old_prec, old_cap


# ---------------------------------------------------------------------------
# Fast path (mpmath): the same formula, independent code
# ---------------------------------------------------------------------------


def _series_mul(a, b, n):
    return [mpmath.fsum(a[i] * b[k - i] for i in range(k + 1)) for k in range(n)]


def _series_inv(a, n):
    inv = [1 / a[0]]
    for k in range(1, n):
        inv.append(-mpmath.fsum(a[i] * inv[k - i] for i in range(1, k + 1)) / a[0])
    return inv


def _taylor_f(N: int, n: int):
    """Taylor coefficients f^{(k)}(N)/k!, k < n, of f(x) = 1/(x ln^3(x+2)) by series arithmetic."""
    N = mpmath.mpf(N)
    # ln(N + 2 + h) = ln(N+2) + sum_{k>=1} (-1)^{k+1} h^k / (k (N+2)^k)
    log_series = [mpmath.log(N + 2)] + [
        (-1) ** (k + 1) / (k * (N + 2) ** k) for k in range(1, n)
    ]
    inv_log = _series_inv(log_series, n)
    inv_log3 = _series_mul(_series_mul(inv_log, inv_log, n), inv_log, n)
    inv_x = [(-1) ** k / N ** (k + 1) for k in range(n)]
    return _series_mul(inv_x, inv_log3, n)


@functools.lru_cache(maxsize=None)
def _zeta_mp(dps: int):
    dps = int(dps)
    N = _N if dps <= 400 else 2 * dps
    m = _em_terms_needed(dps, N)
    with mpmath.workdps(dps + 15):
        head = mpmath.fsum(1 / (j * mpmath.log(mpmath.mpf(j) + 2) ** 3) for j in range(1, N))
        coeffs = _taylor_f(N, 2 * m + 2)
        em = coeffs[0] / 2
        for k in range(1, m + 1):
            em -= mpmath.bernoulli(2 * k) * coeffs[2 * k - 1] / (2 * k)  # f^{(2k-1)}/(2k)!
        Y = max(60, int((dps + 10) * math.log(10)) + 1)
        lo = mpmath.log(N)
        body = mpmath.quad(
            lambda y: 1 / (y + mpmath.log1p(2 * mpmath.exp(-y))) ** 3,
            mpmath.linspace(lo, Y, 8),
        )
        beyond = 1 / (2 * mpmath.mpf(Y) ** 2)  # error < 3 e^{-Y}/Y^3, far below 10^-dps
        return head + body + beyond + em


@functools.lru_cache(maxsize=None)
def _zeta_float() -> float:
    return float(_zeta_mp(20))


def zeta(*, dps: int | None = None):
    """Definition 7(1): zeta = sum_{j>=1} 1/(j ln^3(j+2)) = 1.2330926408131823377..., in (1, 5/4).

    ``dps=None``: float64 (cached); ``dps=N``: mpmath value correct to N digits
    (cached per N). :func:`zeta_enclosure` gives a proved enclosure.
    """
    if dps is None:
        return _zeta_float()
    with mpmath.workdps(dps):
        return +_zeta_mp(int(dps))
