"""The claim an OpenDP measurement's own privacy map makes, read in its output measure.

:func:`read_claim` maps ``measurement.map(d_in)`` to the (epsilon, delta) statements the audit of
:mod:`audits.integrations.opendp_audit` tests (:class:`OpenDPClaim`), by output measure:

* ``MaxDivergence``: pure epsilon = ``map(d_in)``.
* ``Approximate(MaxDivergence)``: ``(epsilon, delta) = map(d_in)`` (pure when delta = 0).
* ``SmoothedMaxDivergence``: the map gives a delta(epsilon) curve; it is tested at the epsilons
  where the claimed curve is 0.2, 0.1 and 0.05 (:data:`CURVE_DELTAS`, Bonferroni over the three).
* ``ZeroConcentratedDivergence``: rho = ``map(d_in)`` is tested through the (epsilon, delta(epsilon))
  curve rho-zCDP implies, as OpenDP itself converts it (``make_zCDP_to_approxDP``: the
  conversion of Canonne, Kamath and Steinke 2020, the tightest of the standard ones).
* ``Approximate(ZeroConcentratedDivergence)`` (e.g. ``make_gaussian_threshold``): ``(rho, delta) = map(d_in)``;
  the same three points of the curve rho implies, each with ``delta`` added (OpenDP's conversion).
* anything else (Renyi, ...) is refused with :class:`gtm_core.errors.UnsupportedConfiguration`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

from .opendp import opendp_prelude

CURVE_DELTAS = (0.2, 0.1, 0.05)  # the claimed delta(eps) levels at which a curve is tested


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
    if _same_measure(measure, lambda: dp.approximate(dp.zero_concentrated_divergence())):
        rho, extra = (_finite_nonnegative(n, v) for n, v in zip(("rho", "delta"), d_out))
        profile, extra_delta = dp.c.make_zCDP_to_approxDP(measurement).map(d_in)
        points = tuple(ClaimPoint(p.epsilon, p.delta + float(extra_delta)) for p in curve_points(profile))
        return OpenDPClaim(name, "zcdp", d_in, points, rho=rho,
                           how=(f"approximate zCDP (rho = {rho:g}, delta = {extra:g}): the (epsilon, delta(epsilon) + "
                                f"{extra:g}) curve it implies, by OpenDP's own conversion (make_zCDP_to_approxDP), at "
                                f"delta(epsilon) in {list(CURVE_DELTAS)}"))
    raise UnsupportedConfiguration(
        f"output measure {name} is not supported: the audit reads MaxDivergence, Approximate(MaxDivergence), "
        f"SmoothedMaxDivergence, ZeroConcentratedDivergence or Approximate(ZeroConcentratedDivergence) claims")


