"""Instance search: neighbouring Bernoulli streams (p, p') allowed by the input privacy eps_t.

Two streams are neighbours when, for every step t, both p'_t / p_t and (1 - p'_t) / (1 - p_t)
lie in [e^-eps_t, e^eps_t] (DESIGN.md). :func:`neighbour` moves a stream as far as allowed in
a chosen direction per step (+1 up, -1 down, 0 unchanged).

Families (:func:`initial_candidates`), all black-box (they do not need the target's plan):

* ``constant``   - p_t = a for T steps, p' all up or all down (never-halting and tail events).
* ``ramp``       - p_t geometric from a to b over T steps, p' all up or all down.
* ``mixed``      - k continuation steps at a and a final step at b, the continuation steps moved
  one way and the final step the other: the coupling of Lemma 17 shifts eta_1 for the
  continuation steps and eta_{2,t} at the halting step, so the worst case for a halting
  transcript makes continuing easier on one input early and halting easier on it at the end.
* ``tiny``       - very small success probabilities (tail events of the noise).
* ``laplace``    - Corollary 30's construction: M_t answers +1 iff f_t(X) + Lap(1/eps_t) >= tau_L,
  so p_t = L(f_t - tau_L) and a neighbour moves f_t by +-1; background f below tau_L and one
  step at or above it.
* both directions of every pair are used (the pair and its swap are separate candidates).

:func:`refine` perturbs a candidate (levels scaled, length changed, directions flipped) for the
adaptive phase; :func:`oracle_candidates` asks the exact engine's worst-case search for a proposal.
The neighbouring rule itself is :mod:`gtm_core.neighbours`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gtm_core.errors import InvalidParameter
from gtm_core.exact import worst_case_search
from gtm_core.neighbours import eps_at, is_neighbour, neighbour_interval
from gtm_core.numeric import laplace_cdf

LEVELS = (1e-4, 1e-3, 0.01, 0.04, 0.12, 0.25, 0.5, 0.8, 0.97)
MIXED_LEVELS = (1e-3, 0.01, 0.04, 0.07, 0.12, 0.18, 0.25, 0.35)


@dataclass(frozen=True)
class Candidate:
    """A pair of neighbouring streams and the family that produced it."""

    p: tuple[float, ...]
    p_prime: tuple[float, ...]
    family: str
    params: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def T(self) -> int:
        return len(self.p)

    def swapped(self) -> "Candidate":
        return Candidate(self.p_prime, self.p, self.family, {**self.params, "swapped": not self.params.get("swapped", False)})

    def to_dict(self) -> dict:
        return {"p": list(self.p), "p_prime": list(self.p_prime), "family": self.family, "params": dict(self.params)}


def neighbour(p, directions, eps_t, fraction: float = 1.0) -> tuple[float, ...]:
    """Move every p_t in its direction (+1 up, -1 down, 0 stay) by ``fraction`` of the allowed range
    (a step with eps_t = 0 stays exactly where it is)."""
    out = []
    for t, (pt, d) in enumerate(zip(p, directions), start=1):
        lo, hi = neighbour_interval(float(pt), eps_at(eps_t, t))
        target = hi if d > 0 and eps_at(eps_t, t) > 0 else lo if d < 0 and eps_at(eps_t, t) > 0 else pt
        moved = float(pt + fraction * (target - pt))
        # subnormal p_t: p e^{-eps} can underflow to 0, which is not a neighbour; stay put then
        out.append(moved if is_neighbour([pt], [moved], eps_at(eps_t, t)) else float(pt))
    return tuple(out)


def _pair(p, dirs, eps_t, family, **params) -> list[Candidate]:
    pp = neighbour(p, dirs, eps_t)
    c = Candidate(tuple(float(x) for x in p), pp, family, params)
    return [c, c.swapped()]


def initial_candidates(eps_t, max_T: int, *, lengths=(1, 2, 3, 5, 10, 20, 50)) -> list[Candidate]:
    """The first-round candidate pairs of every family, both directions."""
    if max_T < 1:
        raise InvalidParameter(f"max_T must be >= 1, got {max_T!r}")
    Ts = sorted({T for T in lengths if T <= max_T} | {min(max_T, 1)})
    out: list[Candidate] = []
    for T in Ts:
        for a in LEVELS:
            out += _pair([a] * T, [1] * T, eps_t, "constant", a=a, T=T)
    for T in [T for T in Ts if T >= 3]:
        for a, b in ((0.01, 0.3), (0.3, 0.01), (0.05, 0.2), (0.2, 0.05)):
            ramp = np.geomspace(a, b, T)
            out += _pair(ramp, [1] * T, eps_t, "ramp", a=a, b=b, T=T)
    mixed_levels = MIXED_LEVELS
    for k in (1, 3):
        if k + 1 > max_T:
            continue
        for a in mixed_levels:
            for b in mixed_levels:
                p = [a] * k + [b]
                out += _pair(p, [1] * k + [-1], eps_t, "mixed", a=a, b=b, k=k)
    for T in Ts:
        for a in (1e-6, 1e-5):
            out += _pair([a] * T, [1] * T, eps_t, "tiny", a=a, T=T)
    out += laplace_candidates(eps_t, max_T)
    return _dedupe(out)


def laplace_candidates(eps_t, max_T: int) -> list[Candidate]:
    """Corollary 30's streams: background f = tau_L - gap_b, the last step at tau_L + gap_h."""
    out = []
    eps1 = eps_at(eps_t, 1)
    if eps1 == 0:  # eps_1 = 0: the first step's neighbours are identical, no Laplace construction
        return out
    for T in sorted({min(max_T, T) for T in (1, 2, 5)}):
        for gap_b in (5 / eps1, 20 / eps1, 40 / eps1):
            for gap_h in (-20 / eps1, -5 / eps1, 0.0):
                f = [-gap_b] * (T - 1) + [gap_h]
                p = [laplace_cdf(x, rate=eps_at(eps_t, t)) for t, x in enumerate(f, start=1)]
                for dirs in ([1] * (T - 1) + [-1], [1] * T):
                    f2 = [x + d for x, d in zip(f, dirs)]
                    pp = tuple(laplace_cdf(x, rate=eps_at(eps_t, t)) for t, x in enumerate(f2, start=1))
                    c = Candidate(tuple(p), pp, "laplace", {"gap_b": gap_b, "gap_h": gap_h, "T": T})
                    out += [c, c.swapped()]
    return out


