"""Exact-law proposer for the Sparse Vector audits: where is the mechanism tight?

The SVT variants of :mod:`audits.power.svt` have numerically exact output laws: given the threshold
noise rho the (noisy) queries are independent, so every output probability is a 1-D integral over
rho. This module maximises, over neighbouring query pairs (q, q') (|q_i - q'_i| <= 1, answers in
[-10, 10]) and over the events E of the problem's :class:`~audits.events.EventSpace`, the bound the
audit's final phase can EXPECT to certify with n runs per input (the Poissonised conditional test
of :func:`audits.statistics.conditional_loss_lower_bound`, at the true probabilities):

    B(q, q', E) = ln(P[E] / P'[E]) - z_alpha sqrt(1 / (n P[E]) + 1 / (n P'[E]))

(:func:`expected_conditional_bound`; a rare event with a big loss can be worse than a frequent one
with a slightly smaller loss). The pairs and events it proposes are only *candidates*: the audit
still selects, validates and estimates on fresh samples (:mod:`audits.audit_engine`), so a wrong
proposal costs samples, never soundness; the engine's other candidate families run as well.

Search (deterministic given ``ProposerSettings``; a fixed amount of work, not a clock: with the
default settings 8 s for SVT4, ~30 s for SVT3, ~20-60 s for SVT5/SVT6 on a busy 2-core machine):

1. ``structured`` (aborting variants): the first k-1 queries at a, moved by d1 = +-1 on the
   neighbour, query k at b moved by d2 = +-1, the later queries at -10 (unmoved), on a grid of
   (a, b). Without values (SVT1, SVT2, SVT4) the event is {first above = k} (the shape of the
   worst case by the coupling rho' = rho + 1 of the privacy proof; see
   benchmarks/svt_exact_limits.py); SVT3 adds the value events {first = k, v in bin} and the value
   tails {first = k, v >= x}, {first = k, v < x}.
2. ``laws of the engine's own starting pairs`` (:func:`audits.power.svt.initial_pairs`), all events.
3. ``local search``: seeded hill climbing over all 10 query values and all 10 moves (in [-1, 1]),
   every event of the event space, started from the best pairs of 1 and 2.

The engine ranks an event only after it has been hit MIN_COUNT times (:mod:`audits.audit_engine`), and
the SVT problem's first round runs every input SVTProblem.initial_samples times: a very rare event
(the strongest SVT3 events have probability ~1e-4) would be dropped before it is ever ranked. So
the search only considers events at least ``min_probability`` likely (20 expected first-round hits),
runs once per ``floors`` multiple of it, and every proposal carries its pair's best events at 4 and
16 times its floor as alternatives (ranked early, when the rarer event is still too noisy).

Laws in the search use Gauss-Legendre quadrature over rho (panels of width 0.5 on [-12, 12], where
the integrand's kinks r = q_j - t lie, wide panels outside; :class:`Quadrature`); the best pairs
are re-scored with the accurate laws of :mod:`audits.power.svt`
(:func:`~audits.power.svt.first_above_distribution` etc.) before they are proposed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.polynomial.legendre import leggauss
from threadpoolctl import threadpool_limits

from gtm_core.errors import InvalidParameter
from gtm_core.validation import check_half_open_unit

from ..audit_scoring import MIN_COUNT
from ..events import EventSpace
from ..statistics import projected_conditional_bound
from .svt import (DOMAIN, N_QUERIES, SVT, VALUE_EDGES, SVTProblem, event_space, first_above_distribution,
                  initial_pairs, svt3_distribution, vector_distribution)


@dataclass(frozen=True)
class ProposerSettings:
    """What the proposer optimises for and how long it searches.

    ``samples``: the audit's total sample budget; the expected bound is evaluated at
    ``final_share * samples / 2`` runs per input (the engine's estimation phase gets about
    1 - selection_share - validation_share = 45% of a sample budget). ``iterations`` x ``batch``
    proposals of the local search from each of the best ``starts`` pairs (a fixed amount of work, not a
    clock, so the result depends on the settings only); ``top`` distinct pairs are proposed.
    """

    samples: int = 20_000_000
    final_share: float = 0.45
    alpha: float = 0.05
    seed: int = 0
    iterations: int = 40
    batch: int = 32
    starts: int = 4
    top: int = 4
    step: float | None = None  # grid step of the structured family (None: 0.5, SVT3 1.0)
    # the engine ranks an event only once it has MIN_COUNT hits: with the SVT problem's first round of
    # SVTProblem.initial_samples runs per input, an event rarer than this would be dropped unranked
    min_probability: float = 2 * MIN_COUNT / SVTProblem.initial_samples
    floors: tuple = (1.0, 4.0)  # one search per floor: events at least floor x min_probability likely

    def __post_init__(self):
        if not (self.samples > 0 and 0 < self.final_share <= 1 and 0 < self.alpha < 1):
            raise InvalidParameter(f"proposer settings: samples > 0, final_share in (0, 1], alpha in (0, 1); "
                                   f"got samples={self.samples!r}, final_share={self.final_share!r}, "
                                   f"alpha={self.alpha!r}")
        check_half_open_unit("proposer settings: min_probability", self.min_probability)
        if not self.floors or any(not f >= 1 for f in self.floors):
            raise InvalidParameter(f"proposer settings: floors must be a non-empty tuple of numbers >= 1, got "
                                   f"{self.floors!r}")
        if self.step is not None and not (0 < self.step <= 10):
            raise InvalidParameter(f"proposer settings: step must be in (0, 10], got {self.step!r}")
        for name in ("iterations", "batch", "starts", "top"):
            if int(getattr(self, name)) < (0 if name == "iterations" else 1):
                raise InvalidParameter(f"proposer settings: {name} must be a positive integer, got "
                                       f"{getattr(self, name)!r}")

    @property
    def runs_per_input(self) -> float:
        return self.final_share * self.samples / 2


@dataclass(frozen=True)
class Proposal:
    """A neighbouring pair, the event it is proposed with (more likely on ``q``), and its law."""

    q: tuple[float, ...]
    q_prime: tuple[float, ...]
    event: str
    membership: np.ndarray = field(compare=False, repr=False)
    objective: float = -math.inf  # expected conditional bound at the settings' runs per input
    loss: float = -math.inf  # ln(P[E] / P'[E]) from the accurate law
    probability: float = 0.0
    probability_prime: float = 0.0
    source: str = ""
    alternatives: tuple = field(default=(), compare=False, repr=False)  # further (name, membership) events

    def to_dict(self) -> dict:
        return {"q": list(self.q), "q_prime": list(self.q_prime), "event": self.event,
                "alternatives": [name for name, _ in self.alternatives],
                "objective": self.objective, "loss": self.loss, "probability": self.probability,
                "probability_prime": self.probability_prime, "source": self.source}


def expected_conditional_bound(pa, pb, n: float, alpha: float):
    """The conditional test's bound at the TRUE probabilities pa = P[E], pb = P'[E] with Poisson(n) runs
    per input: ln(pa / pb) - z_alpha sqrt(1/(n pa) + 1/(n pb)) (normal approximation; this is
    :func:`audits.statistics.projected_conditional_bound` with no estimation pessimism, z = 0)."""
    pa, pb = np.asarray(pa, float), np.asarray(pb, float)
    return projected_conditional_bound(pa, 1.0, pb, 1.0, n, alpha, z=0.0)


# ---------------------------------------------------------------------------
# laws by Gauss-Legendre quadrature (search accuracy)
# ---------------------------------------------------------------------------


class Quadrature:
    """Nodes and weights over rho ~ Lap(b_rho) on [-24 b_rho, 24 b_rho] (mass outside < e^-24).

    Panels of width ``inner`` on [-12, 12] (where the kinks r = q_j - t of the integrand lie) with
    ``nodes`` Gauss-Legendre points each, and panels of width b_rho / 2 outside (smooth there)."""

    def __init__(self, b_rho: float, *, inner: float = 0.5, nodes: int = 6, breaks=()):
        R = 24 * b_rho
        outer = max(b_rho / 2, 1.0)
        edges = np.concatenate([np.arange(-R, -12, outer), np.arange(-12, 12, inner),
                                np.arange(12, R + 1e-9, outer), [-12.0, 12.0, R], np.asarray(breaks, float)])
        edges = np.unique(edges[(edges >= -R) & (edges <= R)])
        x, w = leggauss(nodes)
        a, b = edges[:-1], edges[1:]
        self.r = ((a[:, None] + b[:, None]) / 2 + (b - a)[:, None] / 2 * x[None, :]).ravel()
        w = ((b - a)[:, None] / 2 * w[None, :]).ravel()
        self.wf = w * np.exp(-np.abs(self.r) / b_rho) / (2 * b_rho)  # weight x threshold density


def _lap_cdf(x, b):
    """Pr[Lap(b) <= x], elementwise (no overflow for large |x|)."""
    e = 0.5 * np.exp(-np.abs(x) / b)
    return np.where(x < 0, e, 1 - e)


class Law:
    """Batched output laws of one SVT variant: Q (P, 10) query vectors -> (P, n_codes) probabilities,
    codes as in :meth:`audits.power.svt.SVT.sample_codes`."""

    def __init__(self, mech: SVT, quad: Quadrature | None = None):
        self.mech = mech
        breaks = VALUE_EDGES - mech.t if mech.name == "SVT3" else ()
        # the vector laws (1024 codes) are searched on a coarser grid (3 nodes per panel)
        self.quad = quad or Quadrature(mech.rho_scale, breaks=breaks, nodes=6 if mech.aborts else 3)

    def x(self, Q):
        """rho + t - q on the nodes: shape (P, m, G)."""
        return (self.quad.r + self.mech.t)[None, None, :] - np.asarray(Q, float)[:, :, None]

    def dist(self, Q) -> np.ndarray:
        Q = np.atleast_2d(np.asarray(Q, float))
        m = self.mech
        if not m.aborts:
            if m.nu_scale == 0:  # SVT5: exact and cheap
                return np.array([vector_distribution(m, q) for q in Q])
            return self._vectors(Q)
        x = self.x(Q)
        below = _lap_cdf(x, m.nu_scale)  # Pr[q_j + nu_j < rho + t]
        surv = np.concatenate([np.ones(below.shape[:1] + (1,) + below.shape[2:]), np.cumprod(below, axis=1)], axis=1)
        if m.name != "SVT3":
            out = np.empty((Q.shape[0], N_QUERIES + 1))
            out[:, 1:] = (surv[:, :-1] * (1 - below)) @ self.quad.wf
            out[:, 0] = surv[:, -1] @ self.quad.wf
            return out
        # SVT3: Pr[first = k, v in [e_b, e_b+1)] = sum_g S_g [thr_g < e_b+1] (C(e_b+1 - q) - C(max(e_b, thr_g) - q))
        # with S = survival x weight, thr = rho + t (ascending nodes) and C the noise CDF: prefix sums over
        # the nodes, so the cost is O(nodes + bins) per query
        edges = np.concatenate([[-np.inf], VALUE_EDGES, [np.inf]])
        S = surv[:, :-1] * self.quad.wf  # (P, m, G)
        zero = np.zeros(S.shape[:2] + (1,))
        cS = np.concatenate([zero, np.cumsum(S, axis=2)], axis=2)
        cSB = np.concatenate([zero, np.cumsum(S * below, axis=2)], axis=2)
        idx = np.searchsorted(self.quad.r + m.t, edges, side="left")  # nodes with thr < e
        C = _lap_cdf(edges[None, None, :] - Q[:, :, None], m.nu_scale)  # (P, m, B + 1)
        A = cS[:, :, idx] * C
        mass = (A[:, :, 1:] - A[:, :, :-1]) - (cSB[:, :, idx[1:]] - cSB[:, :, idx[:-1]])
        out = np.empty((Q.shape[0], 1 + mass.shape[1] * mass.shape[2]))
        out[:, 1:] = mass.reshape(Q.shape[0], -1)
        out[:, 0] = surv[:, -1] @ self.quad.wf
        return out

    def _vectors(self, Q):
        m = self.mech
        bits = ((np.arange(2 ** N_QUERIES)[:, None] >> np.arange(N_QUERIES)[None, :]) & 1).astype(float)
        out = np.empty((Q.shape[0], 2 ** N_QUERIES))
        for i, q in enumerate(Q):
            x = (self.quad.r + m.t)[None, :] - q[:, None]  # (m, G)
            la = np.log(np.maximum(_lap_cdf(-x, m.nu_scale), 1e-300))
            lb = np.log(np.maximum(_lap_cdf(x, m.nu_scale), 1e-300))
            out[i] = np.exp(bits @ la + (1 - bits) @ lb) @ self.quad.wf
        return out



    def factors(self, values):
        """Per query value v (on the nodes): Pr[below | rho] (Nv, G) and the "above" emission
        Pr[above, code | rho] (Nv, G, K): K = 1 without values, K = value bins for SVT3."""
        m = self.mech
        v = np.asarray(values, float)
        thr = self.quad.r + m.t
        below = _lap_cdf(thr[None, :] - v[:, None], m.nu_scale)
        if m.name != "SVT3":
            return below, (1 - below)[:, :, None]
        edges = np.concatenate([[-np.inf], VALUE_EDGES, [np.inf]])
        lo = np.maximum(edges[:-1][None, None, :], thr[None, :, None]) - v[:, None, None]
        hi = edges[1:][None, None, :] - v[:, None, None]
        emit = np.where(hi > lo, _lap_cdf(hi, m.nu_scale) - _lap_cdf(lo, m.nu_scale), 0.0)
        return below, emit

    def structured(self, k: int, fa, fb, fc) -> np.ndarray:
        """Laws of the query vectors (a,)*(k-1) + (b,) + (c,)*(10-k) for every a and b of two value grids:
        shape (len(a), len(b), n_codes), by matrix products over the nodes (aborting variants). ``fa``,
        ``fb``, ``fc``: :meth:`factors` of the a grid, the b grid and the single value c."""
        (bA, eA), (bB, eB), (bC, eC) = fa, fb, fc
        Na, Nb, K = len(bA), len(bB), eA.shape[2]
        wf = self.quad.wf
        out = np.zeros((Na, Nb, 1 + N_QUERIES * K))
        Wj = np.broadcast_to(wf, bA.shape)
        for j in range(1, k):  # first above among the first k - 1 queries: no dependence on b
            out[:, :, 1 + (j - 1) * K: 1 + j * K] = np.einsum("ag,agk->ak", Wj, eA)[:, None, :]
            Wj = Wj * bA
        W = Wj  # wf * below(a)^(k-1), (Na, G)
        G = W.shape[1]
        out[:, :, 1 + (k - 1) * K: 1 + k * K] = (W @ eB.transpose(1, 0, 2).reshape(G, Nb * K)).reshape(Na, Nb, K)
        tail = bB  # below(b) * below(c)^(j-k-1)
        for j in range(k + 1, N_QUERIES + 1):
            X = tail[:, :, None] * eC[0][None]  # (Nb, G, K)
            out[:, :, 1 + (j - 1) * K: 1 + j * K] = (W @ X.transpose(1, 0, 2).reshape(G, Nb * K)).reshape(Na, Nb, K)
            tail = tail * bC[0]
        out[:, :, 0] = W @ tail.T
        return out

def accurate_dist(mech: SVT, q) -> np.ndarray:
    """The module's accurate law (audits.power.svt) of one query vector."""
    if mech.name == "SVT3":
        return svt3_distribution(mech, q)
    return first_above_distribution(mech, q) if mech.aborts else vector_distribution(mech, q)


