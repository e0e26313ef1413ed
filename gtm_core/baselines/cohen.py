"""Cohen et al.'s Test procedure used for testing (Section 9.3, Algorithm 4, Proposition 48)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from scipy import integrate

from .. import formulas as F
from .dropping import DroppingTester


@dataclass(frozen=True)
class CohenTest(DroppingTester):
    """Cohen et al.'s Test procedure used for testing (Section 9.3, Algorithm 4, Proposition 48).

    theta_C = eps/eps1 - 2 > 0 (requires eps > 2 eps1); p_dagger with Pr[p_dagger <= x] = x^{theta_C};
    N_t = ceil(ln(2/beta) / ((beta/2)^{1/theta_C} p*)) calls per step, each returns M_t(X) w.p. p_dagger and
    -1 otherwise; halt on the first +1. Pure eps-DP (Theorem 47 with c = 1). Accuracy holds w.p. 1 - 2 beta.
    """

    name: str = field(default="cohen", init=False)
    requirement = "Cohen et al. need epsilon > 2 eps_1 (Proposition 48)"

    @property
    def theta_C(self) -> float:
        return self.epsilon / self.eps_1 - 2

    @property
    def calls(self) -> int:
        """N_t = ceil(ln(2/beta) / ((beta/2)^{1/theta_C} p*)) (constant in t)."""
        return int(math.ceil(math.log(2 / self.beta) / ((self.beta / 2) ** (1 / self.theta_C) * self.p_star)))

    def sample_pass_probability(self, n, rng):
        return rng.random(n) ** (1 / self.theta_C)  # inverse CDF of x^theta

    def _pass_expectation(self, g) -> float:
        th = self.theta_C
        # substitute x = u^{1/theta}: E[g(p_dagger)] = int_0^1 g(u^{1/theta}) du; split where g varies fast
        val, _ = integrate.quad(lambda u: float(g(u ** (1 / th))), 0.0, 1.0, limit=400,
                                points=[1e-6, 1e-4, 1e-2, 0.1, 0.5], epsabs=1e-13, epsrel=1e-10)
        return val

    def guarantee(self) -> dict:
        return {"privacy": f"pure {self.epsilon:g}-DP (Theorem 47, c = 1)", "epsilon": self.epsilon,
                "delta": 0.0, "pure": True, "ex_post": False,
                "accuracy_failure_probability": 2 * self.beta,
                "requires": "epsilon > 2 eps_1", "source": "Proposition 48"}

    def claimed_p_bar(self, t: int) -> float:
        """Proposition 48(2b) as its proof supports: p_bar_t = beta_t / (2 N_t (1 - beta/2)^{1/theta_C}).

        (The statement prints (beta/2 - beta)^{1/theta_C}, a negative base: erratum.)"""
        beta_t = float(F.step_failure_probability(t, self.beta))
        return beta_t / (2 * self.calls * (1 - self.beta / 2) ** (1 / self.theta_C))

    def table1_p_bar(self, t: int) -> float:
        """Table 1: p* / Lambda_t, Lambda_t = t / beta^{1 + eps1/(eps - 2 eps1)}."""
        return self.p_star * self.beta ** (1 + self.eps_1 / (self.epsilon - 2 * self.eps_1)) / t

    def corollary51_ceiling(self, T: int) -> float:
        """Corollary 51: any p_bar with false-halt <= beta over T steps obeys p_bar <= 4 beta 2^{1/theta_C} / sum N_t."""
        return 4 * self.beta * 2 ** (1 / self.theta_C) / (T * self.calls)
