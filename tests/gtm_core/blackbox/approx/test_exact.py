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
