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
* ``fine``       - the fine family (:func:`fine_candidates`): levels every FINE_SPACING = 0.5 largest moves
  over the whole range on lengths 1..FINE_SHORT, and on lengths up to EVERY_LENGTH near the claimed plan's
  :func:`decision_levels` when the plan is known; constant up, one-split and alternating patterns (violations
  about one neighbour move wide, which fall between the grid's levels).
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
* levels between grid points on the streams the fine family does not reach (lengths above FINE_SHORT
  away from the claimed plan's decision levels, every length above FINE_SHORT without a plan, lengths
  above EVERY_LENGTH): a violation confined to a band of p narrower than GRID_LOGIT_STEP on the logit
  scale (a factor ~4.4 for small p) can fall between grid points there; refinement (:func:`refine`,
  level moves on the logit scale) explores around good candidates only;
* lengths above EVERY_LENGTH that are not on the geometric grid (ratio LONG_LENGTH_RATIO), and
  for those long lengths only the splits j in {1, 2, T/2, T-2, T-1} of the mixed pattern: the
  number of patterns grows with T, the first round must fit the budget;
* streams whose steps sit at different grid levels (the product grid has 29^T points), direction
  patterns other than constant / mixed / alternating (there are 3^T) and moves smaller than the
  largest allowed (but the fine family's half moves on constant streams) - only through the mixed,
  ramp and Laplace families and refinement (single-step flips, per-step level moves).

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
FINE_SPACING = 0.5  # the fine family's level spacing, in largest neighbour moves
FINE_SHORT = 3  # the fine family covers lengths 1..FINE_SHORT over the whole range [P_MIN, P_MAX] ...
FINE_PLAN_MARGIN = 4.0  # ... and lengths up to EVERY_LENGTH within this many moves of the plan's decision levels


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


DECISION_NOISE_QUANTILES = (0.0, 0.5, 0.99)  # eta_1, eta_2 at these quantiles of Exp(tau) for decision_levels


def decision_levels(plan, max_T: int) -> tuple[float, ...]:
    """Where the claimed plan's per-step decision changes fastest: for every step t <= max_T and each pair of
    noises (eta_1, eta_2) at the quantiles :data:`DECISION_NOISE_QUANTILES` of Exp(tau_1), Exp(tau_2) (eta_1
    capped at mu_1, its likely range on the good event of Lemma 19), the success probability p at which the
    count mean lambda q = rho_t exp(eps_t s_t (mu_1 - eta_1 + eta_2)) q crosses the threshold c_t + 1/2
    (q = p for s_t = +1, 1 - p for the flipped variant; purification is ignored: it moves q by phi_t only).
    Sorted, clipped to [P_MIN, P_MAX], duplicates within a relative 1e-9 removed. A step with eps_t = 0
    contributes its lambda = rho_t crossing."""
    out = []
    for t in range(1, min(int(max_T), plan.horizon) + 1):
        st = plan.step(t)
        for a in DECISION_NOISE_QUANTILES:
            eta1 = min(-plan.tau1 * math.log1p(-a), plan.mu1)
            for b in DECISION_NOISE_QUANTILES:
                eta2 = -st.tau2 * math.log1p(-b)
                z = st.eps_t * st.s * (plan.mu1 - eta1 + eta2)
                q = (st.c + 0.5) / (st.rho * math.exp(z))
                if not 0 < q < 1:
                    continue
                out.append(min(max(q if st.s == 1 else 1.0 - q, P_MIN), P_MAX))
    levels: list[float] = []
    for x in sorted(out):
        if not levels or x > levels[-1] * (1 + 1e-9):
            levels.append(float(x))
    return tuple(levels)


def move_units(p: float, eps: float) -> float:
    """u(p): ln(p)/eps up to p* = 1/(1 + e^eps), continued by (ln p* + ln(1 - p*) - ln(1 - p))/eps above: a
    largest allowed neighbour move (:func:`moved_level`) changes it by exactly 1 (the planted suite's
    :func:`audits.power.planted.move_coordinate`, scalar)."""
    ps = 1.0 / (1.0 + math.exp(eps))
    if p <= ps:
        return math.log(p) / eps
    return (math.log(ps) + math.log1p(-ps) - math.log1p(-p)) / eps


def level_of_units(u: float, eps: float) -> float:
    """The inverse of :func:`move_units`."""
    ps = 1.0 / (1.0 + math.exp(eps))
    if u <= math.log(ps) / eps:
        return float(math.exp(u * eps))
    return float(-math.expm1(math.log(ps) + math.log1p(-ps) - u * eps))


@functools.lru_cache(maxsize=64)
def fine_levels(eps: float) -> tuple[float, ...]:
    """The fine family's levels: [P_MIN, P_MAX] every FINE_SPACING moves at privacy ``eps`` (equally spaced in
    :func:`move_units`, so a level two places up is one largest move up: the constant pairs share inputs)."""
    lo, hi = move_units(P_MIN, eps), move_units(P_MAX, eps)
    count = int(math.ceil((hi - lo) / FINE_SPACING - 1e-9))
    return tuple(min(max(level_of_units(lo + k * (hi - lo) / count, eps), P_MIN), P_MAX) for k in range(count + 1))


def fine_region(plan, eps: float, max_T: int) -> tuple[float, float] | None:
    """The range of p (in move units at ``eps``: (u_lo, u_hi)) where the fine family also covers the lengths
    FINE_SHORT+1..EVERY_LENGTH: the plan's :func:`decision_levels` widened by FINE_PLAN_MARGIN moves each side
    (None without a plan)."""
    if plan is None:
        return None
    levels = decision_levels(plan, min(max_T, EVERY_LENGTH))
    if not levels:
        return None
    us = [move_units(x, eps) for x in levels]
    return min(us) - FINE_PLAN_MARGIN, max(us) + FINE_PLAN_MARGIN


def fine_patterns(T: int) -> list[tuple[str, tuple[int, ...]]]:
    """The fine family's direction patterns: constant up, every one-split (first j steps up, the rest down)
    and alternating; the swapped pairs give the reversed patterns."""
    out = [("up", (1,) * T)]
    out += [(f"mixed-{j}", (1,) * j + (-1,) * (T - j)) for j in range(1, T)]
    if T >= 3:
        out.append(("alternating", tuple(1 if t % 2 == 0 else -1 for t in range(T))))
    return out


def fine_candidates(eps_t, max_T: int, plan=None) -> list[Candidate]:
    """The fine family (family ``fine``): every level of :func:`fine_levels` (half-move spacing at the smallest
    eps_t of the first EVERY_LENGTH steps), each moved along :func:`fine_patterns`, both directions, on the
    lengths 1..FINE_SHORT everywhere and FINE_SHORT+1..EVERY_LENGTH inside :func:`fine_region` (the claimed
    plan decides where this family is densest; the coarse grid still covers everything). Constant streams
    also get their half-move pairs (a level and the next one: no extra inputs)."""
    privacy = InputPrivacy.from_user(eps_t)
    top = min(max_T, EVERY_LENGTH)
    positive = [privacy.at(t) for t in range(1, top + 1) if privacy.at(t) > 0]
    if not positive:
        return []
    eps = min(positive)
    levels = fine_levels(eps)
    region = fine_region(plan, eps, max_T)
    out: list[Candidate] = []
    for T in range(1, top + 1):
        if T <= FINE_SHORT:
            chosen = range(len(levels))
        elif region is not None:
            chosen = [i for i, x in enumerate(levels) if region[0] <= move_units(x, eps) <= region[1]]
        else:
            continue
        for i in chosen:
            a = levels[i]
            for name, dirs in fine_patterns(T):
                if name == "up" and i + 2 < len(levels) and is_neighbour([a] * T, [levels[i + 2]] * T, privacy):
                    # the level two places up: one move (to float rounding), and an input the grid samples anyway
                    c = Candidate((a,) * T, (levels[i + 2],) * T, "fine", {"a": a, "T": T, "pattern": name})
                    out += [c, c.swapped()]
                else:
                    out += _pair([a] * T, dirs, privacy, "fine", a=a, T=T, pattern=name)
            if i + 1 < len(levels) and is_neighbour([a] * T, [levels[i + 1]] * T, privacy):
                c = Candidate((a,) * T, (levels[i + 1],) * T, "fine", {"a": a, "T": T, "pattern": "half-up"})
                out += [c, c.swapped()]
    return out


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


def coverage(max_T: int, eps_t=None, plan=None) -> SearchCoverage:
    """What the search tries and what it skips (with the reason) - the audit JSON's ``search.coverage``.
    ``eps_t`` (the audit's input privacy; None: no fine family) and ``plan`` (the claimed plan, when known)
    describe the fine family's reach."""
    Ts = grid_lengths(max_T)
    skipped_lengths = [T for T in range(1, max_T + 1) if T not in Ts]
    searched = {
        "probability_range": [P_MIN, P_MAX],
        "grid_levels": list(GRID_LEVELS),
        "grid_logit_step": GRID_LOGIT_STEP,
        "lengths": Ts,
        "patterns": ["up", "down", "mixed-j", "alternating"],
        "families": ["grid", "fine", "constant", "ramp", "mixed", "laplace"],
    }
    fine_top = min(max_T, EVERY_LENGTH)
    short = min(FINE_SHORT, fine_top)
    region = None
    if eps_t is not None:
        privacy = InputPrivacy.from_user(eps_t)
        positive = [privacy.at(t) for t in range(1, fine_top + 1) if privacy.at(t) > 0]
        eps = min(positive) if positive else None
        region = fine_region(plan, eps, max_T) if eps is not None else None
        searched["fine"] = {
            "spacing_moves": FINE_SPACING, "eps_t": eps, "levels": len(fine_levels(eps)) if eps else 0,
            "lengths_everywhere": list(range(1, short + 1)),
            "lengths_near_plan": list(range(short + 1, fine_top + 1)) if region is not None else [],
            "plan_region_p": None if region is None else [level_of_units(region[0], eps),
                                                           level_of_units(region[1], eps)],
            "patterns": ["up", "mixed-j", "alternating", "half-up (constant streams)"]}
    if eps_t is None:
        narrow = (f"bands of p narrower than {GRID_LOGIT_STEP:.2f} on the logit scale between grid levels",
                  "grid spacing; explored only by refinement around good candidates")
    else:
        where = "" if fine_top <= short else (
            f"lengths {short + 1}-{fine_top} outside the claimed plan's decision region, " if region is not None
            else f"lengths {short + 1}-{fine_top} (no claimed plan: give --config), ")
        narrow = (f"bands of p narrower than {GRID_LOGIT_STEP:.2f} on the logit scale on {where}lengths above "
                  f"{EVERY_LENGTH}, and patterns other than up / one-split / alternating",
                  f"the fine family ({FINE_SPACING} moves apart) covers lengths 1-{short} everywhere"
                  + ("" if fine_top <= short else f" and {short + 1}-{fine_top} near the plan's decision levels")
                  + "; elsewhere the coarse grid, and refinement around good candidates")
    long_lengths = (f"lengths {_ranges(skipped_lengths)}; " if skipped_lengths else "") + (
        f"for lengths above {EVERY_LENGTH} the mixed splits other than 1, 2, T/2, T-2, T-1")
    skipped = (
        SkippedRegion("p < 1e-9 or p > 1 - 1e-9",
                      "events driven by such steps have probability ~1e-9 per run, unobservable in any budget"),
        SkippedRegion(*narrow),
        SkippedRegion(long_lengths,
                      f"lengths above {EVERY_LENGTH} on a geometric grid (ratio {LONG_LENGTH_RATIO}), and few splits, "
                      "so the first round fits the budget; refinement changes lengths by one"),
        SkippedRegion("other direction patterns (3^T), streams with several distinct levels, and moves smaller "
                      "than the largest allowed (but the fine family's half moves)",
                      "only through the mixed / ramp / Laplace families and refinement (single-step flips, per-step "
                      "level moves); every family moves each step to the edge of its neighbour interval"),
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


def initial_candidates(eps_t, max_T: int, *, lengths=(1, 2, 3, 5, 10, 20, 50), plan=None) -> list[Candidate]:
    """The first-round candidate pairs of every family, both directions (the coverage grid first, then the
    fine family, densest where ``plan`` - the claimed plan, when known - decides fastest)."""
    if max_T < 1:
        raise InvalidParameter(f"max_T must be >= 1, got {max_T!r}")
    Ts = sorted({T for T in lengths if T <= max_T} | {min(max_T, 1)})
    eps_t = InputPrivacy.from_user(eps_t)
    out: list[Candidate] = grid_candidates(eps_t, max_T) + fine_candidates(eps_t, max_T, plan)
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
