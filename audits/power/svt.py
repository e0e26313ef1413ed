"""Cross-domain check: the six Sparse Vector variants of Lyu, Su and Li (VLDB 2017), audited with
the same two-phase engine as the GTM.

Settings of the DP-Sniper evaluation (Bichsel et al., S&P 2021): claimed eps = 0.1, 10 queries of
sensitivity 1, answers in [-10, 10], neighbouring inputs differ by at most 1 in every component,
c = 1 (at most one "above" answer), threshold t = 0.5 for SVT1 and t = 1 otherwise.

=====  ==============================  ===================  ==================  ======
alg.   threshold noise rho              query noise nu_i     output              abort
=====  ==============================  ===================  ==================  ======
SVT1   Lap(1/eps1), eps1 = eps/2        Lap(2c/eps2)         T / F               yes
SVT2   Lap(c/eps1), redrawn after T     Lap(2c/eps2)         T / F               yes
SVT3   Lap(1/eps1)                      Lap(c/eps2)          noisy answer / F    yes
SVT4   Lap(1/eps1), eps1 = eps/4        Lap(1/eps2)          T / F               yes
SVT5   Lap(1/eps1)                      none                 T / F               no
SVT6   Lap(1/eps1)                      Lap(1/eps2)          T / F               no
=====  ==============================  ===================  ==================  ======

(eps2 = eps - eps1.) SVT1 and SVT2 are eps-DP; SVT3-SVT6 are not.

Output codes and events (the GTM's halting-time events, generalised):

* aborting variants (c = 1): code k = index of the first "above" answer (0 = none), exactly a
  halting time; events: singletons, tails and heads (:func:`audits.events.halting_events`).
* SVT3 also reveals the noisy answer v: code = (k, bin of v) on a fixed grid of value bins;
  events: every (k, bin), and for every k the value tails {v >= x} and {v < x}.
* non-aborting variants: code = the 10-bit answer vector; events: every vector, the number of
  "above" answers (singletons and both tails) and "above at query i".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import integrate

from gtm_core.errors import InvalidParameter
from gtm_core.numeric import laplace_cdf, laplace_density

from ..events import EventSpace, halting_events

N_QUERIES = 10
DOMAIN = (-10.0, 10.0)
VALUE_EDGES = np.arange(-60.0, 62.0, 4.0)  # SVT3 value bins (plus two open ends)

PROPOSAL_FAMILY = "exact-law"  # candidates proposed from the exact law (audits/power/svt_proposer.py)
PUBLISHED_DP_SNIPER = {"SVT1": None, "SVT2": None, "SVT3": 0.172, "SVT4": 0.169, "SVT5": 1.761, "SVT6": 0.272}


@dataclass(frozen=True)
class SVT:
    name: str
    eps: float = 0.1
    c: int = 1
    t: float = 1.0

    @property
    def eps1(self) -> float:
        return self.eps / 4 if self.name == "SVT4" else self.eps / 2

    @property
    def eps2(self) -> float:
        return self.eps - self.eps1

    @property
    def rho_scale(self) -> float:
        return self.c / self.eps1 if self.name == "SVT2" else 1 / self.eps1

    @property
    def nu_scale(self) -> float:
        return {"SVT1": 2 * self.c / self.eps2, "SVT2": 2 * self.c / self.eps2, "SVT3": self.c / self.eps2,
                "SVT4": 1 / self.eps2, "SVT5": 0.0, "SVT6": 1 / self.eps2}[self.name]

    @property
    def aborts(self) -> bool:
        return self.name in ("SVT1", "SVT2", "SVT3", "SVT4")

    def n_codes(self) -> int:
        if self.name == "SVT3":
            return 1 + N_QUERIES * (VALUE_EDGES.size + 1)
        if self.aborts:
            return N_QUERIES + 1
        return 2 ** N_QUERIES

    def sample_codes(self, q, n: int, rng: np.random.Generator) -> np.ndarray:
        """n runs on query answers q (length 10) -> output codes."""
        q = np.asarray(q, dtype=float)
        rho = rng.laplace(0.0, self.rho_scale, n)
        if self.nu_scale > 0:
            noisy = q[None, :] + rng.laplace(0.0, self.nu_scale, (n, q.size))
        else:
            noisy = np.broadcast_to(q[None, :], (n, q.size))
        above = noisy >= (rho + self.t)[:, None]
        if not self.aborts:
            weights = 1 << np.arange(q.size, dtype=np.int64)
            return above.astype(np.int64) @ weights
        # c = 1: the first "above" answer ends the run (rho is never redrawn before it)
        any_above = above.any(axis=1)
        first = np.argmax(above, axis=1)
        k = np.where(any_above, first + 1, 0)
        if self.name != "SVT3":
            return k
        v = noisy[np.arange(n), first]
        b = np.searchsorted(VALUE_EDGES, v, side="right")  # 0..len(edges)
        return np.where(any_above, 1 + (k - 1) * (VALUE_EDGES.size + 1) + b, 0)

    def events(self) -> EventSpace:
        if self.name == "SVT3":
            return _svt3_events()
        if self.aborts:
            return halting_events(N_QUERIES)
        return _vector_events()


def make(name: str) -> SVT:
    if name not in PUBLISHED_DP_SNIPER:
        raise InvalidParameter(f"SVT variant must be one of SVT1..SVT6, got {name!r}")
    return SVT(name, t=0.5 if name == "SVT1" else 1.0)


def _svt3_events() -> EventSpace:
    B = VALUE_EDGES.size + 1
    n_codes = 1 + N_QUERIES * B
    names, rows = ["none"], []
    r = np.zeros(n_codes, dtype=bool)
    r[0] = True
    rows.append(r)
    for k in range(1, N_QUERIES + 1):
        base = 1 + (k - 1) * B
        for b in range(B):
            r = np.zeros(n_codes, dtype=bool)
            r[base + b] = True
            names.append(f"first={k},bin={b}")
            rows.append(r)
        for b in range(1, B):
            x = VALUE_EDGES[b - 1]
            hi = np.zeros(n_codes, dtype=bool)
            hi[base + b: base + B] = True
            names.append(f"first={k},v>={x:g}")
            rows.append(hi)
            lo = np.zeros(n_codes, dtype=bool)
            lo[base: base + b] = True
            names.append(f"first={k},v<{x:g}")
            rows.append(lo)
    halting = halting_events(N_QUERIES)
    for name, row in zip(halting.names, halting.membership):  # index events, any value
        r = np.zeros(n_codes, dtype=bool)
        for k in np.nonzero(row)[0]:
            if k == 0:
                r[0] = True
            else:
                r[1 + (k - 1) * B: 1 + k * B] = True
        names.append(name)
        rows.append(r)
    return EventSpace(tuple(names), np.array(rows))


def _vector_events() -> EventSpace:
    n_codes = 2 ** N_QUERIES
    codes = np.arange(n_codes)
    bits = (codes[:, None] >> np.arange(N_QUERIES)[None, :]) & 1
    count = bits.sum(axis=1)
    names, rows = [], []
    for code in range(n_codes):
        r = np.zeros(n_codes, dtype=bool)
        r[code] = True
        names.append("".join("T" if b else "F" for b in bits[code]))
        rows.append(r)
    for j in range(N_QUERIES + 1):
        names.append(f"#above={j}")
        rows.append(count == j)
        if 0 < j:
            names.append(f"#above>={j}")
            rows.append(count >= j)
            names.append(f"#above<{j}")
            rows.append(count < j)
    for i in range(N_QUERIES):
        names.append(f"above@{i + 1}")
        rows.append(bits[:, i] == 1)
    return EventSpace(tuple(names), np.array(rows))


def _with_score_events(base: EventSpace, w) -> EventSpace:
    """Add linear-score events {S >= m}, {S <= m} with S = sum_j w_j (2 bit_j - 1).

    w_j = sign(q_j - q'_j): an "above" answer at j is more likely on the first input when w_j > 0.
    These are the events a linear classifier (DP-Sniper's logistic regression) would find.
    """
    codes = np.arange(2 ** N_QUERIES)
    bits = (codes[:, None] >> np.arange(N_QUERIES)[None, :]) & 1
    score = (2 * bits - 1) @ np.asarray(w)
    names, rows = list(base.names), list(base.membership)
    for m in np.unique(score):
        names.append(f"score>={m}")
        rows.append(score >= m)
        names.append(f"score<={m}")
        rows.append(score <= m)
    return EventSpace(tuple(names), np.array(rows))


# ---------------------------------------------------------------------------
# candidate pairs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryPair:
    p: tuple[float, ...]  # query answers on X  (named p for the engine's witness fields)
    p_prime: tuple[float, ...]  # on the neighbour X'
    family: str
    params: dict = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self):
        return {"q": list(self.p), "q_prime": list(self.p_prime), "family": self.family}


def _clip(v):
    return tuple(float(min(max(x, DOMAIN[0]), DOMAIN[1])) for x in v)


def _qpair(a, b, family, out):
    a, b = _clip(a), _clip(b)
    if a != b and max(abs(x - y) for x, y in zip(a, b)) <= 1 + 1e-12:
        out.append(QueryPair(a, b, family))
        out.append(QueryPair(b, a, family))


def dp_sniper_patterns() -> list[QueryPair]:
    """StatDP / DP-Sniper input patterns (component-wise neighbourhood), both orders."""
    n = N_QUERIES
    one = [1.0] * n
    out: list[QueryPair] = []
    for b in ([0] + [1] * (n - 1), [2] + [1] * (n - 1), [2] + [0] * (n - 1), [0] + [2] * (n - 1),
              [2] * (n // 2) + [0] * (n - n // 2), [2] * n, [0] * n):
        _qpair(one, b, "dp-sniper", out)
    _qpair([1] * (n // 2) + [0] * (n - n // 2), [0] * (n // 2) + [1] * (n - n // 2), "dp-sniper", out)
    return out


def initial_pairs() -> list[QueryPair]:
    out = dp_sniper_patterns()
    levels = (-10.0, 0.0, 1.0, 10.0)
    for x in (0.0, 1.0, 10.0):  # first 9 queries at x, the last at y, moved in (d1, d2)
        for y in (0.0, 1.0, 10.0):
            for d1 in (-1, 1):
                for d2 in (-1, 1):
                    a = [x] * (N_QUERIES - 1) + [y]
                    b = [x + d1] * (N_QUERIES - 1) + [y + d2]
                    _qpair(a, b, "prefix-last", out)
    for x in levels:  # halves / alternation at one level
        a = [x] * N_QUERIES
        _qpair(a, [x + 1] * 5 + [x - 1] * 5, "halves", out)
        _qpair(a, [x + (1 if i % 2 else -1) for i in range(N_QUERIES)], "alternating", out)
    seen, uniq = set(), []
    for c in out:
        if (c.p, c.p_prime) not in seen:
            seen.add((c.p, c.p_prime))
            uniq.append(c)
    return uniq


def refine_pair(c: QueryPair, rng: np.random.Generator, n: int = 8) -> list[QueryPair]:
    out: list[QueryPair] = []
    a = np.array(c.p)
    d = np.array(c.p_prime) - a
    for _ in range(n):
        kind = rng.integers(3)
        a2, d2 = a.copy(), d.copy()
        if kind == 0:
            a2 = a2 + rng.choice([-3, -1, 1, 3])
        elif kind == 1:
            i = rng.integers(a2.size)
            a2[i] += rng.choice([-5, -2, -1, 1, 2, 5])
        else:
            i = rng.integers(a2.size)
            d2[i] = rng.choice([-1.0, 0.0, 1.0])
        _qpair(a2, a2 + d2, c.family + "+refined", out)
    return out[::2]


def event_space(mech: SVT, q, q_prime, cache: dict | None = None) -> EventSpace:
    """The events audited on the pair (q, q'): the variant's events, plus for the non-aborting
    variants the linear-score events of the pair's move directions (:func:`_with_score_events`)."""
    if cache is None:
        base = mech.events()
    else:
        if "base" not in cache:
            cache["base"] = mech.events()
        base = cache["base"]
    if mech.aborts:
        return base
    w = tuple(int(np.sign(a - b)) for a, b in zip(q, q_prime))
    if cache is None:
        return _with_score_events(base, w)
    if w not in cache:
        cache[w] = _with_score_events(base, w)
    return cache[w]


class SVTProblem:
    """The engine's view of one SVT variant (inputs = query-answer vectors).

    ``proposals``: (pair, event) proposals computed from the variant's exact law
    (:func:`audits.power.svt_proposer.propose`; objects with ``q``, ``q_prime``, ``event`` and
    ``membership``, optionally ``alternatives``: further (name, membership) events). Each becomes a
    candidate of the family ``exact-law`` audited on its proposed events only (fewer events ranked at
    once: less selection noise); the other families run as
    before, and the engine selects, validates and estimates on fresh samples, so a proposal is never
    trusted - it competes."""

    initial_samples = 30_000  # first-round runs per input: the strongest SVT events are rare (~3e-4)

    def __init__(self, mech: SVT, proposals=()):
        self.mech = mech
        self._cache: dict = {}
        self.proposals = tuple(proposals)
        self._proposed = {}
        for p in self.proposals:
            key = (tuple(float(x) for x in p.q), tuple(float(x) for x in p.q_prime))
            events = [(p.event, p.membership)] + list(getattr(p, "alternatives", ()))
            self._proposed[key] = EventSpace(tuple(f"exact-law:{name}" for name, _ in events),
                                             np.array([np.asarray(row, bool) for _, row in events]))

    def initial_candidates(self):
        return [QueryPair(a, b, PROPOSAL_FAMILY) for a, b in self._proposed] + initial_pairs()

    def refine(self, candidate, rng):
        return refine_pair(candidate, rng)

    def inputs(self, candidate):
        return candidate.p, candidate.p_prime

    def events(self, candidate):
        if candidate.family == PROPOSAL_FAMILY:
            return self._proposed[(candidate.p, candidate.p_prime)]
        return event_space(self.mech, candidate.p, candidate.p_prime, self._cache)

    def sample_codes(self, inp, n, seed):
        return self.mech.sample_codes(inp, int(n), np.random.default_rng(seed))

    def describe_input(self, inp):
        return [float(x) for x in inp]


# ---------------------------------------------------------------------------
# numerical probabilities (for reporting the true loss of a witness)
# ---------------------------------------------------------------------------


def first_above_distribution(mech: SVT, q) -> np.ndarray:
    """Pr[first "above" at k] (k = 1..10; index 0 = none) for the aborting, value-free variants."""
    if not mech.aborts or mech.name == "SVT3":
        raise InvalidParameter("first_above_distribution is for SVT1, SVT2 and SVT4")
    q = np.asarray(q, dtype=float)
    b_rho, b_nu = mech.rho_scale, mech.nu_scale
    r = np.linspace(-60 * b_rho, 60 * b_rho, 100_001)
    f = laplace_density(r, scale=b_rho)
    below = laplace_cdf((r + mech.t)[:, None] - q[None, :], scale=b_nu)  # Pr[q_j + nu_j < rho + t]
    out = np.zeros(N_QUERIES + 1)
    surv = f.copy()
    for k in range(N_QUERIES):
        out[k + 1] = integrate.trapezoid(surv * (1 - below[:, k]), r)
        surv = surv * below[:, k]
    out[0] = integrate.trapezoid(surv, r)
    return out


def svt3_distribution(mech: SVT, q) -> np.ndarray:
    """Pr[output code] for SVT3 (codes as in :meth:`SVT.sample_codes`: first "above" index and the
    value bin of its noisy answer; code 0 = no "above" answer).

    Given rho, Pr[first above = k, v in [lo, hi)] = prod_{j<k} F_j * Pr[nu_k in [max(lo, rho + t) - q_k,
    hi - q_k)]; the integral over rho uses the same grid as :func:`first_above_distribution`.
    """
    if mech.name != "SVT3":
        raise InvalidParameter("svt3_distribution is for SVT3")
    q = np.asarray(q, dtype=float)
    b_rho, b_nu = mech.rho_scale, mech.nu_scale
    r = np.linspace(-60 * b_rho, 60 * b_rho, 100_001)
    f = laplace_density(r, scale=b_rho)
    x = r + mech.t
    edges = np.concatenate([[-np.inf], VALUE_EDGES, [np.inf]])
    B = VALUE_EDGES.size + 1
    out = np.zeros(1 + N_QUERIES * B)
    surv = f.copy()
    for k in range(N_QUERIES):
        for bi in range(B):
            lo = np.maximum(edges[bi], x) - q[k]
            hi = edges[bi + 1] - q[k]
            cell = (laplace_cdf(np.clip(hi, -1e6, 1e6), scale=b_nu)
                    - laplace_cdf(np.clip(lo, -1e6, 1e6), scale=b_nu))
            mass = np.where(hi > lo, cell, 0.0)
            out[1 + k * B + bi] = integrate.trapezoid(surv * mass, r)
        surv = surv * laplace_cdf(x - q[k], scale=b_nu)
    out[0] = integrate.trapezoid(surv, r)
    return out


def vector_distribution(mech: SVT, q) -> np.ndarray:
    """Pr[answer vector] for SVT5 / SVT6 (codes as in :meth:`SVT.sample_codes`).

    SVT5 (no query noise) is exact: the vector is determined by where rho falls among the
    points q_j - t. SVT6 integrates over rho on a grid (trapezoid, step 0.06 / eps1-scale units).
    """
    if mech.aborts:
        raise InvalidParameter("vector_distribution is for SVT5 and SVT6")
    q = np.asarray(q, dtype=float)
    b_rho = mech.rho_scale
    codes = np.arange(2 ** N_QUERIES)
    bits = (codes[:, None] >> np.arange(N_QUERIES)[None, :]) & 1
    if mech.nu_scale == 0:
        out = np.zeros(codes.size)
        cuts = np.sort(np.unique(q - mech.t))
        edges = np.concatenate([[-np.inf], cuts, [np.inf]])
        cdf = laplace_cdf(np.clip(edges, -1e6, 1e6), scale=b_rho)
        for hi, plo, phi in zip(edges[1:], cdf[:-1], cdf[1:]):
            # for rho in (lo, hi) query j is above iff q_j - t >= hi (no query when hi = inf)
            above = (q - mech.t >= hi) if np.isfinite(hi) else np.zeros(q.size, dtype=bool)
            code = int((above.astype(np.int64) << np.arange(N_QUERIES)).sum())
            out[code] += phi - plo
        return out
    r = np.linspace(-60 * b_rho, 60 * b_rho, 12_001)
    f = laplace_density(r, scale=b_rho)
    above = 1 - laplace_cdf((r + mech.t)[:, None] - q[None, :], scale=mech.nu_scale)
    with np.errstate(divide="ignore"):
        la, lb = np.maximum(np.log(above), -745.0), np.maximum(np.log1p(-above), -745.0)
    logp = bits @ la.T + (1 - bits) @ lb.T  # (codes, grid)
    return integrate.trapezoid(np.exp(logp) * f[None, :], r, axis=1)


def exact_witness_loss(mech: SVT, witness: dict, events: EventSpace | None = None) -> float | None:
    """The numerically computed loss ln(P[E]/P'[E]) of an audit witness.

    The event is taken from the witness' ``event_codes`` (the set of output codes it contains).
    """
    if mech.name == "SVT3":
        dist = svt3_distribution
    else:
        dist = first_above_distribution if mech.aborts else vector_distribution
    codes = list(witness["event_codes"])
    a = float(dist(mech, witness["p"])[codes].sum())
    b = float(dist(mech, witness["p_prime"])[codes].sum())
    if a <= 0:
        return -math.inf
    return math.inf if b <= 0 else math.log(a / b)
