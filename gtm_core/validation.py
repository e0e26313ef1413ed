"""Small ``check_*`` helpers: validate once, at construction, with messages that
quote the field name and the offending value (attrs / Hypothesis style).

This module is the one home of argument type checks: a library module that needs "an integer
>= 1", "a finite real in (0, 1)", "a bool" or "one of these names" calls a helper here instead
of spelling out ``isinstance(x, bool) or not isinstance(x, int) ...`` itself
(``tests/test_validation_scan.py`` enforces it). Every helper

* refuses ``bool`` where a number is expected (``True`` is an ``int`` to Python, never to us);
* raises ``error`` (default :class:`~gtm_core.errors.InvalidParameter`; a caller that reports a
  configuration, a target's answer or a stream passes its own :class:`~gtm_core.errors.GTMError`
  subclass) with a one-line message ``"<name> must be <domain>, got <repr(value)>"``;
* returns the value in its canonical type (``int``, ``float``, ``bool``), so a caller stores
  what it checked.

:func:`is_integer` and :func:`is_real` are the matching predicates, for code that dispatches on
a value's kind rather than refusing it.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any, Iterable

import mpmath
import numpy as np

from .errors import GTMError, InvalidParameter

Error = type[GTMError]


def _show(value: Any, limit: int = 60) -> str:
    """repr(value), shortened so an error message stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 20]}...{text[-12:]} ({len(text)} chars)"


# --- predicates -------------------------------------------------------------------------------


def is_integer(value: Any) -> bool:
    """True for an integer (``int``, numpy integer, any :class:`numbers.Integral`) that is not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_real(value: Any) -> bool:
    """True for a real number (``int``, ``float``, ``Fraction``, numpy scalar, any
    :class:`numbers.Real`) that is not a bool; finiteness is not checked."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


# --- integers ---------------------------------------------------------------------------------


def _integer_domain(minimum: int | None, maximum: int | None) -> str:
    if maximum is not None:
        return f"an integer <= {maximum}" if minimum is None else f"an integer in [{minimum}, {maximum}]"
    if minimum is None:
        return "an integer"
    return {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
              error: Error = InvalidParameter) -> int:
    """An integer (not a bool; numpy integers accepted) in [minimum, maximum], as an ``int``.

    The domain in the message reads "a non-negative integer" (minimum 0), "a positive integer"
    (minimum 1), "an integer >= m", "an integer in [m, M]" or "an integer".
    """
    if not is_integer(value) or (minimum is not None and value < minimum) or (
            maximum is not None and value > maximum):
        raise error(f"{name} must be {_integer_domain(minimum, maximum)}, got {_show(value)}")
    return int(value)


def check_positive_int(name: str, value: Any, *, error: Error = InvalidParameter) -> int:
    """An integer >= 1 (a horizon, a step index, a count of samples)."""
    return check_int(name, value, minimum=1, error=error)


def check_nonnegative_int(name: str, value: Any, *, error: Error = InvalidParameter) -> int:
    """An integer >= 0 (a number of runs, a seed, a budget)."""
    return check_int(name, value, minimum=0, error=error)


def check_direction(name: str, value: Any, *, error: Error = InvalidParameter) -> int:
    """A direction s: the integer 1 or -1."""
    if not is_integer(value) or value not in (1, -1):
        raise error(f"{name} must be 1 or -1, got {_show(value)}")
    return int(value)


# --- reals ------------------------------------------------------------------------------------


