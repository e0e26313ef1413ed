"""Audit pair search: neighbouring Bernoulli streams (p, p') allowed by the input privacy eps_t.

Two streams are neighbours when, for every step t, both p'_t / p_t and (1 - p'_t) / (1 - p_t)
lie in [e^-eps_t, e^eps_t] (gtm_core.neighbours). :func:`neighbour` moves a stream as far as allowed in
a chosen direction per step (+1 up, -1 down, 0 unchanged).

Families (:func:`initial_candidates`), all black-box (they do not need the target's plan):

* ``grid``       - the coverage family ("no blind regions"): constant streams at every
  level of :data:`GRID_LEVELS` (success probabilities 1e-9 .. 1 - 1e-9, equally spaced on the
  logit scale, :data:`GRID_LOGIT_STEP` apart), every length 1..:data:`EVERY_LENGTH` and a geometric
  grid of longer lengths up to max_T (:func:`grid_lengths`), each moved by every direction pattern
  of :func:`direction_patterns`: constant up, constant down, mixed (the first j steps up, the rest
  down: every split j for T <= EVERY_LENGTH) and alternating.
* ``constant``   - p_t = a for T steps, p' all up or all down (never-halting and tail events).
* ``ramp``       - p_t geometric from a to b over T steps, p' all up or all down.
* ``mixed``      - k continuation steps at a and a final step at b, the continuation steps moved
  one way and the final step the other: the coupling of Lemma 17 shifts eta_1 for the
  continuation steps and eta_{2,t} at the halting step, so the worst case for a halting
  transcript makes continuing easier on one input early and halting easier on it at the end.
* ``laplace``    - Corollary 30's construction: M_t answers +1 iff f_t(X) + Lap(1/eps_t) >= tau_L,
  so p_t = L(f_t - tau_L) and a neighbour moves f_t by +-1; background f below tau_L and one
  step at or above it.
* both directions of every pair are used (the pair and its swap are separate candidates).

What the search does NOT try, and why (also returned by :func:`coverage` and written to the
audit JSON's ``search.coverage`` section):

* success probabilities below 1e-9 or above 1 - 1e-9: an event driven by such a step has
  probability about 1e-9 per run, below what any audit budget (<= ~1e9 runs) can observe;
* levels between grid points: a violation confined to a band of p narrower than
  GRID_LOGIT_STEP on the logit scale (a factor ~4.4 for small p) can fall between grid points;
  refinement (:func:`refine`, level moves on the logit scale) explores around good candidates only;
* lengths above EVERY_LENGTH that are not on the geometric grid (ratio LONG_LENGTH_RATIO), and
  for those long lengths only the splits j in {1, 2, T/2, T-2, T-1} of the mixed pattern: the
  number of patterns grows with T, the first round must fit the budget;
* streams whose steps sit at different grid levels are tried only through the mixed, ramp and
  Laplace families and refinement (the product grid has 29^T points);
* direction patterns other than constant / mixed / alternating (there are 3^T) - except through
  refinement, which flips single steps;
* moves smaller than the largest allowed (the grid moves every step to the edge of its
  neighbour interval; refinement keeps that, the ``fraction`` of :func:`neighbour` is 1).

Adaptive allocation happens in the engine (:func:`audits.audit_engine.select`): successive halving,
the survivors of a round are the best quarter by the projected final bound (exploitation) plus
the best quarter by the point estimate of the loss (exploration, so rare events are not dropped
before they are seen).

:func:`refine` perturbs a candidate (levels scaled or moved on the logit scale, length changed,
directions flipped) for the adaptive phase; :func:`oracle_candidates` asks the exact engine's
worst-case search for a proposal (never the only source: the grid always runs too).
The neighbouring rule itself is :mod:`gtm_core.neighbours`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from gtm_core.errors import InvalidParameter
from gtm_core.exact import worst_case_search
from gtm_core.input_privacy import InputPrivacy
from gtm_core.neighbours import is_neighbour, neighbour_interval
from gtm_core.numeric import laplace_cdf

from .audit_results import SearchCoverage, SkippedRegion

LEVELS = (1e-4, 1e-3, 0.01, 0.04, 0.12, 0.25, 0.5, 0.8, 0.97)
MIXED_LEVELS = (1e-3, 0.01, 0.04, 0.07, 0.12, 0.18, 0.25, 0.35)

P_MIN, P_MAX = 1e-9, 1 - 1e-9  # the success probabilities the search covers
GRID_POINTS = 29  # levels of the grid family, equally spaced on the logit scale
GRID_LOGIT_STEP = (math.log(P_MAX / (1 - P_MAX)) - math.log(P_MIN / (1 - P_MIN))) / (GRID_POINTS - 1)
GRID_LEVELS = tuple(float(1 / (1 + math.exp(-x))) for x in
                    np.linspace(math.log(P_MIN / (1 - P_MIN)), math.log(P_MAX / (1 - P_MAX)), GRID_POINTS))
# the exact engine's worst-case search (oracle) budgeted by a count, so that its proposal is a function of the
# seed (a sample-budget audit, a certificate's --rerun): a budget-second buys this many attempts, and the
# CPU-time cap (in multiples of the budget) only stops a search that would run away
ORACLE_ATTEMPTS_PER_SECOND = 25
ORACLE_TIME_CAP_FACTOR = 4.0
# step sizes of a refinement move (multiples of its coarse size): the coarse moves cross the grid's
# spacing, the fine ones climb a sharp ridge - a loss that rises steeply while its event grows rare, e.g.
# the shared-noise-sign deployment of the power suite, whose loss on "never halts" goes 4.6 -> 7.3 while
# the last step's p goes 0.110 -> 0.118 (the power suite's bounds must not depend on luck)
REFINE_SCALES = (1.0, 0.25, 0.0625)
EVERY_LENGTH = 10  # every length 1..EVERY_LENGTH is tried; longer ones on a geometric grid
LONG_LENGTH_RATIO = 1.25


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
    (a step with eps_t = 0 stays exactly where it is). ``eps_t``: an :class:`InputPrivacy` or what its
    ``from_user`` accepts."""
    privacy = InputPrivacy.from_user(eps_t)
    return tuple(moved_level(float(pt), privacy.at(t), int(d), float(fraction))
                 for t, (pt, d) in enumerate(zip(p, directions), start=1))


