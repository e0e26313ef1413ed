"""Small python-flint (arb) helpers of the exact engine: working precision, exact conversion of
inputs to balls, incomplete gamma functions as balls, conversion back to mpmath."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

import mpmath
from flint import arb, ctx

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import is_integer, is_real


# ---------------------------------------------------------------------------
# small arb helpers
# ---------------------------------------------------------------------------


class working_precision:
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
    if is_integer(x):
        return arb(int(x))
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
    if not is_real(x):  # bools are not numbers here
        raise InvalidParameter(f"expected a number, got {x!r}")
    try:
        return arb(float(x))
    except Exception:
        raise InvalidParameter(f"expected a number, got {x!r}") from None


def to_mpf(x: arb, dps: int) -> mpmath.mpf:
    """An arb ball's midpoint as an mpmath number at ``dps`` digits."""
    with mpmath.workdps(dps + 10):
        return mpmath.mpf(x.mid().str(dps + 8, radius=False))


def radius_mpf(x: arb) -> mpmath.mpf:
    """An arb ball's radius as an mpmath number."""
    return mpmath.mpf(x.rad().str(5, radius=False)) if x.rad() != 0 else mpmath.mpf(0)


def lgamma_int(n: int) -> arb:
    """ln Gamma(n) of a positive integer n, as an arb ball."""
    return arb(n).lgamma()


def _lower_gamma(s: arb, z: arb, bits: int) -> arb:
    """Lower incomplete gamma gamma(s, z) for s > 0, z > 0, as an arb ball.

    (python-flint's ``gamma_lower`` is unreliable for large s with moderate z,
    so it is computed here: Gamma(s) - Gamma(s, z) with enough guard bits when
    the cancellation is mild, else the series z^s e^{-z} sum_k z^k/(s)_{k+1}
    with a geometric bound on its tail.)
    """
    return lower_gamma_scaled(s, z, bits, regularized=False)


def lower_reg_int(c1: int, z: arb, bits: int) -> arb:
    """P(c1, z) = Pr[Po(z) >= c1] (regularised lower incomplete gamma, integer order)."""
    return lower_gamma_scaled(arb(c1), z, bits, regularized=True)


def lower_gamma_scaled(s, z: arb, bits: int, regularized: bool) -> arb:
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
        with working_precision(bits + guard):
            s = s_fn()
            if regularized:
                return 1 - z.gamma_upper(s, regularized=1)
            return s.gamma() - z.gamma_upper(s)
    # series: terms t_k = z^k / (s (s+1) ... (s+k)); ratio z/(s+k+1) <= z/s < 1
    with working_precision(bits + 20):
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


def log_lower_reg_upper(c1: int, zf: float) -> float:
    """Float upper bound of ln P(c1, z) for z < c1 + 1 (first Poisson term over 1 - ratio)."""
    if zf <= 0:
        return -math.inf
    ratio = zf / (c1 + 1)
    return c1 * math.log(zf) - zf - math.lgamma(c1 + 1) - math.log1p(-ratio)


def probabilities_as_arb(name: str, p: Sequence[Any]) -> list[arb]:
    """A stream of probabilities as arb balls (exact for floats, ints, fractions, decimal strings), each
    in [0, 1]; InvalidParameter naming ``name[t]`` otherwise."""
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


def float_upper(x: arb) -> float:
    """The smallest float64 >= every point of the ball ``x`` (one step up when the nearest float is below)."""
    up = x.upper()
    f = float(up)
    while not arb(f) >= up:
        f = math.nextafter(f, math.inf)
    return f


def bits_for_dps(dps: int) -> int:
    """Working precision in bits for ``dps`` target decimal digits (with 24 guard bits)."""
    return int(math.ceil(dps * math.log2(10))) + 24
