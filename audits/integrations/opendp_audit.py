"""Audit any OpenDP measurement against its own privacy map (optional extra ``[opendp]``).

``audit_measurement(measurement, d_in=1, seconds=60)`` reads the claim from the measurement
itself (:func:`read_claim`, in its own output measure), searches neighbouring datasets of its
input domain and metric (:func:`neighbouring_pairs`), codes its outputs finitely
(:class:`OutputCoder`) and runs the finite-output engine of :mod:`audits.finite` - the same
two-phase search, conditional test, witness, JSON and report as ``gtm audit``.

Claims, by output measure (docs/opendp.md):

* ``MaxDivergence``: pure epsilon = ``map(d_in)``; :func:`audits.finite.audit_finite` (a lower
  bound on epsilon; ``violation`` when it exceeds the claim).
* ``Approximate(MaxDivergence)``: ``(epsilon, delta) = map(d_in)``; with delta = 0 the pure audit,
  else :func:`audits.finite.audit_finite_delta` at that epsilon (a lower bound on delta(epsilon)).
* ``SmoothedMaxDivergence``: the map gives a delta(epsilon) curve; it is tested at the epsilons
  where the claimed curve is 0.2, 0.1 and 0.05 (:data:`CURVE_DELTAS`, Bonferroni over the three).
* ``ZeroConcentratedDivergence``: rho = ``map(d_in)`` is tested through the (epsilon, delta(epsilon))
  curve rho-zCDP implies, as OpenDP itself converts it (``make_zCDP_to_approxDP``: the
  conversion of Canonne, Kamath and Steinke 2020, the tightest of the standard ones). Why a
  curve: a sample of a finite event can refute an (epsilon, delta) statement, not a Renyi bound
  directly; every point of the implied curve is a consequence of rho-zCDP, so a violation of it is
  a violation of the zCDP claim, and the tightest valid conversion gives the strongest test.
* anything else (Renyi, ...) is refused with :class:`gtm_core.errors.UnsupportedConfiguration`.

Outputs are coded before the tested samples are drawn: a pilot (``pilot`` draws per input,
thrown away) fixes the float bins; booleans, integers (up to :data:`MAX_EXACT_INTEGERS` distinct
values, else binned), strings and None are their own codes; a dict is coded by its set of
released keys plus its binned values; tuples and lists element by element. Float bins are the
pooled pilot quantiles (``bins`` equal-probability bins for a scalar, fewer per element of a
sequence so that the code book stays below :data:`audits.finite.MAX_CODES`).

OpenDP draws its noise from its own CSPRNG, which cannot be seeded: ``seed`` fixes the audit's
search, splits and Poisson sample sizes, not the measurement's noise, so two runs with the same
seed agree in distribution, not bit for bit.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import math
import numbers
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from gtm_core.errors import InvalidParameter, TargetError, UnsupportedConfiguration

from ..auditor import run_audit
from ..events import EventSpace
from ..finite import MAX_CODES, CallableFiniteTarget, CodeBook, FiniteAudit, FiniteProblem, audit_finite_delta, canonical
from ..report import render_report
from .opendp import opendp_prelude

CURVE_DELTAS = (0.2, 0.1, 0.05)  # the claimed delta(eps) levels at which a curve is tested
MAX_EXACT_INTEGERS = 64  # integer outputs with more distinct pilot values than this are binned
DEFAULT_BINS = 32
DICT_VALUE_BINS = 4
BACKGROUND_SIZES = (1, 5, 20)  # sizes of the datasets a record is added to / removed from
MIN_PILOT = 5  # pilot draws per input, at least
FIRST_ROUND_RUNS = 200  # runs per input of the engine's first selection round, at most


# ---------------------------------------------------------------------------------------------
# the claim
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimPoint:
    """One (epsilon, delta) statement the measurement's map implies (delta = 0: pure)."""

    epsilon: float
    delta: float

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class OpenDPClaim:
    """What the measurement's privacy map claims at ``d_in``, in its own output measure.

    ``kind``: ``"pure"`` (MaxDivergence, or Approximate with delta 0), ``"approximate"``
    ((epsilon, delta)), ``"curve"`` (SmoothedMaxDivergence: delta(epsilon)) or ``"zcdp"`` (rho).
    ``points``: the (epsilon, delta) statements the audit tests. ``rho``: the zCDP parameter.
    ``how``: in words, how the points were read from the map.
    """

    measure: str
    kind: str
    d_in: Any
    points: tuple[ClaimPoint, ...]
    rho: float | None = None
    how: str = ""

    def to_dict(self) -> dict:
        return {"measure": self.measure, "kind": self.kind, "d_in": self.d_in, "rho": self.rho,
                "points": [p.to_dict() for p in self.points], "how": self.how}


