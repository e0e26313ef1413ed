"""Algorithm 2 (ThresholdSelect, Liu-Talwar's thresholding with a known threshold; Lemma 34).

for j = 1..T:  (Y_j, v_j) <- Q(X);  if v_j >= tau: return (Y_j, v_j);
               draw b ~ Ber(xi); if b = 1: return -1
return -1,     T = ceil(max{(1/xi) ln(2/eps_0), 1 + 1/(e xi)}).

Lemma 34: (2 eps_1 + eps_0, 3 e^{2 eps_1 + eps_0} delta_1/xi)-DP for an (eps_1, delta_1)-DP Q;
Pr[-1] <= (1 - p_1)(1 + eps_0/2) xi / p_1; draws dominated by Geo(p_1 (1 - xi) + xi).

Draws are made in chunks (same law: iteration j only looks at draw j and coin j, and the
loop stops at the first decision; unused draws of a chunk are discarded).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import params as P


@dataclass(frozen=True)
class SelectionResult:
    solution: object | None  # None = output -1
    score: float | None
    draws: int
    iterations_cap: int


def threshold_select(scored, threshold: float, xi: float, eps0: float, rng: np.random.Generator,
                     *, first_chunk: int = 32, max_chunk: int = 4096) -> SelectionResult:
    """Run Algorithm 2 with the scored mechanism ``scored`` (``draw(n) -> (solutions, scores)``)."""
    cap = P.threshold_select_iterations(xi, eps0)
    done, chunk = 0, first_chunk
    while done < cap:
        n = min(chunk, cap - done)
        sols, scores = scored.draw(n)
        passed = scores >= threshold
        coins = rng.random(n) < xi
        stop = passed | coins
        if stop.any():
            j = int(np.argmax(stop))
            done += j + 1
            if passed[j]:
                return SelectionResult(sols[j], float(scores[j]), done, cap)
            return SelectionResult(None, None, done, cap)
        done += n
        chunk = min(2 * chunk, max_chunk)
    return SelectionResult(None, None, done, cap)
