"""Definition 36: the test mechanism M_t^h and the scored mechanism Q_t built from a batch
DP algorithm A (here a problem's ``sample``).

M_t^h(X_t) = sgn(f(X_t, Y^) + Lap(2/eps_t) - h),  Y^ <- A(X_t, eps_t/2, delta_t);
Q_t(X_t)   = (Y^, f(X_t, Y^) + Lap(2/eps_t)).
Both are (eps_t, delta_t)-DP (Lemma 37(1)): A at eps_t/2 plus the Laplace mechanism at
eps_t/2 on the 1-sensitive f(., Y^).

``batch_eps`` and ``noised`` exist only for the broken variants of the power suite /
exact witness (A called with eps(l) instead of eps_t/2; an un-noised score).
"""

from __future__ import annotations

import numpy as np


class TestMechanism:
    """M_t^h of Definition 36(1). ``batch(data, n)`` returns n independent +1 (True) / -1 (False)
    outputs; ``calls`` counts evaluations of A."""

    __test__ = False  # not a pytest class

    def __init__(self, problem, state, eps_t: float, threshold: float, rng: np.random.Generator,
                 *, batch_eps: float | None = None):
        self.problem, self.state, self.eps_t, self.threshold = problem, state, float(eps_t), float(threshold)
        self.batch_eps = float(eps_t) / 2 if batch_eps is None else float(batch_eps)
        self._rng = rng
        self.calls = 0

    def batch(self, data, n: int) -> np.ndarray:
        if n == 0:
            return np.zeros(0, dtype=bool)
        _, values = self.problem.sample(self.state, self.batch_eps, self._rng, n)
        self.calls += n
        noisy = values + self._rng.laplace(0.0, 2.0 / self.eps_t, n)
        return noisy >= self.threshold

    def __call__(self, data=None) -> int:
        return 1 if self.batch(data, 1)[0] else -1

    def __repr__(self) -> str:
        return f"TestMechanism(eps_t={self.eps_t!r}, threshold={self.threshold!r})"


class ScoredMechanism:
    """Q_t of Definition 36(2). ``draw(n)`` returns (solutions, scores) of n independent draws."""

    def __init__(self, problem, state, eps_t: float, rng: np.random.Generator,
                 *, batch_eps: float | None = None, noised: bool = True):
        self.problem, self.state, self.eps_t = problem, state, float(eps_t)
        self.batch_eps = float(eps_t) / 2 if batch_eps is None else float(batch_eps)
        self.noised = noised
        self._rng = rng
        self.calls = 0

    def draw(self, n: int):
        sols, values = self.problem.sample(self.state, self.batch_eps, self._rng, n)
        self.calls += n
        if self.noised:
            values = values + self._rng.laplace(0.0, 2.0 / self.eps_t, n)
        return sols, values

    def __repr__(self) -> str:
        return f"ScoredMechanism(eps_t={self.eps_t!r}, noised={self.noised})"
