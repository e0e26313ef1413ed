"""Small ``check_*`` helpers: validate once, at construction, with messages that
quote the field name and the offending value (attrs / Hypothesis style)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .errors import InvalidParameter


def _show(value: Any, limit: int = 60) -> str:
    """repr(value), shortened so an error message stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 20]}...{text[-12:]} ({len(text)} chars)"


def _as_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(f"{name} must be a real number, got {_show(value)}")
    try:
        x = float(value)
    except OverflowError:  # e.g. a 400-digit TOML integer
        raise InvalidParameter(f"{name} must be finite, got {_show(value)}") from None
    if math.isnan(x) or math.isinf(x):
        raise InvalidParameter(f"{name} must be finite, got {_show(value)}")
    return x


def check_finite(name: str, value: Any) -> float:
    return _as_real(name, value)


def check_positive(name: str, value: Any) -> float:
    x = _as_real(name, value)
    if not x > 0:
        raise InvalidParameter(f"{name} must be > 0, got {value!r}")
    return x


def check_nonnegative(name: str, value: Any) -> float:
    x = _as_real(name, value)
    if not x >= 0:
        raise InvalidParameter(f"{name} must be >= 0, got {value!r}")
    return x


def check_open_unit(name: str, value: Any) -> float:
    x = _as_real(name, value)
    if not 0 < x < 1:
        raise InvalidParameter(f"{name} must be in (0, 1), got {value!r}")
    return x


def check_half_open_unit(name: str, value: Any) -> float:
    """[0, 1)."""
    x = _as_real(name, value)
    if not 0 <= x < 1:
        raise InvalidParameter(f"{name} must be in [0, 1), got {value!r}")
    return x


def check_gamma(name: str, value: Any) -> float:
    x = _as_real(name, value)
    if not 1 < x <= 2:
        raise InvalidParameter(f"{name} must be in (1, 2], got {value!r}")
    return x


def check_probability(name: str, value: Any) -> float:
    x = _as_real(name, value)
    if not 0 <= x <= 1:
        raise InvalidParameter(f"{name} must be in [0, 1], got {value!r}")
    return x


def check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidParameter(f"{name} must be a positive integer, got {value!r}")
    if int(value) < 1:
        raise InvalidParameter(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_direction(name: str, value: Any) -> int:
    if value not in (1, -1) or isinstance(value, bool):
        raise InvalidParameter(f"{name} must be +1 or -1, got {value!r}")
    return int(value)


def check_nonnegative_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise InvalidParameter(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


MAX_SECONDS = 1e7  # ~116 days; beyond this the platform's timers overflow


def check_seconds(name: str, value: Any) -> float:
    """A time limit or budget: a real number of seconds in (0, MAX_SECONDS]."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameter(f"{name} must be a number of seconds, got {_show(value)}")
    if not (0 < value <= MAX_SECONDS):
        raise InvalidParameter(f"{name} must be a number of seconds in (0, {MAX_SECONDS:g}], got {_show(value)}")
    return float(value)


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
