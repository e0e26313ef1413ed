"""Planted violations: tests of the tester.

A :class:`PlantedDeployment` behaves exactly like the correct GTM (the vectorised simulator of
:mod:`gtm_core.simulator`) except on a small region of the input space, drawn at random from a
seed by :func:`plant` and unknown to the auditor:

* a stream length ``T`` (uniform in 1..max_T);
* a band of success probabilities: every step's p_t within ``half_width`` neighbour moves of a
  centre level ``centre`` (centre uniform on the logit scale over [1e-9, 1 - 1e-9], half width
  uniform in [8, 20] moves; at eps_t = 0.1 that is a factor e^{1.6}..e^{4} in p for small p);
* a direction pattern ``s`` in {+1, -1}^T: constant, mixed (first j steps one way, the rest the
  other) or alternating, one of the three uniformly;
* a leak event: the halting code ``code`` (0 = never, 1..T) the correct GTM is least likely to
  output at the centre stream.

Coordinates. u_t(p) = ln(p) / eps_t for p <= p* = 1 / (1 + e^{eps_t}) and
u_t(p*) + (ln(1 - p*) - ln(1 - p)) / eps_t above: a largest allowed neighbour move of step t
(:func:`audits.pair_search.neighbour`, :func:`gtm_core.neighbours.neighbour_interval`) changes u_t by
exactly 1 (by at most 1 for any neighbour), so S(p) = sum_t s_t u_t(p_t) moves by exactly T when
every step is moved as far as allowed along the pattern, and by less along any other pattern.

The leak. On a stream p of length T the deployment first runs the correct GTM, then, with
probability q(p) and independently, replaces the output by ``code``:

    q(p) = (q_hi if floor((S(p) - S(c)) / T + 1/2) is odd else q_lo) * exp(-taper * dist(p)),

dist(p) = sum_t max(0, |u_t(p_t) - u_t(c)| - half_width) the distance (in moves) to the band and
taper = 0.5 / T. The output law is (1 - q) GTM(p) + q delta_code. The parity of S flips under a
full pattern move, so every pair (p, p moved along s) inside the band straddles a high and a low
cell: its loss on {code} is ``loss`` (drawn uniformly in [1.2, 2.5]) - q_lo is solved so that the
*planted pair* (the constant centre stream c and c moved along s) has exactly that loss, the
correct GTM's own probabilities of ``code`` at both streams included (numerical halting law of
:mod:`audits.power.distribution`). q_hi (the probability of the leak event on the loaded input,
>= 1e-4 by construction) is drawn log-uniformly in [q_min, 1e-2] (q_min = 1e-3 by default),
raised when the GTM's own probability of ``code`` needs it. Outside the band q decays by e^{-taper}
per move, so no pair's loss on {code} exceeds loss + 0.5 <= 3 (up to the GTM's own contribution),
and far from the band (q < 1e-12 beyond ~41 T moves) the deployment is the correct GTM up to a
total-variation distance below 1e-12. A stream of another length is never touched.

The narrow suite (:func:`plant_narrow`, beside the wide suite above, which stays as it is): the same
deployment and leak, drawn from the class of real implementation bugs - a clipped noise, a rounded
count mean, a sampler switch, an off-by-one - that bite only where the claimed mechanism sits at the
edge of a bound:

* half width uniform in :data:`NARROW_HALF_WIDTH_RANGE` = [0.5, 2] moves (down to half a neighbour move:
  at eps_t = 0.1 a band of p a factor e^{0.1} wide);
* length: with probability 0.8 uniform in 1..min(10, max_T), else uniform in 11..max_T (when max_T > 10);
* the same three direction patterns;
* loss uniform in :data:`NARROW_LOSS_RANGE` = [1.2, 4];
* the leak's probability on the loaded input (the planted pair's moved stream, after the taper: a band
  narrower than one move leaves the moved stream T (1 - half_width) moves outside it) log-uniform in
  [q_min, 1e-2], q_min = 1e-4 by default, never raised (unlike the wide suite's q_hi);
* location: with probability 1/2 uniform on the logit scale over [1e-9, 1 - 1e-9] (``"uniform"``), else
  (``"decision"``) within 2 moves of a level where the claimed plan's per-step decision changes fastest:
  :func:`audits.pair_search.decision_levels` (where the count mean lambda_t q, its noises eta_1, eta_2 at
  the edges and middle of their likely ranges, crosses the threshold c_t + 1/2), for one step t <= T.

A narrow draw whose loss cannot be planted (the correct GTM's own probability of every halting code at the
centre is too large for that loss and leak probability: typical near the decision levels of short streams)
is redrawn (length, centre, width, pattern, loss, probability; the location kind, drawn first, is kept) from
the same generator, up to :data:`NARROW_DRAWS` times; so "decision" locations lean to where some code is
rare, and the drawn parameters are those of the first plantable draw; the last of them raises the leak
probability to what the loss needs, as the wide suite does (so every seed plants).

:func:`planted_pair` returns the pair on which the loss is planted and :func:`true_loss` the loss
of any pair on any set of codes from the planted law (GTM numerical law + q), used by the
benchmark ``benchmarks/bench_planted.py`` to say where the misses were planted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gtm_core.errors import UnsupportedConfiguration
from gtm_core.planners import Plan
from gtm_core.simulator import simulate
from gtm_core.validation import check_int, check_nonnegative_int, check_real, check_stream

from ..pair_search import P_MAX, P_MIN, decision_levels, neighbour
from .distribution import event_loss, halting_distribution

LOSS_RANGE = (1.2, 2.5)
HALF_WIDTH_RANGE = (8.0, 20.0)
Q_MAX = 1e-2
TAPER_TOTAL = 0.5  # taper per move = TAPER_TOTAL / T: a pair's loss is at most loss + TAPER_TOTAL
PATTERNS = ("constant", "mixed", "alternating")
NARROW_HALF_WIDTH_RANGE = (0.5, 2.0)
NARROW_LOSS_RANGE = (1.2, 4.0)
NARROW_Q_MIN = 1e-4
NARROW_SHORT = 10  # the narrow suite draws lengths 1..NARROW_SHORT with probability NARROW_SHORT_SHARE
NARROW_SHORT_SHARE = 0.8
NARROW_DRAWS = 100  # a narrow draw whose loss cannot be planted is redrawn (same stream) up to this many times
DECISION_JITTER = 2.0  # moves: a "decision" location is within this of a decision level


@dataclass(frozen=True)
class Region:
    """Where a planted deployment leaks (see the module docstring)."""

    seed: int
    T: int
    centre: float  # success probability of the band's centre (every step)
    half_width: float  # in neighbour moves
    pattern: str
    directions: tuple[int, ...]
    code: int  # the leak event's halting code
    loss: float  # the planted loss on {code} at the planted pair
    q_hi: float
    q_lo: float
    eps: tuple[float, ...]  # eps_t of steps 1..T
    suite: str = "wide"  # "wide" (plant) or "narrow" (plant_narrow)
    location: str = "uniform"  # how the centre was drawn: "uniform" (logit scale) or "decision" (near the plan's)

    def to_dict(self) -> dict:
        return dict(self.__dict__, directions=list(self.directions), eps=list(self.eps))


def move_coordinate(p, eps: float) -> np.ndarray:
    """u(p): ln(p)/eps below p* = 1/(1 + e^eps), continued by -ln(1-p)/eps above (a largest allowed
    neighbour move changes u by exactly 1)."""
    p = np.asarray(p, dtype=float)
    ps = 1.0 / (1.0 + math.exp(eps))
    low = np.log(np.maximum(p, 1e-300)) / eps
    high = (math.log(ps) + math.log1p(-ps) - np.log(np.maximum(1.0 - p, 1e-300))) / eps
    return np.where(p <= ps, low, high)


def _pattern(kind: str, T: int, rng: np.random.Generator) -> tuple[int, ...]:
    if T == 1 or kind == "constant":
        return (1,) * T
    if kind == "mixed":
        j = int(rng.integers(1, T))
        return (1,) * j + (-1,) * (T - j)
    return tuple(1 if t % 2 == 0 else -1 for t in range(T))


def plant(plan: Plan, seed: int, *, max_T: int = 10, q_min: float = 1e-3) -> Region:
    """The region of planted deployment number ``seed`` (a fixed function of the seed and the plan)."""
    check_nonnegative_int("seed", seed)
    check_int("max_T", max_T, minimum=1, maximum=plan.horizon)
    check_real("q_min", q_min, low=1e-4, high=Q_MAX)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x91A7ED]))
    T = int(rng.integers(1, max_T + 1))
    lo, hi = math.log(P_MIN / (1 - P_MIN)), math.log(P_MAX / (1 - P_MAX))
    centre = float(1 / (1 + math.exp(-rng.uniform(lo, hi))))
    half_width = float(rng.uniform(*HALF_WIDTH_RANGE))
    kind = PATTERNS[int(rng.integers(len(PATTERNS)))] if T > 1 else "constant"
    dirs = _pattern(kind, T, rng)
    loss = float(rng.uniform(*LOSS_RANGE))
    q_hi = float(math.exp(rng.uniform(math.log(q_min), math.log(Q_MAX))))
    return _solve_region(plan, int(seed), T, centre, half_width, kind, dirs, loss, q_hi)


def _step_privacy(plan: Plan, T: int) -> tuple[float, ...]:
    eps = tuple(float(plan.step(t).eps_t) for t in range(1, T + 1))
    if not all(e > 0 for e in eps):
        raise UnsupportedConfiguration("planted deployments need eps_t > 0 at every step of the region")
    return eps


def _solve_region(plan: Plan, seed: int, T: int, centre: float, half_width: float, kind: str, dirs, loss: float,
                  q_hi: float, *, suite: str = "wide", location: str = "uniform", raise_q: bool = True) -> Region:
    """The region with q_lo solved so that the planted pair has exactly ``loss`` on the leak code. ``q_hi`` is
    the leak's probability inside the band; the planted pair's loaded stream (one move along the pattern from
    the centre) lies T max(0, 1 - half_width) moves outside a band narrower than a move, where the taper
    scales it (the wide suite's bands are >= 8 moves wide: no taper there). ``raise_q``: raise q_hi when the
    GTM's own probability of the code needs it (the wide suite); else such a draw is refused."""
    eps = _step_privacy(plan, T)
    p = [centre] * T
    pp = neighbour(p, dirs, list(eps))
    g_low, g_high = halting_distribution(plan, p), halting_distribution(plan, pp)
    code = int(np.argmin(g_low))
    a, b = float(g_high[code]), float(g_low[code])  # the GTM's own probability of the code (high / low cell)
    # q at the loaded stream = q_hi * taper (the deployment's own taper of the loaded stream's distance to the band)
    u_c = np.array([float(move_coordinate(centre, e)) for e in eps])
    u_moved = np.array([float(move_coordinate(x, e)) for x, e in zip(pp, eps)])
    taper = math.exp(-TAPER_TOTAL / T * float(np.maximum(np.abs(u_moved - u_c) - half_width, 0.0).sum()))
    # loss = ln((h + (1 - h) a) / (q_lo + (1 - q_lo) b)), h = q_hi * taper: q_lo >= 0 needs h large enough
    need = (b * math.exp(loss) - a) / max(1 - a, 1e-300)
    if not raise_q and q_hi * taper < 2 * need:
        raise UnsupportedConfiguration(f"seed {seed}: the GTM's own probability of code {code} needs a leak "
                                       f"probability {2 * need:.3g} > {q_hi * taper:.3g}")
    h = min(max(q_hi * taper, 2 * need), 0.5)
    q_hi = h / taper
    q_lo = (math.exp(-loss) * (h + (1 - h) * a) - b) / (1 - b)
    if q_lo < 0:
        raise UnsupportedConfiguration(f"seed {seed}: the GTM's own probability of code {code} is too large to plant "
                                       f"loss {loss:.2f}")
    return Region(int(seed), T, centre, half_width, kind, tuple(dirs), code, loss, q_hi, float(q_lo), eps,
                  suite=suite, location=location)


def narrow_region(plan: Plan, *, seed: int, T: int, centre: float, half_width: float, directions, pattern: str,
                  loss: float, q_event: float) -> Region:
    """A narrow region with given parameters (a test's own band): ``q_event`` is the leak's probability at the
    planted pair's loaded stream (taper included), never raised; the rest as :func:`plant_narrow` draws them.

    Raises:
        UnsupportedConfiguration: the loss cannot be planted on this code with this leak probability.
    """
    check_int("T", T, minimum=1, maximum=plan.horizon)
    check_real("centre", centre, low=P_MIN, high=P_MAX)
    check_real("half_width", half_width, low=0.0)
    if len(directions) != T:
        raise UnsupportedConfiguration(f"directions must have T = {T} entries, got {len(directions)}")
    eps = _step_privacy(plan, T)
    pp = neighbour([centre] * T, directions, list(eps))
    u_c = np.array([float(move_coordinate(centre, e)) for e in eps])
    u_moved = np.array([float(move_coordinate(x, e)) for x, e in zip(pp, eps)])
    taper = math.exp(-TAPER_TOTAL / T * float(np.maximum(np.abs(u_moved - u_c) - half_width, 0.0).sum()))
    return _solve_region(plan, int(seed), T, centre, half_width, pattern, tuple(directions), loss, q_event / taper,
                         suite="narrow", location="given", raise_q=False)


def plant_narrow(plan: Plan, seed: int, *, max_T: int = 20, q_min: float = NARROW_Q_MIN) -> Region:
    """The region of narrow planted deployment number ``seed`` (the module docstring's narrow suite; a fixed
    function of the seed and the plan, with its own seed stream: narrow seed k is not wide seed k)."""
    check_nonnegative_int("seed", seed)
    check_int("max_T", max_T, minimum=1, maximum=plan.horizon)
    check_real("q_min", q_min, low=1e-4, high=Q_MAX)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x4A770]))
    location = "uniform" if rng.random() < 0.5 else "decision"
    for attempt in range(NARROW_DRAWS):
        try:
            return _draw_narrow(plan, int(seed), max_T, q_min, rng, location, raise_q=attempt == NARROW_DRAWS - 1)
        except UnsupportedConfiguration:
            continue  # the GTM's own probability of every code is too large for this loss here: redraw
    raise UnsupportedConfiguration(f"seed {seed}: no plantable narrow region in {NARROW_DRAWS} draws")


