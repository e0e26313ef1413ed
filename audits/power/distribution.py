"""Numerical halting-time law of a (correct or broken) GTM deployment on a Bernoulli stream.

This is the auditor's own *numerical* oracle (float64 quadrature, not a certificate): it is used
to show that a broken deployment is really not eps-DP on a concrete pair of neighbouring streams,
to score candidate pairs, and to state the loss of a witness.

Why a second halting-time law next to the exact engine's (:mod:`gtm_core.exact`, step model in
:mod:`gtm_core.exact.step`): the exact engine integrates eta_2 in closed form in ball arithmetic
for Algorithm 1 and its noise-scale perturbations only; the broken implementations need per-step
models the closed form does not cover (binomial counts, redrawn or reused noise, flipped signs),
on fine grids of eta_1 many times per candidate pair - float64 quadrature, vectorised. The two
are kept as independent computations on purpose and compared in tests (Algorithm 1 and the
noise-scale variants through :meth:`audits.power.broken.Implementation.perturbed_plan`).

Given the shared noise, the steps of Algorithm 1 are independent (proof of Lemma 17, eq. (9)-(10)):

    Pr[halt at t] = E_{eta_1}[ prod_{i<t} G_i(eta_1) * H_t(eta_1) ],
    G_i(x) = E_{eta_2}[ g_i(s_i (mu_1 - x + eta_2)) ],   H_i = 1 - G_i,

with g_i(z) = Pr[Po(rho_i e^{eps_i z} q_i) <= c_i] for s_i = +1 (Lemma 15(1)) and the complement
for s_i = -1. Both exponential noises are discretised into cells of width ``h`` (exact cell masses,
functions evaluated at cell midpoints), tails beyond ``tail`` scale lengths dropped (< e^-40); the
inner expectation over eta_2 is a correlation computed by FFT. Halting probabilities are computed
from the Poisson survival function directly (no 1 - G cancellation).
"""

from __future__ import annotations

import numpy as np
from scipy import signal, special

from gtm_core.errors import UnsupportedConfiguration
from gtm_core.planners import Plan
from gtm_core.simulator import fed_success_probability

from .broken import CORRECT, Implementation


def cell_masses(scale: float, h: float, tail: float) -> np.ndarray:
    """Pr[eta in [k h, (k+1) h)] for eta ~ Exp(scale), k = 0..K-1 (midpoints (k + 1/2) h)."""
    K = max(2, int(np.ceil(tail * scale / h)))
    edges = np.arange(K + 1) * h
    return -np.diff(np.exp(-edges / scale))


def step_functions(sp, d: Implementation, q: float, u: np.ndarray):
    """(continue, halt) probabilities of one step given the unsigned noise sum u (Z = s u)."""
    lam = sp.rho * np.exp(np.minimum(d.eps_scale * sp.eps_t * sp.s * u, 700.0))
    c = sp.c + d.threshold_offset
    if d.count == "fixed":
        n = np.rint(np.minimum(lam, 1e17))
        below = np.where(n <= c, 1.0, special.bdtr(c, np.maximum(n, c + 1), q))  # Pr[K <= c]
        above = np.where(n <= c, 0.0, special.bdtrc(c, np.maximum(n, c + 1), q))
    else:
        below = special.pdtr(c, lam * q)
        above = special.pdtrc(c, lam * q)
    return (below, above) if sp.s == 1 else (above, below)


