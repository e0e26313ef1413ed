"""Auditing mechanisms whose output is a *finite code* (a string or an integer).

The halting-time auditor (:mod:`audits.gtm_audit`) compares halting-time distributions on
neighbouring Bernoulli streams. Many mechanisms have some other finite output: the black-box
evaluator (:mod:`gtm_core.blackbox`) returns one point of a finite domain, BatchToCO returns an
output sequence. This module audits any of them with the *same* two-phase engine
(:func:`audits.audit_engine.run_audit`) and the same statistics (:mod:`audits.statistics`).

Inputs are opaque JSON values (a dataset, a stream, ...). The caller supplies the neighbouring
relation as a list of candidate pairs ``(input_a, input_b)``; both orders are examined.

Protocol (docs/finite_outputs.md), one JSON object per line, for any-language targets::

    request : {"input": <any JSON value>, "n": N, "seed": S}
    response: {"counts": {"<code>": count, ...}}      # counts sum to N
          or  {"outputs": [code_1, ..., code_N]}      # codes: strings or integers
          or  {"error": "..."}                        # a TargetError, never a verdict

Integer codes are normalised to their decimal string, so ``3`` and ``"3"`` are the same output.

Codes and events. The output alphabet is either declared by the caller (``alphabet=[...]``) or
discovered in a *pilot* round whose samples are thrown away (so the code book never depends on
the samples that are tested). An output outside the code book is counted in the bucket
``"<other>"``. Events are the singletons, their complements, and the likelihood-ratio level sets
(unions of codes) chosen in the selection phase by :func:`audits.audit_engine.run_audit`.

Two tests:

* :func:`audit_finite` - pure DP: a (1 - alpha) lower bound on the privacy loss
  ln(P_A[E] / P_B[E]) of the pre-registered witness (Poissonised conditional test), verdict
  ``violation`` when it exceeds the claimed epsilon.
* :func:`audit_finite_delta` - approximate DP at a fixed epsilon: a (1 - alpha) lower bound on
  delta(eps) >= P_A[E] - e^eps P_B[E] (one-sided Clopper-Pearson bounds, alpha/2 each, on fresh
  samples of the one pair and event chosen in the selection phase), verdict ``violation`` when it
  exceeds the claimed delta.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from gtm_core.errors import BudgetStop, InvalidParameter
from gtm_core.validation import (
    check_bool,
    check_half_open_unit,
    check_int,
    check_nonnegative,
    check_open_unit,
    check_positive_int,
)

from .audit_engine import DEADLINE_GRACE_SECONDS, run_audit
from .audit_results import AuditResult
from .events import EventSpace
from .statistics import cp_lower, cp_upper
from .finite_targets import (CallableFiniteTarget, FiniteTarget, SubprocessFiniteTarget, canonical, output_code,
                             validate_response)

OTHER = "<other>"
MAX_CODES = 4096  # largest code book the engine handles (events are a dense matrix)
DELTA_FINAL_CHUNKS = 8  # chunks of the delta audit's final phase under a deadline

__all__ = [
    "OTHER",
    "FiniteTarget",
    "CallableFiniteTarget",
    "SubprocessFiniteTarget",
    "validate_response",
    "canonical",
    "CodeBook",
    "FinitePair",
    "FiniteProblem",
    "FiniteAudit",
    "DeltaAudit",
    "audit_finite",
    "audit_finite_delta",
    "discover_codebook",
]


# ---------------------------------------------------------------------------
# code book and the audit problem
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeBook:
    """Fixed mapping output code -> index; unseen codes go to :data:`OTHER` (the last index)."""

    codes: tuple[str, ...]

    @classmethod
    def of(cls, codes: Iterable) -> "CodeBook":
        seen: dict[str, None] = {}
        for c in codes:
            seen.setdefault(output_code(c, "alphabet"), None)
        seen.pop(OTHER, None)
        if len(seen) + 1 > MAX_CODES:
            raise InvalidParameter(f"alphabet has {len(seen)} codes; at most {MAX_CODES - 1} are supported")
        return cls(tuple(seen) + (OTHER,))

    @property
    def n_codes(self) -> int:
        return len(self.codes)

    def index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.codes)}

    def histogram(self, counts: Counter) -> np.ndarray:
        idx = self.index()
        h = np.zeros(self.n_codes, dtype=np.int64)
        for c, k in counts.items():
            h[idx.get(c, self.n_codes - 1)] += k
        return h

    def events(self) -> EventSpace:
        """Singletons {c} and complements 'not c' (level-set unions are added by the engine)."""
        n = self.n_codes
        eye = np.eye(n, dtype=bool)
        names = [f"out={c}" for c in self.codes] + [f"out!={c}" for c in self.codes]
        return EventSpace(tuple(names), np.vstack([eye, ~eye]))


@dataclass(frozen=True)
class FinitePair:
    """One candidate: inputs A and B (canonical keys) and a label for reports."""

    key_a: str
    key_b: str
    label: str = ""
    family: str = "finite"

    @property
    def T(self) -> int:  # the engine's cost ordering looks at the input length only
        return 1

    def to_dict(self) -> dict:
        return {"input": json.loads(self.key_a), "input_prime": json.loads(self.key_b), "label": self.label}


class FiniteProblem:
    """The :class:`audits.audit_engine.AuditProblem` of a finite-output target on caller-given pairs."""

    initial_samples = 1000

    def __init__(self, target: FiniteTarget, pairs: Sequence, codebook: CodeBook, *, labels: Sequence | None = None,
                 refine: Callable | None = None):
        self.target, self.codebook = target, codebook
        self._events = codebook.events()
        self._refine = refine
        self.values: dict[str, Any] = {}
        self.pairs: list[FinitePair] = []
        for i, (a, b) in enumerate(pairs):
            ka, kb = canonical(a), canonical(b)
            self.values[ka], self.values[kb] = a, b
            lab = str(labels[i]) if labels is not None else f"pair {i}"
            self.pairs += [FinitePair(ka, kb, lab), FinitePair(kb, ka, lab + " (reversed)")]

    def initial_candidates(self):
        return list(self.pairs)

    def refine(self, candidate, rng):
        if self._refine is None:
            return []
        out = []
        for a, b in self._refine(self.values[candidate.key_a], self.values[candidate.key_b], rng):
            ka, kb = canonical(a), canonical(b)
            self.values[ka], self.values[kb] = a, b
            out.append(FinitePair(ka, kb, candidate.label + " (refined)"))
        return out

    def inputs(self, candidate):
        return candidate.key_a, candidate.key_b

    def events(self, candidate) -> EventSpace:
        return self._events

    def sample_codes(self, key, n, seed) -> np.ndarray:
        h = self.codebook.histogram(self.target.sample(self.values[key], int(n), int(seed)))
        # shuffle so the engine's odd/even hold-out split is a random split of the draws
        codes = np.repeat(np.arange(self.codebook.n_codes), h)
        np.random.default_rng(seed).shuffle(codes)
        return codes

    def describe_input(self, key):
        return self.values[key]


def discover_codebook(target: FiniteTarget, inputs: Iterable, n: int, seed: int) -> CodeBook:
    """Pilot round: n draws per input (thrown away afterwards) fix the code book."""
    seen: Counter = Counter()
    for i, value in enumerate(inputs):
        s = int(np.random.SeedSequence([int(seed), 0xC0DE, i]).generate_state(1)[0])
        seen.update(target.sample(value, int(n), s))
    return CodeBook.of(c for c, _ in seen.most_common(MAX_CODES - 1))


# ---------------------------------------------------------------------------
# pure DP: epsilon lower bound
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FiniteAudit:
    """Result of :func:`audit_finite`: the engine's :class:`AuditResult` plus the code book."""

    result: AuditResult
    codebook: CodeBook
    pilot_samples: int = 0

    @property
    def verdict(self) -> str:
        return self.result.verdict

    @property
    def violation(self) -> bool:
        return self.result.violation

    @property
    def epsilon_lower_bound(self) -> float:
        return self.result.epsilon_lower_bound

    def to_dict(self) -> dict:
        d = self.result.to_dict()
        w = d.get("witness")
        if w is not None:
            w["input"], w["input_prime"] = w.pop("p"), w.pop("p_prime")
            w["event_outputs"] = [self.codebook.codes[i] for i in w["event_codes"]]
        d["samples"] += self.pilot_samples
        d["pilot_samples"] = self.pilot_samples
        d["codebook"] = list(self.codebook.codes)
        d["output_kind"] = "finite"
        return d


