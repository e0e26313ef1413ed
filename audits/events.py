"""Output events the auditor compares between neighbouring inputs.

An output is summarised by an integer *code* in ``0..K-1`` (for the GTM: 0 = never halted,
1..T = halting step). An :class:`EventSpace` is a list of named sets of codes, held as a boolean
membership matrix, so the count of every event is one matrix-vector product with the code
histogram.

GTM events (:func:`halting_events`): the singletons {t} and {never}, the tails
{halted at t or later, or never} and the heads {halted at step <= t}. Heads and tails are
complements of each other, so both directions of every cut are examined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EventSpace:
    names: tuple[str, ...]
    membership: np.ndarray  # bool, shape (n_events, n_codes)

    def __post_init__(self):
        # float copy for fast counting (bool @ float would convert the matrix on every call)
        object.__setattr__(self, "_weights", np.ascontiguousarray(self.membership, dtype=np.float64))

    @property
    def n_codes(self) -> int:
        return self.membership.shape[1]

    def __len__(self) -> int:
        return len(self.names)

    def counts(self, histogram: np.ndarray) -> np.ndarray:
        """Number of samples in every event, from the histogram of output codes."""
        h = np.asarray(histogram, dtype=np.float64)
        return np.rint(self._weights @ h).astype(np.int64)

    def probabilities(self, distribution: np.ndarray) -> np.ndarray:
        """Probability of every event under an (exact or numerical) code distribution."""
        return self._weights @ np.asarray(distribution, dtype=np.float64)


def halting_events(T: int) -> EventSpace:
    """Singletons, tails and heads of the halting time (codes 0 = never, 1..T)."""
    n_codes = T + 1
    names: list[str] = []
    rows: list[np.ndarray] = []

    def add(name, codes):
        row = np.zeros(n_codes, dtype=bool)
        row[list(codes)] = True
        names.append(name)
        rows.append(row)

    add("never", [0])
    for t in range(1, T + 1):
        add(f"halt={t}", [t])
    for t in range(2, T + 1):  # t = 1 would be the sure event
        add(f"halt>={t}|never", [0, *range(t, T + 1)])
    for t in range(1, T + 1):
        add(f"halt<={t}", range(1, t + 1))
    return EventSpace(tuple(names), np.array(rows))


def codes_histogram(codes: np.ndarray, n_codes: int) -> np.ndarray:
    return np.bincount(np.asarray(codes, dtype=np.int64), minlength=n_codes)[:n_codes]
