"""Exact output law of Algorithm 4 on small datasets, and the exact privacy loss, in ball arithmetic.

For a finite Y~ the output of Algorithm 4 is a finite mixture:

    P_S(y) = u eta / M
           + (1 - u eta) [ P(h <= 0) 1{y = f(empty)}  +  sum_{j=1..n} P(h = j) EM_j(y)  +  P(h > n) / M ]

with u = 1 (the Bernoulli(eta) branch; 0 in a broken variant), h = floor(|S| + Z - R - K),
P(h = j) = F(j + 1 - c) - F(j - c), c = |S| - R - K, F the CDF of Z (TLap(1, eps_0, delta_0),
Definition A.3; a point mass or an untruncated Laplace in broken variants), EM_j the exponential
mechanism on depth_j^f(S, .) at eps_0 (for h > n every depth is 0 and EM is uniform).
Every probability is a python-flint ``arb`` ball (128 bits); the privacy loss
max_y |ln P_S(y) - ln P_S'(y)| is a ball too, and "loss <= eps" is *certified* only when the
ball's upper end is <= eps (never a float comparison).

:func:`hockey_stick` gives delta(eps) = sum_y max(0, P(y) - e^eps P'(y)) for the approximate-DP view.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
from flint import arb, ctx

from ..errors import InvalidParameter
from .evaluator import BlackBoxEvaluator
from .mechanisms import exponential_mechanism_ball, laplace_cdf_ball, tlap_cdf_ball

PREC_BITS = 128

__all__ = ["OutputLaw", "PairLoss", "LossSearch", "output_law", "pair_loss", "hockey_stick", "search_loss",
           "neighbours_remove_one", "multisets", "PREC_BITS",
           "at_least_precision"]


@contextlib.contextmanager
def at_least_precision(bits: int):
    """Raise python-flint's working precision to at least ``bits`` inside the block (never lower it)."""
    old = ctx.prec
    ctx.prec = max(old, bits)
    try:
        yield
    finally:
        ctx.prec = old


@dataclass(frozen=True)
class OutputLaw:
    """P_S(y) for every y in Y~ (arb balls) and the law of the cutoff h."""

    dataset: tuple
    probabilities: tuple  # arb, one per point of Y~
    h_law: tuple  # ((label, arb), ...): "h<=0", 1..n, "h>n"

    def floats(self) -> np.ndarray:
        return np.array([float(p.mid()) for p in self.probabilities])

    def total(self) -> arb:
        with at_least_precision(PREC_BITS):
            return sum(self.probabilities, arb(0))


def _exact_radius(ev: BlackBoxEvaluator) -> arb:
    p = ev.params
    e0 = arb(p.epsilon) / 2
    eta = arb(p.beta) / 2
    cand = eta * (e0.exp() - 1) / p.M
    quarter = arb(1) / 4
    delta0 = quarter if cand >= quarter else cand if cand <= quarter else quarter.union(cand)
    return (1 + (e0.exp() - 1) / (2 * delta0)).log() / e0


def _cdf(ev: BlackBoxEvaluator, R: arb) -> Callable[[arb], arb]:
    p = ev.params
    e0 = arb(p.epsilon) / 2
    if p.size_noise == "tlap":
        return lambda z: tlap_cdf_ball(z, e0, R)
    if p.size_noise == "laplace":
        return lambda z: laplace_cdf_ball(z, 1 / e0)
    return lambda z: arb(0) if z < 0 else arb(1) if z >= 0 else arb("0 +/- 1")


def output_law(ev: BlackBoxEvaluator, S: Sequence) -> OutputLaw:
    """The exact law of Algorithm 4 (as configured in ``ev.params``) on dataset S."""
    with at_least_precision(PREC_BITS):
        p = ev.params
        n = len(S)
        R = _exact_radius(ev)
        c = n - R - p.K
        F = _cdf(ev, R)
        low = F(1 - c)  # P(h <= 0) = P(Z < 1 - c)
        high = 1 - F(n + 1 - c)  # P(h >= n + 1)
        M = p.M
        probs = [arb(0)] * M
        law = [("h<=0", low)]
        if not (low.upper() <= 0 and low.lower() >= 0):
            i0 = ev.empty_output()
            probs[i0] += low
        for j in range(1, n + 1):
            pj = F(j + 1 - c) - F(j - c)
            law.append((j, pj))
            if pj.upper() <= 0:
                continue
            em = exponential_mechanism_ball(ev.depths(list(S), j), arb(p.em_eps))
            probs = [a + pj * b for a, b in zip(probs, em)]
        law.append(("h>n", high))
        probs = [a + high / M for a in probs]
        if p.uniform_branch:
            eta = arb(p.beta) / 2
            probs = [eta / M + (1 - eta) * a for a in probs]
        return OutputLaw(tuple(S), tuple(probs), tuple(law))


