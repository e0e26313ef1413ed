"""Lazily refined random reals: a uniform U in (0, 1) known through its first n bits, and
exact functions of it (the exponential -scale * ln U), enclosed in arb balls.

A :class:`LazyReal` answers ``enclosure(prec)``: an arb ball that contains the exact value.
Asking for a larger ``prec`` draws more bits of the *same* real (the drawn prefix is kept and
extended, never redrawn) and computes at a higher working precision, so the radius tends to 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from fractions import Fraction
from typing import Any

from flint import arb, ctx, fmpz

from ..errors import GTMError, InvalidParameter
from ..validation import check_exact_real, check_int, check_positive
from .bits import BitSource

__all__ = [
    "MAX_BITS",
    "GUARD_BITS",
    "PrecisionLimitExceeded",
    "LazyReal",
    "LazyUniform",
    "LazyExponential",
    "ExactConstant",
    "exact_arb",
]

#: Hard cap on the bits drawn for one uniform (and the fixed width of its serialisation).
#: A decision needs more than k bits with probability about 2^-k, so the cap is never met in
#: practice; meeting it raises :class:`PrecisionLimitExceeded` instead of looping.
MAX_BITS = 4096
#: Extra working precision (bits) of arb arithmetic beyond the number of drawn bits.
GUARD_BITS = 64


class PrecisionLimitExceeded(GTMError):
    """A sampling decision needed more than :data:`MAX_BITS` random bits (probability ~2^-4000)."""


def exact_arb(x: Any) -> arb:
    """An arb ball containing x exactly: an int, a float (a dyadic rational: exact) or a Fraction
    (exact when its denominator is a power of 2 and the working precision suffices, else a
    rigorous enclosure); call inside the working precision wanted."""
    if isinstance(x, arb):
        return x
    x = check_exact_real("x", x)
    if isinstance(x, int):
        return arb(fmpz(x))
    if isinstance(x, float):
        return arb(x)
    return arb(fmpz(x.numerator)) / arb(fmpz(x.denominator))


class LazyReal(ABC):
    """A real number known through arb enclosures that tighten as ``prec`` grows."""

    @abstractmethod
    def enclosure(self, prec: int) -> arb:
        """A ball containing the exact value, using >= ``prec`` random bits (if random) and
        working precision ``prec + GUARD_BITS``; its radius tends to 0 as ``prec`` grows.
        Sets no global state (the caller's arb context is restored)."""

    def __repr__(self) -> str:  # the value may be a secret: never shown
        return f"{type(self).__name__}(<hidden>)"

    __str__ = __repr__


class LazyUniform(LazyReal):
    """U uniform on (0, 1), an infinite sequence of fair bits of which a prefix is drawn.

    With bits b_1..b_n drawn (as the integer m), U lies in [m 2^-n, (m + 1) 2^-n]; drawing
    more bits appends to the prefix. ``bits_drawn`` is a secret-dependent count (how close a
    decision came to a boundary): it is never released; :meth:`to_hex` has a fixed width.
    """

    __slots__ = ("_source", "_m", "_n")

    def __init__(self, source: BitSource, *, m: int = 0, n: int = 0):
        if not isinstance(source, BitSource):
            raise InvalidParameter(f"source must be a BitSource, got {type(source).__name__}")
        self._source = source
        self._m, self._n = int(m), int(n)

    @property
    def bits_drawn(self) -> int:
        return self._n

    def refine_to(self, n: int) -> None:
        """Draw bits until at least n are known (never redraws the prefix)."""
        if n > self._n:
            if n > MAX_BITS:
                raise PrecisionLimitExceeded(
                    f"a sampling decision needed more than {MAX_BITS} random bits of one uniform"
                )
            k = n - self._n
            self._m = (self._m << k) | self._source.bits(k)
            self._n = n

    def prefix(self) -> tuple[int, int]:
        """(m, n): the drawn bits as an integer and their number (secret)."""
        return self._m, self._n

    def interval(self) -> tuple[Fraction, Fraction]:
        """Exact endpoints [m 2^-n, (m + 1) 2^-n] of the current enclosure."""
        d = 1 << self._n
        return Fraction(self._m, d), Fraction(self._m + 1, d)

    def enclosure(self, prec: int) -> arb:
        self.refine_to(prec)
        m, n = self._m, self._n
        with ctx.workprec(n + GUARD_BITS):
            return _dyadic_ball(m, n)

    # fixed-width serialisation ------------------------------------------------------------------
    def to_hex(self, width_bits: int = MAX_BITS) -> str:
        """A fixed-width hex encoding of the drawn prefix: 4 hex digits for n, then the n bits
        left-aligned in ``width_bits`` bits (zero padded). Its length does not depend on n."""
        width_bits = check_int("width_bits", width_bits, minimum=0, maximum=MAX_BITS)
        if width_bits % 4:
            raise InvalidParameter(f"width_bits must be a multiple of 4 and <= {MAX_BITS}, got {width_bits!r}")
        if self._n > width_bits:
            raise PrecisionLimitExceeded(f"the uniform has more than {width_bits} drawn bits")
        return f"{self._n:04x}" + format(self._m << (width_bits - self._n), f"0{width_bits // 4}x")

    @classmethod
    def from_hex(cls, text: str, source: BitSource, width_bits: int = MAX_BITS) -> "LazyUniform":
        """Inverse of :meth:`to_hex` (continues drawing from ``source``)."""
        if not isinstance(text, str) or len(text) != 4 + width_bits // 4:
            raise InvalidParameter("stored random bits have the wrong length")
        try:
            n = int(text[:4], 16)
            full = int(text[4:], 16)
        except ValueError:
            raise InvalidParameter("stored random bits are not hexadecimal") from None
        if n > width_bits:
            raise InvalidParameter("stored random bits declare more bits than their width")
        m, rest = divmod(full, 1 << (width_bits - n))
        if rest:
            raise InvalidParameter("stored random bits have non-zero padding")
        return cls(source, m=m, n=n)


def _dyadic_ball(m: int, n: int) -> arb:
    """The ball [m 2^-n, (m + 1) 2^-n] (exact midpoint (2m + 1) 2^-(n+1), radius 2^-(n+1))."""
    two = arb(2)
    return arb(arb(fmpz(2 * m + 1)) * two ** (-(n + 1)), two ** (-(n + 1)))


class LazyExponential(LazyReal):
    """E = -scale * ln U ~ Exp with mean ``scale`` (inversion: Pr[E > x] = Pr[U < e^{-x/scale}]
    = e^{-x/scale}), U a :class:`LazyUniform`. ``scale`` is the float the plan gives (tau_1 or
    tau_{2,t}), taken as the exact dyadic rational it is."""

    __slots__ = ("scale", "uniform")

    def __init__(self, scale: float, uniform: LazyUniform):
        self.scale = check_positive("scale", scale)
        if not isinstance(uniform, LazyUniform):
            raise InvalidParameter(f"uniform must be a LazyUniform, got {type(uniform).__name__}")
        self.uniform = uniform

    @classmethod
    def draw(cls, scale: float, source: BitSource) -> "LazyExponential":
        return cls(scale, LazyUniform(source))

    def enclosure(self, prec: int) -> arb:
        u = self.uniform
        u.refine_to(prec)
        while u.prefix()[0] == 0:  # U < 2^-n: ln U unbounded below; read on (Pr 2^-n per round)
            u.refine_to(u.bits_drawn + 64)
        m, n = u.prefix()
        with ctx.workprec(n + GUARD_BITS):
            two = arb(2)
            lo = arb(fmpz(m)) * two ** (-n)
            hi = arb(fmpz(m + 1)) * two ** (-n)
            # -ln is decreasing: E in [-scale ln hi, -scale ln lo]
            a = -(hi.log()) * arb(self.scale)
            b = -(lo.log()) * arb(self.scale)
            return a.union(b)


class ExactConstant(LazyReal):
    """A deterministic real (int, float or dyadic-denominator Fraction; e.g. a fixed lambda in
    tests and benchmarks). ``requested`` records the largest prec asked for."""

    def __init__(self, value: Any):
        exact_arb(value)  # validates
        self._value = value
        self.requested = 0

    def enclosure(self, prec: int) -> arb:
        self.requested = max(self.requested, prec)
        with ctx.workprec(prec + GUARD_BITS):
            return exact_arb(self._value)