def refine(c: Candidate, eps_t, max_T: int, rng: np.random.Generator, n: int = 8) -> list[Candidate]:
    """Perturbations of a good candidate: levels scaled, length changed, moved fraction changed."""
    out = []
    p = np.asarray(c.p)
    pp = np.asarray(c.p_prime)
    dirs = np.sign(pp - p).astype(int)
    for _ in range(n):
        kind = rng.integers(4)
        q = p.copy()
        d = dirs.copy()
        if kind == 0:  # scale every level by one factor
            q = np.clip(q * math.exp(rng.normal(0, 0.3)), 1e-9, 1 - 1e-9)
        elif kind == 1:  # scale one step
            i = rng.integers(q.size)
            q[i] = min(max(q[i] * math.exp(rng.normal(0, 0.4)), 1e-9), 1 - 1e-9)
        elif kind == 2:  # change the length by repeating / dropping a continuation step
            if q.size > 1 and rng.random() < 0.5:
                i = rng.integers(q.size - 1)
                q, d = np.delete(q, i), np.delete(d, i)
            elif q.size < max_T:
                i = rng.integers(q.size)
                q, d = np.insert(q, i, q[i]), np.insert(d, i, d[i])
        else:  # flip or zero one step's direction
            i = rng.integers(q.size)
            d[i] = rng.choice([-1, 0, 1])
        if not d.any():
            continue
        out.append(Candidate(tuple(float(x) for x in q), neighbour(q, d, eps_t), c.family + "+refined",
                             {"parent": c.params}))
    return _dedupe(out)


def oracle_candidates(plan, eps_t, max_T: int, **kwargs) -> list[Candidate]:
    """The pair proposed by the exact engine's worst-case search (our own targets only), both directions."""
    found = worst_case_search(plan, **kwargs)
    if len(found.p) > max_T or not is_neighbour(found.p, found.p_prime, eps_t, slack=1e-9):
        return []
    c = Candidate(tuple(map(float, found.p)), tuple(map(float, found.p_prime)), "exact-oracle", {})
    return [c, c.swapped()]


def _dedupe(cands: list[Candidate]) -> list[Candidate]:
    seen, out = set(), []
    for c in cands:
        key = (tuple(round(x, 12) for x in c.p), tuple(round(x, 12) for x in c.p_prime))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
