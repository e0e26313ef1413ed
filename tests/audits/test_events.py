"""Event spaces of halting times."""

import numpy as np

from audits.events import codes_histogram, halting_events, outcome_codes


def test_halting_events_counts():
    ev = halting_events(3, stops=True)
    hist = codes_histogram(np.array([0, 1, 1, 2, 3, 3, 3]), ev.n_codes)
    counts = dict(zip(ev.names, ev.counts(hist)))
    assert counts["never"] == 1 and counts["halt=1"] == 2 and counts["halt=3"] == 3
    assert counts["halt>=2|never"] == 5 and counts["halt<=2"] == 3
    # heads and tails are complements
    assert counts["halt<=1"] + counts["halt>=2|never"] == 7
    assert len(ev) == 1 + 3 + 2 + 3 + 3 + 1
    assert counts["stop"] == 0


def test_budget_stops_are_their_own_events():
    # protocol codes -t (stopped at t on the evaluation budget) -> event codes T + t
    assert halting_events(3).n_codes == 4 and "stop" not in halting_events(3).names  # laws without a budget
    ev = halting_events(3, stops=True)
    codes = outcome_codes([0, 1, -1, -1, -3, 2], 3)
    assert codes.tolist() == [0, 1, 4, 4, 6, 2]
    counts = dict(zip(ev.names, ev.counts(codes_histogram(codes, ev.n_codes))))
    assert counts["stop=1"] == 2 and counts["stop=3"] == 1 and counts["stop=2"] == 0 and counts["stop"] == 3
    # a stop is neither a halt nor "never"
    assert counts["never"] == 1 and counts["halt<=3"] == 2 and counts["halt>=2|never"] == 2
    assert [ev.label(c) for c in (0, 3, 4, 6)] == ["0", "3", "-1", "-3"]
