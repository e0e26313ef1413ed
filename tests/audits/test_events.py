"""Event spaces of halting times."""

import numpy as np

from audits.events import codes_histogram, halting_events


def test_halting_events_counts():
    ev = halting_events(3)
    hist = codes_histogram(np.array([0, 1, 1, 2, 3, 3, 3]), 4)
    counts = dict(zip(ev.names, ev.counts(hist)))
    assert counts["never"] == 1 and counts["halt=1"] == 2 and counts["halt=3"] == 3
    assert counts["halt>=2|never"] == 5 and counts["halt<=2"] == 3
    # heads and tails are complements
    assert counts["halt<=1"] + counts["halt>=2|never"] == 7
    assert len(ev) == 1 + 3 + 2 + 3
