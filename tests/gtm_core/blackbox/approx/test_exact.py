"""gtm_core.blackbox.approx.exact: the exact law of Algorithm 2 (arb), the exact hockey-stick delta(eps) on
searched neighbouring pairs (certified <= delta for the paper's algorithm; the broken GAP-MAX flagged), and
Algorithm 5 alone against its own (eps, delta) claim over all 3^6 sensitivity-1 neighbours."""

from flint import arb

from gtm_core.blackbox.approx.evaluator import ApproxConfig, ApproxEvaluator
from gtm_core.blackbox.approx.exact import approx_output_law, pair_delta, search_algorithm5_delta, search_delta
from gtm_core.blackbox.approx.onedim import Algorithm5Variant
from gtm_core.blackbox.approx.params import ApproxConstants
from gtm_core.blackbox.exact import multisets
from gtm_core.blackbox.functions import median_on

GRID = [0, 1, 2, 3]
EPS, DELTA = 0.9, 0.1


def _ev(variant=Algorithm5Variant()):
    # C = 1e-5: privacy holds for every C (docs/blackbox.md); this C makes h >= 1 reachable at n <= 16
    cfg = ApproxConfig(EPS, DELTA, 0.1, tuple([g] for g in GRID), ApproxConstants(C=1e-5))
    return ApproxEvaluator(cfg, median_on(GRID, empty=0), variant=variant)


def test_law_normalised_with_both_branches():
    law = approx_output_law(_ev(), (0, 1, 2, 3, 3, 3, 3, 3, 3))
    t = law.total()
    assert t.contains(arb(1)) and t.rad() < 1e-30
    labels = [lab for lab, p in law.h_law if not p.upper() <= 0]
    assert "h<=0" in labels and any(isinstance(lab, int) for lab in labels)


def test_exact_delta_certified_on_searched_pairs():
    """Every (S, S minus one) pair, S a multiset over {0, 3} of size 4..12: delta(0.9) <= 0.1 (ball upper end)."""
    r = search_delta(_ev(), multisets([0, 3], range(4, 13)), EPS)
    assert r.pairs >= 60 and r.best.upper <= DELTA
    # the pair the statistical audit selects (tests/audits/power/test_blackbox.py) is inside the claim too
    p = pair_delta(_ev(), (3,) * 5, (3,) * 4, EPS)
    assert 0.03 < p.lower and p.upper <= DELTA


def test_broken_gap_max_flagged_exactly():
    r = search_delta(_ev(Algorithm5Variant(gap_max_noise=False)), multisets([0, 3], [10, 11]), EPS)
    assert r.best.lower > DELTA


def test_algorithm5_component_claim_and_wrong_level_epsilon_flagged():
    """Algorithm 5 at (eps', delta') = (0.5, 1e-3): all 3^6 neighbours of base; the paper's split is within its
    claim, a level charged at the undivided eps' exceeds it (certified lower end > delta')."""
    base, args = [0, 1, 3, 3, 1, 0], (0.5, 0.1, 1e-3, 2.0)
    ok = search_algorithm5_delta(base, *args)
    assert ok.pairs == 2 * 3**6 and ok.delta.upper() <= 1e-3
    bad = search_algorithm5_delta(base, *args, variant=Algorithm5Variant(level_epsilon="undivided"))
    assert bad.delta.lower() > 1e-3
    worse = search_algorithm5_delta(base, *args, variant=Algorithm5Variant(gap_max_noise=False))
    assert worse.delta.lower() > 0.5


# -- d = 3 (Algorithm 2 end to end on a tiny 3-D instance) -------------------------------------------

Y3 = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0)]
A3, B3 = Y3[1], Y3[4]


def _ev3(variant=Algorithm5Variant()):
    """|Y| = 5, |Y~| = 9 (Lemma 4.8), f = center-3d; C = 1e-8 so that h >= 1 is reachable at n <= 16
    (K = 5, R = 4.22; privacy holds for every C)."""
    from gtm_core.blackbox.functions import center_3d_on

    cfg = ApproxConfig(EPS, DELTA, 0.1, tuple(Y3), ApproxConstants(C=1e-8))
    return ApproxEvaluator(cfg, center_3d_on(Y3), variant=variant)


def test_d3_law_normalised_and_reaches_algorithm6():
    ev = _ev3()
    assert ev.params.M == 9 and ev.params.H == 3 and ev.params.K == 5
    law = approx_output_law(ev, (A3,) * 3 + (B3,) * 5)
    t = law.total()
    assert t.contains(arb(1)) and t.rad() < 1e-30
    assert any(isinstance(lab, int) and not p.upper() <= 0 for lab, p in law.h_law)
    assert len(law.probabilities) > 9  # Algorithm 6 outputs points of CH(Y~) off Y~


