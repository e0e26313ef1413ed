"""Section 8's problems on insertion-only edge streams, with their batch DP algorithms.

* :class:`CoverageProblem` - k-vertex coverage (Section 8.1, monotone submodular,
  cardinality k): f(X, Y) = number of edges of X with an endpoint in Y. Data-monotone
  and 1-sensitive under edge insertion. Batch algorithm: the private greedy - k picks,
  each an exponential mechanism with budget eps/k on the marginal gain (sensitivity 1),
  Pr[v] ~ exp((eps/k) gain(v) / 2); pure eps-DP by basic composition.
* :class:`MaxCutProblem` - Max-Cut (Section 8.4) on a small vertex set: f(X, S) = number
  of edges of X across S. Batch algorithm: the exponential mechanism over all 2^(n-1)
  cuts (vertex 0 fixed on one side), Pr[S] ~ exp(eps cut(S) / 2); pure eps-DP, exact.

A *state* is the dataset X_t kept incrementally (degrees and adjacency counts, or the
value of every cut); ``insert(state, None)`` is the empty update used for the neighbour
"edge absent" of an edge stream. Sampling takes an explicit ``numpy.random.Generator``
and draws ``n`` independent runs at once (float64 Gumbel / inverse-CDF samplers; not for
deployment).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from math import comb

import mpmath
import numpy as np

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import check_positive_int
from .densest import DensestSubgraphProblem

#: largest number of k-subsets / cuts for which OPT_t is computed by exact enumeration
EXACT_LIMIT = 200_000
#: largest vertex count for the exact exponential mechanism over all cuts
MAXCUT_MAX_VERTICES = 18


@dataclass
class CoverageState:
    degree: np.ndarray
    adjacency: np.ndarray
    edges: int = 0
    subset_values: np.ndarray | None = field(default=None, repr=False)


class CoverageProblem:
    """k-vertex coverage on an edge (multi)graph with ``n_vertices`` vertices."""

    name = "coverage"
    approximation = 1 - 1 / math.e  # the (non-private and private) greedy's factor alpha

    def __init__(self, n_vertices: int, k: int):
        self.n = check_positive_int("n_vertices", n_vertices)
        self.k = check_positive_int("k", k)
        if self.k > self.n:
            raise InvalidParameter(f"k must be <= the number of vertices {self.n}, got {self.k}")
        self.exact = comb(self.n, self.k) <= EXACT_LIMIT
        if self.exact:
            subsets = np.array(list(itertools.combinations(range(self.n), self.k)), dtype=np.int32)
            self.subsets = subsets
            member = np.zeros((len(subsets), self.n), dtype=bool)
            member[np.arange(len(subsets))[:, None], subsets] = True
            self._member = member
        else:
            self.subsets = None

    def empty_state(self) -> CoverageState:
        st = CoverageState(np.zeros(self.n, dtype=np.int64), np.zeros((self.n, self.n), dtype=np.int64))
        if self.exact:
            st.subset_values = np.zeros(len(self.subsets), dtype=np.int64)
        return st

    def insert(self, state: CoverageState, edge) -> None:
        if edge is None:
            return
        u, v = edge
        state.degree[u] += 1
        state.degree[v] += 1
        state.adjacency[u, v] += 1
        state.adjacency[v, u] += 1
        state.edges += 1
        if state.subset_values is not None:
            state.subset_values += self._member[:, u] | self._member[:, v]

    def value(self, state: CoverageState, solution) -> int:
        """f(X, Y): edges with an endpoint in Y = sum of degrees minus edges inside Y."""
        s = list(solution)
        inner = state.adjacency[np.ix_(s, s)].sum() // 2
        return int(state.degree[s].sum() - inner)

    def sample_groups(self, state: CoverageState, eps: float, rng: np.random.Generator, n: int):
        """n independent private-greedy runs at budget eps, grouped: (solutions (G, k) sorted,
        counts (G,) summing to n, values (G,)).

        Each pick is the exponential mechanism Pr[v] ~ exp((eps/k) gain(v)/2) over the vertices
        not yet picked. Runs are grouped by their picks so far: the c runs that picked the sequence
        S split as Multinomial(c, law of the next pick given S), which is the joint law of c
        independent picks. Cost O(groups x n_vertices) per pick, not O(n x n_vertices)."""
        scale = eps / (2 * self.k)  # exponential mechanism with eps/k per pick, sensitivity 1
        deg = state.degree.astype(float)
        groups = np.zeros((1, 0), dtype=np.int64)  # picked sequences so far
        counts = np.array([n], dtype=np.int64)
        for i in range(self.k):
            gains = deg[None, :] - state.adjacency[groups].sum(axis=1) if i else deg[None, :].copy()
            if i:
                gains[np.arange(len(groups))[:, None], groups] = -np.inf
            w = np.exp(scale * (gains - gains.max(axis=1, keepdims=True)))
            split = rng.multinomial(counts, w / w.sum(axis=1, keepdims=True))
            g_idx, v_idx = np.nonzero(split)
            groups = np.concatenate([groups[g_idx], v_idx[:, None]], axis=1)
            counts = split[g_idx, v_idx]
        groups = np.sort(groups, axis=1)
        values = deg[groups].sum(axis=1)
        for a in range(self.k):
            for b in range(a + 1, self.k):
                values -= state.adjacency[groups[:, a], groups[:, b]]
        return groups, counts, values

    def sample(self, state: CoverageState, eps: float, rng: np.random.Generator, n: int):
        """n independent private-greedy runs in random order: (solutions (n, k) sorted, values (n,))."""
        groups, counts, values = self.sample_groups(state, eps, rng, n)
        order = rng.permutation(n)
        return np.repeat(groups, counts, axis=0)[order], np.repeat(values, counts)[order]

    def optimum(self, state: CoverageState) -> tuple[float, bool]:
        """(OPT_t, exact). Exact enumeration of all k-subsets when C(n, k) <= EXACT_LIMIT,
        otherwise the non-private greedy value (>= (1 - 1/e) OPT_t)."""
        if state.subset_values is not None:
            return float(state.subset_values.max()), True
        gains = state.degree.astype(float)
        total = 0.0
        for _ in range(self.k):
            u = int(np.argmax(gains))
            total += gains[u]
            gains = gains - state.adjacency[u]
            gains[u] = -np.inf
        return total, False

    def batch_error(self, eps: float, beta_a: float) -> float:
        """E_A of the private greedy: with prob. >= 1 - beta_a, f >= (1-1/e) OPT - E_A, where
        E_A = k (2k/eps) ln(k n / beta_a) (each pick within (2k/eps) ln(kn/beta_a) of the best
        marginal gain, union bound over k picks; greedy with additive error e per pick loses k e)."""
        return self.k * (2 * self.k / eps) * math.log(self.k * self.n / beta_a)

    def law(self, state: CoverageState, eps, *, dps: int = 30):
        """Exact law of the batch algorithm for k = 1: [(solution, probability, value)] (mpmath)."""
        if self.k != 1:
            raise UnsupportedConfiguration("the exact law of the private greedy is implemented for k = 1 only")
        with mpmath.workdps(dps):
            e = mpmath.mpf(eps)
            w = [mpmath.exp(e * int(d) / 2) for d in state.degree]
            z = mpmath.fsum(w)
            return [((v,), w[v] / z, int(state.degree[v])) for v in range(self.n)]


@dataclass
class MaxCutState:
    cuts: np.ndarray
    edges: int = 0


class MaxCutProblem:
    """Max-Cut with the exact exponential mechanism over all cuts (small n)."""

    name = "maxcut"
    approximation = 1.0

    def __init__(self, n_vertices: int):
        self.n = check_positive_int("n_vertices", n_vertices)
        if self.n > MAXCUT_MAX_VERTICES:
            raise UnsupportedConfiguration(
                f"maxcut enumerates all cuts: n_vertices must be <= {MAXCUT_MAX_VERTICES}, got {self.n}"
            )
        self.masks = np.arange(2 ** (self.n - 1), dtype=np.int64) << 1  # vertex 0 on side 0
        self.k = None

    def empty_state(self) -> MaxCutState:
        return MaxCutState(np.zeros(len(self.masks), dtype=np.int64))

    def insert(self, state: MaxCutState, edge) -> None:
        if edge is None:
            return
        u, v = edge
        state.cuts += ((self.masks >> u) ^ (self.masks >> v)) & 1
        state.edges += 1

    def value(self, state: MaxCutState, solution) -> int:
        return int(state.cuts[int(solution) >> 1])

    def _probabilities(self, state: MaxCutState, eps: float) -> np.ndarray:
        logw = eps * state.cuts / 2.0
        w = np.exp(logw - logw.max())
        return w / w.sum()

    def sample_groups(self, state: MaxCutState, eps: float, rng: np.random.Generator, n: int):
        """n independent draws of the exponential mechanism, grouped: (cut masks, counts, values)."""
        counts = rng.multinomial(n, self._probabilities(state, eps))
        idx = np.nonzero(counts)[0]
        return self.masks[idx], counts[idx], state.cuts[idx].astype(float)

    def sample(self, state: MaxCutState, eps: float, rng: np.random.Generator, n: int):
        """n independent draws of the exponential mechanism: (cut masks (n,), values (n,))."""
        cdf = np.cumsum(self._probabilities(state, eps))
        idx = np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), len(cdf) - 1)
        return self.masks[idx], state.cuts[idx].astype(float)

    def optimum(self, state: MaxCutState) -> tuple[float, bool]:
        return float(state.cuts.max()), True

    def batch_error(self, eps: float, beta_a: float) -> float:
        """E_A of the exponential mechanism: (2/eps) ln(#cuts / beta_a) (McSherry-Talwar)."""
        return 2 / eps * math.log(len(self.masks) / beta_a)

    def law(self, state: MaxCutState, eps, *, dps: int = 30):
        with mpmath.workdps(dps):
            e = mpmath.mpf(eps)
            w = [mpmath.exp(e * int(c) / 2) for c in state.cuts]
            z = mpmath.fsum(w)
            return [(int(m), w[i] / z, int(state.cuts[i])) for i, m in enumerate(self.masks)]


def make_problem(name: str, n_vertices: int, k: int | None = None):
    """The problem object named in the configuration ("coverage" needs k; "densest": Section 8.2)."""
    if name == "coverage":
        return CoverageProblem(n_vertices, k if k is not None else 1)
    if name == "maxcut":
        return MaxCutProblem(n_vertices)
    if name == "densest":
        return DensestSubgraphProblem(n_vertices)
    raise InvalidParameter(f"problem must be 'coverage', 'maxcut' or 'densest', got {name!r}")
