"""Exact accuracy: per-step error probabilities and the exact rejection threshold (gtm_core/exact/accuracy.py)."""

from __future__ import annotations

import pytest

from gtm_core import exact as E
from gtm_core.exact import accuracy as exact_accuracy


# --- exact accuracy ---------------------------------------------------------------------


@pytest.mark.parametrize("t", [1, 10])
def test_exact_error_probabilities_within_budget(plan, t):
    """Unconditional per-step errors include the shared-noise failure G^c (Lemma 19(1),
    Pr[G^c] <= beta/2), so each is at most its conditional budget plus Pr[G^c]."""
    r = E.step_error_probabilities(plan, t, dps=15)
    assert 0 < r["type_I"].value <= r["beta_I"]  # at p_bar the Type I error is even within beta^I
    assert 0 < r["type_II"].value <= r["beta_II"] + plan.good_event_failure


def test_exact_rejection_threshold_is_above_paper_p_bar(plan):
    r = E.exact_rejection_threshold(plan, 1, dps=12)
    lo, hi = r["bracket"]
    assert r["p_bar"] < lo <= hi < plan.step(1).p_star
    # at the bracket ends the Type I probability straddles the budget
    assert float(exact_accuracy._single_step_halt(plan, 1, lo, 12).value) <= r["budget"]
    assert float(exact_accuracy._single_step_halt(plan, 1, hi, 12).value) > r["budget"]
