"""Sample bookkeeping of an audit: seeded requests in order, run accounting, selection top-ups and the
estimation plan of a sample budget."""

import math

import numpy as np

from audits.sampling import AuditSettings, Clock, SampleBook, Seeds


class _Coin:
    """Outputs: code 1 with probability p[0], else 0; records the seeds it was asked for."""

    def __init__(self):
        self.seeds = []

    def sample_codes(self, inp, n, seed):
        self.seeds.append(seed)
        return (np.random.default_rng(seed).random(n) < inp[0]).astype(np.int64)


def _book(max_samples=100_000):
    s = AuditSettings(epsilon=1.0, seconds=None, max_samples=max_samples, seed=7, confidence=0.95,
                      selection_share=0.4, validation_share=0.15, n0=1000)
    problem = _Coin()
    return problem, SampleBook(problem, s, Clock(None), Seeds(7))


def test_seeds_are_a_deterministic_sequence():
    a, b = Seeds(7), Seeds(7)
    first = [a.next() for _ in range(3)]
    assert first == [b.next() for _ in range(3)] and len(set(first)) == 3
    assert Seeds(8).next() != first[0]


def test_ensure_tops_up_and_counts_every_run():
    problem, book = _book()
    book.ensure((0.3,), 1000, 2)
    book.ensure((0.3,), 1000, 2)  # already there: no request
    assert len(problem.seeds) == 1 and book.samples == 1000 and book.hist[(0.3,)].sum() == 1000
    book.ensure((0.3,), 2500, 2)
    assert len(problem.seeds) == 2 and book.samples == 2500 and book.nsel[(0.3,)] == 2500
    assert book.half[(0.3,)].sum() == 500 + 750  # the odd-numbered samples of each request
    h = book.draw((0.3,), 400, 2)  # fresh samples: counted, not added to the selection histograms
    assert h.sum() == 400 and book.samples == 2900 and book.hist[(0.3,)].sum() == 2500
    assert book.budget_used() == 2900 / 100_000


def test_final_n_keeps_five_standard_deviations_of_slack():
    _, book = _book(max_samples=100_000)
    left = 100_000 - 0.55 * 100_000
    assert book.final_n((0.1,), (0.2,)) == int((left - 5 * math.sqrt(left)) / 2)
    _, small = _book(max_samples=4000)
    assert small.final_n((0.1,), (0.2,)) == 1000  # never below n0
