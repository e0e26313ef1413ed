"""Result types of the exact engine: a probability with its error bound, and the distribution
of all 2T transcripts of a run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import mpmath
from flint import arb

from .arb import bits_for_dps, radius_mpf, to_mpf, working_precision


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

    ``halt[t-1]`` = Pr[halt exactly at t]; ``cont[t-1]`` = Pr[continue through t]; under an enforced
    evaluation budget ``refused[t-1]`` = Pr[step t refused: the run ends failed at t] (empty without one).
    The distribution of the run is (halt[0..T-1], refused[0..T-1], cont[T-1]), which sums to 1.
    """

    T: int
    halt: tuple[Probability, ...]
    cont: tuple[Probability, ...]
    dps: int
    certified: bool
    nodes: int
    seconds: float
    refused: tuple[Probability, ...] = ()

    @property
    def budgeted(self) -> bool:
        """True when the law is that of a run that refuses over-budget steps."""
        return bool(self.refused)

    def outcomes(self) -> dict[int, Probability]:
        """Every outcome of the run by the target protocol's code (docs/protocol.md): t = halted at t,
        0 = continued through T, -t = refused at t (only under an enforced budget)."""
        out = {0: self.cont[-1]}
        out.update({t: h for t, h in enumerate(self.halt, start=1)})
        out.update({-t: r for t, r in enumerate(self.refused, start=1)})
        return out

    def total(self) -> Probability:
        balls = [h.ball for h in self.halt] + [r.ball for r in self.refused] + [self.cont[-1].ball]
        with working_precision(bits_for_dps(self.dps) + 20):
            tot = sum(balls[1:], balls[0])
        return probability_from_ball(tot, self.dps)

    def run_distribution(self) -> list[mpmath.mpf]:
        """[Pr[never halts within T], Pr[halt at 1], ..., Pr[halt at T]] (simulator layout)."""
        return [self.cont[-1].value] + [h.value for h in self.halt]

    def min_significant_digits(self) -> float:
        return min(p.significant_digits() for p in self.halt + self.cont)

    def to_dict(self) -> dict:
        d = {
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
        if self.refused:
            d["refused"] = [mpmath.nstr(r.value, self.dps) for r in self.refused]
            d["refused_error"] = [mpmath.nstr(r.error, 3) for r in self.refused]
        return d


def probability_from_ball(ball: arb, dps: int) -> Probability:
    """value: the ball's midpoint to dps+8 digits; error: an upper bound on |true - value|
    (the radius printed to 5 digits, rounded up, plus the value's own rounding)."""
    value = to_mpf(ball, dps)
    with mpmath.workdps(dps + 10):
        error = radius_mpf(ball) * (1 + mpmath.mpf(2) ** -10) + abs(value) * mpmath.mpf(10) ** -(dps + 7)
    return Probability(value=value, error=error, ball=ball)