def audit_finite(target: FiniteTarget, pairs: Sequence, *, epsilon: float, seconds: float | None = 60.0,
                 max_samples: int | None = None, seed: int = 0, confidence: float = 0.95,
                 alphabet: Iterable | None = None, pilot: int = 200, labels: Sequence | None = None,
                 refine: Callable | None = None, progress: bool = False) -> FiniteAudit:
    """Audit a finite-output target for pure epsilon-DP on the given neighbouring pairs.

    ``pairs``: a non-empty list of ``(input_a, input_b)`` JSON values, neighbours under the
    caller's relation (both orders are examined). ``alphabet``: the output codes if known; else a
    pilot of ``pilot`` draws per input (not reused) discovers them. ``refine(a, b, rng)`` may
    propose further pairs near a promising one. The selection / validation / estimation phases
    and the statistic are those of :func:`audits.audit_engine.run_audit`.
    """
    pairs = list(pairs)
    if not pairs:
        raise InvalidParameter("pairs must contain at least one (input, input') pair")
    if any(not (isinstance(p, (tuple, list)) and len(p) == 2) for p in pairs):
        raise InvalidParameter("every element of pairs must be an (input, input') pair")
    pilot_samples = 0
    if alphabet is not None:
        book = CodeBook.of(alphabet)
    else:
        check_positive_int("pilot", pilot)
        distinct = {canonical(v): v for p in pairs for v in p}
        book = discover_codebook(target, distinct.values(), pilot, seed)
        pilot_samples = pilot * len(distinct)
    problem = FiniteProblem(target, pairs, book, labels=labels, refine=refine)
    if seconds is not None:
        # a hard budget: no answer is awaited past it (plus a grace for the final bookkeeping)
        target.set_deadline(time.monotonic() + seconds + DEADLINE_GRACE_SECONDS)
    result = run_audit(problem, epsilon=epsilon, seconds=seconds, max_samples=max_samples, seed=seed,
                       confidence=confidence, progress=progress, target_name=target.describe())
    return FiniteAudit(result, book, pilot_samples)