def test_d3_exact_delta_certified_and_broken_gap_max_flagged():
    """Every (S, S minus one) pair, S a multiset over {(1,0,0), (1,1,1)} of size 8..9: delta(0.9) <= 0.1
    certified (worst ~0.0025, at ([1,0,0]x3 + [1,1,1]x5, one [1,1,1] removed)); GAP-MAX without its noise:
    delta(0.9) > 0.1 certified on a pair of size 11."""
    r = search_delta(_ev3(), multisets([A3, B3], range(8, 10)), EPS)
    assert r.pairs >= 19 and r.best.upper <= DELTA and r.best.lower > 0.002
    bad = pair_delta(_ev3(Algorithm5Variant(gap_max_noise=False)), (A3,) * 5 + (B3,) * 6, (A3,) * 4 + (B3,) * 6, EPS)
    assert bad.lower > DELTA


def test_d3_wrong_level_epsilon_observable_but_inside_the_claim():
    """A level charged at the undivided eps' (or at 20 eps'/(2H)) raises the exact delta(0.9) of Algorithm 2
    on the worst pair from 0.00251 to 0.00264 and 0.00424 (disjoint balls), but not above delta = 0.1: at
    Algorithm 2's level the size-estimate smoothing and the composition slack absorb it (it is flagged at
    Algorithm 5's level, above)."""
    S, T = (A3,) * 3 + (B3,) * 5, (A3,) * 2 + (B3,) * 5  # the search's worst pair
    ok = pair_delta(_ev3(), S, T, EPS).delta
    und = pair_delta(_ev3(Algorithm5Variant(level_epsilon="undivided")), S, T, EPS).delta
    x20 = pair_delta(_ev3(Algorithm5Variant(level_epsilon_factor=20.0)), S, T, EPS).delta
    assert ok.upper() < und.lower() and und.upper() < x20.lower() and x20.upper() <= DELTA


# -- d = 2 (Algorithm 2 end to end on a tiny 2-D instance) -------------------------------------------

Y2 = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
A2, B2 = Y2[1], Y2[3]


def _ev2(variant=Algorithm5Variant()):
    """|Y| = 4 (the unit square), |Y~| = 5 (Lemma 4.7 adds the centre), f = Tukey center; C = 1e-7 so that
    K = 4 and h >= 1 is reachable at n <= 16 (R = 4.22; privacy holds for every C)."""
    from gtm_core.blackbox.functions import tukey_center_on

    cfg = ApproxConfig(EPS, DELTA, 0.1, tuple(Y2), ApproxConstants(C=1e-7))
    return ApproxEvaluator(cfg, tukey_center_on(Y2), variant=variant)


def test_d2_law_normalised_and_reaches_algorithm6():
    ev = _ev2()
    assert ev.params.M == 5 and ev.params.H == 3 and ev.params.K == 4
    law = approx_output_law(ev, (A2,) * 4 + (B2,) * 4)
    t = law.total()
    assert t.contains(arb(1)) and t.rad() < 1e-30
    reached = [p for lab, p in law.h_law if isinstance(lab, int) and not p.upper() <= 0]
    assert reached and sum(reached, arb(0)).lower() > 0.2  # P(h >= 1) > 0.2: Algorithm 6 runs, not f(empty)
    assert len(law.probabilities) > 5  # Algorithm 6 outputs points of CH(Y~) off Y~


def test_d2_exact_delta_certified_and_broken_gap_max_flagged():
    """Every (S, S minus one) pair, S a multiset over {(1,0), (1,1)} of size 6..10 (80 pairs): delta(0.9) <= 0.1
    certified (worst ~0.0469, at ([1,0]x6, [1,0]x5)); GAP-MAX without its noise: delta(0.9) ~0.271 > 0.1
    certified on ([1,0]x4 + [1,1]x5, one [1,1] removed)."""
    r = search_delta(_ev2(), multisets([A2, B2], range(6, 11)), EPS)
    assert r.pairs == 80 and r.best.upper <= DELTA and r.best.lower > 0.04
    bad = pair_delta(_ev2(Algorithm5Variant(gap_max_noise=False)), (A2,) * 4 + (B2,) * 5, (A2,) * 4 + (B2,) * 4, EPS)
    assert bad.lower > DELTA