@functools.lru_cache(maxsize=1 << 16)
def moved_level(pt: float, eps: float, d: int, fraction: float = 1.0) -> float:
    """One step of :func:`neighbour` (cached: the grid moves the same few levels many times)."""
    lo, hi = neighbour_interval(pt, eps)
    target = hi if d > 0 and eps > 0 else lo if d < 0 and eps > 0 else pt
    # float rounding can put the edge of the interval just outside it (1 - p tiny: the ratio of
    # (1 - p') / (1 - p) carries a relative error ~1e-16 / (1 - p)); step back a little then, and
    # stay put only when nothing works (subnormal p_t: p e^{-eps} can underflow to 0)
    for shrink in (1.0, 1 - 1e-9, 1 - 1e-6, 1 - 1e-3):
        moved = float(pt + shrink * fraction * (target - pt))
        if is_neighbour([pt], [moved], eps):
            return moved
    return float(pt)


def _pair(p, dirs, eps_t, family, **params) -> list[Candidate]:
    pp = neighbour(p, dirs, eps_t)
    c = Candidate(tuple(float(x) for x in p), pp, family, params)
    return [c, c.swapped()]


def grid_lengths(max_T: int) -> list[int]:
    """Every length 1..EVERY_LENGTH, then lengths growing by LONG_LENGTH_RATIO, and max_T itself."""
    out = list(range(1, min(max_T, EVERY_LENGTH) + 1))
    while out[-1] < max_T:  # each next length at most LONG_LENGTH_RATIO times the previous one
        out.append(min(max_T, max(out[-1] + 1, int(out[-1] * LONG_LENGTH_RATIO))))
    return out