# ---------------------------------------------------------------------------
# approximate DP: delta lower bound at a fixed epsilon
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DeltaAudit:
    """Result of :func:`audit_finite_delta` (a lower bound on delta(epsilon) with its witness)."""

    verdict: str
    epsilon: float
    delta_claimed: float
    delta_lower_bound: float
    confidence: float
    witness: dict
    samples: int
    seconds: float
    seed: int
    selection: list = field(default_factory=list)
    method: str = ("selection on one sample set: per ordered pair the empirical hockey-stick event "
                   "{o: P_A(o) > e^eps P_B(o)}; estimation on fresh samples of the one chosen pair and event: "
                   "CP_lower(P_A[E], alpha/2) - e^eps CP_upper(P_B[E], alpha/2)")

    @property
    def violation(self) -> bool:
        return self.verdict == "violation"

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def selection_score(px: float, py: float, e_eps: float, n: int, penalised: bool) -> float:
    """The selection's rank of an ordered pair and event with frequencies px, py in n draws each:
    px - e^eps py, minus its standard error sqrt((px + e^{2 eps} py) / n) when ``penalised``."""
    score = px - e_eps * py
    return score - math.sqrt((px + e_eps * e_eps * py) / n) if penalised else score


def audit_finite_delta(target: FiniteTarget, pairs: Sequence, *, epsilon: float, delta: float,
                       n_selection: int = 20_000, n_final: int = 200_000, seed: int = 0,
                       confidence: float = 0.95, seconds: float | None = None,
                       penalised: bool = False, deadline: float | None = None) -> DeltaAudit:
    """Approximate-DP audit at a fixed epsilon: lower bound on delta(eps) = max_E P_A[E] - e^eps P_B[E].

    ``seconds`` (optional) stops the selection early (the final phase always runs its planned
    ``n_final`` draws per input, fixed in advance, so the bound's validity does not depend on time).
    ``penalised``: rank the selection's pairs by their score minus one standard error of it,
    sqrt(P_A[E] + e^{2 eps} P_B[E]) / sqrt(n_selection) (:func:`selection_score`), so that among many
    pairs a frequent event's sampling noise does not outrank a rare event's real gap; the choice
    only affects which pair is tested, never the validity of the bound.
    ``deadline`` (optional, ``time.monotonic()`` seconds): a wall deadline - the selection stops at it, and the
    final phase draws its ``n_final`` runs per input in :data:`DELTA_FINAL_CHUNKS` chunks, stopping between
    chunks when the next one (timed from the last) would pass it or when the target stops one in flight
    (:class:`gtm_core.errors.BudgetStop`: that chunk is discarded); the bound is then on the runs drawn
    (the same number for both inputs; the stop depends on the clock only).
    """
    check_bool("penalised", penalised)
    check_nonnegative("epsilon", epsilon)
    check_half_open_unit("delta", delta)
    check_open_unit("confidence", confidence)
    for name, v in (("n_selection", n_selection), ("n_final", n_final)):
        check_int(name, v, minimum=100)
    pairs = list(pairs)
    if not pairs:
        raise InvalidParameter("pairs must contain at least one (input, input') pair")
    t0 = time.monotonic()
    alpha = 1 - confidence
    E = math.exp(epsilon)
    counter = [0]

    def draw(value, n) -> Counter:
        counter[0] += 1
        s = int(np.random.SeedSequence([int(seed), 0xDE17A, counter[0]]).generate_state(1)[0])
        return target.sample(value, n, s)

    samples = 0
    sel: dict[str, Counter] = {}
    values: dict[str, Any] = {}
    for a, b in pairs:
        for v in (a, b):
            k = canonical(v)
            if k not in sel and (seconds is None or time.monotonic() - t0 < 0.5 * seconds or not sel):
                try:
                    counts = draw(v, n_selection)
                except BudgetStop:
                    if not sel:
                        raise
                    continue
                values[k] = v
                sel[k] = counts
                samples += n_selection
    ranked = []
    for i, (a, b) in enumerate(pairs):
        for x, y, tag in ((a, b, ""), (b, a, " (reversed)")):
            kx, ky = canonical(x), canonical(y)
            if kx not in sel or ky not in sel:
                continue
            cx, cy = sel[kx], sel[ky]
            event = sorted(c for c in set(cx) | set(cy) if cx[c] > E * cy[c])
            px = sum(cx[c] for c in event) / n_selection
            py = sum(cy[c] for c in event) / n_selection
            ranked.append((selection_score(px, py, E, n_selection, penalised), i, kx, ky, tuple(event),
                           f"pair {i}{tag}"))
    ranked.sort(key=lambda r: -r[0])
    score, i, kx, ky, event, label = ranked[0]
    fx, fy, n_drawn = final_draws(draw, values[kx], values[ky], n_final, deadline)
    samples += 2 * n_drawn
    ka, kb = sum(fx[c] for c in event), sum(fy[c] for c in event)
    lo = float(cp_lower(ka, n_drawn, alpha / 2)) if n_drawn else 0.0
    hi = float(cp_upper(kb, n_drawn, alpha / 2)) if n_drawn else 1.0
    bound = lo - E * hi if event else 0.0
    witness = {"input": values[kx], "input_prime": values[ky], "label": label, "event_outputs": list(event),
               "count": int(ka), "count_prime": int(kb), "n": n_drawn, "probability_lower": lo,
               "probability_prime_upper": hi, "selection_score": score}
    return DeltaAudit("violation" if bound > delta else "no-violation-found", float(epsilon), float(delta),
                      float(max(bound, 0.0)), confidence, witness, samples, time.monotonic() - t0, int(seed),
                      [{"score": r[0], "pair": r[5], "event_size": len(r[4])} for r in ranked[:5]])


def final_draws(draw: Callable, x, y, n_final: int, deadline: float | None) -> tuple[Counter, Counter, int]:
    """The delta audit's final phase: ``n_final`` fresh draws of x and of y (without ``deadline``: one
    request each), else chunks of both until ``deadline`` (:func:`audit_finite_delta`); (counts of x,
    counts of y, runs per input drawn)."""
    if deadline is None:
        return draw(x, n_final), draw(y, n_final), n_final
    fx, fy, done, per_chunk = Counter(), Counter(), 0, 0.0
    chunk = -(-n_final // DELTA_FINAL_CHUNKS)
    while done < n_final:
        m = min(chunk, n_final - done)
        if time.monotonic() + per_chunk * m / chunk > deadline:
            break
        t0 = time.monotonic()
        try:
            cx, cy = draw(x, m), draw(y, m)
        except BudgetStop:
            break
        per_chunk = (time.monotonic() - t0) * chunk / m
        fx.update(cx)
        fy.update(cy)
        done += m
    return fx, fy, done
