"""Scoring a candidate in the selection phase (audits.audit_scoring)."""

import math

import numpy as np

from audits.audit_scoring import EXPLORE_MIN_COUNT, best_level_set, exploration_score
from audits.events import halting_events


def test_exploration_score_ignores_events_seen_too_rarely():
    hits_a = np.array([EXPLORE_MIN_COUNT - 1, 50])
    hits_b = np.array([0, 25])
    expected = math.log(50.5 / 1001.0) - math.log(25.5 / 1001.0)
    assert exploration_score(hits_a, 1000, hits_b, 1000) == expected
    assert exploration_score(np.array([1]), 1000, np.array([0]), 1000) == -math.inf


def test_the_best_level_set_collects_the_codes_likelier_under_a():
    """Codes 0 and 1 are 4x likelier under A on both halves: the level set is exactly those codes."""
    events = halting_events(2, stops=False)
    half_a = np.array([400, 400, 100], dtype=np.int64)
    half_b = np.array([100, 100, 400], dtype=np.int64)
    found = best_level_set(events, 2 * half_a, 2 * half_b, half_a, half_b, 100_000, 0.05)
    assert found is not None
    bound, name, row = found
    assert row.tolist() == [True, True, False] and name.startswith("level-set(") and bound > 0
    assert best_level_set(events, 0 * half_a, 0 * half_b, 0 * half_a, 0 * half_b, 1000, 0.05) is None


def test_the_first_round_keep_probability_matches_simulation():
    """first_round_keep_probability (an exact binomial sum) against 40 000 simulated first rounds of the
    stated detection event (probability 2e-3, loss 2, claim 1) at the fine family's sized runs per input,
    each judged by the engine's own rule (exploration_score with MIN_COUNT, keeps). Two-sided binomial
    test at alpha = 1e-3, seed 29; power companion: the same simulations reject the probability computed
    for loss 1.7 (a wrong law), and the sizing reaches its 0.9 target."""
    from scipy import stats

    from audits.audit_scoring import (DETECTION_EVENT, DETECTION_TARGET, MIN_COUNT, ScoredCandidate,
                                      fine_runs_needed, first_round_keep_probability, keeps)

    q, loss = DETECTION_EVENT
    n = fine_runs_needed(q, loss, 1.0, DETECTION_TARGET)
    assert first_round_keep_probability(n, q, loss, 1.0) >= DETECTION_TARGET
    assert first_round_keep_probability(n - 250, q, loss, 1.0) < DETECTION_TARGET
    rng = np.random.default_rng(29)
    trials = 40_000
    k_a, k_b = rng.binomial(n, q, trials), rng.binomial(n, q * math.exp(-loss), trials)
    kept = sum(keeps(ScoredCandidate(0.0, None, "", None,
                                     keep=exploration_score(np.array([a]), n, np.array([b]), n, min_count=MIN_COUNT)),
                     1.0) for a, b in zip(k_a, k_b))
    p = first_round_keep_probability(n, q, loss, 1.0)
    assert stats.binomtest(int(kept), trials, p).pvalue > 1e-3
    wrong = first_round_keep_probability(n, q, 1.7, 1.0)
    assert stats.binomtest(int(kept), trials, wrong).pvalue < 1e-3


def test_the_readmes_first_round_detection_figures_are_the_functions_values():
    """The detection probability of the fine first round for the (2e-3, loss 2) event that audits/README.md
    states is computed here, not typed: every "P(n) = x" of its paragraph equals
    first_round_keep_probability(n, 2e-3, loss, 1) rounded to the digits shown (loss 3 where the README says
    so), and its runs needed equal fine_runs_needed(). A changed rule or constant fails this test until the
    README is updated."""
    import re
    from pathlib import Path

    from audits.audit_scoring import fine_runs_needed, first_round_keep_probability

    text = Path(__file__).resolve().parents[2].joinpath("audits", "README.md").read_text()
    paragraph = text[text.index("**Detection probability of the first round.**"):]
    paragraph = paragraph[: paragraph.index("\n### ")]
    stated = re.findall(r"(loss 3: )?P\((\d[\d ]*)\) = (0\.\d+)", paragraph)
    assert len(stated) >= 4, stated
    for loss3, n, value in stated:
        computed = first_round_keep_probability(int(n.replace(" ", "")), 2e-3, 3.0 if loss3 else 2.0, 1.0)
        assert round(computed, len(value) - 2) == float(value), (n, value, computed)
    assert "`fine_runs_needed()` = 10 500" in paragraph and fine_runs_needed() == 10_500
