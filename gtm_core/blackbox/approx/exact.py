"""Exact output law of Algorithm 2 on small datasets and its exact hockey-stick delta(eps), in arb.

P_S(y) = P(h <= 0) 1{y = f(empty)} + sum_{j=1..n} P(h = j) A6_j(y) + P(h > n) A6_{n+1}(y), with
h = floor(|S| + Z - R - K), Z ~ TLap(1, eps_0, delta_0) (CDF as a ball, R from eps_0 and delta_0 in arb),
A6_j Algorithm 6's exact law (:func:`.highdim.algorithm6_law`, arb) on depth_j^f(S, .) over Y~ (for
j > n every depth is 0). Outputs are points of CH(Y~) (keys: tuples of Fractions).

delta(eps) = sum_y max(0, P_S(y) - e^eps P_S'(y)); "delta(eps) <= delta" is certified only when the
ball's upper end is <= delta (never a float comparison).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from flint import arb

from ...errors import InvalidParameter
from ..exact import at_least_precision, neighbours_remove_one
from ..mechanisms import tlap_cdf_ball
from .evaluator import ApproxEvaluator

PREC_BITS = 128

__all__ = ["ApproxLaw", "DeltaPair", "DeltaSearch", "approx_output_law", "hockey_stick_points", "pair_delta",
           "search_delta", "record_json", "ComponentSearch", "search_algorithm5_delta"]


@dataclass(frozen=True)
class ApproxLaw:
    """{point: arb} and the cutoff law ((label, arb), ...)."""

    dataset: tuple
    probabilities: dict
    h_law: tuple

    def total(self) -> arb:
        with at_least_precision(PREC_BITS):
            return sum(self.probabilities.values(), arb(0))


def approx_output_law(ev: ApproxEvaluator, S: Sequence) -> ApproxLaw:
    """The exact law of Algorithm 2 (as configured in ``ev``) on dataset S."""
    with at_least_precision(PREC_BITS):
        p = ev.params
        n = len(S)
        e0, d0 = arb(p.epsilon) / 2, arb(p.delta) / 2
        R = (1 + (e0.exp() - 1) / (2 * d0)).log() / e0
        c = n - R - p.K

        def F(z):
            return tlap_cdf_ball(z, e0, R)

        out: dict = {}

        def add(law, w):
            for y, py in law.items():
                out[y] = out.get(y, arb(0)) + w * py

        low = F(1 - c)
        hl = [("h<=0", low)]
        if not low.upper() <= 0:
            add({ev.empty_point(): arb(1)}, low)
        for j in range(1, n + 1):
            pj = F(j + 1 - c) - F(j - c)
            hl.append((j, pj))
            if pj.upper() <= 0:
                continue
            add(ev.law_given_cutoff(list(S), j, exact=True), pj)
        high = 1 - F(n + 1 - c)
        hl.append(("h>n", high))
        if not high.upper() <= 0:
            add(ev.law_given_cutoff(list(S), n + 1, exact=True), high)
        return ApproxLaw(tuple(S), out, tuple(hl))


def hockey_stick_points(P: dict, Qd: dict, eps: float) -> arb:
    """delta(eps) = sum_y max(0, P(y) - e^eps Q(y)) over the union of the supports (ball)."""
    with at_least_precision(PREC_BITS):
        E = arb(eps).exp()
        total = arb(0)
        for y in set(P) | set(Qd):
            x = P.get(y, arb(0)) - E * Qd.get(y, arb(0))
            total += x if x >= 0 else arb(0) if x <= 0 else x.union(arb(0)).nonnegative_part()
        return total


@dataclass(frozen=True)
class DeltaPair:
    """delta(eps) of one neighbouring pair, the larger of the two directions."""

    dataset: tuple
    neighbour: tuple
    eps: float
    delta: arb

    @property
    def upper(self) -> float:
        return float(self.delta.upper())

    @property
    def lower(self) -> float:
        return float(self.delta.lower())


def pair_delta(ev: ApproxEvaluator, S: Sequence, T: Sequence, eps: float) -> DeltaPair:
    """max(delta_{S||T}(eps), delta_{T||S}(eps)) from the two exact laws."""
    a, b = approx_output_law(ev, S).probabilities, approx_output_law(ev, T).probabilities
    x, y = hockey_stick_points(a, b, eps), hockey_stick_points(b, a, eps)
    return DeltaPair(tuple(S), tuple(T), float(eps), x if x.mid() >= y.mid() else y)


@dataclass(frozen=True)
class DeltaSearch:
    """The worst pair over the searched datasets (by the ball midpoint) and the counts."""

    best: DeltaPair
    pairs: int
    datasets: int

    def to_dict(self) -> dict:
        b = self.best
        return {"delta_lower": b.lower, "delta_upper": b.upper, "eps": b.eps, "pairs": self.pairs,
                "datasets": self.datasets, "dataset": [record_json(v) for v in b.dataset],
                "neighbour": [record_json(v) for v in b.neighbour]}


def record_json(v):
    """A record as JSON: a number (d = 1) or a list of numbers (a point, d >= 2)."""
    return [float(c) for c in v] if isinstance(v, (tuple, list)) else float(v)


def search_delta(ev: ApproxEvaluator, datasets: Iterable[Sequence], eps: float) -> DeltaSearch:
    """Exact delta(eps) of every (S, S minus one record) pair over the datasets; the worst one."""
    best, pairs, count = None, 0, 0
    laws: dict = {}

    def law(D):
        if D not in laws:
            laws[D] = approx_output_law(ev, D).probabilities
        return laws[D]

    for S in datasets:
        count += 1
        for T in neighbours_remove_one(S):
            if not T:
                continue
            a, b = law(tuple(S)), law(tuple(T))
            x, y = hockey_stick_points(a, b, eps), hockey_stick_points(b, a, eps)
            pl = DeltaPair(tuple(S), tuple(T), float(eps), x if x.mid() >= y.mid() else y)
            pairs += 1
            if best is None or pl.delta.mid() > best.delta.mid():
                best = pl
    if best is None:
        raise InvalidParameter("the delta search needs a dataset with at least two records")
    return DeltaSearch(best, pairs, count)


@dataclass(frozen=True)
class ComponentSearch:
    """Algorithm 5 alone on neighbouring quality vectors Q, Q + s (s in {-1, 0, 1}^n: every sensitivity-1
    change): the worst exact delta(eps) and its pattern."""

    delta: arb
    pattern: tuple
    pairs: int

    def to_dict(self) -> dict:
        return {"delta_lower": float(self.delta.lower()), "delta_upper": float(self.delta.upper()),
                "pattern": list(self.pattern), "pairs": self.pairs}


def search_algorithm5_delta(base: Sequence[int], eps: float, beta: float, delta: float, Delta: float, *,
                            variant=None) -> ComponentSearch:
    """Exact delta(eps) of Algorithm 5 (its own (eps, delta) claim, Theorem G.2) over all 3^n neighbours of base."""
    import itertools

    from .onedim import Algorithm5Variant, algorithm5_law

    variant = variant if variant is not None else Algorithm5Variant()
    with at_least_precision(PREC_BITS):
        a = dict(enumerate(algorithm5_law(list(base), eps, beta, delta, Delta, exact=True,
                                          variant=variant).probabilities))
        best, arg, pairs = arb(0), (), 0
        for s in itertools.product((-1, 0, 1), repeat=len(base)):
            b = dict(enumerate(algorithm5_law([x + y for x, y in zip(base, s)], eps, beta, delta, Delta, exact=True,
                                              variant=variant).probabilities))
            for x, y in ((a, b), (b, a)):
                h = hockey_stick_points(x, y, eps)
                pairs += 1
                if h.mid() > best.mid():
                    best, arg = h, s
        return ComponentSearch(best, arg, pairs)
