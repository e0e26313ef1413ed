"""Start points of the worst-case privacy search (:mod:`gtm_core.exact.search`).

A point is (u, v): logits u of the success probabilities p_t and positions v in [-1, 1] of p'_t in
the eps_t-neighbourhood of p_t (:func:`decode_point` maps it to the stream pair).  The structured
starts are the constructions that make Lemma 17 tight (:func:`structured_starts`, and
:func:`delta_starts` for the "delta" objective); :func:`random_start` draws the random ones as a
pure function of (horizon, seed, index).
"""

from __future__ import annotations

import math

import numpy as np

from ..neighbours import neighbour_interval

__all__ = ["decode_point", "logit", "structured_starts", "DELTA_LAST", "delta_starts", "random_start"]


def decode_point(u: np.ndarray, v: np.ndarray, eps: list[float]) -> tuple[list[float], list[float]]:
    """The stream pair (p, q) of the point (u, v) at the steps' eps: p = sigmoid(u) (clipped), q at
    position v of p's neighbourhood."""
    p = [float(1 / (1 + math.exp(-min(max(x, -40.0), 40.0)))) for x in u]
    q = []
    for pt, vt, e in zip(p, v, eps):
        lo, hi = neighbour_interval(pt, e)
        # shrink by a relative hair so float rounding never leaves the neighbourhood
        lo2 = lo + (hi - lo) * 1e-9
        hi2 = hi - (hi - lo) * 1e-9
        q.append(float(lo2 + (hi2 - lo2) * (min(max(float(vt), -1.0), 1.0) + 1) / 2))
    return p, q


def logit(x: float) -> float:
    """ln(x / (1 - x))."""
    return math.log(x / (1 - x))


def structured_starts(plan, T: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Tight constructions of the proof of Lemma 17 (continuation steps that need a large
    eta_1, a last step halting through the eta_2 tail), both directions, plus variants."""
    starts = []
    for t_len in range(1, T + 1):
        for lift in (0.0, 0.3, 1.0):
            for last in (1e-6, 1e-3, 0.05):
                u = np.zeros(t_len)
                v = np.zeros(t_len)
                for i in range(t_len - 1):
                    sp = plan.step(i + 1)
                    e = math.exp(sp.eps_t)
                    ps = sp.p_star
                    if sp.s == 1:
                        # continuing needs eta_1 large: p at/above p*; full downward shift feasible
                        pc = min(ps * (1 + lift * 0.05), e / (1 + e) * 0.999)
                    else:
                        pc = max(ps * (1 - lift * 0.05), 1 - e / (1 + e) * 0.999)
                    u[i] = logit(min(max(pc, 1e-9), 1 - 1e-9))
                    v[i] = -1.0 if sp.s == 1 else 1.0
                sp = plan.step(t_len)
                pl = last if sp.s == 1 else 1 - last
                u[-1] = logit(pl)
                v[-1] = 1.0 if sp.s == 1 else -1.0
                starts.append((u, v))
                starts.append((u.copy(), -v))
    return starts


# the last step's success probabilities of the delta objective's structured starts: at the default
# deployment the refusals break the halting event's ratio below about 1e-6 (loss 7.05 at 1e-7)
DELTA_LAST = (1e-7, 3e-7, 1e-6)


def delta_starts(plan, T: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Structured starts of the "delta" objective: Lemma 17's constructions (:func:`structured_starts`)
    led by single steps with a tiny success probability shifted to either end of its neighbourhood,
    where a refusal takes away the runs that could have halted (the loss of a capped run)."""
    starts = []
    for last in DELTA_LAST:
        sp = plan.step(1)
        u = np.array([logit(last if sp.s == 1 else 1 - last)])
        for sign in (1.0, -1.0):
            starts.append((u.copy(), np.array([sign * (1.0 if sp.s == 1 else -1.0)])))
    return starts + structured_starts(plan, T)


def random_start(horizon: int, seed: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """Random start number ``index`` of a search seeded ``seed``: a length L uniform in 1..horizon,
    logits u ~ N(0, 4^2), neighbour positions v = +-U(0.5, 1). Its stream is
    ``SeedSequence([seed, index])``: a function of (horizon, seed, index) only, so a start is the
    same wherever it is evaluated."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(index)]))
    L = int(rng.integers(1, horizon + 1))
    u = rng.normal(0.0, 4.0, size=L)
    v = rng.choice([-1.0, 1.0], size=L) * rng.uniform(0.5, 1.0, size=L)
    return u, v
