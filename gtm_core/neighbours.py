"""The neighbouring rule for Bernoulli streams, written once.

Two streams p, p' of success probabilities are neighbours at privacy parameters eps_t when at
every step t both ratios p'_t / p_t and (1 - p'_t) / (1 - p_t) lie in [e^{-eps_t}, e^{eps_t}]
(0/0 allowed): the output law of an eps_t-DP mechanism with outputs +-1 on two neighbouring
data sets.

eps_t is an :class:`gtm_core.input_privacy.InputPrivacy` (or anything its ``from_user`` accepts:
a number or a per-step list); it decides eps_t per step, and refuses a step past a per-step list.

* :func:`neighbour_interval`: the interval of p' allowed next to p (float64).
* :func:`is_neighbour`: the float64 test with a relative slack (search and auditing).
* :func:`ratio_within`: the rule's comparison a <= E b and b <= E a, written for any ordered
  number type; the exact engine uses it on arb balls (a certified test, see
  :func:`gtm_core.exact.check_neighbouring`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from .input_privacy import InputPrivacy

__all__ = ["neighbour_interval", "is_neighbour", "ratio_within"]


def neighbour_interval(p: float, eps_t: float) -> tuple[float, float]:
    """All p' with p'/p and (1-p')/(1-p) in [e^-eps, e^eps], clipped to [0, 1] (float64).

    lo = max(p e^{-eps}, 1 - (1-p) e^{eps}), hi = min(p e^{eps}, 1 - (1-p) e^{-eps}).
    """
    lo = max(p * math.exp(-eps_t), 1 - (1 - p) * math.exp(eps_t))
    hi = min(p * math.exp(eps_t), 1 - (1 - p) * math.exp(-eps_t))
    return max(lo, 0.0), min(hi, 1.0)


def is_neighbour(p: Sequence[float], p_prime: Sequence[float], eps_t, *, slack: float = 1e-12) -> bool:
    """Both ratio conditions hold at every step, in float64 with ``slack`` added to eps_t
    (an :class:`~gtm_core.input_privacy.InputPrivacy`, a number or a per-step list; a stream longer
    than a per-step list is refused by :meth:`~gtm_core.input_privacy.InputPrivacy.at`)."""
    if len(p) != len(p_prime):
        return False
    privacy = InputPrivacy.from_user(eps_t)
    for t, (a, b) in enumerate(zip(p, p_prime), start=1):
        e = privacy.at(t) + slack
        for x, y in ((a, b), (1 - a, 1 - b)):
            if x == 0 or y == 0:
                if x != y:
                    return False
                continue
            if abs(math.log(y / x)) > e:
                return False
    return True


def ratio_within(a: Any, b: Any, bound: Any) -> bool:
    """b/a in [1/bound, bound] with 0/0 allowed, as ``a <= bound b and b <= bound a``.

    Generic in the number type: with arb balls (python-flint) a comparison is True only when it
    holds for every point of the balls, so the test is certified.
    """
    if a == 0 and b == 0:
        return True
    return bool((a <= bound * b) and (b <= bound * a))
