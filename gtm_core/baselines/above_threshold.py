"""Classic AboveThreshold (Dwork-Roth Algorithm 1, Theorem 3.23) on the Laplace-mechanism instance."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..numeric import laplace_cdf
from ..validation import check_positive_int, check_stream
from .common import PeerParameters, PeerResult, check_run_count, check_success_probability, laplace_expectation


# ---------------------------------------------------------------------------
# Classic AboveThreshold (Dwork-Roth Algorithm 1, Theorem 3.23) on the Laplace-mechanism instance
# ---------------------------------------------------------------------------


def laplace_quantile(p, eps_1):
    """Corollary 30 proof: q(p) with p = Pr[f + Lap(1/eps1) >= tau_L] exactly when f = tau_L + q(p)."""
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(p <= 0.5, np.log(2 * p), -np.log(2 * (1 - p))) / eps_1


def laplace_probability(q, eps_1):
    """Inverse of :func:`laplace_quantile`: p(q) = e^{eps1 q}/2 (q <= 0), 1 - e^{-eps1 q}/2 (q > 0)."""
    return laplace_cdf(np.asarray(q, dtype=float), rate=eps_1)


@dataclass(frozen=True)
class AboveThreshold(PeerParameters):
    """Classic AboveThreshold (Dwork-Roth Algorithm 1 / Theorem 3.23; Section 9.1) as an oracle tester.

    On the Laplace-mechanism instance of Corollary 30 (M_t = sgn(f_t + Lap(1/eps1) - tau_L)), the value
    f_t = tau_L + q(p_t) is a sensitivity-1 query; AboveThreshold reads f_t directly (no evaluations
    of M_t: it is an oracle baseline, not a generalized tester): rho ~ Lap(2/eps), nu_t ~ Lap(4/eps),
    halt iff f_t + nu_t >= tau + rho with tau = q(p*) - alpha, alpha = 8 (ln T + ln(2/beta))/eps, so that
    Theorem 3.23's (alpha, beta)-accuracy gives halting at p >= p* and continuation at q(p) <= q(p*) - 2 alpha.
    Pure eps-DP with respect to |f - f'| <= 1 (the neighbouring relation of the instance).
    """

    T: int
    name: str = field(default="above-threshold", init=False)

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("T", self.T)

    @property
    def alpha(self) -> float:
        return 8 * (math.log(self.T) + math.log(2 / self.beta)) / self.epsilon

    @property
    def threshold(self) -> float:
        return float(laplace_quantile(self.p_star, self.eps_1)) - self.alpha

    def guarantee(self) -> dict:
        return {"privacy": f"pure {self.epsilon:g}-DP on sensitivity-1 values (oracle: reads f_t)",
                "epsilon": self.epsilon, "delta": 0.0, "pure": True, "ex_post": False, "oracle": True,
                "accuracy_failure_probability": self.beta,
                "requires": "oracle access to f_t (Laplace-mechanism instance)",
                "source": "Dwork-Roth Theorem 3.23 (Section 9.1)"}

    def claimed_p_bar(self, t: int) -> float:
        """q(p_bar) = q(p*) - 2 alpha."""
        return float(laplace_probability(float(laplace_quantile(self.p_star, self.eps_1)) - 2 * self.alpha, self.eps_1))

    def claimed_halt_threshold(self, t: int) -> float:
        return self.p_star

    def evaluations_bound(self, t: int) -> float:
        return 0.0

    def simulate(self, p, n: int, rng: np.random.Generator) -> PeerResult:
        p = check_stream("p", p)
        n = check_run_count(n)
        f = laplace_quantile(p, self.eps_1)
        halt = np.zeros(n, dtype=np.int64)
        bar = self.threshold + rng.laplace(0.0, 2 / self.epsilon, n)
        idx = np.arange(n)
        for t, ft in enumerate(f, start=1):
            if idx.size == 0:
                break
            stop = ft + rng.laplace(0.0, 4 / self.epsilon, idx.size) >= bar[idx]
            halt[idx[stop]] = t
            idx = idx[~stop]
        return PeerResult(halt=halt, evaluations=np.zeros(n), T=p.size)

    def false_halt_probability(self, p: float, T: int) -> float:
        """1 - E_rho[F_nu(tau + rho - f)^T]."""
        p = check_success_probability("p", p)
        if p == 0:
            return 0.0
        f = float(laplace_quantile(p, self.eps_1))
        b_nu = 4 / self.epsilon
        g = lambda r: float(laplace_cdf(np.asarray(self.threshold + r - f), scale=b_nu)) ** T  # noqa: E731
        return 1 - laplace_expectation(g, 2 / self.epsilon, points=(f - self.threshold,))

    def first_step_halt_probability(self, p: float) -> float:
        return self.false_halt_probability(p, 1)
