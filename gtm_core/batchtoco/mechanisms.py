"""Definition 36: the test mechanism M_t^h and the scored mechanism Q_t built from a batch
DP algorithm A (here a problem's ``sample``).

M_t^h(X_t) = sgn(f(X_t, Y^) + Lap(2/eps_t) - h),  Y^ <- A(X_t, eps_t/2, delta_t);
Q_t(X_t)   = (Y^, f(X_t, Y^) + Lap(2/eps_t)).
Both are (eps_t, delta_t)-DP (Lemma 37(1)): A at eps_t/2 plus the Laplace mechanism at
eps_t/2 on the 1-sensitive f(., Y^).

``batch_eps`` and ``noised`` are set by the driver from its implementation
(:mod:`.implementation`): Algorithm 3 uses eps_t/2 and a noised score.
"""

from __future__ import annotations

import numpy as np


def laplace_pass_probability(margin, eps_t: float):
    """Pr[margin + Lap(2/eps_t) >= 0] (float64, elementwise): 1 - e^{-margin/b}/2 for margin >= 0,
    e^{margin/b}/2 otherwise, b = 2/eps_t."""
    m = np.asarray(margin, dtype=float) * (eps_t / 2.0)
    return np.where(m >= 0, 1.0 - 0.5 * np.exp(-np.abs(m)), 0.5 * np.exp(-np.abs(m)))


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
        """n independent outputs (True = +1), returned in no particular order (the GTM counts them).

        Same law as n literal evaluations: the n runs of A are drawn grouped by solution
        (``problem.sample_groups``); given Y^ with value f, the Laplace test passes with the exact
        probability q = Pr[f + Lap(2/eps_t) >= h], so a group of c runs contributes Binomial(c, q)."""
        if n == 0:
            return np.zeros(0, dtype=bool)
        _, counts, values = self.problem.sample_groups(self.state, self.batch_eps, self._rng, n)
        self.calls += n
        passes = int(self._rng.binomial(counts, laplace_pass_probability(values - self.threshold, self.eps_t)).sum())
        out = np.zeros(n, dtype=bool)
        out[:passes] = True
        return out

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
