"""Random-dropping testers: the parameters and law shared by Cohen et al. (Algorithm 4) and Ghazi et al.
(Algorithm 5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameter
from ..validation import check_stream
from .common import PeerParameters, PeerResult, check_run_count, check_success_probability


# ---------------------------------------------------------------------------
# Random-dropping testers: Cohen et al. (Algorithm 4) and Ghazi et al. (Algorithm 5)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DroppingTester(PeerParameters):
    """Shared parameters and law of the random-dropping testers (Cohen et al., Ghazi et al.).

    Both take (epsilon, eps_1, p*, beta) with epsilon > 2 eps_1, halt when p_t >= p* and evaluate M_t at most
    ``calls`` times per step. Law: a pass probability pi (drawn once) gates up to ``calls`` calls per step; the
    run halts on the first call whose gate passes and whose evaluation returns +1. Only passing calls
    evaluate M_t."""


    requirement = "epsilon > 2 eps_1"  # not a field: the subclass's wording of the condition

    def __post_init__(self):
        super().__post_init__()
        if not self.epsilon > 2 * self.eps_1:
            raise InvalidParameter(f"{self.requirement}, got epsilon={self.epsilon!r}, eps_1={self.eps_1!r}")

    @property
    def calls(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def claimed_halt_threshold(self, t: int) -> float:
        """Proposition 48(2a) / Theorem 52(2) with alpha = p*: halts when p_t >= p*."""
        return self.p_star

    def evaluations_bound(self, t: int) -> float:
        """Proposition 48(3) / Theorem 52(3): at most ``calls`` evaluations per step."""
        return float(self.calls)

    def sample_pass_probability(self, n: int, rng) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _pass_expectation(self, g) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def simulate(self, p, n: int, rng: np.random.Generator) -> PeerResult:
        p = check_stream("p", p)
        n = check_run_count(n)
        T, M = p.size, self.calls
        halt = np.zeros(n, dtype=np.int64)
        evals = np.zeros(n, dtype=np.float64)
        pi = self.sample_pass_probability(n, rng)
        idx = np.arange(n)
        for t, pt in enumerate(p, start=1):
            if idx.size == 0:
                break
            pit = pi[idx]
            hit = pit * pt  # Pr[one call returns +1]
            # index of the first +1 call (geometric), if it falls within the M calls
            with np.errstate(divide="ignore"):
                first = np.where(hit > 0, rng.geometric(np.where(hit > 0, hit, 0.5)), M + 1)
            stop = first <= M
            # calls answered -1 before the end of the step; each of them evaluated M_t w.p. pi (1-p)/(1 - pi p)
            misses = np.where(stop, first - 1, M)
            q_eval = np.where(hit < 1, pit * (1 - pt) / np.where(hit < 1, 1 - hit, 1.0), 0.0)
            evals[idx] += rng.binomial(misses, np.clip(q_eval, 0.0, 1.0)) + stop
            halt[idx[stop]] = t
            idx = idx[~stop]
        return PeerResult(halt=halt, evaluations=evals, T=T)

    def false_halt_probability(self, p: float, T: int) -> float:
        """Pr[halt within T | constant p] = E_pi[1 - (1 - pi p)^{T M}]."""
        p = check_success_probability("p", p)
        tm = T * self.calls
        return self._pass_expectation(lambda x: -np.expm1(tm * np.log1p(-np.minimum(x * p, 1 - 1e-300))))

    def first_step_halt_probability(self, p: float) -> float:
        return self.false_halt_probability(p, 1)
