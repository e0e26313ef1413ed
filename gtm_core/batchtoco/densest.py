"""Section 8.2: densest subgraph on an insertion-only edge (multi)graph stream, with a batch DP algorithm.

Objective. f(X, S) = rho(S) = |E(S)| / |S| for a non-empty vertex set S (unweighted densest subgraph,
node weights c(v) = 1; E(S) counts the multi-edges with both endpoints in S). Under an edge insertion
every rho(S) is non-decreasing (data monotone, Section 8.2) and changes by 1/|S| <= 1/2 (a single vertex
induces no edge, the streams have no self-loops): the objective is 1/2-sensitive, within the 1-sensitivity
Theorem 42 assumes (the test mechanism's Lap(2/eps_t) is calibrated to 1 and so is conservative here).

Batch algorithm A. The exponential mechanism (McSherry & Talwar, "Mechanism design via differential
privacy", FOCS 2007) over all 2^n - 1 non-empty vertex sets with utility rho and sensitivity Delta = 1/2:
Pr[S] ~ exp(eps rho(S) / (2 Delta)) = exp(eps rho(S)); pure eps-edge-DP. Accuracy (McSherry-Talwar):
with probability >= 1 - beta_a, rho(Y) >= OPT - (2 Delta / eps) ln((2^n - 1) / beta_a), so alpha = 1 and
E_A = (1/eps) ln((2^n - 1) / beta_a).

Departure from the paper. Section 8.2 instantiates Theorem 42 with Dhulipala, Liu, Raskhodnikova, Shi,
Shun and Yu (FOCS 2022): eps-DP, alpha = 1/(1 + eta), additive O(log^4 n / eps) with probability
1 - 1/n^c; the other published eps-DP batch algorithms (Nguyen & Vullikanti, ICML 2021: private
sequential/parallel peeling; Farhadi, Hajiaghayi & Shi, AISTATS 2022: a 2-approximation with
polylogarithmic additive error) also lose a constant factor. Those bounds only beat the exponential
mechanism's n ln 2 / eps once log^4 n << n, far beyond the n <= 16 vertices on which this module can
enumerate the output law; here the exponential mechanism is both better (alpha = 1) and exactly
checkable (:meth:`DensestSubgraphProblem.law`). Theorem 42 needs only A's privacy (eps-DP), its
(alpha, E_A) guarantee and the objective's monotonicity and sensitivity, which are stated above.

Exact OPT. ``OPT_t = max_S rho(S)`` by Goldberg's max-flow construction ("Finding a maximum density
subgraph", UC Berkeley TR 1984) with networkx (:func:`densest_by_maxflow`, exact rational, integer
capacities), and by brute force over the 2^n - 1 sets (:func:`densest_by_enumeration`; the state keeps
|E(S)| for every S incrementally, as the sampler needs it anyway). The benchmark reads OPT_t from the
enumeration at every step and checks it against the max-flow at a grid of steps.

Samplers are float64 (seeded; a benchmark, not a deployment), as for the other problems.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import check_positive_int

#: largest vertex count for the exact exponential mechanism over all vertex sets
DENSEST_MAX_VERTICES = 16
#: the density's sensitivity under one edge insertion (1/|S| with |S| >= 2)
SENSITIVITY = 0.5


@dataclass
class DensestState:
    inside: np.ndarray  # |E(S)| for every non-empty S, indexed like DensestSubgraphProblem.masks
    pairs: np.ndarray = field(repr=False)  # edge multiplicities (n x n, symmetric)
    edges: int = 0


class DensestSubgraphProblem:
    """Densest subgraph with the exact exponential mechanism over all vertex sets (small n)."""

    name = "densest"
    approximation = 1.0

    def __init__(self, n_vertices: int):
        self.n = check_positive_int("n_vertices", n_vertices)
        if self.n > DENSEST_MAX_VERTICES:
            raise UnsupportedConfiguration(
                f"densest enumerates all vertex sets: n_vertices must be <= {DENSEST_MAX_VERTICES}, got {self.n}")
        self.masks = np.arange(1, 2 ** self.n, dtype=np.int64)
        self.sizes = np.array([bin(int(m)).count("1") for m in self.masks], dtype=np.int64)
        self.k = None

    def empty_state(self) -> DensestState:
        return DensestState(np.zeros(len(self.masks), dtype=np.int64), np.zeros((self.n, self.n), dtype=np.int64))

    def insert(self, state: DensestState, edge) -> None:
        if edge is None:
            return
        u, v = edge
        if u == v:
            raise InvalidParameter(f"edge must join two distinct vertices, got {edge!r}")
        state.inside += (self.masks >> u) & (self.masks >> v) & 1
        state.pairs[u, v] += 1
        state.pairs[v, u] += 1
        state.edges += 1

    def value(self, state: DensestState, solution) -> float:
        """rho(S) for the vertex set encoded by the bit mask ``solution``."""
        mask = int(solution)
        return float(state.inside[mask - 1]) / bin(mask).count("1")

    def densities(self, state: DensestState) -> np.ndarray:
        return state.inside / self.sizes

    def _probabilities(self, state: DensestState, eps: float) -> np.ndarray:
        logw = (eps / (2 * SENSITIVITY)) * self.densities(state)
        w = np.exp(logw - logw.max())
        return w / w.sum()

    def sample_groups(self, state: DensestState, eps: float, rng: np.random.Generator, n: int):
        """n independent draws of the exponential mechanism, grouped: (masks, counts, densities)."""
        counts = rng.multinomial(n, self._probabilities(state, eps))
        idx = np.nonzero(counts)[0]
        return self.masks[idx], counts[idx], self.densities(state)[idx]

    def sample(self, state: DensestState, eps: float, rng: np.random.Generator, n: int):
        """n independent draws of the exponential mechanism: (masks (n,), densities (n,))."""
        cdf = np.cumsum(self._probabilities(state, eps))
        idx = np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), len(cdf) - 1)
        return self.masks[idx], self.densities(state)[idx]

    def optimum(self, state: DensestState) -> tuple[float, bool]:
        """(OPT_t, exact): the brute-force maximum over all vertex sets (exact rational, returned as float)."""
        return float(densest_by_enumeration(self, state)), True

    def batch_error(self, eps: float, beta_a: float) -> float:
        """E_A of the exponential mechanism (McSherry-Talwar): (2 Delta/eps) ln((2^n - 1)/beta_a), Delta = 1/2."""
        return 2 * SENSITIVITY / eps * math.log(len(self.masks) / beta_a)

    def law(self, state: DensestState, eps, *, dps: int = 30):
        """Exact law of A: [(mask, probability, density)] (mpmath at ``dps`` digits)."""
        with mpmath.workdps(dps):
            e = mpmath.mpf(eps) / (2 * mpmath.mpf(SENSITIVITY))
            dens = [mpmath.mpf(int(c)) / int(s) for c, s in zip(state.inside, self.sizes)]
            w = [mpmath.exp(e * d) for d in dens]
            z = mpmath.fsum(w)
            return [(int(m), w[i] / z, dens[i]) for i, m in enumerate(self.masks)]


def densest_by_enumeration(problem: DensestSubgraphProblem, state: DensestState) -> Fraction:
    """max_S |E(S)|/|S| over all non-empty S, exact (integer cross-multiplication)."""
    dens = problem.densities(state)
    # float picks the candidates; the exact maximum is taken among those within float rounding of the top
    top = dens.max()
    cand = np.nonzero(dens >= top - 1e-9 * max(1.0, top))[0]
    return max(Fraction(int(state.inside[i]), int(problem.sizes[i])) for i in cand)


def densest_by_maxflow(n_vertices: int, pairs) -> tuple[Fraction, frozenset]:
    """(OPT, a densest set) by Goldberg's construction and Dinkelbach's iteration, exact.

    For a guess g = a/b (lowest terms) the network s -> v (capacity b deg(v)), v -> t (2a) and
    u <-> v (b w(u, v) each way) has, for the source side S + {s}, cut(S) = 2 b m + 2 (a|S| - b|E(S)|)
    (Goldberg 1984), so its minimum cut is < 2 b m exactly when some S has density > g, and then the
    minimum cut's source side is such an S. Starting from g = rho(V), each round moves g to that S's
    density (strictly larger), and stops when no denser set exists. ``pairs``: {(u, v): multiplicity}."""
    import networkx as nx

    n = check_positive_int("n_vertices", n_vertices)
    w: dict = {}
    for (u, v), c in dict(pairs).items():
        if not (0 <= u < n and 0 <= v < n) or u == v:
            raise InvalidParameter(f"pairs must join two distinct vertices in 0..{n - 1}, got {(u, v)!r}")
        key = (min(u, v), max(u, v))
        w[key] = w.get(key, 0) + int(c)
    m = sum(w.values())
    if m == 0:
        return Fraction(0), frozenset()
    deg = [0] * n
    for (u, v), c in w.items():
        deg[u] += c
        deg[v] += c
    best = frozenset(range(n))
    g = Fraction(m, n)
    while True:
        a, b = g.numerator, g.denominator
        net = nx.DiGraph()
        for v in range(n):
            net.add_edge("s", v, capacity=b * deg[v])
            net.add_edge(v, "t", capacity=2 * a)
        for (u, v), c in w.items():
            net.add_edge(u, v, capacity=b * c)
            net.add_edge(v, u, capacity=b * c)
        cut, (side, _) = nx.minimum_cut(net, "s", "t")
        if cut >= 2 * b * m:
            return g, best
        best = frozenset(side) - {"s"}
        g = Fraction(sum(c for (u, v), c in w.items() if u in best and v in best), len(best))


def pairs_of(state: DensestState) -> dict:
    """The state's multigraph as {(u, v): multiplicity}, u < v."""
    u, v = np.nonzero(np.triu(state.pairs, 1))
    return {(int(a), int(b)): int(state.pairs[a, b]) for a, b in zip(u, v)}


def exact_privacy_loss(problem: DensestSubgraphProblem, state: DensestState, state_prime: DensestState,
                       eps_run, *, prec: int = 200):
    """max_S |ln Pr[A(X) = S] - ln Pr[A(X') = S]| as an arb ball, for A run with privacy ``eps_run``
    (weights exp(eps_run rho(S) / (2 Delta))): the exact witness of A's privacy on a tiny graph."""
    from flint import arb, ctx

    old = ctx.prec
    ctx.prec = prec
    try:
        scale = arb(eps_run) / (2 * arb(SENSITIVITY))

        def logs(st):
            lw = [scale * arb(int(c)) / int(s) for c, s in zip(st.inside, problem.sizes)]
            top = max(lw, key=lambda x: x.mid())
            z = sum((x - top).exp() for x in lw)
            return [x - top - z.log() for x in lw]

        diffs = [abs(a - b) for a, b in zip(logs(state), logs(state_prime))]
        return max(diffs, key=lambda x: x.upper())
    finally:
        ctx.prec = old
