"""Coverage and Max-Cut: objective, data-monotonicity/sensitivity, exact OPT, and the samplers' laws.

Statistical tests: chi-square goodness of fit at alpha = 1e-3 with fixed seeds, each with a
companion power test rejecting a wrong law."""

import itertools

import numpy as np
import pytest
from scipy import stats

from gtm_core.batchtoco.problems import CoverageProblem, MaxCutProblem, make_problem
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

EDGES = [(0, 1), (0, 2), (1, 2), (3, 4), (0, 3), (2, 4), (1, 4)]
ALPHA = 1e-3


def _state(problem, edges):
    st = problem.empty_state()
    for e in edges:
        problem.insert(st, e)
    return st


def _coverage_brute(edges, S):
    return sum(1 for u, v in edges if u in S or v in S)


def test_coverage_value_and_exact_optimum_match_brute_force():
    p = CoverageProblem(5, 2)
    for m in range(1, len(EDGES) + 1):
        st = _state(p, EDGES[:m])
        best = max(_coverage_brute(EDGES[:m], S) for S in itertools.combinations(range(5), 2))
        assert p.optimum(st) == (best, True)
        for S in itertools.combinations(range(5), 2):
            assert p.value(st, S) == _coverage_brute(EDGES[:m], S)


def test_objectives_are_data_monotone_and_1_sensitive():
    rng = np.random.default_rng(5)
    for problem in (CoverageProblem(6, 2), MaxCutProblem(6)):
        st = problem.empty_state()
        sols = list(itertools.combinations(range(6), 2)) if problem.name == "coverage" else list(problem.masks)
        for _ in range(20):
            before = [problem.value(st, y) for y in sols]
            u, v = rng.choice(6, 2, replace=False)
            problem.insert(st, (int(u), int(v)))
            after = [problem.value(st, y) for y in sols]
            assert all(0 <= a - b <= 1 for a, b in zip(after, before))


def test_greedy_fallback_when_enumeration_is_too_large():
    p = CoverageProblem(200, 3)
    assert not p.exact
    st = _state(p, [(0, 1), (0, 2), (3, 4)])
    assert p.optimum(st) == (3.0, False)


def _greedy_law_k2(problem, st, eps):
    scale, deg = eps / 4, st.degree.astype(float)
    law = {}
    w = np.exp(scale * deg)
    for a in range(problem.n):
        g = deg - st.adjacency[a]
        g[a] = -np.inf
        w2 = np.exp(scale * g)
        for b in range(problem.n):
            if b != a:
                key = tuple(sorted((a, b)))
                law[key] = law.get(key, 0) + w[a] / w.sum() * w2[b] / w2.sum()
    return law


def _chi2_pvalue(counts: dict, law: dict, n: int) -> float:
    keys = sorted(law)
    obs = np.array([counts.get(k, 0) for k in keys], float)
    exp = np.array([law[k] for k in keys]) * n
    return stats.chisquare(obs, exp).pvalue


def test_private_greedy_k2_follows_its_exact_law():
    p = CoverageProblem(5, 2)
    st = _state(p, EDGES)
    sol, vals = p.sample(st, 3.0, np.random.default_rng(11), 100_000)
    counts = {}
    for row in map(tuple, sol):
        counts[row] = counts.get(row, 0) + 1
    assert _chi2_pvalue(counts, _greedy_law_k2(p, st, 3.0), 100_000) > ALPHA
    assert all(v == p.value(st, s) for s, v in zip(map(tuple, sol[:200]), vals[:200]))


def test_power_private_greedy_test_rejects_a_wrong_law():
    p = CoverageProblem(5, 2)
    st = _state(p, EDGES)
    sol, _ = p.sample(st, 3.0, np.random.default_rng(11), 100_000)
    counts = {}
    for row in map(tuple, sol):
        counts[row] = counts.get(row, 0) + 1
    assert _chi2_pvalue(counts, _greedy_law_k2(p, st, 2.0), 100_000) < ALPHA  # the law at the wrong eps


def test_k1_and_maxcut_samplers_follow_their_exact_law():
    for problem in (CoverageProblem(5, 1), MaxCutProblem(5)):
        st = _state(problem, EDGES)
        law = {(s if problem.name == "coverage" else (s,)): float(pr) for s, pr, _ in problem.law(st, 1.5)}
        sol, _ = problem.sample(st, 1.5, np.random.default_rng(3), 50_000)
        keys = [tuple(r) for r in sol] if problem.name == "coverage" else [(int(m),) for m in sol]
        counts = {}
        for k in keys:
            counts[k] = counts.get(k, 0) + 1
        assert _chi2_pvalue(counts, law, 50_000) > ALPHA
        wrong = {(s if problem.name == "coverage" else (s,)): float(pr) for s, pr, _ in problem.law(st, 0.5)}
        assert _chi2_pvalue(counts, wrong, 50_000) < ALPHA


def test_maxcut_values_and_limits():
    q = MaxCutProblem(5)
    st = _state(q, EDGES)
    for m in q.masks:
        side = {i for i in range(5) if (int(m) >> i) & 1}
        assert q.value(st, m) == sum(1 for u, v in EDGES if (u in side) != (v in side))
    assert q.optimum(st)[0] == max(q.value(st, m) for m in q.masks)
    with pytest.raises(UnsupportedConfiguration, match="n_vertices must be <= 18"):
        MaxCutProblem(40)
    with pytest.raises(InvalidParameter, match="k must be <= the number of vertices"):
        CoverageProblem(3, 4)
    with pytest.raises(InvalidParameter, match="problem must be"):
        make_problem("tsp", 4)
    with pytest.raises(UnsupportedConfiguration, match="k = 1 only"):
        CoverageProblem(5, 2).law(st, 1.0)
