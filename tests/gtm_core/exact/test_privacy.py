"""Privacy ratios and the certified neighbouring check (gtm_core/exact/privacy.py)."""

from __future__ import annotations

import math

import pytest

from gtm_core import exact as E


# --- privacy ratios -------------------------------------------------------------------


def test_neighbouring_rule_is_enforced(plan):
    with pytest.raises(E.NotNeighbouring, match="step 1"):
        E.privacy_ratios(plan, [0.3], [0.2], dps=10)
    with pytest.raises(E.NotNeighbouring, match="same length"):
        E.privacy_ratios(plan, [0.3], [0.3, 0.3], dps=10)
    # (1-p')/(1-p) also matters: p = 0.99 -> p' = 0.95 is far in the complement
    with pytest.raises(E.NotNeighbouring):
        E.check_neighbouring([0.99], [0.95], [0.1])
    E.check_neighbouring([0.99], [0.9895], [0.1])


def test_neighbour_interval_is_tight():
    lo, hi = E.neighbour_interval(0.3, 0.1)
    assert lo == pytest.approx(0.3 / math.exp(0.1)) and hi == pytest.approx(0.3 * math.exp(0.1))
    lo, hi = E.neighbour_interval(0.99, 0.1)
    assert lo == pytest.approx(1 - math.exp(0.1) * 0.01) and hi == pytest.approx(1 - 0.01 / math.exp(0.1))


def test_privacy_ratios_within_lemma17_and_continuation_bound_is_tight(plan):
    """p_1 >= p* forces a large eta_1 to continue; p'_1 = p_1 e^{-eps} shifts h by one unit of
    eta_1 exactly, so ln(P'/P) -> 1/tau1 (bound (6) is attained up to the eta_1 mass on [0, 1])."""
    e = math.exp(plan.step(1).eps_t)
    p1 = 0.524
    rep = E.privacy_ratios(plan, [p1], [p1 / e * (1 + 1e-12)], dps=20)
    assert rep.ok
    cont = [r for r in rep.rows if r.kind == "continue"][0]
    assert abs(cont.log_ratio) <= 1 / plan.tau1
    assert 1 / plan.tau1 - abs(cont.log_ratio) < 1e-6  # tight
    halt = [r for r in rep.rows if r.kind == "halt"][0]
    assert abs(halt.log_ratio) <= 1 / plan.tau1 + 2 / plan.step(1).tau2


def test_halting_bound_holds_and_is_approached(plan):
    """Continuation step needing a large eta_1, then a halt driven by the Pareto tail of eta_2:
    ln(P'/P) approaches 1/tau1 + 2/tau2 (bound (7)) from below."""
    e = math.exp(plan.step(1).eps_t)
    p = [0.5244, 1e-6]
    q = [0.5244 / e * (1 + 1e-12), 1e-6 * e * (1 - 1e-12)]
    rep = E.privacy_ratios(plan, p, q, dps=20)
    assert rep.ok
    halt2 = [r for r in rep.rows if r.kind == "halt" and r.t == 2][0]
    bound = 1 / plan.tau1 + 2 / plan.step(2).tau2
    assert halt2.bound == pytest.approx(bound)
    assert abs(halt2.log_ratio) <= bound
    assert bound - abs(halt2.log_ratio) < 1e-6