@dataclass(frozen=True)
class PairLoss:
    """The exact privacy loss of one neighbouring pair: max_y |ln P_S(y) - ln P_S'(y)|."""

    dataset: tuple
    neighbour: tuple
    loss: arb
    witness_index: int
    probability: arb
    probability_neighbour: arb

    @property
    def loss_upper(self) -> float:
        return float(self.loss.upper())

    @property
    def loss_lower(self) -> float:
        return float(self.loss.lower())

    def certified_at_most(self, epsilon: float) -> bool:
        return bool(self.loss.upper() <= arb(epsilon))

    def certified_above(self, epsilon: float) -> bool:
        return bool(self.loss.lower() > arb(epsilon))


def pair_loss(ev: BlackBoxEvaluator, S: Sequence, S2: Sequence, *, min_probability: float = 0.0) -> PairLoss:
    """Exact loss between S and S2, over outputs whose probability (either side) is >= min_probability."""
    with at_least_precision(PREC_BITS):
        a, b = output_law(ev, S), output_law(ev, S2)
        best, arg = None, -1
        for i, (pa, pb) in enumerate(zip(a.probabilities, b.probabilities)):
            if max(float(pa.upper()), float(pb.upper())) < min_probability:
                continue
            if not (pa > 0 and pb > 0):
                lo = arb("inf") if (pa > 0) != (pb > 0) else arb(0)
                if best is None or lo.lower() > best.lower():
                    best, arg = lo, i
                continue
            loss = abs(pa.log() - pb.log())
            if best is None or loss.mid() > best.mid():
                best, arg = loss, i
        return PairLoss(tuple(S), tuple(S2), best, arg, a.probabilities[arg], b.probabilities[arg])


def hockey_stick(P: Sequence[arb], Q: Sequence[arb], eps: float) -> arb:
    """delta(eps) = sum_y max(0, P(y) - e^eps Q(y)) (ball)."""
    with at_least_precision(PREC_BITS):
        E = arb(eps).exp()
        total = arb(0)
        for p, q in zip(P, Q):
            x = p - E * q
            total += x if x >= 0 else arb(0) if x <= 0 else x.union(arb(0)).nonnegative_part()
        return total


def neighbours_remove_one(S: Sequence) -> list[tuple]:
    """The distinct datasets S minus one record (add/remove neighbours, one direction)."""
    out, seen = [], set()
    for i in range(len(S)):
        T = tuple(S[:i]) + tuple(S[i + 1:])
        if T not in seen:
            seen.add(T)
            out.append(T)
    return out


@dataclass(frozen=True)
class LossSearch:
    """Maximum exact loss over the searched pairs, and how many pairs were examined."""

    best: PairLoss
    pairs: int
    datasets: int

    def to_dict(self) -> dict:
        b = self.best
        return {"max_loss_lower": b.loss_lower, "max_loss_upper": b.loss_upper, "pairs": self.pairs,
                "datasets": self.datasets, "dataset": list(b.dataset), "neighbour": list(b.neighbour),
                "witness_index": b.witness_index, "probability": float(b.probability.mid()),
                "probability_neighbour": float(b.probability_neighbour.mid())}


def search_loss(ev: BlackBoxEvaluator, datasets: Iterable[Sequence], *, min_probability: float = 0.0,
                deadline: float | None = None) -> LossSearch:
    """Exact loss of every (S, S minus one record) pair over the given datasets; the worst one.

    ``deadline`` (time.monotonic() value) stops the search early; at least one pair is examined.
    """
    import time

    best, pairs, count = None, 0, 0
    for S in datasets:
        count += 1
        for T in neighbours_remove_one(S):
            pl = pair_loss(ev, S, T, min_probability=min_probability)
            pairs += 1
            if best is None or pl.loss.mid() > best.loss.mid():
                best = pl
        if deadline is not None and time.monotonic() > deadline and best is not None:
            break
    if best is None:
        raise InvalidParameter("the loss search needs at least one dataset with a record")
    return LossSearch(best, pairs, count)


def multisets(universe: Sequence, sizes: Iterable[int]) -> Iterable[tuple]:
    """Every multiset of records from ``universe`` with the given sizes (sorted tuples)."""
    for k in sizes:
        yield from itertools.combinations_with_replacement(sorted(universe), k)