def _same_measure(measure, ctor) -> bool:
    try:
        return measure == ctor()
    except Exception:  # broad-except: OpenDP refuses to compare some unrelated measure types (not equal)
        return False


def _finite_nonnegative(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UnsupportedConfiguration(f"the privacy map gave {name}={value!r}, not a number") from None
    if not (math.isfinite(v) and v >= 0):
        raise UnsupportedConfiguration(f"the privacy map gave {name}={v!r}; the audit needs a finite {name} >= 0")
    return v


def curve_points(profile, deltas: Sequence[float] = CURVE_DELTAS) -> tuple[ClaimPoint, ...]:
    """The points (epsilon(delta), delta) of a privacy profile at the given delta levels (those the
    curve reaches with a finite epsilon >= 0)."""
    out = []
    for d in deltas:
        try:
            eps = float(profile.epsilon(d))
        except Exception:  # broad-except: OpenDP's profile refuses a delta outside its range
            continue
        if math.isfinite(eps) and eps >= 0:
            out.append(ClaimPoint(eps, float(d)))
    if not out:
        raise UnsupportedConfiguration(f"the privacy curve gives no finite epsilon at delta in {list(deltas)}")
    return tuple(out)


def read_claim(measurement, d_in: Any = 1) -> OpenDPClaim:
    """The claim of ``measurement`` at ``d_in``, read from its own privacy map and output measure."""
    dp = opendp_prelude()
    if not isinstance(measurement, dp.Measurement):
        raise InvalidParameter(f"measurement must be an OpenDP Measurement, got {type(measurement).__name__}")
    measure = measurement.output_measure
    name = str(measure)
    try:
        d_out = measurement.map(d_in)
    except Exception as exc:  # broad-except: OpenDP raises its own exception types from the map
        raise InvalidParameter(f"d_in={d_in!r} is not accepted by the measurement's privacy map: "
                               f"{str(exc).strip().splitlines()[-1][:200]}") from None
    if _same_measure(measure, dp.max_divergence):
        eps = _finite_nonnegative("epsilon", d_out)
        return OpenDPClaim(name, "pure", d_in, (ClaimPoint(eps, 0.0),), how="epsilon = map(d_in)")
    if _same_measure(measure, lambda: dp.approximate(dp.max_divergence())):
        eps, delta = (_finite_nonnegative(n, v) for n, v in zip(("epsilon", "delta"), d_out))
        kind = "pure" if delta == 0 else "approximate"
        return OpenDPClaim(name, kind, d_in, (ClaimPoint(eps, delta),), how="(epsilon, delta) = map(d_in)")
    if _same_measure(measure, dp.smoothed_max_divergence):
        return OpenDPClaim(name, "curve", d_in, curve_points(d_out),
                           how=f"the map's delta(epsilon) curve at delta in {list(CURVE_DELTAS)}")
    if _same_measure(measure, dp.zero_concentrated_divergence):
        rho = _finite_nonnegative("rho", d_out)
        profile = dp.c.make_zCDP_to_approxDP(measurement).map(d_in)
        return OpenDPClaim(name, "zcdp", d_in, curve_points(profile), rho=rho,
                           how=(f"the (epsilon, delta) curve rho = {rho:g} implies, by OpenDP's own conversion "
                                f"(make_zCDP_to_approxDP, Canonne-Kamath-Steinke 2020), at delta in "
                                f"{list(CURVE_DELTAS)}"))
    raise UnsupportedConfiguration(
        f"output measure {name} is not supported: the audit reads MaxDivergence, Approximate(MaxDivergence), "
        f"SmoothedMaxDivergence or ZeroConcentratedDivergence claims")


# ---------------------------------------------------------------------------------------------
# neighbouring datasets from the input domain and metric
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NeighbourPair:
    """Two inputs at distance <= d_in under the measurement's metric, with a label for reports."""

    input: Any
    input_prime: Any
    label: str


_INT_TYPES = {"i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize"}
_FLOAT_TYPES = {"f32", "f64"}


def atom_values(atom) -> list:
    """Record values worth trying for an atom domain: its bounds, a midpoint, zero, small and large
    magnitudes (unbounded), in a fixed order; the first is the 'common' value of backgrounds."""
    t = str(atom.carrier_type)
    if t == "bool":
        return [True, False]
    if t == "String":
        return ["a", "b", "unique"]
    if t in _INT_TYPES or t in _FLOAT_TYPES:
        cast = int if t in _INT_TYPES else float
        bounds = atom.bounds
        if bounds is not None:
            lo, hi = bounds
            values = [lo, hi, cast((lo + hi) / 2) if cast is float else (lo + hi) // 2, lo + 1 if cast is int else lo]
        else:
            values = [0, 1, 10, 1000, 10**6, -1, -1000]
            if t.startswith("u"):
                values = [v for v in values if v >= 0]
        out = []
        for v in values:
            v = cast(v)
            if v not in out and atom.member(v):
                out.append(v)
        return out
    raise UnsupportedConfiguration(f"cannot search records of the atom domain {atom}: give --pairs")


def _metric_name(metric) -> str:
    origin = getattr(metric.type, "origin", None)
    return str(origin if origin is not None else metric.type).rsplit("::", 1)[-1]


def _distance_int(d_in, metric_name: str) -> int:
    if isinstance(d_in, bool) or not isinstance(d_in, numbers.Integral) or d_in < 1:
        raise InvalidParameter(f"d_in must be an integer >= 1 for {metric_name}, got {d_in!r}")
    return int(d_in)


def neighbouring_pairs(input_domain, input_metric, d_in: Any = 1) -> list[NeighbourPair]:
    """Neighbouring inputs at distance d_in, generated from the domain and the metric.

    Datasets (vector domains) under SymmetricDistance / InsertDeleteDistance: d_in records added to
    the empty dataset, to one record, and to backgrounds of :data:`BACKGROUND_SIZES` copies of one
    value - each value of :func:`atom_values` in turn, so a record whose value appears nowhere
    else and values at the domain's bounds are both tried. Under ChangeOneDistance /
    HammingDistance (or SymmetricDistance on a sized domain, where one change is distance 2):
    d_in records of such a background changed to another value. Scalars: DiscreteDistance pairs
    any two values; AbsoluteDistance shifts a value by d_in (down from the upper bound too).
    Vectors under L1 / L2 (one coordinate shifted by d_in) and LInf (every coordinate shifted).
    """
    dp = opendp_prelude()
    metric = _metric_name(input_metric)
    out: list[NeighbourPair] = []

    def add(a, b, label):
        if input_domain.member(a) and input_domain.member(b) and canonical(a) != canonical(b):
            out.append(NeighbourPair(a, b, label))

    if isinstance(input_domain, dp.VectorDomain):
        atom = input_domain.element_domain
        values = atom_values(atom)
        size = input_domain.size
        sizes = [size] if size is not None else list(BACKGROUND_SIZES)
        if metric in ("SymmetricDistance", "InsertDeleteDistance") and size is None:
            k = _distance_int(d_in, metric)
            for w in values:
                add([], [w] * k, f"empty vs {k} x {w!r}")
            for u in values:
                for n in sizes:
                    for w in values:
                        if n > 1 and u != values[0] and w != u:
                            continue  # wide backgrounds of the common value only, keeps the search small
                        add([u] * n, [u] * n + [w] * k, f"{n} x {u!r} vs + {k} x {w!r}")
        elif metric in ("ChangeOneDistance", "HammingDistance") or (metric == "SymmetricDistance" and size is not None):
            k = _distance_int(d_in, metric)
            changes = k // 2 if metric == "SymmetricDistance" else k
            if changes < 1:
                raise UnsupportedConfiguration(f"a sized domain under {metric} has no neighbours at d_in={d_in!r} "
                                               f"(one change is distance 2)")
            for u in values:
                for n in sizes:
                    for w in values:
                        if w != u and n >= changes:
                            add([u] * n, [w] * changes + [u] * (n - changes), f"{n} x {u!r}, {changes} changed to {w!r}")
        elif metric in ("L1Distance", "L2Distance", "LInfDistance"):
            cast = int if str(atom.carrier_type) in _INT_TYPES else float
            shift = cast(d_in)
            for u in values:
                for n in (sizes if size is not None else [1, 3]):
                    base = [u] * n
                    if metric == "LInfDistance":
                        moved = [x + shift for x in base]
                    else:
                        moved = [base[0] + shift] + base[1:]
                    add(base, moved, f"{n} x {u!r}, shifted by {shift!r} ({metric})")
        else:
            raise UnsupportedConfiguration(f"cannot search neighbours of a vector domain under {input_metric}: give pairs")
    elif isinstance(input_domain, dp.AtomDomain):
        values = atom_values(input_domain)
        if metric == "DiscreteDistance":
            for i, a in enumerate(values):
                for b in values[i + 1:]:
                    add(a, b, f"{a!r} vs {b!r}")
        elif metric == "AbsoluteDistance":
            cast = int if str(input_domain.carrier_type) in _INT_TYPES else float
            shift = cast(d_in)
            for v in values:
                add(v, v + shift, f"{v!r} vs {v + shift!r}")
                add(v - shift, v, f"{v - shift!r} vs {v!r}")
        else:
            raise UnsupportedConfiguration(f"cannot search neighbours of an atom domain under {input_metric}: give pairs")
    else:
        raise UnsupportedConfiguration(f"cannot search neighbours of the domain {input_domain}: give pairs")
    seen, unique = set(), []
    for p in out:
        key = (canonical(p.input), canonical(p.input_prime))
        if key not in seen and key[::-1] not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def user_pairs(input_domain, pairs) -> list[NeighbourPair]:
    """Pairs the user gives (the user vouches for their distance); each input must be in the domain."""
    out = []
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
            raise InvalidParameter(f"pairs[{i}] must be an [input, input'] pair, got {pair!r:.80}")
        for j, x in enumerate(pair):
            canonical(x)
            if not input_domain.member(x):
                raise InvalidParameter(f"pairs[{i}][{j}] = {x!r:.80} is not a member of the input domain {input_domain}")
        out.append(NeighbourPair(pair[0], pair[1], f"given pair {i}"))
    return out


# ---------------------------------------------------------------------------------------------
# finite codes for outputs
# ---------------------------------------------------------------------------------------------


def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


@dataclass(frozen=True)
class Bins:
    """Float bins: code j for edges[j-1] <= x < edges[j] (j = 0 below the first edge)."""

    edges: tuple[float, ...]

    @classmethod
    def fit(cls, values: Sequence[float], bins: int) -> "Bins":
        v = np.asarray([float(x) for x in values if math.isfinite(float(x))])
        if v.size == 0 or bins < 2:
            return cls(())
        qs = np.quantile(v, np.linspace(0, 1, bins + 1)[1:-1])
        return cls(tuple(float(e) for e in np.unique(qs)))

    def code(self, x) -> str:
        x = float(x)
        if math.isnan(x):
            return "nan"
        return f"b{int(np.searchsorted(self.edges, x, side='right'))}"

    def codes(self) -> list[str]:
        return [f"b{j}" for j in range(len(self.edges) + 1)] + ["nan"]


@dataclass(frozen=True)
class OutputCoder:
    """Maps a measurement's output to a finite code (fitted on pilot outputs only).

    ``shape``: ``"bool"``, ``"str"``, ``"none"``, ``"binned"`` (ints or floats, through ``bins``:
    integers with at most :data:`MAX_EXACT_INTEGERS` distinct pilot values get one bin per value),
    ``"dict"`` (released keys + binned values through ``bins``) or ``"seq"``
    (``parts``: one coder per position).
    """

    shape: str
    bins: Bins | None = None
    parts: tuple = ()

    @classmethod
    def fit(cls, outputs: Sequence, bins: int = DEFAULT_BINS) -> "OutputCoder":
        outs = [_plain(o) for o in outputs]
        if not outs:
            raise InvalidParameter("no pilot outputs to fit the output coding on")
        first = outs[0]
        if all(isinstance(o, bool) for o in outs):
            return cls("bool")
        if all(o is None for o in outs):
            return cls("none")
        if all(isinstance(o, str) for o in outs):
            return cls("str")
        if all(isinstance(o, numbers.Integral) and not isinstance(o, bool) for o in outs):
            distinct = sorted(set(int(o) for o in outs))
            if len(distinct) <= MAX_EXACT_INTEGERS:  # one bin per pilot value (the end bins are open)
                return cls("binned", Bins(tuple(float(v) for v in distinct[1:])))
            return cls("binned", Bins.fit(outs, bins))
        if all(isinstance(o, numbers.Real) and not isinstance(o, bool) for o in outs):
            return cls("binned", Bins.fit(outs, bins))
        if all(isinstance(o, dict) for o in outs):
            values = [v for o in outs for v in o.values()]
            if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
                return cls("dict", Bins.fit(values, DICT_VALUE_BINS))
            return cls("dict", None)
        if all(isinstance(o, (list, tuple)) for o in outs):
            width = max(len(o) for o in outs)
            per = max(2, int(bins ** (1.0 / max(width, 1))))
            parts = tuple(cls.fit([o[i] for o in outs if len(o) > i], per) for i in range(width))
            return cls("seq", None, parts)
        raise UnsupportedConfiguration(f"cannot code outputs of type {type(first).__name__} finitely "
                                       f"(supported: bool, int, float, str, None, dict, tuple, list)")

    def code(self, out) -> str:
        o = _plain(out)
        s = self.shape
        if s == "bool":
            return str(bool(o)) if isinstance(o, bool) else f"?{type(o).__name__}"
        if s in ("str", "none"):
            return str(o)
        if s == "binned":
            return self.bins.code(o)
        if s == "dict":
            if not isinstance(o, dict):
                return f"?{type(o).__name__}"
            items = sorted(o.items(), key=lambda kv: str(kv[0]))
            if self.bins is None:
                return "{" + ",".join(str(k) for k, _ in items) + "}"
            return "{" + ",".join(f"{k}:{self.bins.code(v)}" for k, v in items) + "}"
        if s == "seq":
            if not isinstance(o, (list, tuple)):
                return f"?{type(o).__name__}"
            cells = [self.parts[i].code(x) if i < len(self.parts) else "?" for i, x in enumerate(o)]
            return "(" + ",".join(cells) + ")"
        raise InvalidParameter(f"unknown output shape {s!r}")  # unreachable: shapes are set by fit

    def alphabet(self) -> list[str] | None:
        """Every code, when the shape makes them enumerable (else the engine's pilot finds them)."""
        if self.shape == "bool":
            return ["True", "False"]
        if self.shape == "binned":
            return self.bins.codes()
        return None

    @property
    def ordered(self) -> int:
        """Number of leading alphabet codes that are ordered (bins), 0 when the codes have no order."""
        return len(self.bins.edges) + 1 if self.shape == "binned" else 0

    def describe(self) -> dict:
        d = {"shape": self.shape}
        if self.bins is not None:
            d["bin_edges"] = list(self.bins.edges)
        if self.parts:
            d["parts"] = [p.describe() for p in self.parts]
        return d


# ---------------------------------------------------------------------------------------------
# the audit
# ---------------------------------------------------------------------------------------------


class MeasurementTarget(CallableFiniteTarget):
    """A finite-output target that invokes the measurement once per draw and codes the output."""

    def __init__(self, measurement, coder: OutputCoder | None = None, *, name: str = "opendp-measurement"):
        self.measurement, self.coder, self.draws = measurement, coder, 0
        super().__init__(self._draw, name=name)

    def outputs(self, data, n: int) -> list:
        out = []
        for _ in range(int(n)):
            try:
                out.append(self.measurement(data))
            except Exception as exc:  # broad-except: OpenDP raises its own exception types
                raise TargetError(f"the measurement raised on input {data!r:.60}: "
                                  f"{str(exc).strip().splitlines()[-1][:160]}") from None
        self.draws += int(n)
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
                  "noise_seeded": False})
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


