"""Output events the auditor compares between neighbouring inputs.

An output is summarised by an integer *code* in ``0..K-1``. For the GTM a target answers the
outcome codes of ``docs/protocol.md`` - 0 = never halted, t = halted at step t, -t = stopped at
step t on its evaluation budget - and :func:`outcome_codes` maps them to ``0..2T`` (0, t, T + t).
An :class:`EventSpace` is a list of named sets of codes, held as a boolean membership matrix, so
the count of every event is one matrix-vector product with the code histogram.

GTM events (:func:`halting_events`): the singletons {t} and {never}, the tails
{halted at t or later, or never} and the heads {halted at step <= t} - heads and tails are
complements of each other among the runs that did not stop, so both directions of every cut are
examined - and the budget stops: the singletons {stopped at t} and {stopped at any step}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EventSpace:
    names: tuple[str, ...]
    membership: np.ndarray  # bool, shape (n_events, n_codes)
    code_labels: tuple[str, ...] | None = None  # how each code reads in a report (None: the code itself)

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

    def label(self, code: int) -> str:
        """How an output code reads in a report."""
        return self.code_labels[code] if self.code_labels is not None else str(int(code))


def outcome_codes(halt, T: int) -> np.ndarray:
    """The protocol's outcome codes (-T..T: 0 never halted, t halted at t, -t stopped at t on the
    evaluation budget, ``docs/protocol.md``) as event codes 0..2T: 0, t, and T + t for a stop at t.

    >>> outcome_codes([0, 3, -1, -3], T=3).tolist()
    [0, 3, 4, 6]
    """
    h = np.asarray(halt, dtype=np.int64)
    return np.where(h < 0, T - h, h)


def halting_events(T: int, *, stops: bool = False) -> EventSpace:
    """Singletons, tails and heads of the halting time (codes 0 = never, 1..T); with ``stops`` (a GTM
    target, whose runs may stop on their evaluation budget) also the budget stops (codes T + t =
    stopped at t, :func:`outcome_codes`)."""
    n_codes = 2 * T + 1 if stops else T + 1
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
    if not stops:
        return EventSpace(tuple(names), np.array(rows))
    for t in range(1, T + 1):
        add(f"stop={t}", [T + t])
    add("stop", range(T + 1, 2 * T + 1))
    labels = tuple(str(h) for h in [*range(0, T + 1), *range(-1, -T - 1, -1)])  # the protocol's codes
    return EventSpace(tuple(names), np.array(rows), labels)


def codes_histogram(codes: np.ndarray, n_codes: int) -> np.ndarray:
    return np.bincount(np.asarray(codes, dtype=np.int64), minlength=n_codes)[:n_codes]