def direction_patterns(T: int) -> list[tuple[str, tuple[int, ...]]]:
    """(name, directions) of the grid family: constant up and down, mixed (first j up, the rest
    down; every j for T <= EVERY_LENGTH, else j in {1, 2, T/2, T-2, T-1}) and alternating."""
    out = [("up", (1,) * T), ("down", (-1,) * T)]
    splits = range(1, T) if T <= EVERY_LENGTH else sorted({1, 2, T // 2, T - 2, T - 1})
    out += [(f"mixed-{j}", (1,) * j + (-1,) * (T - j)) for j in splits]
    if T >= 3:
        out.append(("alternating", tuple(1 if t % 2 == 0 else -1 for t in range(T))))
    return out


def grid_candidates(eps_t, max_T: int) -> list[Candidate]:
    """The coverage family: every grid level x grid length x direction pattern, both directions."""
    out: list[Candidate] = []
    eps_t = InputPrivacy.from_user(eps_t)
    for T in grid_lengths(max_T):
        for a in GRID_LEVELS:
            for name, dirs in direction_patterns(T):
                out += _pair([a] * T, dirs, eps_t, "grid", a=a, T=T, pattern=name)
    return out


def coverage(max_T: int) -> SearchCoverage:
    """What the search tries and what it skips (with the reason) - the audit JSON's ``search.coverage``."""
    Ts = grid_lengths(max_T)
    skipped_lengths = [T for T in range(1, max_T + 1) if T not in Ts]
    searched = {
        "probability_range": [P_MIN, P_MAX],
        "grid_levels": list(GRID_LEVELS),
        "grid_logit_step": GRID_LOGIT_STEP,
        "lengths": Ts,
        "patterns": ["up", "down", "mixed-j", "alternating"],
        "families": ["grid", "constant", "ramp", "mixed", "laplace"],
    }
    skipped = (
        SkippedRegion("p < 1e-9 or p > 1 - 1e-9",
                      "events driven by such steps have probability ~1e-9 per run, unobservable in any budget"),
        SkippedRegion(f"bands of p narrower than {GRID_LOGIT_STEP:.2f} on the logit scale between grid levels",
                      "grid spacing; explored only by refinement around good candidates"),
        SkippedRegion(f"lengths {_ranges(skipped_lengths)}" if skipped_lengths else "none",
                      f"lengths above {EVERY_LENGTH} on a geometric grid (ratio {LONG_LENGTH_RATIO}) so the first "
                      "round fits the budget; refinement changes lengths by one"),
        SkippedRegion(f"mixed splits other than 1, 2, T/2, T-2, T-1 for T > {EVERY_LENGTH}",
                      "number of patterns grows with T"),
        SkippedRegion("other direction patterns (3^T) and streams with several distinct levels",
                      "only through the mixed / ramp / Laplace families and refinement (single-step flips, "
                      "per-step level moves)"),
        SkippedRegion("moves smaller than the largest allowed",
                      "every family moves each step to the edge of its neighbour interval"),
    )
    return SearchCoverage(searched, skipped)


def _ranges(xs: list[int]) -> str:
    if not xs:
        return ""
    parts, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if x is not None:
            start = prev = x
    return ", ".join(parts)


def initial_candidates(eps_t, max_T: int, *, lengths=(1, 2, 3, 5, 10, 20, 50)) -> list[Candidate]:
    """The first-round candidate pairs of every family, both directions (the coverage grid first)."""
    if max_T < 1:
        raise InvalidParameter(f"max_T must be >= 1, got {max_T!r}")
    Ts = sorted({T for T in lengths if T <= max_T} | {min(max_T, 1)})
    eps_t = InputPrivacy.from_user(eps_t)
    out: list[Candidate] = grid_candidates(eps_t, max_T)
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
    out += laplace_candidates(eps_t, max_T)
    return _dedupe(out)


def laplace_candidates(eps_t, max_T: int) -> list[Candidate]:
    """Corollary 30's streams: background f = tau_L - gap_b, the last step at tau_L + gap_h."""
    out = []
    privacy = InputPrivacy.from_user(eps_t)
    eps1 = privacy.at(1)
    if eps1 == 0:  # eps_1 = 0: the first step's neighbours are identical, no Laplace construction
        return out
    for T in sorted({min(max_T, T) for T in (1, 2, 5)}):
        for gap_b in (5 / eps1, 20 / eps1, 40 / eps1):
            for gap_h in (-20 / eps1, -5 / eps1, 0.0):
                f = [-gap_b] * (T - 1) + [gap_h]
                p = [laplace_cdf(x, rate=privacy.at(t)) for t, x in enumerate(f, start=1)]
                for dirs in ([1] * (T - 1) + [-1], [1] * T):
                    f2 = [x + d for x, d in zip(f, dirs)]
                    pp = tuple(laplace_cdf(x, rate=privacy.at(t)) for t, x in enumerate(f2, start=1))
                    c = Candidate(tuple(p), pp, "laplace", {"gap_b": gap_b, "gap_h": gap_h, "T": T})
                    out += [c, c.swapped()]
    return out


def refine(c: Candidate, eps_t, max_T: int, rng: np.random.Generator, n: int = 8) -> list[Candidate]:
    """Perturbations of a good candidate: levels scaled (every level, or one step) or moved on the logit
    scale, by a step size drawn from :data:`REFINE_SCALES`; length changed; one step's direction changed."""
    out = []
    eps_t = InputPrivacy.from_user(eps_t)
    p = np.asarray(c.p)
    pp = np.asarray(c.p_prime)
    dirs = np.sign(pp - p).astype(int)
    for _ in range(n):
        kind = rng.integers(5)
        q = p.copy()
        d = dirs.copy()
        scale = REFINE_SCALES[rng.integers(len(REFINE_SCALES))]
        if kind == 0:  # scale every level by one factor
            q = np.clip(q * math.exp(rng.normal(0, 0.3 * scale)), P_MIN, P_MAX)
        elif kind == 4:  # move every level by one step on the logit scale (useful near p = 1)
            z = np.log(q) - np.log1p(-q) + rng.normal(0, 0.5 * scale)
            q = np.clip(1 / (1 + np.exp(-z)), P_MIN, P_MAX)
        elif kind == 1:  # scale one step
            i = rng.integers(q.size)
            q[i] = min(max(q[i] * math.exp(rng.normal(0, 0.4 * scale)), P_MIN), P_MAX)
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
        key = (c.p, c.p_prime)  # exact duplicates (rounding every level cost seconds on the grid)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
