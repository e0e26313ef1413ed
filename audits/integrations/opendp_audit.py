"""Audit any OpenDP measurement against its own privacy map (optional extra ``[opendp]``).

``audit_measurement(measurement, d_in=1, seconds=60)`` reads the claim from the measurement
itself (:func:`audits.integrations.opendp_claims.read_claim`, in its own output measure), searches
neighbouring datasets of its input domain and metric
(:func:`audits.integrations.opendp_neighbours.neighbouring_pairs`), codes its outputs finitely
(:class:`audits.integrations.opendp_coding.OutputCoder`) and runs the finite-output engine of
:mod:`audits.finite` - the same two-phase search, conditional test, witness, JSON and report as
``gtm audit``. This module keeps the driver (:func:`audit_measurement`, :class:`OpenDPAudit`) and
:func:`load_measurement`.

Claims, by output measure (docs/opendp.md):

* ``MaxDivergence``: pure epsilon = ``map(d_in)``; :func:`audits.finite.audit_finite` (a lower
  bound on epsilon; ``violation`` when it exceeds the claim).
* ``Approximate(MaxDivergence)``: ``(epsilon, delta) = map(d_in)``; with delta = 0 the pure audit,
  else :func:`audits.finite.audit_finite_delta` at that epsilon (a lower bound on delta(epsilon)).
* ``SmoothedMaxDivergence``: the map gives a delta(epsilon) curve; it is tested at the epsilons
  where the claimed curve is 0.2, 0.1 and 0.05
  (:data:`audits.integrations.opendp_claims.CURVE_DELTAS`, Bonferroni over the three).
* ``ZeroConcentratedDivergence``: rho = ``map(d_in)`` is tested through the (epsilon, delta(epsilon))
  curve rho-zCDP implies, as OpenDP itself converts it (``make_zCDP_to_approxDP``: the
  conversion of Canonne, Kamath and Steinke 2020, the tightest of the standard ones). Why a
  curve: a sample of a finite event can refute an (epsilon, delta) statement, not a Renyi bound
  directly; every point of the implied curve is a consequence of rho-zCDP, so a violation of it is
  a violation of the zCDP claim, and the tightest valid conversion gives the strongest test.
* anything else (Renyi, ...) is refused with :class:`gtm_core.errors.UnsupportedConfiguration`.

Budget: ``seconds=S`` holds - the audit ends within ``S * 1.02 + 1`` wall seconds at any load; the engine
gets half the time after the pilot, and a confirmation phase spends the rest on fresh samples of the
engine's witness, pooled with its estimation counts (one exact conditional test;
:mod:`audits.integrations.opendp_budget` states the rule and why it is valid).

Outputs are coded before the tested samples are drawn: a pilot (``pilot`` draws per input, at most a
tenth of the budget, thrown away) fixes the float bins of :mod:`audits.integrations.opendp_coding` (booleans, integers
with few distinct values, strings and None are their own codes; dicts, tuples and lists are coded
by their parts).

OpenDP draws its noise from its own CSPRNG, which cannot be seeded, so two runs with the same
seed agree in distribution, not bit for bit. For the same reason the engine's seed is ``seed``
mixed with fresh operating-system entropy (:func:`engine_seed`; the entropy is recorded in the JSON
as ``poisson_entropy``, ``poisson_entropy=`` replays it): the estimation phase's conditional test is
exact because each input is run a *random* Poisson(M) number of times; a seed that fixed those
numbers would leave them fixed while the noise stays random, and conditional on fixed run counts
n_A != n_B the test is biased - on randomized response at alpha = 0.05 the false-alarm rate is
0.19 when n_A exceeds M by 2.3 standard deviations (the exact law: benchmarks/results/
opendp_catalogue.md), so a user who reran one unlucky seed would see one false alarm in five.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import math
import secrets
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from gtm_core.errors import BudgetStop, InvalidParameter, TargetError
from gtm_core.validation import is_integer, is_real

from ..audit_engine import run_audit
from ..events import EventSpace
from ..finite import MAX_CODES, CallableFiniteTarget, CodeBook, FiniteAudit, FiniteProblem, audit_finite_delta, canonical
from ..report import render_report
from .opendp import opendp_prelude
from .opendp_budget import Confirmation, confirm_witness, plan_deadlines, wall_bound
from .opendp_claims import OpenDPClaim, read_claim
from .opendp_coding import DEFAULT_BINS, OutputCoder
from .opendp_neighbours import neighbouring_pairs, user_pairs

MIN_PILOT = 5  # pilot draws per input, at least (time permitting)
FIRST_ROUND_RUNS = 200  # runs per input of the engine's first selection round, at most
ENGINE_DRAW_SHARE = 0.8  # the engine's sample budget: this share of the draws its time affords at the pilot's
# rate (its bookkeeping costs the rest); a slower machine is stopped by the deadline, a faster one leaves the
# time to the confirmation (audits.integrations.opendp_budget)


# ---------------------------------------------------------------------------------------------
# the audit
# ---------------------------------------------------------------------------------------------


class MeasurementTarget(CallableFiniteTarget):
    """A finite-output target that invokes the measurement once per draw and codes the output.

    ``set_deadline(t)``: a request whose predicted time (its draws times :meth:`seconds_per_draw`) would
    pass ``t`` is refused, and a request in flight stops at ``t`` - both with
    :class:`gtm_core.errors.BudgetStop` (the wall budget, :mod:`audits.integrations.opendp_budget`)."""

    def __init__(self, measurement, coder: OutputCoder | None = None, *, name: str = "opendp-measurement"):
        self.measurement, self.coder, self.draws = measurement, coder, 0
        self.deadline: float | None = None
        self.draw_seconds, self.recent = 0.0, None  # total seconds of the draws; seconds per draw, last request
        super().__init__(self._draw, name=name)

    def set_deadline(self, deadline: float | None) -> None:
        self.deadline = deadline

    def seconds_per_draw(self) -> float:
        """Measured seconds per draw: the last request's (of at least 20 draws), else the mean so far."""
        if self.recent is not None:
            return self.recent
        return self.draw_seconds / self.draws if self.draws else 0.0

    def outputs(self, data, n: int) -> list:
        n, deadline = int(n), self.deadline
        if deadline is not None and n > 0 and time.monotonic() + n * self.seconds_per_draw() > deadline:
            raise BudgetStop(f"a request of {n} draws would pass the audit's deadline")
        out = []
        t0 = time.monotonic()
        for _ in range(n):
            if deadline is not None and time.monotonic() > deadline:
                raise BudgetStop("the audit's deadline passed during a request")
            try:
                out.append(self.measurement(data))
            except Exception as exc:  # broad-except: OpenDP raises its own exception types
                raise TargetError(f"the measurement raised on input {data!r:.60}: "
                                  f"{str(exc).strip().splitlines()[-1][:160]}") from None
        spent = time.monotonic() - t0
        self.draws += n
        self.draw_seconds += spent
        if n >= 20:
            self.recent = spent / n
        return out

    def _draw(self, data, n, seed):
        return [self.coder.code(o) for o in self.outputs(data, n)]


