"""gtm_core.blackbox.approx.compare: the closed-form lambdas agree with the evaluators' parameters, and the
crossover is where lambda_approx first drops below lambda_pure."""

import math

import mpmath
import pytest

from gtm_core.blackbox.approx.compare import crossover, lambda_approx, lambda_pure, log_star_of_exp
from gtm_core.blackbox.approx.evaluator import ApproxConfig, approx_parameters
from gtm_core.blackbox.approx.params import ApproxConstants, log_star
from gtm_core.blackbox.evaluator import pure_parameters_from


def test_log_star_of_exp_matches_integer_log_star():
    for M in (2, 3, 4, 5, 16, 17, 100, 65536, 65537, 10**6):
        assert log_star_of_exp(mpmath.log(M)) == log_star(M), M


@pytest.mark.parametrize("M,d", [(101, 1), (37, 2), (7, 1)])
def test_lambdas_match_the_evaluator_parameters(M, d):
    p = pure_parameters_from(0.9, 0.1, M, d)
    assert abs(float(lambda_pure(mpmath.log(M), d, 0.9, 0.1)) - (p.K + 2 * p.R + 1)) <= d + 1.01  # K's ceiling
    dom = tuple([i] for i in range(M)) if d == 1 else tuple((i, j) for i in range(2) for j in range(2))
    a = approx_parameters(ApproxConfig(0.9, 1e-6, 0.1, dom, ApproxConstants(C=160)), M)
    lam = float(lambda_approx(mpmath.log(M), d, 0.9, 1e-6, 0.1, 160))
    assert math.isclose(lam, (d + 1) * (a.Delta + 1) + 2 * a.R + 1, rel_tol=1e-9)


@pytest.mark.parametrize("d,C", [(1, 160.0), (2, 160.0), (1, 1e-3)])
def test_crossover_is_the_first_size_where_approx_wins(d, C):
    c = crossover(d, 0.9, 1e-6, 0.1, C)
    x = mpmath.mpf(c["lnM"])
    assert lambda_approx(x * (1 + mpmath.mpf(10) ** -6), d, 0.9, 1e-6, 0.1, C) < \
        lambda_pure(x * (1 + mpmath.mpf(10) ** -6), d, 0.9, 0.1)
    assert lambda_approx(x * (1 - mpmath.mpf(10) ** -6), d, 0.9, 1e-6, 0.1, C) > \
        lambda_pure(x * (1 - mpmath.mpf(10) ** -6), d, 0.9, 0.1)
    if C == 160.0:
        assert c["log10M"] > 1e9  # never at a runnable size


def test_direction_depth_is_a_valid_qco_quality():
    """Sensitivity 1 under adding a record, and quasi-concave along segments (random instances, seed 61)."""
    import numpy as np

    from gtm_core.blackbox.approx.compare import direction_depth, directions_3d

    rng = np.random.default_rng(61)
    D = directions_3d()
    for _ in range(50):
        P = rng.normal(size=(int(rng.integers(3, 30)), 3))
        a, b = rng.normal(size=3), rng.normal(size=3)
        extra = np.vstack([P, rng.normal(size=(1, 3))])
        assert 0 <= direction_depth(extra, a, D) - direction_depth(P, a, D) <= 1
        lo = min(direction_depth(P, a, D), direction_depth(P, b, D))
        for t in np.linspace(0, 1, 7):
            assert direction_depth(P, t * a + (1 - t) * b, D) >= lo


def test_sample_and_aggregate_d3_uses_the_direction_depth():
    """d = 3: the block outputs' direction-restricted Tukey depth scores Y; with every block returning the
    same point, that point has all the depth and the exponential mechanism at eps = 50 picks it."""
    import numpy as np

    from gtm_core.blackbox.approx.compare import sample_and_aggregate_indices

    Y = [(x, y, z) for x in (0.0, 1.0) for y in (0.0, 1.0) for z in (0.0, 1.0)]
    idx = sample_and_aggregate_indices(lambda T: Y[5], list(range(12)), 4, Y, 50.0, np.random.default_rng(0), 20, 3)
    assert (idx == 5).all()


# -- the reach cases: Algorithm 2 at a small C runs Algorithm 6 at d = 2 ------------------------------

def _goog():
    from audits.bench.blackbox_utility import goog_with_volume

    return goog_with_volume()


