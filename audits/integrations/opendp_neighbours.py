"""Neighbouring inputs of an OpenDP measurement, from its input domain and metric.

:func:`neighbouring_pairs` generates the pairs at distance ``d_in`` the audit of
:mod:`audits.integrations.opendp_audit` searches (datasets with records added, removed or changed;
scalars and vectors shifted); :func:`user_pairs` checks pairs the user gives instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gtm_core.errors import InvalidParameter, UnsupportedConfiguration
from gtm_core.validation import is_integer

from ..finite import canonical
from .opendp import opendp_prelude

BACKGROUND_SIZES = (1, 5, 20)  # sizes of the datasets a record is added to / removed from


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
    if not is_integer(d_in) or d_in < 1:
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
    Vectors under L1 / L2 (one coordinate shifted by d_in) and LInf (one coordinate shifted, every
    coordinate shifted, and the first up with the rest down).
    """
    dp = opendp_prelude()
    metric = _metric_name(input_metric)
    if isinstance(input_domain, dp.VectorDomain):
        proposals = _vector_proposals(input_domain, metric, input_metric, d_in)
    elif isinstance(input_domain, dp.AtomDomain):
        proposals = _atom_proposals(input_domain, metric, input_metric, d_in)
    else:
        raise UnsupportedConfiguration(f"cannot search neighbours of the domain {input_domain}: give pairs")
    out = [NeighbourPair(a, b, label) for a, b, label in proposals
           if input_domain.member(a) and input_domain.member(b) and canonical(a) != canonical(b)]
    return _without_repeats(out)


def _vector_proposals(input_domain, metric: str, input_metric, d_in):
    """The proposed (input, input', label) triples of a vector domain (not yet checked for membership),
    by the metric: records added (:func:`_added_records`), changed (:func:`_changed_records`) or
    coordinates shifted (:func:`_shifted_vectors`)."""
    atom = input_domain.element_domain
    values = atom_values(atom)
    size = input_domain.size
    sizes = [size] if size is not None else list(BACKGROUND_SIZES)
    if metric in ("SymmetricDistance", "InsertDeleteDistance") and size is None:
        return _added_records(values, sizes, _distance_int(d_in, metric))
    if metric in ("ChangeOneDistance", "HammingDistance") or (metric == "SymmetricDistance" and size is not None):
        k = _distance_int(d_in, metric)
        changes = k // 2 if metric == "SymmetricDistance" else k
        if changes < 1:
            raise UnsupportedConfiguration(f"a sized domain under {metric} has no neighbours at d_in={d_in!r} "
                                           f"(one change is distance 2)")
        return _changed_records(values, sizes, changes)
    if metric in ("L1Distance", "L2Distance", "LInfDistance"):
        cast = int if str(atom.carrier_type) in _INT_TYPES else float
        return _shifted_vectors(values, sizes if size is not None else [1, 3], cast(d_in), metric)
    raise UnsupportedConfiguration(f"cannot search neighbours of a vector domain under {input_metric}: give pairs")


def _added_records(values: list, sizes: list, k: int) -> list:
    """k records added: to the empty dataset, and to backgrounds of each size (wide backgrounds of the
    common value, ``values[0]``, only: keeps the search small)."""
    out = [([], [w] * k, f"empty vs {k} x {w!r}") for w in values]
    for u in values:
        for n in sizes:
            for w in values:
                if n > 1 and u != values[0] and w != u:
                    continue
                out.append(([u] * n, [u] * n + [w] * k, f"{n} x {u!r} vs + {k} x {w!r}"))
    return out


def _changed_records(values: list, sizes: list, changes: int) -> list:
    """``changes`` records of a background of one value changed to another value."""
    return [([u] * n, [w] * changes + [u] * (n - changes), f"{n} x {u!r}, {changes} changed to {w!r}")
            for u in values for n in sizes for w in values if w != u and n >= changes]


def _shifted_vectors(values: list, sizes: list, shift, metric: str) -> list:
    """One coordinate shifted by ``shift``; under LInfDistance also every coordinate moved by it: all up,
    or the first up and the rest down (the worst case of an argmax: one score gains what every other
    loses)."""
    out = []
    for u in values:
        for n in sizes:
            base = [u] * n
            out.append((base, [base[0] + shift] + base[1:], f"{n} x {u!r}, first shifted by {shift!r} ({metric})"))
            if metric == "LInfDistance":
                out.append((base, [x + shift for x in base], f"{n} x {u!r}, all shifted by {shift!r} ({metric})"))
                out.append((base, [base[0] + shift] + [x - shift for x in base[1:]],
                            f"{n} x {u!r}, first up and the rest down by {shift!r} ({metric})"))
    return out


def _atom_proposals(input_domain, metric: str, input_metric, d_in) -> list:
    """The proposed (input, input', label) triples of a scalar domain: any two values (DiscreteDistance),
    a value shifted by d_in up and down (AbsoluteDistance)."""
    values = atom_values(input_domain)
    if metric == "DiscreteDistance":
        return [(a, b, f"{a!r} vs {b!r}") for i, a in enumerate(values) for b in values[i + 1:]]
    if metric == "AbsoluteDistance":
        cast = int if str(input_domain.carrier_type) in _INT_TYPES else float
        shift = cast(d_in)
        out = []
        for v in values:
            out.append((v, v + shift, f"{v!r} vs {v + shift!r}"))
            out.append((v - shift, v, f"{v - shift!r} vs {v!r}"))
        return out
    raise UnsupportedConfiguration(f"cannot search neighbours of an atom domain under {input_metric}: give pairs")


def _without_repeats(pairs: list[NeighbourPair]) -> list[NeighbourPair]:
    """The pairs in order, without a repeat of an earlier pair in either direction (by canonical form)."""
    seen, unique = set(), []
    for p in pairs:
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