def _bound(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _real_domain(low, high, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{_bound(low)}, {_bound(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {_bound(low)}"
    return f"{'<' if high_open else '<='} {_bound(high)}"


def check_real(name: str, value: Any, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False, infinite_ok: bool = False,
               error: Error = InvalidParameter) -> float:
    """A real number (any :class:`numbers.Real` but bool) in the interval given by ``low``/``high``
    (closed ends unless ``low_open``/``high_open``), as a ``float``.

    NaN is always refused; +-inf (and an integer beyond the float range) unless ``infinite_ok``.
    Messages: "must be a real number", "must be finite", "must be > 0", "must be in (0, 1]", ...
    """
    if not is_real(value):
        raise error(f"{name} must be a real number, got {_show(value)}")
    try:
        x = float(value)
    except OverflowError:  # e.g. a 400-digit TOML integer
        raise error(f"{name} must be {'within the float range' if infinite_ok else 'finite'}, "
                    f"got {_show(value)}") from None
    if math.isnan(x) or (math.isinf(x) and not infinite_ok):
        raise error(f"{name} must be {'a number' if infinite_ok else 'finite'}, got {_show(value)}")
    if (low is not None and not (x > low if low_open else x >= low)) or (
            high is not None and not (x < high if high_open else x <= high)):
        raise error(f"{name} must be {_real_domain(low, high, low_open, high_open)}, got {_show(value)}")
    return x


def check_finite(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """A finite real number."""
    return check_real(name, value, error=error)


def check_positive(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """A finite real > 0."""
    return check_real(name, value, low=0, low_open=True, error=error)


def check_nonnegative(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """A finite real >= 0."""
    return check_real(name, value, low=0, error=error)


def check_open_unit(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """A real in (0, 1) (a target probability p*, a failure probability beta)."""
    return check_real(name, value, low=0, high=1, low_open=True, high_open=True, error=error)


def check_half_open_unit(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """A real in [0, 1) (a delta)."""
    return check_real(name, value, low=0, high=1, high_open=True, error=error)


def check_gamma(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """The GTM's gamma: a real in (1, 2]."""
    return check_real(name, value, low=1, high=2, low_open=True, error=error)


def check_probability(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """A probability: a real in [0, 1]."""
    return check_real(name, value, low=0, high=1, error=error)


def check_exact_real(name: str, value: Any, *, error: Error = InvalidParameter) -> int | float | Fraction:
    """A finite number with an exact value: an integer (returned as ``int``), a finite float or a
    ``Fraction`` (returned as given), for code that computes with rationals or arb balls and must
    not round through float."""
    if not (is_integer(value) or isinstance(value, (float, Fraction))):
        raise error(f"{name} is non-numeric (it must be an int, float or Fraction), got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise error(f"{name} is non-finite, got {_show(value)}")
    return int(value) if is_integer(value) else value


def check_formula_real(name: str, value: Any, *, infinite_ok: bool = False, error: Error = InvalidParameter) -> None:
    """A finite real as a formula takes it at either precision: a float, an int, a numpy scalar, an
    mpmath ``mpf`` or a decimal string (+inf too if ``infinite_ok``). The value is used as given
    (converting would round a decimal string), so nothing is returned."""
    if type(value) is float:  # the hot path of the float64 formulas
        if math.isfinite(value) or (infinite_ok and value == math.inf):
            return
    elif type(value) is int:
        return
    elif is_real(value) or isinstance(value, (str, mpmath.mpf)):
        try:
            x = mpmath.mpf(value)
        except (ValueError, TypeError):
            x = None
        if x is not None and (mpmath.isfinite(x) or (infinite_ok and x == mpmath.inf)):
            return
    raise error(f"{name} must be a finite real number, got {value!r}")


MAX_SECONDS = 1e7  # ~116 days; beyond this the platform's timers overflow


def check_seconds(name: str, value: Any, *, error: Error = InvalidParameter) -> float:
    """A time limit or budget: a real number of seconds in (0, MAX_SECONDS]."""
    if not is_real(value) or isinstance(value, Fraction):
        raise error(f"{name} must be a number of seconds, got {_show(value)}")
    if not (0 < value <= MAX_SECONDS):
        raise error(f"{name} must be a number of seconds in (0, {MAX_SECONDS:g}], got {_show(value)}")
    return float(value)


# --- flags and names --------------------------------------------------------------------------


def check_bool(name: str, value: Any, *, error: Error = InvalidParameter) -> bool:
    """A flag: ``True`` or ``False`` (numpy bools accepted; 0 and 1 are not flags), as a ``bool``."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{name} must be a bool, got {_show(value)}")
    return bool(value)


def _same(value: Any, choice: Any) -> bool:
    if isinstance(value, (bool, np.bool_)) != isinstance(choice, (bool, np.bool_)):
        return False
    try:
        return bool(value == choice)
    except (TypeError, ValueError):  # e.g. an array compared with a name
        return False


def check_choice(name: str, value: Any, choices: Iterable, *, error: Error = InvalidParameter) -> Any:
    """One of ``choices`` (compared with ``==``, except that a bool only matches a bool, so
    ``True`` is not ``1``), returned as given. The message lists the choices as written."""
    choices = tuple(choices)
    if not any(_same(value, c) for c in choices):
        raise error(f"{name} must be one of {', '.join(str(c) for c in choices)}, got {_show(value)}")
    return value


# --- streams ---------------------------------------------------------------------------------

def check_stream(name: str, p: Any, *, length: int | None = None) -> np.ndarray:
    """A Bernoulli stream: a non-empty 1-D sequence of probabilities in [0, 1], as a float array.

    ``length`` (if given) must equal len(p). The one stream check of the float64 code paths
    (simulator, reference GTM, baselines); the exact engine converts the same entries to arb
    balls instead (:func:`gtm_core.exact.probabilities_as_arb`), so that decimal strings and
    mpmath numbers keep their exact values.
    """
    try:
        arr = np.asarray(p, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter(f"{name} must be a non-empty 1-D sequence of probabilities") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameter(f"{name} must be a non-empty 1-D sequence of probabilities, got shape {arr.shape}")
    if np.any(~np.isfinite(arr)) or np.any((arr < 0) | (arr > 1)):
        raise InvalidParameter(f"{name} must contain probabilities in [0, 1]")
    if length is not None and length != arr.size:
        raise InvalidParameter(f"T={length} does not match len({name})={arr.size}")
    return arr
