"""What the peer implementations share: the result record, argument checks, a Laplace expectation by
quadrature and the anytime failure allocation beta_t."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate

from .. import formulas as F
from ..validation import check_nonnegative_int, check_open_unit, check_positive, check_probability


@dataclass(frozen=True)
class PeerParameters:
    """The parameters every peer takes: target privacy epsilon, the input mechanisms' eps_1, the halting
    target p* and the failure probability beta (validated here; each peer adds its own)."""

    epsilon: float
    eps_1: float
    p_star: float
    beta: float

    def __post_init__(self):
        check_positive("epsilon", self.epsilon)
        check_positive("eps_1", self.eps_1)
        check_open_unit("p_star", self.p_star)
        check_open_unit("beta", self.beta)


@dataclass(frozen=True)
class PeerResult:
    """halt[i] in 1..T (0 = never halted); evaluations[i] = total evaluations of M_t by run i."""

    halt: np.ndarray
    evaluations: np.ndarray
    T: int


def check_run_count(n) -> int:
    """The number of runs n: a non-negative integer."""
    return check_nonnegative_int("n", n)


def check_success_probability(name, p) -> float:
    """A success probability in [0, 1] (as a float)."""
    return check_probability(name, p)


def laplace_expectation(g, scale: float, center: float = 0.0, points=(), width: float = 40.0) -> float:
    """E[g(X)], X ~ Lap(center, scale), by adaptive quadrature split at the kink and at ``points``."""
    lo, hi = center - width * scale, center + width * scale
    cuts = sorted({lo, hi, center, *[x for x in points if lo < x < hi]})
    dens = lambda x: math.exp(-abs(x - center) / scale) / (2 * scale)  # noqa: E731
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:]):
        val, _ = integrate.quad(lambda x: g(x) * dens(x), a, b, limit=200, epsabs=1e-13, epsrel=1e-10)
        total += val
    return total


@functools.lru_cache(maxsize=100_000)
def step_failure_probability_cached(t: int, beta: float) -> float:
    """Definition 7(2): beta_t = omega_t beta (the anytime allocation GTM uses, reused for the peers)."""
    return float(F.step_failure_probability(t, beta))