def _pure_audit(target, pairs, labels, pilot_outputs, *, epsilon, seconds, max_samples, seed, confidence,
                progress, name, first_round: int, selection_share: float) -> FiniteAudit:
    """:func:`audits.auditor.run_audit` on the finite problem, with the code book fixed from the pilot
    outputs (thrown away) and a first round of ``first_round`` runs per input (:func:`first_round_runs`);
    a single pair needs little selection (``selection_share``), only its event."""
    seen = Counter(target.coder.code(o) for o in pilot_outputs)
    book = CodeBook.of(target.coder.alphabet() or [c for c, _ in seen.most_common(MAX_CODES - 1)])
    problem = OrderedFiniteProblem(target, pairs, book, target.coder.ordered, labels=labels)
    problem.initial_samples = first_round
    result = run_audit(problem, epsilon=epsilon, seconds=seconds, max_samples=max_samples, seed=seed,
                       confidence=confidence, progress=progress, target_name=name, n0=first_round,
                       selection_share=selection_share,
                       validation_share=0.1)
    return FiniteAudit(result, book, 0)


def measurement_space(measurement):
    return measurement.input_domain, measurement.input_metric


def audit_measurement(measurement, *, d_in: Any = 1, seconds: float = 60.0, seed: int = 0,
                      confidence: float = 0.95, pairs: Sequence | None = None, search: bool = True,
                      max_samples: int | None = None, bins: int = DEFAULT_BINS, pilot: int = 100,
                      progress: bool = False) -> OpenDPAudit:
    """Audit ``measurement`` against its own privacy map at ``d_in`` (see the module docstring).

    ``pairs``: extra ``(input, input')`` pairs (the user vouches for their distance); ``search``:
    also search neighbours from the domain and metric. ``seconds`` bounds the audit (the pilot
    included); ``max_samples`` (pure claims) bounds the engine's samples instead.
    """
    if not (0 < confidence < 1):
        raise InvalidParameter(f"confidence must be in (0, 1), got {confidence!r}")
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise InvalidParameter(f"seconds must be a finite number > 0, got {seconds!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidParameter(f"seed must be an integer >= 0, got {seed!r}")
    t0 = time.monotonic()
    claim = read_claim(measurement, d_in)
    domain, metric = measurement_space(measurement)
    found = list(neighbouring_pairs(domain, metric, d_in)) if search else []
    given = user_pairs(domain, pairs or [])
    candidates = given + found
    if not candidates:
        raise InvalidParameter("no neighbouring pairs to audit: give pairs (or allow the search)")
    target = MeasurementTarget(measurement)
    inputs = {canonical(v): v for p in candidates for v in (p.input, p.input_prime)}
    pilot_outputs = []
    pilot_start = time.monotonic()
    for i, v in enumerate(inputs.values()):
        # at most ``pilot`` draws per input, fewer for a slow measurement: the pilot keeps to about a
        # tenth of the time budget (at least MIN_PILOT draws per input)
        for j in range(pilot):
            if j >= MIN_PILOT and time.monotonic() - t0 > 0.1 * seconds * (i + 1) / len(inputs):
                break
            pilot_outputs += target.outputs(v, 1)
    pilot_samples = target.draws
    pilot_seconds = time.monotonic() - t0
    target.coder = OutputCoder.fit(pilot_outputs, bins)
    remaining = max(seconds - pilot_seconds, 0.2 * seconds)
    pair_values = [(p.input, p.input_prime) for p in candidates]
    labels = [p.label for p in candidates]
    common = dict(target=describe(measurement), claim=claim, coder=target.coder, pairs=len(candidates),
                  pilot_samples=pilot_samples, seed=seed, confidence=confidence)
    rate = max(pilot_samples / max(time.monotonic() - pilot_start, 1e-6), 1.0)  # draws per second (the pilot)
    if claim.kind == "pure":
        # a draw through OpenDP's FFI costs about a millisecond: a sample budget planned from the
        # measured rate (with slack for a slower machine) plans the
        # engine's phases; the clock stays the hard stop. On a time budget alone the in-process draws
        # cannot be interrupted, and a halving round of slow draws overshoots and starves the estimation
        budget = max_samples if max_samples is not None else max(400, int(0.75 * rate * remaining))
        if len(candidates) == 1:
            # one pair (both directions): nothing to halve over. A first round of a third of the budget
            # makes the halving stop after its second round, at the engine's extended selection share
            # (0.6), instead of a third round that would double past it
            first = max(25, int(0.32 * budget / len(inputs)))
        else:
            first = min(first_round_runs(rate, remaining, len(inputs)), max(25, budget // (5 * len(inputs))))
        fa = _pure_audit(target, pair_values, labels, pilot_outputs, epsilon=claim.points[0].epsilon,
                         seconds=remaining, max_samples=budget, seed=seed, confidence=confidence,
                         progress=progress, name=describe(measurement), first_round=first,
                         selection_share=0.1 if len(candidates) == 1 else 0.25)
        return OpenDPAudit(verdict=fa.verdict, seconds=time.monotonic() - t0, pure=fa, **common)
    k = len(claim.points)
    per_point = remaining * rate / k
    n_inputs = len(inputs)
    n_selection = max(100, int(0.35 * per_point / n_inputs))
    n_final = max(100, int(0.5 * per_point / 2))
    results = []
    for i, point in enumerate(claim.points):
        results.append(audit_finite_delta(target, pair_values, epsilon=point.epsilon, delta=point.delta,
                                          n_selection=n_selection, n_final=n_final, seed=seed + i,
                                          confidence=1 - (1 - confidence) / k, seconds=remaining / k))
    verdict = "violation" if any(a.violation for a in results) else "no-violation-found"
    return OpenDPAudit(verdict=verdict, seconds=time.monotonic() - t0, points=tuple(results), **common)


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