# ---------------------------------------------------------------------------
# the objective
# ---------------------------------------------------------------------------


def best_events(DA, DB, events: EventSpace, n: float, alpha: float, min_probability: float = 0.0):
    """For each pair (rows of DA, DB): the best (value, event index, direction) over the events and
    both directions (direction +1: E more likely on the first input); events less likely than
    ``min_probability`` on their likely side are not proposed."""
    ea, eb = events.probabilities(np.asarray(DA).T).T, events.probabilities(np.asarray(DB).T).T
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = (ea > 0) & (eb > 0)
        fwd = np.where(ok & (ea >= min_probability), expected_conditional_bound(ea, eb, n, alpha), -np.inf)
        bwd = np.where(ok & (eb >= min_probability), expected_conditional_bound(eb, ea, n, alpha), -np.inf)
    fwd, bwd = np.nan_to_num(fwd, nan=-np.inf), np.nan_to_num(bwd, nan=-np.inf)
    i_f, i_b = np.argmax(fwd, axis=1), np.argmax(bwd, axis=1)
    rows = np.arange(len(DA))
    vf, vb = fwd[rows, i_f], bwd[rows, i_b]
    return np.maximum(vf, vb), np.where(vf >= vb, i_f, i_b), np.where(vf >= vb, 1, -1)


