"""The GTM as an OpenDP interactive measurement (optional extra ``[opendp]``).

:func:`make_gtm` builds, from a :class:`gtm_core.GTMConfig` and an OpenDP input domain and
metric, an OpenDP ``Measurement`` (``dp.m.make_user_measurement``) whose function returns an
OpenDP ``Queryable`` (``dp.new_queryable``): invoked on a dataset, it starts one GTM run
(:class:`gtm_core.reference.GTMRun`: exact samplers drawing from the operating system's CSPRNG)
and answers queries until it halts.

* **Privacy map.** ``measurement.map(d)`` is the configuration's claim for every ``d <= d_in``
  (``d_in`` is fixed at construction, default 1) and refuses a larger ``d``: the plan's per-step
  eps_t are compared with the queries' privacy maps at ``d_in``, so the claim covers neighbours
  up to ``d_in`` and nothing beyond. Under ``[gtm] evaluation_budget = "none"`` (Algorithm 1) the
  output measure is ``MaxDivergence`` and the map gives epsilon (pure DP); under ``"refuse"`` the
  GTM is (epsilon, delta)-DP, not pure (:meth:`gtm_core.planners.Plan.privacy_delta`), so the
  output measure is ``Approximate(MaxDivergence)`` and the map gives ``(epsilon, delta)``.
* **Queries.** Each query is a binary-output OpenDP measurement on the same input domain and
  metric. It is refused before any evaluation when it is not, when its privacy map at ``d_in``
  exceeds the step's planned ``(eps_t, delta_t)`` (exact rational comparison,
  :meth:`audits.integrations.opendp.OpenDPMechanism.covered_by`), after the GTM halted (or
  failed) and past the configuration's horizon. An approximate-DP query (``delta_t > 0``) is
  purified by the GTM (Lemma 24) when the configuration plans that delta_t.
* **Answers.** ``True`` = halt, ``False`` = continue. A refusal, an evaluation-budget stop (policy
  ``"refuse"``, a terminal outcome) or a misbehaving query raises inside the queryable; OpenDP
  re-raises it as ``OpenDPException`` whose message carries the gtm error's class and message.

Feature flags: ``make_user_measurement`` needs OpenDP's ``"contrib"`` and ``"honest-but-curious"``
features. This module never enables a feature; :func:`make_gtm` raises
:class:`MissingOpenDPFeature` (a :class:`gtm_core.errors.UnsupportedConfiguration`) naming the
missing one. See docs/opendp.md.

The pieces :func:`make_gtm` is built from - :class:`GTMSession`, :func:`gtm_output_measure`,
:func:`gtm_privacy_map` - are public, so a test can build a deliberately broken variant from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import GTMError, HaltedError, InvalidParameter, UnsupportedConfiguration
from gtm_core.planners import Plan
from gtm_core.reference import GTMRun
from gtm_core.validation import is_real

from .opendp import OpenDPMechanism, opendp_prelude

REQUIRED_FEATURES = ("contrib", "honest-but-curious")
HALT, CONTINUE = True, False


class MissingOpenDPFeature(UnsupportedConfiguration):
    """An OpenDP feature flag the construction needs is not enabled (the caller's explicit choice)."""

    def __init__(self, feature: str, what: str):
        self.feature = feature
        super().__init__(f"{what} needs the OpenDP feature {feature!r}, which is not enabled: call "
                         f"opendp.prelude.enable_features({feature!r}) yourself (gtm never enables a feature)")


class QueryRefused(GTMError):
    """A query to the GTM's queryable was refused before any evaluation (named in the message)."""


def require_features(*features: str, what: str = "make_gtm") -> None:
    """Raise :class:`MissingOpenDPFeature` for the first of ``features`` OpenDP has not enabled."""
    dp = opendp_prelude()
    for feature in features:
        if feature not in dp.GLOBAL_FEATURES:
            raise MissingOpenDPFeature(feature, what)


@dataclass(frozen=True)
class GTMClaim:
    """The privacy claim of a GTM measurement at input distances ``d <= d_in``.

    ``delta`` is 0 for the pure policy (``evaluation_budget = "none"``) and
    :meth:`gtm_core.planners.Plan.privacy_delta` under ``"refuse"``; ``epsilon`` is
    :meth:`gtm_core.planners.Plan.worst_claimed_loss` (the configuration's epsilon, or the largest
    ex-post loss up to the horizon for ``theorem23``)."""

    epsilon: float
    delta: float
    pure: bool
    d_in: Any

    @classmethod
    def of(cls, plan: Plan, d_in: Any) -> "GTMClaim":
        return cls(float(plan.worst_claimed_loss()), float(plan.privacy_delta()), bool(plan.pure), d_in)

    def d_out(self):
        """The privacy map's value: epsilon (pure) or (epsilon, delta)."""
        return self.epsilon if self.pure else (self.epsilon, self.delta)


def gtm_output_measure(plan: Plan):
    """``MaxDivergence`` for Algorithm 1 (pure), ``Approximate(MaxDivergence)`` when the evaluation
    budget is enforced by refusal ((epsilon, delta)-DP, docs/deployment.md)."""
    dp = opendp_prelude()
    return dp.max_divergence() if plan.pure else dp.approximate(dp.max_divergence())


def gtm_privacy_map(plan: Plan, d_in: Any) -> Callable:
    """The privacy map: the plan's claim for distances ``0 <= d <= d_in``, refused beyond ``d_in``
    (the queries were checked against the plan at ``d_in`` only)."""
    claim = GTMClaim.of(plan, d_in)

    def privacy_map(d):
        if not is_real(d) or not d >= 0:
            raise InvalidParameter(f"d_in must be a number >= 0, got {d!r}")
        if d > claim.d_in:
            raise UnsupportedConfiguration(
                f"d_in={d!r} exceeds the distance the GTM was built for (d_in={claim.d_in!r}): its queries are "
                f"checked against the plan at d_in={claim.d_in!r}; build it with make_gtm(..., d_in={d!r})")
        return claim.d_out()

    return privacy_map


class GTMSession:
    """One GTM run on one dataset, answering queries (the state behind the queryable).

    ``answer(query)``: :meth:`check` the query (refusals happen here, before any evaluation), then
    one step of the run; returns :data:`HALT` (True) or :data:`CONTINUE` (False). The dataset and the
    run's noise stay private attributes, never shown in ``repr``.
    """

    def __init__(self, plan: Plan, data: Any, input_domain, input_metric, d_in: Any, run):
        self.plan, self.input_domain, self.input_metric, self.d_in = plan, input_domain, input_metric, d_in
        self._data, self._run = data, run

    def __repr__(self) -> str:
        return f"GTMSession(next_step={self._run.t}, halted={self._run.halted}, failed={self._run.failed})"

    @property
    def next_step(self) -> int:
        return self._run.t

    def check(self, query) -> OpenDPMechanism:
        """Refuse a query that cannot be asked now; return it wrapped as the step's input mechanism."""
        dp = opendp_prelude()
        run = self._run
        if run.failed:
            raise HaltedError("the GTM is in its terminal failed state (a step exceeded its evaluation budget "
                              "or its query misbehaved); no further queries")
        if run.halted:
            raise HaltedError(f"the GTM halted at step {run.halted_at}; no further queries")
        if run.t > self.plan.horizon:
            raise QueryRefused(f"query {run.t} is past the configuration's horizon ({self.plan.horizon} steps)")
        if not isinstance(query, dp.Measurement):
            raise QueryRefused(f"a query must be an OpenDP Measurement, got {type(query).__name__}")
        if query.input_domain != self.input_domain or query.input_metric != self.input_metric:
            raise QueryRefused(
                f"query {run.t} is on domain {query.input_domain} with metric {query.input_metric}; the GTM was "
                f"built on domain {self.input_domain} with metric {self.input_metric}")
        mechanism = OpenDPMechanism(query, self.d_in)
        sp = self.plan.step(run.t)
        if not mechanism.covered_by(sp.eps_t, sp.delta_t):
            raise QueryRefused(
                f"query {sp.t} has privacy map eps_t={mechanism.eps_t!r}, delta_t={mechanism.delta_t!r} at "
                f"d_in={self.d_in!r}, above the step's planned eps_t={sp.eps_t!r}, delta_t={sp.delta_t!r}")
        return mechanism

    def answer(self, query) -> bool:
        """Check the query, then run one GTM step on it: True = halt, False = continue."""
        mechanism = self.check(query)
        return bool(self._run.step(mechanism, self._data))

    def transition(self, query, is_internal: bool = False):
        """The queryable's transition function (OpenDP calls it with every query)."""
        if is_internal:
            raise QueryRefused("the GTM's queryable answers no internal (library) queries")
        return self.answer(query)

    def queryable(self):
        """This session as an OpenDP ``Queryable`` (queries and answers are Python objects)."""
        return opendp_prelude().new_queryable(self.transition, Q="ExtrinsicObject", A="ExtrinsicObject")


def _check_space(input_domain, input_metric) -> None:
    dp = opendp_prelude()
    if not isinstance(input_domain, dp.Domain):
        raise InvalidParameter(f"input_domain must be an OpenDP Domain, got {type(input_domain).__name__}")
    if not isinstance(input_metric, dp.Metric):
        raise InvalidParameter(f"input_metric must be an OpenDP Metric, got {type(input_metric).__name__}")


def check_d_in(d_in: Any) -> Any:
    """d_in must be a number > 0 (an int for dataset metrics, a float for sensitivity metrics)."""
    if not is_real(d_in) or not d_in > 0:
        raise InvalidParameter(f"d_in must be a number > 0, got {d_in!r}")
    return d_in


def make_gtm(config: GTMConfig, input_domain, input_metric, *, d_in: Any = 1,
             new_run: Callable[[Plan], GTMRun] | None = None):
    """The GTM of ``config`` as an OpenDP interactive measurement on ``(input_domain, input_metric)``.

    Args:
        config: the GTM configuration (its ``[stream] eps_t / delta_t`` are the planned privacy
            of the queries at ``d_in``; its horizon bounds the number of queries).
        input_domain, input_metric: the OpenDP space every query must be defined on.
        d_in: the input distance the claim is for (queries' maps are evaluated there).
        new_run: ``plan -> GTMRun`` for each invocation; default :class:`gtm_core.reference.GTMRun`
            with the exact samplers on the OS CSPRNG (a deployment). Tests pass a seeded run
            (reported "not for deployment").

    Returns:
        An OpenDP ``Measurement`` whose invocation returns a ``Queryable`` answering
        binary-output measurements with True (halt) / False (continue).

    Raises:
        MissingOpenDPFeature: ``"contrib"`` or ``"honest-but-curious"`` is not enabled.
        InvalidParameter: a bad config, domain, metric or d_in.
    """
    if not isinstance(config, GTMConfig):
        raise InvalidParameter(f"config must be a GTMConfig, got {type(config).__name__}")
    require_features(*REQUIRED_FEATURES, what="make_gtm (OpenDP's make_user_measurement)")
    _check_space(input_domain, input_metric)
    d_in = check_d_in(d_in)
    plan = make_plan(config)
    start = (lambda p: GTMRun(p)) if new_run is None else new_run
    dp = opendp_prelude()

    def function(data):
        return GTMSession(plan, data, input_domain, input_metric, d_in, start(plan)).queryable()

    return dp.m.make_user_measurement(input_domain, input_metric, gtm_output_measure(plan), function=function,
                                      privacy_map=gtm_privacy_map(plan, d_in))


def halting_index(queryable, queries) -> int:
    """Ask ``queries`` in order until the GTM halts: the step it halted at (1-based), 0 if it never did.

    The GTM's output in the auditor's coding (docs/protocol.md): the statistical audit of
    :func:`make_gtm` end to end uses it as the released value."""
    for t, query in enumerate(queries, start=1):
        if queryable(query):
            return t
    return 0
