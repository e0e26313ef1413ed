"""Sample bookkeeping of an audit: the budget (time and / or runs), the seeds of the requests, the
accumulated selection histograms and the progress bar.

The audit engine (:func:`audits.audit_engine.run_audit`) draws every output through one
:class:`SampleBook`, so the order of the seeded requests - and with a sample budget the whole audit -
is reproducible from the audit's seed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .execution import Executor, InProcess, Request


@dataclass(frozen=True)
class AuditSettings:
    """What an audit is asked to do (frozen; the engine's phases read it)."""

    epsilon: float
    seconds: float | None
    max_samples: int | None
    seed: int
    confidence: float
    selection_share: float
    validation_share: float
    n0: int
    early_stop: bool = False  # early verdicts (audits.early_stop): interim looks at the witness, a flagrant selection end

    @property
    def alpha(self) -> float:
        return 1 - self.confidence

    @property
    def progress_total(self) -> float:
        """The unit of the progress bar: seconds, else runs."""
        return self.seconds or self.max_samples or 1


class Clock:
    """Wall time since the audit started and time left in its budget (inf without one)."""

    def __init__(self, seconds: float | None):
        self.start = time.monotonic()
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - self.elapsed()


class Seeds:
    """Deterministic per-request seeds derived from the audit seed and a request counter."""

    def __init__(self, seed: int):
        self.seed, self.i = int(seed), 0

    def next(self) -> int:
        self.i += 1
        return int(np.random.SeedSequence([self.seed, self.i]).generate_state(1)[0])


class ProgressBar:
    """A rich progress bar on stderr (``enabled=False``: silent)."""

    def __init__(self, enabled: bool, total: float | None):
        self._p = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._p = Progress(TextColumn("[bold]audit[/bold] {task.description}"), BarColumn(),
                               TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._p.start()
            self._task = self._p.add_task("selection", total=total or 1.0)

    def update(self, done: float, text: str | None = None):
        """Move the bar to ``done`` (in the unit of AuditSettings.progress_total); ``text`` replaces the phase
        description (None keeps it)."""
        if self._p is not None:
            if text is None:
                self._p.update(self._task, completed=done)
            else:
                self._p.update(self._task, completed=done, description=text)

    def close(self):
        if self._p is not None:
            self._p.stop()


class SampleBook:
    """Every run of the audit goes through here: seeded requests, run and time accounting, and the
    selection phase's accumulated histograms (all samples, and the odd-numbered ones for a hold-out).

    The runs themselves are computed by ``executor`` (:mod:`audits.execution`: in-process by default,
    or Dask workers), in fixed-size batches seeded from (request seed, batch index) - the same
    histograms wherever they ran."""

    def __init__(self, problem, settings: AuditSettings, clock: Clock, seeds: Seeds, executor: Executor | None = None):
        self.problem, self.settings, self.clock, self.seeds = problem, settings, clock, seeds
        self.executor = executor if executor is not None else InProcess()
        self.hist: dict[Any, np.ndarray] = {}
        self.half: dict[Any, np.ndarray] = {}  # histogram of the odd-numbered selection samples
        self.nsel: dict[Any, int] = {}
        self.secs: dict[Any, float] = {}
        self.samples = 0
        self.in_flight = 0  # runs of the current request group already computed (progress only)
        self.on_progress = None  # called with progress_done() as every batch lands (the audit's bar)

    def budget_used(self) -> float:
        """Share of the budget spent. A sample budget, when given, plans the whole audit (so it is
        reproducible from the seed); the clock is then only a hard stop."""
        s = self.settings
        if s.max_samples is not None:
            frac = (self.samples + self.in_flight) / s.max_samples
            return 1.0 if (s.seconds is not None and self.clock.left() <= 0) else frac
        return self.clock.elapsed() / s.seconds

    def progress_done(self) -> float:
        return self.budget_used() * self.settings.progress_total

    def histograms(self, wanted: list[tuple[Any, int]], n_codes: int, *, half: bool = False) -> list:
        """(histogram, odd-numbered runs' histogram or None) of n fresh outputs of each (inp, n) in
        ``wanted``; requests take the next seeds in order and run together (in parallel on workers)."""
        t0 = time.monotonic()
        reqs = [Request(inp, int(n), self.seeds.next(), half) for inp, n in wanted]
        self.in_flight = 0
        out = self.executor.histograms(self.problem, reqs, n_codes, on_batch=self.batch_done)
        self.in_flight = 0
        spent, total = time.monotonic() - t0, sum(r.n for r in reqs)
        for r in reqs:
            self.secs[r.inp] = self.secs.get(r.inp, 0.0) + spent * (r.n / total if total else 1.0 / len(reqs))
            self.samples += r.n
        return out

    def batch_done(self, runs: int) -> None:
        """A batch of the current request group landed (on any worker): advance the progress bar."""
        self.in_flight += int(runs)
        if self.on_progress is not None:
            self.on_progress(self.progress_done())

    def draw(self, inp, n: int, n_codes: int) -> np.ndarray:
        """Histogram of n fresh outputs of ``inp`` (not added to the selection histograms)."""
        return self.histograms([(inp, n)], n_codes)[0][0]

    def draw_many(self, wanted: list[tuple[Any, int]], n_codes: int) -> list[np.ndarray]:
        """Histograms of n fresh outputs of each (inp, n) in ``wanted``, in parallel when the executor can."""
        return [h for h, _ in self.histograms(wanted, n_codes)]

    def ensure(self, inp, n: int, n_codes: int) -> None:
        """Top up the selection histograms of ``inp`` to n runs."""
        have = self.nsel.get(inp, 0)
        if have < n:
            [(h, h1)] = self.histograms([(inp, n - have)], n_codes, half=True)
            self.hist[inp] = h if inp not in self.hist else self.hist[inp] + h
            self.half[inp] = h1 if inp not in self.half else self.half[inp] + h1
            self.nsel[inp] = n

    def seconds_per_run(self, a, b) -> float:
        """Measured seconds of one run of a plus one run of b (selection requests)."""
        return (self.secs.get(a, 0.0) / max(self.nsel.get(a, 1), 1)
                + self.secs.get(b, 0.0) / max(self.nsel.get(b, 1), 1))

    def final_n(self, a, b) -> int:
        """Runs per input the estimation phase can afford for the pair (a, b)."""
        s = self.settings
        n = math.inf
        if s.seconds is not None and s.max_samples is None:
            t_final = (s.seconds - max(self.clock.elapsed(), (s.selection_share + s.validation_share) * s.seconds)) * 0.9
            n = t_final / max(self.seconds_per_run(a, b), 1e-9)
        if s.max_samples is not None:
            left = s.max_samples - max(self.samples, (s.selection_share + s.validation_share) * s.max_samples)
            # the final runs are Poisson(n) per input: keep 5 standard deviations of their total as slack
            n = min(n, (left - 5 * math.sqrt(max(left, 0.0))) / 2)
        return max(s.n0, int(n))