def _clip(v):
    return np.clip(np.asarray(v, float), DOMAIN[0], DOMAIN[1])


def _structured(mech: SVT, law: Law, events_of, n: float, alpha: float, min_p: float, step: float, keep: int):
    """Family 1 (module docstring): best (q, q') of the structured shapes, scored on their own event
    space; returns [(value, q, q')]."""
    a = np.arange(DOMAIN[0], DOMAIN[1] + 1e-9, step)
    c = DOMAIN[0]
    f = {d: law.factors(_clip(a + d)) for d in (-1.0, 0.0, 1.0)}
    fc = law.factors([c])
    found = []
    for k in range(1, N_QUERIES + 1):
        DA = law.structured(k, f[0.0], f[0.0], fc).reshape(a.size * a.size, -1)
        for d1 in ((1.0, -1.0) if k > 1 else (0.0,)):
            for d2 in (1.0, -1.0):
                DB = law.structured(k, f[d1], f[d2], fc).reshape(a.size * a.size, -1)
                Q = np.full((a.size, a.size, N_QUERIES), c)
                Q[:, :, : k - 1] = a[:, None, None]
                Q[:, :, k - 1] = a[None, :]
                Q = Q.reshape(-1, N_QUERIES)
                D = np.zeros(N_QUERIES)
                D[: k - 1], D[k - 1] = d1, d2
                Qp = _clip(Q + D)
                v, _, _ = best_events(DA, DB, events_of(Q[0], Qp[0]), n, alpha, min_p)
                v = np.where(np.any(Q != Qp, axis=1), v, -np.inf)
                for i in np.argsort(-v)[:keep]:
                    found.append((float(v[i]), Q[i], Qp[i]))
    found.sort(key=lambda x: -x[0])
    return found[:keep]