def _draw_narrow(plan: Plan, seed: int, max_T: int, q_min: float, rng: np.random.Generator, location: str, *,
                 raise_q: bool) -> Region:
    short = min(NARROW_SHORT, max_T)
    if max_T > short and rng.random() >= NARROW_SHORT_SHARE:
        T = int(rng.integers(short + 1, max_T + 1))
    else:
        T = int(rng.integers(1, short + 1))
    eps = _step_privacy(plan, T)
    if location == "uniform":
        lo, hi = math.log(P_MIN / (1 - P_MIN)), math.log(P_MAX / (1 - P_MAX))
        centre = float(1 / (1 + math.exp(-rng.uniform(lo, hi))))
    else:
        levels = decision_levels(plan, T)
        base = float(levels[int(rng.integers(len(levels)))])
        centre = level_at_coordinate(float(move_coordinate(base, eps[0])) + rng.uniform(-DECISION_JITTER,
                                                                                        DECISION_JITTER), eps[0])
    half_width = float(rng.uniform(*NARROW_HALF_WIDTH_RANGE))
    kind = PATTERNS[int(rng.integers(len(PATTERNS)))] if T > 1 else "constant"
    dirs = _pattern(kind, T, rng)
    loss = float(rng.uniform(*NARROW_LOSS_RANGE))
    q_event = float(math.exp(rng.uniform(math.log(q_min), math.log(Q_MAX))))
    taper = math.exp(-TAPER_TOTAL * max(0.0, 1.0 - half_width))
    return _solve_region(plan, int(seed), T, centre, half_width, kind, dirs, loss, q_event / taper, suite="narrow",
                         location=location, raise_q=raise_q)


