"""benchmarks.co_rebalance_select: the post-hoc selection rule and the median interval's coverage."""

from math import comb

from benchmarks.co_rebalance_select import grid_rows, order_interval_coverage, select


def _row(w, g, steady, bursty, halted=(5, 5)):
    return {"w": w, "g": g, "steady": steady, "bursty": bursty, "worse": max(steady / 2, bursty),
            "always_halted": halted == (5, 5)}


def test_coverage_matches_a_direct_binomial_sum():
    direct = sum(comb(20, k) for k in range(6, 15)) / 2 ** 20
    assert abs(order_interval_coverage(20, 6, 15) - direct) < 1e-12
    assert 0.958 < direct < 0.959


def test_select_skips_points_that_did_not_always_halt_and_breaks_ties_to_larger_w_then_g():
    rows = [_row(0.9, 0.4, 0.5, 0.5, halted=(0, 0)), _row(0.5, 0.6, 1.6, 0.7), _row(0.75, 0.25, 1.0, 0.8),
            _row(0.75, 0.6, 1.2, 0.8), _row(0.5, 0.4, 3.0, 0.6)]
    best = select(rows)
    assert (best["w"], best["g"]) == (0.75, 0.6)  # 0.80 ties three ways; the non-halting 0.5 is skipped
    assert select([_row(0.9, 0.4, 0.5, 0.5, halted=(4, 5))]) is None


def test_committed_tuning_grid_selects_the_registered_point():
    rows = grid_rows()
    assert len(rows) == 12
    best = select(rows)
    assert (best["w"], best["g"]) == (0.625, 0.6)