def _score_pairs(law, pairs, events_of, n, alpha, min_p):
    """[(value, q, q')] for explicit pairs (grouped by their event space)."""
    out = []
    groups: dict = {}
    for q, qp in pairs:
        ev = events_of(q, qp)
        groups.setdefault(id(ev), (ev, []))[1].append((q, qp))
    for ev, ps in groups.values():
        Q = np.array([p[0] for p in ps], float)
        Qp = np.array([p[1] for p in ps], float)
        v, _, _ = best_events(law.dist(Q), law.dist(Qp), ev, n, alpha, min_p)
        out += [(float(v[i]), Q[i], Qp[i]) for i in range(len(ps))]
    return out


def _local_search(law, start, events_of, n, alpha, min_p, rng, settings: ProposerSettings):
    """Seeded hill climbing from one (value, q, q'): 1-3 coordinates of q (or of the move) changed per
    proposal, ``batch`` proposals per iteration, the best one kept when it improves."""
    val, q, qp = start
    q, d = np.array(q, float), np.array(qp, float) - np.array(q, float)
    for _ in range(settings.iterations):
        Q, D = np.repeat(q[None], settings.batch, 0), np.repeat(d[None], settings.batch, 0)
        for r in range(settings.batch):
            for _ in range(int(rng.integers(1, 4))):
                j = int(rng.integers(N_QUERIES))
                if rng.random() < 0.6:
                    Q[r, j] = Q[r, j] + rng.normal(0.0, (0.25, 1.0, 4.0)[int(rng.integers(3))])
                else:
                    D[r, j] = (-1.0, 0.0, 1.0, float(rng.uniform(-1, 1)))[int(rng.integers(4))]
        Q = np.round(_clip(Q), 3)
        Qp = np.round(_clip(Q + D), 3)
        ok = np.any(Q != Qp, axis=1)
        if not ok.any():
            continue
        Q, Qp = Q[ok], Qp[ok]
        vals = _score_pairs(law, list(zip(Q, Qp)), events_of, n, alpha, min_p)
        j = int(np.argmax([v for v, _, _ in vals]))
        if vals[j][0] > val:
            val, q, d = vals[j][0], vals[j][1], vals[j][2] - vals[j][1]
    return val, q, _clip(q + d)