@dataclass(frozen=True)
class OpenDPAudit:
    """The result of :func:`audit_measurement`: the claim, the verdict and the engine's results.

    ``verdict``: ``"violation"`` when any tested claim point is exceeded by its lower bound.
    ``pure``: the :class:`audits.finite.FiniteAudit` of a pure claim (None otherwise); ``points``:
    one :class:`audits.finite.DeltaAudit` per tested (epsilon, delta) point otherwise.
    """

    claim: OpenDPClaim
    verdict: str
    coder: OutputCoder
    pairs: int
    pilot_samples: int
    seconds: float
    seed: int
    confidence: float
    pure: Any = None
    points: tuple = ()
    target: str = ""
    poisson_entropy: int | None = None
    confirmation: Confirmation | None = None
    budget_seconds: float | None = None

    @property
    def violation(self) -> bool:
        return self.verdict == "violation"

    @property
    def epsilon_lower_bound(self) -> float | None:
        return None if self.pure is None else self.pure.epsilon_lower_bound

    def to_dict(self) -> dict:
        if self.pure is not None:
            d = self.pure.to_dict()
            d["samples"] += self.pilot_samples
        else:
            best = max(self.points, key=lambda a: a.delta_lower_bound - a.delta_claimed)
            d = {"verdict": self.verdict, "epsilon_claimed": best.epsilon, "epsilon_lower_bound": None,
                 "delta_claimed": best.delta_claimed, "delta_lower_bound": best.delta_lower_bound,
                 "confidence": self.confidence, "witness": best.witness,
                 "samples": sum(a.samples for a in self.points) + self.pilot_samples,
                 "points": [a.to_dict() for a in self.points],
                 "method": (f"approximate DP: one delta(epsilon) lower bound per claimed point "
                            f"(Bonferroni over {len(self.points)}): {self.points[0].method}")}
        d.update({"verdict": self.verdict, "seconds": self.seconds, "seed": self.seed, "target": self.target,
                  "claim": self.claim.to_dict(), "output_coding": self.coder.describe(),
                  "pairs_searched": self.pairs, "output_pilot_samples": self.pilot_samples,
                  "noise_seeded": False, "poisson_entropy": self.poisson_entropy,
                  "budget": {"seconds": self.budget_seconds, "wall_bound": wall_bound(self.budget_seconds)
                             if self.budget_seconds is not None else None},
                  "confirmation": None if self.confirmation is None else self.confirmation.to_dict()})
        return d

    def report_html(self) -> str:
        """The HTML report: ``gtm audit``'s page for a pure claim, a summary page per point otherwise."""
        if self.pure is not None:
            return render_report(self.pure.result, "html")
        e = html.escape
        rows = "".join(
            f"<tr><td>{a.epsilon:.6g}</td><td>{a.delta_claimed:.6g}</td><td>{a.delta_lower_bound:.6g}</td>"
            f"<td>{e(a.verdict)}</td><td><code>{e(str(a.witness.get('input'))[:80])}</code> vs "
            f"<code>{e(str(a.witness.get('input_prime'))[:80])}</code>, event {e(str(a.witness.get('event_outputs'))[:80])}"
            f"</td></tr>" for a in self.points)
        return "\n".join([
            "<!DOCTYPE html>", '<html lang="en">', '<head><meta charset="utf-8">',
            f"<title>OpenDP privacy audit: {e(self.verdict)}</title></head>", "<body>",
            "<h1>OpenDP privacy audit</h1>", f"<p><b>verdict</b>: {e(self.verdict)}</p>",
            f"<p><b>claim</b>: {e(self.claim.measure)} at d_in = {e(str(self.claim.d_in))}: {e(self.claim.how)}</p>",
            f"<p><b>confidence</b>: {self.confidence:g} overall (Bonferroni over the points)</p>",
            "<table><thead><tr><th>epsilon</th><th>claimed delta</th><th>delta lower bound</th><th>verdict</th>"
            "<th>witness</th></tr></thead><tbody>", rows, "</tbody></table>",
            f"<p>{e(self.points[0].method)}</p>", "</body>", "</html>", ""])


