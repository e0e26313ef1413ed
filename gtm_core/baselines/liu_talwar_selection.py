"""Liu and Talwar's private selection with a known threshold and geometric stopping (Liu-Talwar 2019,
Algorithm 1 / Theorem 3.1; OpenDP's ``make_select_private_candidate``), on the testing task.

The candidate mechanism Q evaluates the input mechanism M k times and scores the number of +1s
(S ~ Binomial(k, p) on a Bernoulli mechanism with Pr[M = +1] = p); Q is k eps_1-DP by basic
composition. The selection repeats Q until a score reaches the threshold tau (halt: the candidate
is released) or, after each score below tau, stops with probability gamma (no halt). Liu-Talwar's
Theorem 3.1 makes it 2 k eps_1-DP for every gamma in (0, 1], so at a total eps the design takes
k = floor(eps / (2 eps_1)).

On the constant stream p (the only stream it answers: it repeats one fixed mechanism, it does not
monitor a stream), with q(p) = Pr[Binomial(k, p) >= tau]:

* Pr[halt] = q / (q + gamma (1 - q))                                    (:func:`selection_halt_probability`)
* E[evaluations] = k / (q + gamma (1 - q))                              (:func:`selection_expected_evaluations`)
* Type II at p*: Pr[halt | p*] >= 1 - beta  iff  gamma <= beta q* / ((1 - beta)(1 - q*))
* rejection threshold p_bar(tau): Pr[halt | p_bar] = beta, i.e. q(p_bar) = beta gamma / (1 - beta + beta gamma),
  and q(p) = I_p(tau, k - tau + 1) (regularised incomplete beta) inverts in closed form.

:class:`LiuTalwarSelection` chooses tau (and the largest gamma the Type II bound allows) to maximise
p_bar - an exact calibration, no quadrature.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special, stats

from ..errors import InvalidParameter
from ..validation import check_int, check_real, check_stream
from .common import PeerParameters, PeerResult, check_run_count, check_success_probability


def selection_halt_probability(q: float, gamma: float) -> float:
    """Pr[a candidate is released] = q / (q + gamma (1 - q)) (geometric stopping; module docstring)."""
    if q <= 0:
        return 0.0
    return q / (q + gamma * (1 - q))


def selection_expected_evaluations(q: float, gamma: float, k: int) -> float:
    """E[evaluations of M] = k E[candidates] = k / (q + gamma (1 - q))."""
    return k / (q + gamma * (1 - q))


def type_ii_stop_probability(q_star: float, beta: float) -> float:
    """The largest gamma with Pr[halt | p*] >= 1 - beta: min(1, beta q* / ((1 - beta)(1 - q*)))."""
    if q_star >= 1:
        return 1.0
    return min(1.0, beta * q_star / ((1 - beta) * (1 - q_star)))


def score_tail(p, k: int, tau: int):
    """q(p) = Pr[Binomial(k, p) >= tau]."""
    return stats.binom.sf(tau - 1, k, p)


def rejection_threshold(k: int, tau: int, gamma: float, beta: float) -> float:
    """p_bar with Pr[halt | p_bar] = beta: q(p_bar) = beta gamma / (1 - beta + beta gamma), q(p) = I_p(tau, k - tau + 1)."""
    target = beta * gamma / (1 - beta + beta * gamma)
    return float(special.betaincinv(tau, k - tau + 1, target))


@dataclass(frozen=True)
class LiuTalwarSelection(PeerParameters):
    """Liu-Talwar private selection on the testing task (module docstring): k = floor(eps / (2 eps_1))
    evaluations per candidate, threshold ``tau`` and stop probability ``gamma`` calibrated for
    Pr[halt | p*] >= 1 - beta with the largest p_bar (``tau``/``gamma`` given: used as they are).

    ``stop_rate``: the probability with which the implementation *actually* stops after a failed
    candidate (default ``gamma``; a model of an implementation that stops differently - OpenDP 0.16:
    :func:`opendp_effective_stop_probability`).
    """

    tau: int | None = None
    gamma: float | None = None
    stop_rate: float | None = None
    name: str = field(default="liu-talwar-selection", init=False)

    def __post_init__(self):
        super().__post_init__()
        k = self.k
        if k < 1:
            raise InvalidParameter(f"eps_1 must be <= epsilon / 2 for Liu-Talwar selection (k >= 1 evaluation), "
                                   f"got eps_1={self.eps_1!r}, epsilon={self.epsilon!r}")
        if self.tau is None:
            best = max(range(1, k + 1), key=lambda t: (self._p_bar_for(t), -t))
            object.__setattr__(self, "tau", best)
        check_int("tau", self.tau, minimum=1, maximum=k)
        if self.gamma is None:
            object.__setattr__(self, "gamma", type_ii_stop_probability(float(score_tail(self.p_star, k, self.tau)),
                                                                      self.beta))
        check_real("gamma", self.gamma, low=0, high=1, low_open=True)
        if self.stop_rate is None:
            object.__setattr__(self, "stop_rate", self.gamma)
        check_real("stop_rate", self.stop_rate, low=0, high=1, low_open=True)

    @property
    def k(self) -> int:
        """Evaluations of M per candidate: floor(eps / (2 eps_1)) (2 k eps_1 <= eps, Theorem 3.1)."""
        return int(math.floor(self.epsilon / (2 * self.eps_1) * (1 + 1e-12)))

    def _p_bar_for(self, tau: int) -> float:
        gamma = type_ii_stop_probability(float(score_tail(self.p_star, self.k, tau)), self.beta)
        return rejection_threshold(self.k, tau, gamma, self.beta)

    def q(self, p: float) -> float:
        return float(score_tail(p, self.k, self.tau))

    # claims -----------------------------------------------------------
    def guarantee(self) -> dict:
        return {"privacy": f"pure {2 * self.k * self.eps_1:g}-DP <= {self.epsilon:g} (Liu-Talwar Theorem 3.1: "
                           f"2 x the candidate's k eps_1 = {self.k} x {self.eps_1:g})",
                "epsilon": self.epsilon, "delta": 0.0, "pure": True, "ex_post": False,
                "accuracy_failure_probability": self.beta,
                "requires": "one fixed mechanism repeated (a constant stream); no horizon",
                "source": "Liu-Talwar 2019 Algorithm 1 (known threshold, geometric stopping)"}

    def claimed_p_bar(self, t: int) -> float:
        """The calibrated p_bar (exact: Pr[halt | p_bar] = beta at the design's gamma), every t."""
        return rejection_threshold(self.k, self.tau, self.gamma, self.beta)

    def claimed_halt_threshold(self, t: int) -> float:
        return self.p_star

    def evaluations_bound(self, t: int) -> float:
        """E[evaluations] on the null stream (q = 0): k / gamma (at the design's gamma)."""
        return self.k / self.gamma

    # law --------------------------------------------------------------
    def halt_probability(self, p: float) -> float:
        """Pr[halt] on the constant stream p, at the implementation's stop rate."""
        return selection_halt_probability(self.q(check_success_probability("p", p)), self.stop_rate)

    def false_halt_probability(self, p: float, T: int) -> float:
        """Pr[halt] (no horizon: the same for every T)."""
        return self.halt_probability(p)

    def first_step_halt_probability(self, p: float) -> float:
        return self.halt_probability(p)

    def output_law(self, p: float) -> dict:
        """The exact law of the released output: ``None`` (stopped) or the released score s >= tau."""
        q = self.q(p)
        norm = q + self.stop_rate * (1 - q)
        law = {None: self.stop_rate * (1 - q) / norm}
        for s in range(self.tau, self.k + 1):
            law[s] = float(stats.binom.pmf(s, self.k, p)) / norm
        return law

    def sample_outputs(self, p: float, n: int, rng: np.random.Generator) -> list:
        """n independent runs of the selection on the constant stream p: each the released score or None."""
        p = check_success_probability("p", p)
        n = check_run_count(n)
        out = []
        for _ in range(n):
            while True:
                s = int(rng.binomial(self.k, p))
                if s >= self.tau:
                    out.append(s)
                    break
                if rng.random() < self.stop_rate:
                    out.append(None)
                    break
        return out

    def simulate(self, p, n: int, rng: np.random.Generator) -> PeerResult:
        """n runs on the stream p, of which only p[0] is used (the selection repeats one mechanism);
        halt = 1 when a candidate is released, 0 otherwise; evaluations = k x candidates tried."""
        p = check_stream("p", p)
        n = check_run_count(n)
        q = self.q(float(p[0]))
        end = q + self.stop_rate * (1 - q)
        candidates = rng.geometric(end, n)
        halted = rng.random(n) * end < q
        return PeerResult(halt=halted.astype(np.int64), evaluations=(candidates * self.k).astype(float), T=p.size)


def opendp_effective_stop_probability(stop_probability: float) -> float:
    """The probability with which OpenDP 0.16's ``make_select_private_candidate(stop_probability=g)``
    actually stops after a failed candidate: it draws the candidate count as 1 + G with
    Pr[G = n] = e^(-x n)(1 - e^(-x)) at x = -1 / ln(1 - g), so it stops with 1 - e^(-x) =
    1 - e^(1 / ln(1 - g)) (benchmarks/results/opendp_select_stop_probability_reproducer.py). The
    map is its own inverse: passing ``opendp_effective_stop_probability(g)`` makes OpenDP stop with g."""
    g = check_real("stop_probability", stop_probability, low=0, high=1, low_open=True, high_open=True)
    return -math.expm1(1.0 / math.log1p(-g))


@dataclass(frozen=True)
class OpenDPSelection(LiuTalwarSelection):
    """OpenDP 0.16's ``make_select_private_candidate`` called with the design's ``gamma`` as its
    ``stop_probability``: the same selection, stopping at :func:`opendp_effective_stop_probability`
    (gamma) instead of gamma (its law; the measurement itself: ``audits/integrations/opendp_selection.py``)."""

    name: str = field(default="opendp-select-private-candidate", init=False)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "stop_rate", opendp_effective_stop_probability(self.gamma)
                           if self.gamma < 1 else 1.0)

    def guarantee(self) -> dict:
        g = super().guarantee()
        g["source"] = ("OpenDP 0.16 make_select_private_candidate(stop_probability=gamma): stops with "
                       f"{self.stop_rate:.4g} instead of gamma = {self.gamma:.4g}")
        return g

    def evaluations_bound(self, t: int) -> float:
        """E[evaluations] on the null stream at OpenDP's actual stopping rate: k / stop_rate."""
        return self.k / self.stop_rate