def proposed_problem(mech: SVT, settings: ProposerSettings = ProposerSettings()) -> SVTProblem:
    """The SVT audit problem with this module's proposals as extra candidates (family ``exact-law``)."""
    return SVTProblem(mech, proposals=propose(mech, settings))


def propose(mech: SVT, settings: ProposerSettings = ProposerSettings()) -> list[Proposal]:
    """The best (pair, event) proposals for ``mech`` (module docstring), each scored on the events the
    audit examines for its pair (:func:`audits.power.svt.event_space`): the search runs once per floor
    f of ``settings.floors`` with events at least f x ``min_probability`` likely (frequent events are
    ranked early by the engine, rare ones only later), ``settings.top`` distinct pairs each. Every
    proposal carries as alternatives its pair's best events at 4 and 16 times its floor.
    Deterministic given ``settings``."""
    cache: dict = {}

    def events_of(q, q_prime):
        return event_space(mech, q, q_prime, cache)

    law = Law(mech)
    out: list[Proposal] = []
    # one BLAS thread: the products are small (threads only contend on a busy machine), and the sums
    # are then done in one fixed order (the proposals do not depend on the machine's thread count)
    with threadpool_limits(limits=1, user_api="blas"):
        for i, floor in enumerate(settings.floors):
            rng = np.random.default_rng(np.random.SeedSequence([int(settings.seed), 0x5F7, i]))
            for p in _propose_at(mech, law, events_of, settings, settings.min_probability * floor, rng):
                if all((p.q, p.q_prime) != (o.q, o.q_prime) for o in out):
                    out.append(p)
    out.sort(key=lambda p: -p.objective)
    return out