def first_round_runs(rate: float, seconds: float, n_inputs: int) -> int:
    """Runs per input of the engine's first selection round: :data:`FIRST_ROUND_RUNS`, fewer when the
    measured draw rate cannot afford it - the round takes at most a fifth of the draws the time
    allows (a draw through OpenDP's FFI costs about a millisecond, a GTM run tens of them; the
    engine's default of 1000 per input would use the whole budget) - and at least 25."""
    return int(min(FIRST_ROUND_RUNS, max(25, 0.2 * rate * seconds / max(n_inputs, 1))))


class OrderedFiniteProblem(FiniteProblem):
    """:class:`audits.finite.FiniteProblem` whose events add, for ordered codes (the first ``ordered``
    codes of the code book: bins in increasing order), every head {b_0..b_(j-1)} and tail
    {b_j..b_last}: the events where a noisy count or score leaks (Laplace tails)."""

    def __init__(self, target, pairs, codebook, ordered: int, *, labels=None):
        super().__init__(target, pairs, codebook, labels=labels)
        base = codebook.events()
        names, rows = list(base.names), [base.membership]
        for j in range(1, ordered):
            head = np.zeros(codebook.n_codes, dtype=bool)
            head[:j] = True
            tail = np.zeros(codebook.n_codes, dtype=bool)
            tail[j:ordered] = True
            names += [f"out<={codebook.codes[j - 1]}", f"out>={codebook.codes[j]}"]
            rows += [head[None, :], tail[None, :]]
        self.event_space = EventSpace(tuple(names), np.vstack(rows))

    def events(self, candidate) -> EventSpace:
        return self.event_space


