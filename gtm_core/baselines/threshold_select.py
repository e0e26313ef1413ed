"""ThresholdSelect (Section 7.2, Algorithm 2, Lemma 34) and the tester built on it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidParameter
from ..validation import check_positive, check_real, check_stream
from .common import PeerParameters, PeerResult, check_run_count, check_success_probability, step_failure_probability_cached


# ---------------------------------------------------------------------------
# ThresholdSelect (Section 7.2, Algorithm 2, Lemma 34)
# ---------------------------------------------------------------------------


def threshold_select_iterations(xi: float, eps_0: float) -> int:
    """Algorithm 2: T = ceil(max((1/xi) ln(2/eps0), 1 + 1/(e xi)))."""
    return int(math.ceil(max(math.log(2 / eps_0) / xi, 1 + 1 / (math.e * xi))))


def threshold_select(p_1, xi: float, eps_0: float, n: int, rng: np.random.Generator):
    """n independent runs of ThresholdSelect (Algorithm 2) on a query whose threshold test passes w.p. p_1.

    Returns (success: bool array, draws: int array). Each iteration draws Q once: a pass returns it;
    otherwise b ~ Ber(xi) = 1 stops with -1; after T iterations, -1."""
    check_real("xi", xi, low=0, high=1, low_open=True)
    check_positive("eps_0", eps_0)
    n = check_run_count(n)
    p1 = np.broadcast_to(np.asarray(p_1, dtype=float), (n,))
    T = threshold_select_iterations(xi, eps_0)
    end = p1 + (1 - p1) * xi  # Pr[an iteration ends the run]
    j = np.where(end > 0, rng.geometric(np.where(end > 0, end, 0.5)), T + 1)
    within = j <= T
    success = within & (rng.random(n) * end < p1)
    draws = np.minimum(j, T)
    return success, draws


@dataclass(frozen=True)
class ThresholdSelectTester(PeerParameters):
    """ThresholdSelect (Algorithm 2, Lemma 34) run once per step as a tester: halt iff it returns a sample.

    Per step xi_t = beta_t p* / (2 (1 - p*) (1 + eps0/2)) so Lemma 34(2) gives Type II <= beta_t/2 at p >= p*;
    Type I: Pr[success] <= p / xi_t, so p_bar_t = xi_t beta_t / 2 (derived here; Lemma 34 states only
    the failure probability). Privacy: each step is (2 eps1 + eps0)-DP (Lemma 34(1)); the T step
    outputs compose to T (2 eps1 + eps0) - it is NOT an eps-DP tester at the grid's eps1/eps, and the
    benchmark labels it so. ``eps_0`` defaults to min(1, eps - 2 eps1) (one step costs eps).
    """

    eps_0: float | None = None
    name: str = field(default="threshold-select", init=False)

    def __post_init__(self):
        super().__post_init__()
        if self.eps_0 is None:
            if not self.epsilon > 2 * self.eps_1:
                raise InvalidParameter(
                    f"ThresholdSelect needs eps_0 = eps - 2 eps_1 > 0, got epsilon={self.epsilon!r}, eps_1={self.eps_1!r}")
            object.__setattr__(self, "eps_0", min(1.0, self.epsilon - 2 * self.eps_1))
        check_real("eps_0", self.eps_0, low=0, high=1, low_open=True)

    def xi(self, t: int) -> float:
        beta_t = step_failure_probability_cached(t, self.beta)
        return min(1.0, beta_t * self.p_star / (2 * (1 - self.p_star) * (1 + self.eps_0 / 2)))

    def iterations(self, t: int) -> int:
        return threshold_select_iterations(self.xi(t), self.eps_0)

    def guarantee(self) -> dict:
        per = 2 * self.eps_1 + self.eps_0
        return {"privacy": f"({per:g})-DP per step (Lemma 34(1)); T*{per:g} over T steps by composition",
                "epsilon": per, "per_step": True, "delta": 0.0, "pure": True, "ex_post": False,
                "accuracy_failure_probability": self.beta,
                "requires": "eps_0 in (0, 1]", "source": "Lemma 34 (p_bar derived by union bound)"}

    def claimed_p_bar(self, t: int) -> float:
        return self.xi(t) * step_failure_probability_cached(t, self.beta) / 2

    def claimed_halt_threshold(self, t: int) -> float:
        return self.p_star

    def evaluations_bound(self, t: int) -> float:
        """Lemma 34(3): at most T iterations (one draw each)."""
        return float(self.iterations(t))

    def step_success_probability(self, p: float, t: int) -> float:
        """Pr[Algorithm 2 returns a sample at step t] = p (1 - r^T)/(1 - r), r = (1-p)(1-xi_t)."""
        xi, T = self.xi(t), self.iterations(t)
        if p == 0:
            return 0.0
        r = (1 - p) * (1 - xi)
        return p * -math.expm1(T * math.log(r)) / (1 - r) if r > 0 else p

    def simulate(self, p, n: int, rng: np.random.Generator) -> PeerResult:
        p = check_stream("p", p)
        n = check_run_count(n)
        halt = np.zeros(n, dtype=np.int64)
        evals = np.zeros(n, dtype=np.float64)
        idx = np.arange(n)
        for t, pt in enumerate(p, start=1):
            if idx.size == 0:
                break
            ok, draws = threshold_select(float(pt), self.xi(t), self.eps_0, idx.size, rng)
            evals[idx] += draws
            halt[idx[ok]] = t
            idx = idx[~ok]
        return PeerResult(halt=halt, evaluations=evals, T=p.size)

    def false_halt_probability(self, p: float, T: int) -> float:
        p = check_success_probability("p", p)
        log_cont = 0.0
        for t in range(1, T + 1):
            s = self.step_success_probability(p, t)
            if s >= 1:
                return 1.0
            log_cont += math.log1p(-s)
        return -math.expm1(log_cont)

    def first_step_halt_probability(self, p: float) -> float:
        return self.step_success_probability(check_success_probability("p", p), 1)
