"""Baselines for continual observation at the same total privacy budget, on the same stream.

* ``basic``    - recompute A(X_t) at every step with eps/T (basic composition over T steps;
                 pure eps-DP; needs the horizon T in advance).
* ``advanced`` - recompute at every step with eps_0 solving the advanced composition
                 theorem (Dwork-Rothblum-Vadhan 2010):
                 eps = sqrt(2 T ln(1/delta')) eps_0 + T eps_0 (e^{eps_0} - 1); (eps, delta')-DP.
* ``doubling`` - recompute at t = 1, 2, 4, 8, ... <= T (the Dwork et al. 2010 idea of a
                 fixed schedule), eps/R each for the R = floor(log2 T) + 1 recomputations
                 (basic composition; pure eps-DP); the output is held in between.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import check_choice, check_open_unit, check_positive, check_positive_int

BASELINES = ("basic", "advanced", "doubling")


def basic_composition_budget(epsilon, T: int) -> float:
    """eps/T: T recomputations composed basically give eps."""
    return check_positive("epsilon", epsilon) / check_positive_int("T", T)


def advanced_composition_total(eps0, delta_prime, T: int) -> float:
    """Advanced composition: T eps_0-DP steps are (sqrt(2T ln(1/delta')) eps_0 + T eps_0 (e^eps_0 - 1), delta')-DP."""
    return math.sqrt(2 * T * math.log(1 / delta_prime)) * eps0 + T * eps0 * math.expm1(eps0)


def advanced_composition_budget(epsilon, delta_prime, T: int) -> float:
    """The largest eps_0 whose T-fold advanced composition is at most eps (bisection, rounded down)."""
    epsilon = check_positive("epsilon", epsilon)
    delta_prime = check_open_unit("delta_prime", delta_prime)
    T = check_positive_int("T", T)
    lo, hi = 0.0, epsilon
    for _ in range(200):
        mid = (lo + hi) / 2
        if advanced_composition_total(mid, delta_prime, T) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def doubling_times(T: int) -> list[int]:
    """1, 2, 4, ... <= T."""
    T = check_positive_int("T", T)
    return [2**i for i in range(T.bit_length()) if 2**i <= T]


def run_baseline(name: str, problem, edges, epsilon: float, rng: np.random.Generator,
                 *, delta_prime: float = 1e-6) -> tuple[list, list[int]]:
    """(solutions Y_1..Y_T, batch calls per step) of baseline ``name`` on ``edges``."""
    check_choice("baseline", name, BASELINES)
    T = len(edges)
    if name == "basic":
        eps, times = basic_composition_budget(epsilon, T), None
    elif name == "advanced":
        eps, times = advanced_composition_budget(epsilon, delta_prime, T), None
    else:
        times = set(doubling_times(T))
        eps = epsilon / len(times)
    state = problem.empty_state()
    out, calls, current = [], [], None
    for t, e in enumerate(edges, start=1):
        problem.insert(state, e)
        if times is None or t in times:
            sols, _ = problem.sample(state, eps, rng, 1)
            current = sols[0]
            calls.append(1)
        else:
            calls.append(0)
        out.append(current)
    return out, calls