def test_d2_reach_instance_runs_algorithm6_not_the_empty_branch(monkeypatch):
    """The bench's user-level 2-D Tukey center (12 users, 3x3 grid) at C = 1e-7, delta = 0.1 (the reach case):
    K = 5, R = 4.22, P(h >= 1) = 0.82 exactly; 10 runs of Algorithm 2 (seed 0) call Algorithm 6 at least 5
    times (binomial(10, 0.82) < 5 has probability < 3e-3) and each of its outputs lies in CH(Y)."""
    import numpy as np

    import gtm_core.blackbox.approx.evaluator as E
    from gtm_core.blackbox.approx.compare import GRID_2D, reach_probability, user_blocks
    from gtm_core.blackbox.functions import tukey_center_on
    from gtm_core.blackbox.geometry import as_point, in_hull

    users = user_blocks(_goog(), 12, (lambda r: r[0], lambda r: r[1]))
    ev = E.ApproxEvaluator(ApproxConfig(0.9, 0.1, 0.1, tuple(GRID_2D), ApproxConstants(C=1e-7)),
                           tukey_center_on(GRID_2D), depth_method="enumeration")
    assert ev.params.K == 5 and ev.params.locality == 15
    p = reach_probability(ev.cutoff_law(len(users)))
    assert 0.8 < p < 0.85
    calls, real = [], E.algorithm6_run

    def counting(*a, **k):
        y = real(*a, **k)
        calls.append(y)
        return y

    monkeypatch.setattr(E, "algorithm6_run", counting)
    rng = np.random.default_rng(0)
    outs = [ev.run(users, rng) for _ in range(10)]
    assert len(calls) >= 5 and all(in_hull(as_point(y, 2), [as_point(g, 2) for g in GRID_2D]) for y in outs)


def test_user_level_least_squares_case_and_corollary_69_bound():
    """Corollary 6.9 on the user-level least-squares task (8 users, C = 1e-7, delta = 0.1, 20 runs, seed 0):
    every row reports the excess loss; an output inside CH(f(N_lambda(S))) has excess loss <= the case's
    bound (the max of the convex L over the target's vertices), checked on Algorithm 2's whole output law."""
    import numpy as np

    from gtm_core.blackbox.approx.compare import GRID_LS, compare_center, user_ls_records
    from gtm_core.blackbox.approx.evaluator import ApproxEvaluator
    from gtm_core.blackbox.functions import least_squares_on, squared_loss

    users = user_ls_records(_goog(), 8)
    f = least_squares_on(GRID_LS)
    assert f(users) == (1.5, 1.0) and squared_loss(users, f(users)) == min(squared_loss(users, y) for y in GRID_LS)
    case = compare_center(users, GRID_LS, eps=0.9, delta=0.1, beta=0.1, Cs=(1e-7,), sa_blocks=(2,), runs=20,
                          rng=np.random.default_rng(0), task="ls", f=f, loss=squared_loss, target_lambda=4)
    assert case["lambda_target"] == 4 and case["loss_bound"] >= 0
    assert all(r["median_excess_loss"] >= 0 for r in case["rows"])
    # the bound itself on the exact support of Algorithm 2 (any point of the target)
    from gtm_core.blackbox.depth import SubsetImage
    from gtm_core.blackbox.geometry import as_point, in_hull

    ev = ApproxEvaluator(ApproxConfig(0.9, 0.1, 0.1, tuple(GRID_LS), ApproxConstants(C=1e-7)), f,
                         depth_method="enumeration")
    img = SubsetImage(users, f, ev.oracle.domain, d=2)
    bits = int(img.images(len(users) - 4)[(1 << len(users)) - 1])
    hull = [img.domain[j] for j in range(len(img.domain)) if bits >> j & 1]
    best = min(squared_loss(users, y) for y in GRID_LS)
    inside = [y for y in ev.law(users) if in_hull(as_point(y, 2), hull)]
    assert inside and all(squared_loss(users, y) - best <= case["loss_bound"] + 1e-9 for y in inside)


@pytest.mark.parametrize("d", [1, 2])
def test_advantage_windows_match_direct_lambdas(d):
    """C = 1e-5, delta = 1e-6: at every integer |Y~| in 2..70000 sampled below, lambda_approx < lambda_pure
    iff |Y~| lies in a listed window (so the first crossing is not a threshold: e.g. d = 1 wins on 10..16,
    loses on 17..~5400)."""
    from gtm_core.blackbox.approx.compare import advantage_windows

    wins = advantage_windows(d, 0.9, 1e-6, 0.1, 1e-5, max_H=5)
    sizes = [2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 15, 16, 17, 20, 37, 101, 1000, 5000, 6000, 30000, 65536, 65537]
    for M in sizes:
        lnM = mpmath.log(M)
        direct = lambda_approx(lnM, d, 0.9, 1e-6, 0.1, 1e-5) < lambda_pure(lnM, d, 0.9, 0.1)
        w = next(w for w in wins if w["log10M_low"] < math.log10(M) <= w["log10M_high"] + 1e-12)
        listed = w["wins_from_log10M"] is not None and math.log10(M) >= w["wins_from_log10M"] - 1e-9
        assert direct == listed, (d, M)
    if d == 1:
        assert [w["wins_from_log10M"] is not None for w in wins] == [False, False, True, True, True]
