"""Evaluating a binary mechanism M_t: outputs as +1/-1, the count K_t of +1 outputs, and the
wrappers Algorithm 1 feeds (purification, negation).

:func:`count_positive` evaluates a mechanism N_t times (one ``batch(data, n)`` call when it offers
one) and counts its +1 outputs; N_t and K_t are secrets, so every fault is one fixed text
(:func:`mechanism_fault`). :class:`Purified` (Lemma 24) and :class:`Negated` are the mechanism
the float path of :class:`gtm_core.reference.GTM` is fed at a step (:func:`mechanism_for_step`);
:class:`BernoulliMechanism` is the test mechanism M(X) = +1 with probability p.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .errors import InvalidParameter, MechanismError, MechanismTimeout
from .planners import StepPlan
from .validation import check_probability


def as_sign(value: Any) -> int:
    """Mechanism output -> +1/-1. Accepts +1/-1 (ints, numpy ints) and booleans (True = +1)."""
    if isinstance(value, (bool, np.bool_)):
        return 1 if value else -1
    if isinstance(value, numbers.Integral) and int(value) in (1, -1):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        if value == 1.0 or value == -1.0:
            return int(value)
    raise MechanismError(
        f"mechanism returned a value of type {type(value).__name__} that is not +1/-1 or a bool"
    )


def mechanism_fault(exc: BaseException, who: str) -> BaseException:
    """The exception to raise for one a mechanism raised, stating the fault only.

    The mechanism's own message and arguments are never kept: they may quote what the
    mechanism was given or returned (the number of evaluations N_t, a shape, a count), which
    are secrets. A :class:`MechanismTimeout` stays a timeout and any other ``Exception``
    becomes a :class:`MechanismError` naming its type; an interruption stays one, without its
    arguments (``KeyboardInterrupt()``; ``SystemExit`` with a fixed message, exit status 1).
    Other ``BaseException``s (a framework's control flow, e.g. a test runner's) pass unchanged.
    """
    if isinstance(exc, MechanismTimeout):
        return MechanismTimeout(f"{who} reported a timeout")
    if isinstance(exc, Exception):
        return MechanismError(f"{who} raised {type(exc).__name__}")
    if isinstance(exc, SystemExit):
        return SystemExit(f"{who} called sys.exit")
    if isinstance(exc, KeyboardInterrupt):
        return KeyboardInterrupt()
    return exc


def count_positive(mechanism: Callable, data: Any, n: int) -> int:
    """Evaluate the mechanism n times on data; return the number of +1 outputs.

    A mechanism may offer ``batch(data, n)`` returning n outputs at once (same law as n
    independent calls); outputs are validated either way. n and the count are secrets (N_t,
    K_t), so every failure is a :class:`MechanismError` whose message is one fixed text per
    fault (:func:`mechanism_fault` for exceptions): no shape, count or value, nothing whose
    length varies with n.
    """
    if n == 0:
        return 0
    batch = getattr(mechanism, "batch", None)
    if callable(batch):
        try:
            out = batch(data, n)
        except BaseException as exc:  # the mechanism's own failure (its message may quote n)
            raise mechanism_fault(exc, "mechanism.batch") from None
        try:
            arr = np.asarray(out)
        except Exception:  # e.g. a ragged sequence: numpy's message quotes the shape
            raise MechanismError("mechanism.batch returned something that is not an array of outputs") from None
        if arr.ndim != 1 or arr.shape[0] != n:
            raise MechanismError("mechanism.batch(data, n) did not return a one-dimensional array of n outputs")
        if arr.dtype == np.bool_:
            return int(arr.sum())
        if not np.issubdtype(arr.dtype, np.number) or not np.all((arr == 1) | (arr == -1)):
            raise MechanismError("mechanism.batch returned values that are not +1/-1 or booleans")
        return int((arr == 1).sum())
    k = 0
    for _ in range(n):
        try:
            y = mechanism(data)
        except BaseException as exc:
            raise mechanism_fault(exc, "mechanism") from None
        if as_sign(y) == 1:
            k += 1
    return k


@dataclass
class BernoulliMechanism:
    """M(X) = +1 with probability p (ignores X). ``batch`` draws n outputs at once."""

    p: float
    rng: np.random.Generator = field(repr=False, default_factory=np.random.default_rng)

    def __post_init__(self):
        self.p = check_probability("p", self.p)
        if not isinstance(self.rng, np.random.Generator):
            raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(self.rng).__name__}")

    def __call__(self, data=None) -> int:
        return 1 if self.rng.random() < self.p else -1

    def batch(self, data, n: int) -> np.ndarray:
        return self.rng.random(n) < self.p


class Negated:
    """-M: the flipped variant's input (success probability 1 - p)."""

    def __init__(self, mechanism: Callable):
        if not callable(mechanism):
            raise MechanismError(f"mechanism must be callable, got {type(mechanism).__name__}")
        self.mechanism = mechanism
        inner = getattr(mechanism, "batch", None)
        if callable(inner):
            self.batch = lambda data, n: _negate_batch(inner(data, n))

    def __call__(self, data=None) -> int:
        return -as_sign(self.mechanism(data))

    def __repr__(self) -> str:
        return f"Negated({self.mechanism!r})"


def _negate_batch(out) -> np.ndarray:
    arr = np.asarray(out)
    if arr.dtype == np.bool_:
        return ~arr
    return -arr


class Purified:
    """Lemma 24: pass M's output through a binary symmetric channel with crossover phi.

    If M is (eps, delta)-DP and phi = delta / (e^eps - 1 + 2 delta), the result is eps-DP
    (Lemma 24(3)); its success probability is (1 - 2 phi) p + phi.
    """

    def __init__(self, mechanism: Callable, phi: float, rng: np.random.Generator):
        phi = check_probability("phi", phi)
        if not phi <= 0.5:
            raise InvalidParameter(f"phi must be in [0, 1/2], got {phi!r}")
        if not isinstance(rng, np.random.Generator):
            raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.mechanism, self.phi, self._rng = mechanism, float(phi), rng
        inner = getattr(mechanism, "batch", None)
        if callable(inner):
            self.batch = self._batch_from(inner)

    def __call__(self, data=None) -> int:
        a = as_sign(self.mechanism(data))
        return -a if self._rng.random() < self.phi else a

    def _batch_from(self, inner):
        def batch(data, n):
            arr = np.asarray(inner(data, n))
            signs = np.where(arr, 1, -1) if arr.dtype == np.bool_ else arr
            flip = self._rng.random(n) < self.phi
            return np.where(flip, -signs, signs)

        return batch

    def __repr__(self) -> str:
        return f"Purified({self.mechanism!r}, phi={self.phi!r})"


def mechanism_for_step(mechanism: Callable, sp: StepPlan, rng: np.random.Generator) -> Callable:
    """The mechanism Algorithm 1 is fed at step sp.t: purified (Lemma 24) if delta_t > 0,
    then negated if the planner chose the flipped variant (s = -1)."""
    mech = mechanism
    if sp.delta_t > 0:
        mech = Purified(mech, sp.phi, rng)
    if sp.s == -1:
        mech = Negated(mech)
    return mech