def level_at_coordinate(u: float, eps: float) -> float:
    """The inverse of :func:`move_coordinate`: the success probability p with u(p) = ``u`` (clipped to
    [1e-9, 1 - 1e-9])."""
    ps = 1.0 / (1.0 + math.exp(eps))
    if u <= math.log(ps) / eps:
        p = math.exp(u * eps)
    else:
        p = 1.0 - math.exp(math.log(ps) + math.log1p(-ps) - u * eps)
    return float(min(max(p, P_MIN), P_MAX))


class PlantedDeployment:
    """The correct GTM of ``plan`` with the leak of ``region`` (callable as ``fn(p, n, seed)``, the
    interface of :class:`audits.targets.CallableTarget`)."""

    def __init__(self, plan: Plan, region: Region):
        self.plan, self.region = plan, region
        r = region
        self._u_c = np.array([float(move_coordinate(r.centre, e)) for e in r.eps])
        self._s_c = float(np.dot(r.directions, self._u_c))

    def leak_probability(self, p) -> float:
        """q(p) of the module docstring (0 for streams of another length)."""
        r = self.region
        p = np.asarray(p, dtype=float)
        if p.size != r.T:
            return 0.0
        u = np.array([float(move_coordinate(x, e)) for x, e in zip(p, r.eps)])
        cell = math.floor((float(np.dot(r.directions, u)) - self._s_c) / r.T + 0.5)
        dist = float(np.maximum(np.abs(u - self._u_c) - r.half_width, 0.0).sum())
        base = r.q_hi if cell % 2 else r.q_lo
        return float(base * math.exp(-TAPER_TOTAL / r.T * dist))

    def law(self, p) -> np.ndarray:
        """Probability of every halting code (0 = never, 1..T): (1 - q) GTM law + q at the leak code."""
        g = halting_distribution(self.plan, list(p))
        q = self.leak_probability(p)
        out = (1 - q) * g
        if len(p) == self.region.T:
            out[self.region.code] += q
        return out

    def __call__(self, p, n: int, seed: int) -> np.ndarray:
        arr = check_stream("p", p)
        check_nonnegative_int("n", n)
        rng = np.random.default_rng(seed)
        halt = simulate(self.plan, arr, int(n), rng).halt
        q = self.leak_probability(arr)
        if q > 0:
            halt[rng.random(int(n)) < q] = self.region.code
        return halt


