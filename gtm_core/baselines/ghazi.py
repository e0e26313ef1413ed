"""Ghazi et al.'s random dropping used online for testing (Section 9.4, Algorithm 5, Theorem 52)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import formulas as F
from .dropping import DroppingTester


@dataclass(frozen=True)
class GhaziRandomDropping(DroppingTester):
    """Ghazi et al.'s random dropping (Section 9.4, Algorithm 5, Theorem 52) used online for testing.

    theta_G = eps' = eps - 2 eps1 > 0; k ~ Geo(e^{-theta_G}) (Pr[k >= j] = e^{-theta_G j}); every evaluation
    passes the gate y ~ Ber(e^{-eps1 k}); each M_t is repeated T_1 = ceil((1/p*)(2/beta)^{eps1/theta_G} ln(2/beta))
    times (Theorem 52 with alpha = p*); the data-independent selection rule is "the first (+1, t)", so the run
    halts at the first step with a passing +1. Ex-post (2 eps1 + eps') = eps (Theorem 52(1)).

    Accuracy: Theorem 52(2) gives halting when p_t >= p* w.p. 1 - beta. Theorem 52 states no rejection
    threshold; ``claimed_p_bar`` is derived here by a union bound on the expected number of passing +1
    outputs (E[count at step t] = T_1 p E[e^{-eps1 k}] <= beta_t). Corollary 53 bounds what any claim can be.
    """

    name: str = field(default="ghazi", init=False)
    requirement = "Ghazi et al. need epsilon > 2 eps_1 (theta_G = eps - 2 eps_1 > 0)"

    @property
    def theta_G(self) -> float:
        return self.epsilon - 2 * self.eps_1

    @property
    def calls(self) -> int:
        """T_i = ceil((1/alpha) (2/beta)^{eps_i/eps'} ln(2/beta)) with alpha = p* (Theorem 52)."""
        b = self.beta
        return int(math.ceil((2 / b) ** (self.eps_1 / self.theta_G) * math.log(2 / b) / self.p_star))

    def sample_pass_probability(self, n, rng):
        k = np.floor(rng.exponential(1.0, n) / self.theta_G)
        return np.exp(-self.eps_1 * k)

    @property
    def mean_pass_probability(self) -> float:
        """E[e^{-eps1 k}] = (1 - e^{-theta_G}) / (1 - e^{-theta_G - eps1})."""
        return -math.expm1(-self.theta_G) / -math.expm1(-self.theta_G - self.eps_1)

    def _pass_expectation(self, g) -> float:
        q = math.exp(-self.theta_G)
        kmax = int(math.ceil(60 / self.theta_G)) + 1
        k = np.arange(kmax)
        w = (1 - q) * q**k
        return float(np.sum(w * g(np.exp(-self.eps_1 * k))))

    def guarantee(self) -> dict:
        return {"privacy": f"ex-post (2 eps_1 + eps') = {self.epsilon:g} (Theorem 52(1))", "epsilon": self.epsilon,
                "delta": 0.0, "pure": True, "ex_post": True,
                "accuracy_failure_probability": 2 * self.beta,
                "requires": "epsilon > 2 eps_1", "source": "Theorem 52 / Corollary 53 (p_bar derived by union bound)"}

    def claimed_p_bar(self, t: int) -> float:
        """Derived (union bound): p_bar_t = beta_t / (T_1 E[e^{-eps1 k}])."""
        beta_t = float(F.step_failure_probability(t, self.beta))
        return beta_t / (self.calls * self.mean_pass_probability)

    def corollary53_ceiling(self, T: int, G: int = 1) -> float:
        """Corollary 53: p_bar <= 2 beta (1 + G p*) / ((T - G)(1 - e^{-theta_G})) (G good mechanisms)."""
        return 2 * self.beta * (1 + G * self.p_star) / ((T - G) * -math.expm1(-self.theta_G))
