"""OpenDP measurements as the GTM's input mechanisms M_t (optional extra ``[opendp]``).

A binary-output OpenDP ``Measurement`` - e.g. ``opendp.measurements.make_randomized_response_bool``
or a scorer post-processed to a bool (``... >> then_laplace(...) >> new_function(lambda x: x > c,
TO=bool)``) - becomes a callable ``data -> +1/-1`` that :class:`gtm_core.reference.GTMRun` can
evaluate. Its eps_t comes from its own privacy map, ``measurement.map(d_in)``:

* output measure ``MaxDivergence`` (pure DP): eps_t = map(d_in), delta_t = 0;
* output measure ``Approximate(MaxDivergence)``: (eps_t, delta_t) = map(d_in); delta_t > 0 is
  purified by the GTM (Lemma 24 / Corollary 25) when the configuration says so;
* any other measure (zero-concentrated, Renyi, ...) is refused with
  :class:`UnsupportedConfiguration`: the GTM's privacy proof (Lemma 15) needs a pure or
  purifiable ratio bound on Pr[+1].

OpenDP returns the output type only at invocation time, so a non-boolean output is refused when it
appears, with :class:`NonBooleanOutput` (a :class:`MechanismError`); pass ``probe=`` (a public
dataset) to check the output type eagerly at construction.

This module never calls ``opendp.prelude.enable_features``: which OpenDP features a measurement
needs (``"contrib"`` for most constructors, ``"honest-but-curious"`` for ``new_function``
post-processing, ``"floating-point"`` for some float measurements) is the caller's explicit
choice. See docs/opendp.md.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from gtm_core.errors import InvalidParameter, MechanismError, NonBooleanOutput, UnsupportedConfiguration


_NO_PROBE = object()


def opendp_prelude():
    """``opendp.prelude``, or :class:`UnsupportedConfiguration` when the ``[opendp]`` extra is missing."""
    try:
        import opendp.prelude as dp
    except ImportError:  # pragma: no cover - the [opendp] extra is installed in the test environment
        raise UnsupportedConfiguration(
            "OpenDP is not installed: install the optional extra with pip install 'gtm[opendp]'"
        ) from None
    return dp


_opendp = opendp_prelude


def _is_measure(measure, dp, ctor) -> bool:
    try:
        return measure == ctor()
    except Exception:  # broad-except: OpenDP may refuse to compare unrelated measure types (not equal)
        return False


def privacy_parameters(measurement, d_in: Any = 1) -> tuple[float, float]:
    """(eps_t, delta_t) of an OpenDP measurement at input distance ``d_in``, from its privacy map."""
    dp = _opendp()
    if not isinstance(measurement, dp.Measurement):
        raise InvalidParameter(f"measurement must be an opendp Measurement, got {type(measurement).__name__}")
    measure = measurement.output_measure
    pure = _is_measure(measure, dp, dp.max_divergence)
    approx = _is_measure(measure, dp, lambda: dp.approximate(dp.max_divergence()))
    if not (pure or approx):
        raise UnsupportedConfiguration(
            f"OpenDP measurement has output measure {measure}; the GTM needs MaxDivergence (pure eps-DP) "
            f"or Approximate(MaxDivergence) (purified by Lemma 24)"
        )
    try:
        d_out = measurement.map(d_in)
    except Exception as exc:
        raise InvalidParameter(f"d_in={d_in!r} is not accepted by the measurement's privacy map: {exc}") from None
    if pure:
        eps, delta = d_out, 0.0
    else:
        eps, delta = d_out
    eps, delta = float(eps), float(delta)
    if not (math.isfinite(eps) and eps >= 0):
        raise UnsupportedConfiguration(f"the privacy map gives eps_t={eps!r}; the GTM needs a finite eps_t >= 0")
    if not (0 <= delta < 1):
        raise UnsupportedConfiguration(f"the privacy map gives delta_t={delta!r}; the GTM needs delta_t in [0, 1)")
    if delta > 0 and eps == 0:
        raise UnsupportedConfiguration("delta_t > 0 with eps_t = 0 cannot be purified (Lemma 24 needs eps_t > 0)")
    return eps, delta


class OpenDPMechanism:
    """An OpenDP measurement with boolean output, used as a GTM input mechanism M_t.

    Calling it on a dataset invokes the measurement once and maps ``True -> +1``,
    ``False -> -1``. ``eps_t`` and ``delta_t`` come from ``measurement.map(d_in)``.
    """

    def __init__(self, measurement, d_in: Any = 1, *, probe: Any = _NO_PROBE):
        self.eps_t, self.delta_t = privacy_parameters(measurement, d_in)
        self.measurement = measurement
        self.d_in = d_in
        self.evaluations = 0
        if probe is not _NO_PROBE:
            self(probe)  # raises NonBooleanOutput now rather than in the middle of a run

    def __repr__(self) -> str:
        return f"OpenDPMechanism(eps_t={self.eps_t!r}, delta_t={self.delta_t!r}, d_in={self.d_in!r})"

    def __call__(self, data) -> int:
        try:
            out = self.measurement(data)
        except Exception as exc:
            raise MechanismError(f"OpenDP measurement raised {type(exc).__name__} on invocation") from None
        self.evaluations += 1
        if isinstance(out, bool) or type(out).__name__ == "bool_":
            return 1 if bool(out) else -1
        raise NonBooleanOutput(
            f"OpenDP measurement returned a value of type {type(out).__name__}, not a bool: post-process it to a "
            f"boolean (e.g. >> new_function(lambda x: x > threshold, TO=bool)) before using it as M_t"
        )

    def covered_by(self, eps_t: float, delta_t: float = 0.0) -> bool:
        """Does a planned (eps_t, delta_t) cover this measurement? Exact rational comparison."""
        return Fraction(self.eps_t) <= Fraction(eps_t) and Fraction(self.delta_t) <= Fraction(delta_t)


def from_measurement(measurement, d_in: Any = 1, **kwargs) -> OpenDPMechanism:
    """Wrap an OpenDP measurement as a GTM input mechanism (see :class:`OpenDPMechanism`)."""
    return OpenDPMechanism(measurement, d_in, **kwargs)


def stream_parameters(mechanisms: list[OpenDPMechanism]) -> dict:
    """The [stream] entries eps_t / delta_t for a stream of OpenDP mechanisms (scalars if all equal)."""
    if not mechanisms:
        raise InvalidParameter("mechanisms must be a non-empty list")
    eps = [m.eps_t for m in mechanisms]
    delta = [m.delta_t for m in mechanisms]
    return {
        "eps_t": eps[0] if len(set(eps)) == 1 else eps,
        "delta_t": delta[0] if len(set(delta)) == 1 else delta,
    }


def step_with(run, mechanism: OpenDPMechanism, data) -> bool:
    """One step of a :class:`gtm_core.reference.GTMRun` on an OpenDP mechanism, after checking that the
    step's planned (eps_t, delta_t) covers the measurement's privacy map. Returns True on halt."""
    sp = run.plan.step(run.t)
    if not mechanism.covered_by(sp.eps_t, sp.delta_t):
        raise UnsupportedConfiguration(
            f"step t={sp.t} is planned for eps_t={sp.eps_t!r}, delta_t={sp.delta_t!r} but the OpenDP measurement's "
            f"privacy map gives eps_t={mechanism.eps_t!r}, delta_t={mechanism.delta_t!r}"
        )
    return run.step(mechanism, data)