def halting_distribution(
    plan: Plan,
    p,
    deployment: Implementation = CORRECT,
    *,
    h: float = 0.02,
    tail: float = 40.0,
) -> np.ndarray:
    """dist[0] = Pr[never halts within T], dist[t] = Pr[halts at t] (numerical, float64)."""
    d = deployment
    p = np.asarray(p, dtype=float)
    T = p.size
    steps = plan.steps(range(1, T + 1))
    mu1 = d.mu1_scale * plan.mu1
    sign = d.shared_noise_sign
    w1 = cell_masses(d.tau1_scale * plan.tau1, h, tail)
    K1 = w1.size
    x = (np.arange(K1) + 0.5) * h
    dist = np.zeros(T + 1)

    if d.step_noise == "reused" and d.shared_noise == "once":
        # one outer variable b = sign * eta_1 + eta_2 (the same at every step)
        tau2 = d.tau2_scale * steps[0].tau2
        w2 = cell_masses(tau2, h, tail)
        if sign == -1:  # b = h (j - k): masses by correlation, m = j - k in [-(K1-1), K2-1]
            wb = np.clip(signal.fftconvolve(w2, w1[::-1], mode="full"), 0, None)
            b = (np.arange(wb.size) - (K1 - 1)) * h
        else:  # b = h (j + k + 1)
            wb = np.clip(signal.fftconvolve(w2, w1, mode="full"), 0, None)
            b = (np.arange(wb.size) + 1) * h
        survive = wb.copy()
        for t, (sp, pt) in enumerate(zip(steps, p), start=1):
            cont, halt = step_functions(sp, d, fed_success_probability(sp, float(pt)), mu1 + b)
            dist[t] = float(survive @ halt)
            survive = survive * cont
        dist[0] = float(survive.sum())
        return dist
    if d.step_noise == "reused":
        raise UnsupportedConfiguration("reused step noise with per-step shared noise has no numerical law here")

    def step_tables(sp, pt):
        q = fed_success_probability(sp, float(pt))
        if d.step_noise == "none" or sp.eps_t == 0:
            return step_functions(sp, d, q, mu1 + sign * x)
        w2 = cell_masses(d.tau2_scale * sp.tau2, h, tail)
        K2 = w2.size
        if sign == -1:
            # u = mu1 + h (j - k); m = j - k + (K1 - 1) in 0..K1+K2-2
            u = mu1 + (np.arange(K1 + K2 - 1) - (K1 - 1)) * h
            cont, halt = step_functions(sp, d, q, u)
            G = signal.fftconvolve(cont, w2[::-1], mode="valid")[::-1]
            H = signal.fftconvolve(halt, w2[::-1], mode="valid")[::-1]
        else:
            u = mu1 + (np.arange(K1 + K2 - 1) + 1) * h
            cont, halt = step_functions(sp, d, q, u)
            G = signal.fftconvolve(cont, w2[::-1], mode="valid")
            H = signal.fftconvolve(halt, w2[::-1], mode="valid")
        return np.clip(G, 0, 1), np.clip(H, 0, 1)

    if d.shared_noise == "per-step":
        survive = 1.0
        for t, (sp, pt) in enumerate(zip(steps, p), start=1):
            G, H = step_tables(sp, pt)
            dist[t] = survive * float(w1 @ H)
            survive *= float(w1 @ G)
        dist[0] = survive
        return dist

    survive = w1.copy()
    for t, (sp, pt) in enumerate(zip(steps, p), start=1):
        G, H = step_tables(sp, pt)
        dist[t] = float(survive @ H)
        survive = survive * G
    dist[0] = float(survive.sum())
    return dist


def pair_losses(dist_a: np.ndarray, dist_b: np.ndarray, events) -> np.ndarray:
    """ln(Pr_a[E] / Pr_b[E]) for every event E (nan where both are 0)."""
    pa, pb = events.probabilities(dist_a), events.probabilities(dist_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(pa) - np.log(pb)


def event_loss(dist_a: np.ndarray, dist_b: np.ndarray, codes) -> float:
    """ln(Pr_a[E] / Pr_b[E]) for the event E = ``codes`` (a witness' halting codes; -inf when Pr_a[E] = 0,
    +inf when only Pr_b[E] = 0). Codes beyond the laws (budget stops T + t of
    :func:`audits.events.halting_events` with ``stops``, which a level-set event may hold) have probability
    0: these deployments never stop."""
    a = float(dist_a[[c for c in codes if c < dist_a.size]].sum())
    b = float(dist_b[[c for c in codes if c < dist_b.size]].sum())
    if a <= 0:
        return -float("inf")
    return float(np.log(a / b)) if b > 0 else float("inf")


def worst_event(dist_a: np.ndarray, dist_b: np.ndarray, events, *, min_probability: float = 0.0):
    """(loss, event name, direction) of the largest |ln ratio| over events and both directions.

    ``min_probability`` ignores events whose larger probability is below it (losses carried by
    astronomically rare events are real but cannot be witnessed by sampling).
    """
    pa, pb = events.probabilities(dist_a), events.probabilities(dist_b)
    best = (-np.inf, None, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        for direction, (x, y) in (("p>p'", (pa, pb)), ("p'>p", (pb, pa))):
            ok = x > max(min_probability, 0.0)
            loss = np.where(ok, np.log(x) - np.log(y), -np.inf)
            i = int(np.argmax(loss))
            if loss[i] > best[0]:
                best = (float(loss[i]), events.names[i], direction)
    return best
