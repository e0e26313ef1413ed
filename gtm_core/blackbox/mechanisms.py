"""The two random ingredients of Algorithm 4: the truncated Laplace TLap(s, eps, delta) and the
exponential mechanism (Theorem A.2), each as a sampler (float64, explicit ``rng``) and as an exact
law (python-flint ``arb`` balls) for :mod:`gtm_core.blackbox.exact`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from flint import arb

__all__ = [
    "tlap_cdf",
    "tlap_cdf_ball",
    "laplace_cdf_ball",
    "sample_tlap",
    "exponential_mechanism_probabilities",
    "exponential_mechanism_ball",
]


def tlap_cdf(z: float, eps: float, R: float, s: float = 1.0) -> float:
    """Definition A.3: P(Z <= z) for Z ~ TLap(s, eps, delta) with support [-R, R] (float64)."""
    if z <= -R:
        return 0.0
    if z >= R:
        return 1.0
    a = eps / s
    den = -2 * math.expm1(-a * R)
    if z <= 0:
        return (math.exp(a * z) - math.exp(-a * R)) / den
    return 1.0 - (math.exp(-a * z) - math.exp(-a * R)) / den


def tlap_cdf_ball(z: arb, eps: arb, R: arb, s: arb = arb(1)) -> arb:
    """The same CDF as a rigorous ball; z must be decidably on one side of -R, 0 and R (else the
    ball covers both branches' union)."""
    a = eps / s
    den = 2 * (1 - (-a * R).exp())
    if z <= -R:
        return arb(0)
    if z >= R:
        return arb(1)
    left = lambda t: ((a * t).exp() - (-a * R).exp()) / den  # noqa: E731
    right = lambda t: 1 - ((-a * t).exp() - (-a * R).exp()) / den  # noqa: E731
    if z <= 0:
        return left(z)
    if z >= 0:
        return right(z)
    return left(z).union(right(z))


def laplace_cdf_ball(z: arb, scale: arb) -> arb:
    """P(Z <= z) for an untruncated Laplace(0, scale) (a broken variant's size noise)."""
    if z <= 0:
        return (z / scale).exp() / 2
    if z >= 0:
        return 1 - (-z / scale).exp() / 2
    return ((z / scale).exp() / 2).union(1 - (-z / scale).exp() / 2)


def sample_tlap(rng: np.random.Generator, eps: float, R: float, size=None, s: float = 1.0):
    """Z ~ TLap(s, eps, delta) by inverting the CDF of |Z| (truncated exponential) and a fair sign."""
    a = eps / s
    u = rng.random(size)
    # |Z| has density proportional to e^{-a t} on [0, R]: t = -log(1 - u (1 - e^{-aR})) / a
    mag = -np.log1p(u * np.expm1(-a * R)) / a
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return sign * np.minimum(mag, R)


def exponential_mechanism_probabilities(quality: Sequence[float], eps: float, sensitivity: float = 1.0) -> np.ndarray:
    """Theorem A.2 (McSherry-Talwar): P(y) proportional to exp(eps Q(y) / (2 Delta_Q)) (float64, stable)."""
    q = np.asarray(quality, dtype=float)
    w = np.exp(eps * (q - q.max()) / (2 * sensitivity))
    return w / w.sum()


def exponential_mechanism_ball(quality: Sequence[int], eps: arb, sensitivity: arb = arb(1)) -> list[arb]:
    """The same probabilities as rigorous balls."""
    qmax = max(quality)
    w = [(eps * (int(q) - qmax) / (2 * sensitivity)).exp() for q in quality]
    total = sum(w, arb(0))
    return [x / total for x in w]
