"""Densest subgraph (Section 8.2): exact OPT by max-flow against brute force, the batch algorithm's privacy
(exact law in arb, and a statistical audit with its power companion), and the reduction end to end."""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from audits.statistics import loss_lower_bound
from gtm_core.batchtoco.densest import (
    DensestSubgraphProblem,
    densest_by_enumeration,
    densest_by_maxflow,
    exact_privacy_loss,
    pairs_of,
)
from gtm_core.batchtoco.driver import run_stream
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.problems import make_problem
from gtm_core.batchtoco.streams import densest_stream
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration


def brute_force(n, edges):
    best = Fraction(0)
    for r in range(1, n + 1):
        for s in itertools.combinations(range(n), r):
            inside = sum(1 for u, v in edges if u in s and v in s)
            best = max(best, Fraction(inside, r))
    return best


def graph(n, edges):
    p = DensestSubgraphProblem(n)
    st = p.empty_state()
    for e in edges:
        p.insert(st, e)
    return p, st


def test_maxflow_opt_equals_brute_force_on_tiny_multigraphs():
    rng = np.random.default_rng(20261203)  # 60 random multigraphs, seed fixed
    for _ in range(60):
        n = int(rng.integers(2, 8))
        m = int(rng.integers(0, 3 * n))
        edges = []
        for _ in range(m):
            u, v = rng.choice(n, size=2, replace=False)
            edges.append((int(u), int(v)))
        p, st = graph(n, edges)
        want = brute_force(n, edges)
        flow, best = densest_by_maxflow(n, pairs_of(st))
        assert flow == want == densest_by_enumeration(p, st)
        if edges:  # the returned set attains OPT
            assert Fraction(sum(1 for u, v in edges if u in best and v in best), len(best)) == want
        assert p.optimum(st) == (float(want), True)


def test_maxflow_known_values():
    # K4 plus a pendant: the K4 (6 edges / 4 vertices) is densest
    k4 = [(a, b) for a, b in itertools.combinations(range(4), 2)] + [(3, 4)]
    assert densest_by_maxflow(5, {e: 1 for e in k4}) == (Fraction(3, 2), frozenset(range(4)))
    # a pair joined 7 times: density 7/2
    assert densest_by_maxflow(3, {(0, 1): 7, (1, 2): 1})[0] == Fraction(7, 2)
    assert densest_by_maxflow(3, {}) == (Fraction(0), frozenset())


def test_bad_inputs_are_refused():
    with pytest.raises(InvalidParameter, match="pairs"):
        densest_by_maxflow(3, {(0, 0): 1})
    with pytest.raises(InvalidParameter, match="pairs"):
        densest_by_maxflow(3, {(0, 3): 1})
    with pytest.raises(UnsupportedConfiguration, match="n_vertices"):
        DensestSubgraphProblem(17)
    with pytest.raises(InvalidParameter, match="edge"):
        p, st = graph(3, [])
        p.insert(st, (1, 1))
    assert make_problem("densest", 4).name == "densest"
    with pytest.raises(InvalidParameter, match="problem"):
        COConfig(problem="densest-k")


def neighbours():
    """A tiny graph with a neighbouring pair: X' = X minus the edge (0, 1)."""
    base = [(0, 1), (1, 2), (0, 2), (2, 3), (2, 3), (0, 1)]
    return graph(4, base), graph(4, base[:-1])


def test_exact_law_privacy_is_within_eps_and_a_noise_reduced_variant_exceeds_it():
    (p, st), (_, st2) = neighbours()
    eps = 0.7
    loss = exact_privacy_loss(p, st, st2, eps)
    assert loss.upper() <= eps  # arb: a certified upper bound
    assert loss.lower() > 0.2 * eps  # the bound is not vacuous: the pair does leak
    broken = exact_privacy_loss(p, st, st2, 4 * eps)  # noise reduced 4x, eps still claimed
    assert broken.lower() > eps
    law = p.law(st, eps)
    assert abs(float(sum(x[1] for x in law)) - 1) < 1e-25


ALPHA = 0.01  # the statistical audit's level (one-sided Clopper-Pearson pair, Bonferroni inside)
AUDIT_SEED = 32  # numpy seed of the audit's draws, fixed in advance
DRAWS = 400_000


def audited_bound(scale):
    """Lower confidence bound on the privacy loss of A run at ``scale * eps`` while eps is claimed, on the
    event chosen in advance from the correct law: the output S maximising Pr[A(X) = S] / Pr[A(X') = S]
    (here {0, 1}, the removed edge's endpoints)."""
    (p, st), (_, st2) = neighbours()
    eps = 0.7
    pa = np.array([float(x[1]) for x in p.law(st, eps)])
    pb = np.array([float(x[1]) for x in p.law(st2, eps)])
    event = {int(p.masks[np.argmax(np.log(pa / pb))])}
    rng = np.random.default_rng(AUDIT_SEED)
    a, _ = p.sample(st, scale * eps, rng, DRAWS)
    b, _ = p.sample(st2, scale * eps, rng, DRAWS)
    ka = int(np.isin(a, list(event)).sum())
    kb = int(np.isin(b, list(event)).sum())
    return eps, loss_lower_bound(ka, DRAWS, kb, DRAWS, ALPHA)


def test_statistical_audit_passes_the_correct_mechanism():
    eps, bound = audited_bound(1.0)
    assert bound <= eps


def test_statistical_audit_flags_the_noise_reduced_variant():
    """Power companion: the same audit (alpha, seed, event, draws) on A run at 6 eps (its noise reduced
    6x; true loss on the event 1.28 > eps = 0.7) flags it."""
    eps, bound = audited_bound(6.0)
    assert bound > eps


@pytest.mark.parametrize("variant", ["literal", "certified"])
def test_the_reduction_runs_end_to_end(variant):
    stream = densest_stream("contact", 400, 0)
    extra = {"horizon": 400} if variant == "certified" else {}
    cfg = COConfig(problem="densest", variant=variant, **extra)
    problem = make_problem("densest", len(stream.vertices))
    recs = run_stream(cfg, problem, stream.edges, np.random.default_rng([0, 1]))
    assert len(recs) == 400
    state = problem.empty_state()
    for r, e in zip(recs, stream.edges):
        problem.insert(state, e)
        assert 1 <= int(r.solution) < 2 ** problem.n
        assert 0 <= problem.value(state, r.solution) <= problem.optimum(state)[0]


@pytest.mark.slow
def test_the_exact_witness_of_the_whole_reduction_on_a_triangle():
    """Algorithm 3 (literal) and the certified variant with A = the exponential mechanism on a 3-edge
    stream, the neighbour without update 2: exact output laws (7^3 sequences), loss <= eps."""
    from gtm_core.batchtoco.witness import witness

    edges = [(0, 1), (0, 2), (1, 2)]
    lit = witness(COConfig(epsilon=0.9, problem="densest", kappa=0.2), DensestSubgraphProblem(3), edges, 2, dps=20)
    cert = witness(COConfig(epsilon=0.9, problem="densest", kappa=0.2, variant="certified", horizon=3, levels=2,
                            warmup_share=0.0, first_share=0.05), DensestSubgraphProblem(3), edges, 2, dps=20)
    for r in (lit, cert):
        assert abs(r.total - 1) < 1e-12 and abs(r.total_neighbour - 1) < 1e-12
        assert r.sequences == 343 and 0 < r.loss and not r.exceeds