def _propose_at(mech, law, events_of, settings: ProposerSettings, min_p: float, rng) -> list[Proposal]:
    """One search (families 1-3 of the module docstring) with events at least ``min_p`` likely."""
    n, alpha = settings.runs_per_input, settings.alpha
    pool = []
    if mech.aborts:
        step = settings.step or (1.0 if mech.name == "SVT3" else 0.5)
        pool += [(v, q, qp, "structured") for v, q, qp in
                 _structured(mech, law, events_of, n, alpha, min_p, step, keep=2 * settings.starts)]
    base = [(np.array(c.p), np.array(c.p_prime)) for c in initial_pairs()]
    scored = sorted(_score_pairs(law, base, events_of, n, alpha, min_p), key=lambda x: -x[0])
    pool += [(v, q, qp, "initial-pairs") for v, q, qp in scored[: 2 * settings.starts]]
    pool.sort(key=lambda x: -x[0])
    starts, seen = [], set()
    for v, q, qp, src in pool:
        key = (tuple(np.round(q, 3)), tuple(np.round(qp, 3)))
        if key not in seen and np.isfinite(v):
            seen.add(key)
            starts.append((v, q, qp, src))
    finals = list(starts)
    for v, q, qp, src in starts[: settings.starts]:
        lv, lq, lqp = _local_search(law, (v, q, qp), events_of, n, alpha, min_p, rng, settings)
        finals.append((lv, lq, lqp, src + "+local-search"))
    finals.sort(key=lambda x: -x[0])
    # the best distinct pairs (by the search's quadrature), re-scored with the accurate law
    best, seen = [], set()
    for _v, q, qp, src in finals:
        q, qp = tuple(float(x) for x in np.round(q, 3)), tuple(float(x) for x in np.round(qp, 3))
        if (q, qp) in seen or (qp, q) in seen or q == qp:
            continue
        seen.add((q, qp))
        best.append((q, qp, src))
        if len(best) >= settings.top:
            break
    out: list[Proposal] = []
    for q, qp, src in best:
        ev = events_of(q, qp)
        DA, DB = accurate_dist(mech, q)[None], accurate_dist(mech, qp)[None]
        val, i, direction = best_events(DA, DB, ev, n, alpha, min_p)
        if not np.isfinite(val[0]):
            continue
        i = int(i[0])
        if direction[0] < 0:
            q, qp, DA, DB = qp, q, DB, DA
        pa, pb = float(ev.probabilities(DA[0])[i]), float(ev.probabilities(DB[0])[i])
        alts = []
        for f in (4.0, 16.0):  # the same pair's best events at higher floors, same direction
            v2, j, d2 = best_events(DA, DB, ev, n, alpha, min(min_p * f, 0.5))
            if np.isfinite(v2[0]) and d2[0] > 0 and int(j[0]) != i:
                alts.append((ev.names[int(j[0])], ev.membership[int(j[0])].copy()))
        out.append(Proposal(q, qp, ev.names[i], ev.membership[i].copy(), float(val[0]), math.log(pa / pb), pa, pb,
                            src, tuple(alts)))
    return out