def engine_plan(budget: int, n_pairs: int, n_inputs: int, rate: float, seconds: float) -> tuple[int, float]:
    """(first-round runs per input, selection share) of the engine on a ``budget``-sample plan. With fewer
    than four pairs (fewer than the 8 directed candidates after which the engine checks its budget within
    a round) every round samples every candidate, so a first round of about a third of the budget makes
    the halving stop after its second round, at the engine's extended selection share (0.6), instead of
    a third round that would double past it; more pairs: :func:`first_round_runs`."""
    if n_pairs < 4:
        return max(25, int(0.32 * budget / n_inputs)), (0.1 if n_pairs == 1 else 0.25)
    return min(first_round_runs(rate, seconds, n_inputs), max(25, budget // (5 * n_inputs))), 0.25


def _pure_audit(target, pairs, labels, pilot_outputs, *, epsilon, deadlines, rate, max_samples, seed, confidence,
                progress, name) -> tuple[FiniteAudit, Confirmation | None]:
    """:func:`audits.audit_engine.run_audit` on the finite problem (code book fixed from the pilot outputs,
    thrown away) until the engine's deadline, then the confirmation of its witness until the audit's
    (:func:`audits.integrations.opendp_budget.confirm_witness`; not with a user's ``max_samples``)."""
    seen = Counter(target.coder.code(o) for o in pilot_outputs)
    book = CodeBook.of(target.coder.alphabet() or [c for c, _ in seen.most_common(MAX_CODES - 1)])
    problem = OrderedFiniteProblem(target, pairs, book, target.coder.ordered, labels=labels)
    now = time.monotonic()
    engine_end = deadlines.end if max_samples is not None else deadlines.engine(now)
    seconds = max(engine_end - now, 1e-3)
    budget = max_samples if max_samples is not None else max(400, int(ENGINE_DRAW_SHARE * rate * seconds))
    n_inputs = len({k for p in problem.pairs for k in (p.key_a, p.key_b)})
    first, selection_share = engine_plan(budget, len(pairs), n_inputs, rate, seconds)
    problem.initial_samples = first
    target.set_deadline(engine_end)
    result = run_audit(problem, epsilon=epsilon, seconds=seconds, max_samples=budget, seed=seed,
                       confidence=confidence, progress=progress, target_name=name, n0=first,
                       selection_share=selection_share, validation_share=0.1)
    confirmation = None
    if max_samples is None:
        result, confirmation = confirm_witness(problem, result, target, deadline=deadlines.end, seed=seed)
    target.set_deadline(None)
    return FiniteAudit(result, book, 0), confirmation


def engine_seed(seed: int, entropy: int | None = None) -> tuple[int, int]:
    """The audit engine's seed: ``seed`` mixed with 64 bits of ``entropy`` (fresh from the operating
    system when None), and the entropy used. The engine draws the estimation phase's Poisson run
    counts from its seed; they must be random given everything the user fixes, since the
    measurement's noise is not seeded (module docstring)."""
    if entropy is None:
        entropy = secrets.randbits(64)
    if not is_integer(entropy) or not 0 <= entropy < 2**64:
        raise InvalidParameter(f"poisson_entropy must be an integer in [0, 2^64), got {entropy!r}")
    mixed = int(np.random.SeedSequence([int(seed), int(entropy)]).generate_state(1, dtype=np.uint32)[0])
    return mixed, int(entropy)


def measurement_space(measurement):
    return measurement.input_domain, measurement.input_metric


def audit_measurement(measurement, *, d_in: Any = 1, seconds: float = 60.0, seed: int = 0,
                      confidence: float = 0.95, pairs: Sequence | None = None, search: bool = True,
                      max_samples: int | None = None, bins: int = DEFAULT_BINS, pilot: int = 100,
                      progress: bool = False, poisson_entropy: int | None = None) -> OpenDPAudit:
    """Audit ``measurement`` against its own privacy map at ``d_in`` (see the module docstring).

    ``pairs``: extra ``(input, input')`` pairs (the user vouches for their distance); ``search``:
    also search neighbours from the domain and metric. ``seconds`` bounds the audit's wall time (the pilot
    included: :func:`audits.integrations.opendp_budget.wall_bound`); ``max_samples`` (pure claims) plans the
    engine on that sample budget instead, without a confirmation (the clock stays the hard stop).
    ``poisson_entropy``: the entropy mixed into the engine's seed (:func:`engine_seed`; None: fresh).
    """
    if not (0 < confidence < 1):
        raise InvalidParameter(f"confidence must be in (0, 1), got {confidence!r}")
    if not (is_real(seconds) and math.isfinite(seconds) and seconds > 0):
        raise InvalidParameter(f"seconds must be a finite number > 0, got {seconds!r}")
    if not is_integer(seed) or seed < 0:
        raise InvalidParameter(f"seed must be an integer >= 0, got {seed!r}")
    seconds, seed = float(seconds), int(seed)
    mixed_seed, entropy = engine_seed(seed, poisson_entropy)
    t0 = time.monotonic()
    deadlines = plan_deadlines(t0, seconds)
    claim = read_claim(measurement, d_in)
    domain, metric = measurement_space(measurement)
    found = list(neighbouring_pairs(domain, metric, d_in)) if search else []
    given = user_pairs(domain, pairs or [])
    candidates = given + found
    if not candidates:
        raise InvalidParameter("no neighbouring pairs to audit: give pairs (or allow the search)")
    target = MeasurementTarget(measurement)
    inputs = {canonical(v): v for p in candidates for v in (p.input, p.input_prime)}
    pilot_outputs = run_pilot(target, list(inputs.values()), pilot, t0, deadlines.pilot)
    pilot_samples = target.draws
    target.coder = OutputCoder.fit(pilot_outputs, bins)
    pair_values = [(p.input, p.input_prime) for p in candidates]
    labels = [p.label for p in candidates]
    common = dict(target=describe(measurement), claim=claim, coder=target.coder, pairs=len(candidates),
                  pilot_samples=pilot_samples, seed=seed, confidence=confidence, poisson_entropy=entropy,
                  budget_seconds=seconds)
    rate = 1.0 / max(target.seconds_per_draw(), 1e-6)  # draws per second (the pilot)
    if claim.kind == "pure":
        fa, confirmation = _pure_audit(target, pair_values, labels, pilot_outputs, epsilon=claim.points[0].epsilon,
                                       deadlines=deadlines, rate=rate, max_samples=max_samples, seed=mixed_seed,
                                       confidence=confidence, progress=progress, name=describe(measurement))
        return OpenDPAudit(verdict=fa.verdict, seconds=time.monotonic() - t0, pure=fa, confirmation=confirmation,
                           **common)
    k = len(claim.points)
    start = time.monotonic()
    share = max(deadlines.end - start, 1e-3) / k
    per_point = ENGINE_DRAW_SHARE * share * rate
    n_selection = max(100, int(0.35 * per_point / len(inputs)))
    n_final = max(100, int(0.65 * per_point / 2))
    results = []
    for i, point in enumerate(claim.points):
        deadline = start + (i + 1) * share
        target.set_deadline(deadline)
        results.append(audit_finite_delta(target, pair_values, epsilon=point.epsilon, delta=point.delta,
                                          n_selection=n_selection, n_final=n_final, seed=seed + i,
                                          confidence=1 - (1 - confidence) / k, seconds=share,
                                          deadline=deadline))
    target.set_deadline(None)
    verdict = "violation" if any(a.violation for a in results) else "no-violation-found"
    return OpenDPAudit(verdict=verdict, seconds=time.monotonic() - t0, points=tuple(results), **common)


def run_pilot(target, inputs: list, per_input: int, t0: float, deadline: float) -> list:
    """The pilot's outputs (they fix the output coding and are thrown away): at most ``per_input`` draws per
    input, fewer for a slow measurement - input i stops once the pilot's time share (up to ``deadline``) of
    inputs 0..i is spent, after :data:`MIN_PILOT` draws; no draw starts after ``deadline`` once one output
    exists."""
    out = []
    for i, v in enumerate(inputs):
        share_end = t0 + (deadline - t0) * (i + 1) / len(inputs)
        for j in range(per_input):
            now = time.monotonic()
            if out and (now > deadline or (j >= MIN_PILOT and now > share_end)):
                break
            out += target.outputs(v, 1)
    return out


def describe(measurement) -> str:
    return (f"OpenDP measurement on {measurement.input_domain} / {measurement.input_metric} -> "
            f"{measurement.output_measure}")


# ---------------------------------------------------------------------------------------------
# 'module:constructor'
# ---------------------------------------------------------------------------------------------


def load_measurement(spec: str):
    """The measurement named by ``spec``: ``module:name`` or ``path/to/file.py:name``.

    ``name`` (dotted for attributes of attributes) is either a measurement object or a callable
    taking no arguments that returns one. The current directory is searched first for ``module``.
    The module is the user's code: it enables the OpenDP features its measurement needs.
    """
    dp = opendp_prelude()
    if not isinstance(spec, str) or ":" not in spec:
        raise InvalidParameter(f"constructor must be 'module:name' or 'file.py:name', got {spec!r}")
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise InvalidParameter(f"constructor must be 'module:name' or 'file.py:name', got {spec!r}")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise InvalidParameter(f"constructor file {where!r} does not exist")
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(where)
    except InvalidParameter:
        raise
    except Exception as exc:  # broad-except: the user's module may fail in any way; report it in one line
        raise InvalidParameter(f"cannot import {where!r}: {type(exc).__name__}: "
                               f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"[:300]) from None
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise InvalidParameter(f"{where!r} has no attribute {name!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, dp.Measurement):
        if not callable(obj):
            raise InvalidParameter(f"{spec!r} is neither an OpenDP Measurement nor a callable returning one")
        try:
            obj = obj()
        except Exception as exc:  # broad-except: the user's constructor may fail in any way
            lines = str(exc).strip().splitlines()
            raise InvalidParameter(f"{spec!r} raised {type(exc).__name__}: {(lines[-1] if lines else '')[:240]}") from None
    if not isinstance(obj, dp.Measurement):
        raise InvalidParameter(f"{spec!r} returned a {type(obj).__name__}, not an OpenDP Measurement")
    return obj