def planted_pair(region: Region) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(loaded, other): the centre stream moved along the pattern (q_hi) and the centre stream (q_lo)."""
    p = [region.centre] * region.T
    return tuple(neighbour(p, region.directions, list(region.eps))), tuple(p)


def true_loss(deployment: PlantedDeployment, p, p_prime, codes) -> float:
    """ln(P[E] / P'[E]) of the planted law for the event E = ``codes`` (:func:`.distribution.event_loss`:
    budget-stop codes have probability 0, the deployment never stops)."""
    return event_loss(deployment.law(p), deployment.law(p_prime), codes)


def best_grid_candidate(deployment: PlantedDeployment, *, min_probability: float = 1e-4) -> dict:
    """The strongest pair of the auditor's coverage grid (:func:`audits.pair_search.grid_candidates`) for
    this planted deployment, from the planted law: largest loss on the leak event with probability
    >= ``min_probability`` on the loaded side. Only grid levels within the band (+- 2 moves) are
    scanned (elsewhere q is below its band value by the taper). Says whether a miss is a coverage
    miss (no grid pair exceeds the claim) or an allocation miss (one does, the audit did not find it)."""
    from ..pair_search import GRID_LEVELS, direction_patterns

    r = deployment.region
    best = {"loss": -math.inf, "p": None, "p_prime": None, "probability": None, "pattern": None}
    u_c = float(move_coordinate(r.centre, r.eps[0]))
    for a in GRID_LEVELS:
        if abs(float(move_coordinate(a, r.eps[0])) - u_c) > r.half_width + 2:
            continue
        p = [a] * r.T
        for name, dirs in direction_patterns(r.T):
            pp = list(neighbour(p, dirs, list(r.eps)))
            for x, y in ((p, pp), (pp, p)):
                prob = float(deployment.law(x)[r.code])
                loss = true_loss(deployment, x, y, [r.code])
                if prob >= min_probability and loss > best["loss"]:
                    best = {"loss": loss, "p": list(x), "p_prime": list(y), "probability": prob, "pattern": name}
    return best
