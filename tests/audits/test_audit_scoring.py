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
