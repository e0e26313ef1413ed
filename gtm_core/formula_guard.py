"""The argument and result guard of the public formulas (:func:`guarded`).

Formulas run on floats or mpmath numbers and would otherwise fail with bare Python errors,
silently propagate NaN, or hand back a complex number. :func:`guarded` checks that every
numeric argument is a finite real (float, int, numpy scalar, mpmath mpf or a decimal string),
``dps`` is None or a positive integer, turns the arithmetic errors of out-of-domain arguments
into :class:`~gtm_core.errors.InvalidParameter` (:class:`~gtm_core.errors.FormulaOverflow`,
:class:`~gtm_core.errors.FormulaZeroDivision`), and refuses NaN or complex results. +-inf
results are allowed where a formula documents them (e.g. ``pareto_moment``); arguments named
in ``infinite_ok`` may be +inf. It does NOT check each formula's mathematical domain
(alpha in (0, 1), gamma in (1, 2], ...): an argument outside it can still give a finite number.

Each formula in :mod:`gtm_core.formulas` carries ``@guarded`` visibly; the function a reader
reads is the one callers get (the unguarded body is ``formula.__wrapped__``).
"""

from __future__ import annotations

import functools
import inspect
import math

import mpmath

from .errors import FormulaOverflow, FormulaZeroDivision, GTMError, InvalidParameter
from .validation import check_bool, check_formula_real, check_int

__all__ = ["guarded", "check_formula_number"]


def check_formula_number(fname: str, name: str, value, *, infinite_ok: bool = False) -> None:
    """Raise InvalidParameter unless ``value`` is a finite real number (or +inf if allowed), as
    :func:`~gtm_core.validation.check_formula_real` takes it; the message names the formula."""
    if type(value) is int or (type(value) is float and math.isfinite(value)):  # the hot path
        return
    check_formula_real(f"{fname}: {name}", value, infinite_ok=infinite_ok)


def guarded(fn=None, *, infinite_ok: tuple[str, ...] = ()):
    """Decorator: check a formula's arguments and result (see the module docstring).

    Use as ``@guarded`` or ``@guarded(infinite_ok=("tau2",))``.
    """
    if fn is None:
        return functools.partial(guarded, infinite_ok=tuple(infinite_ok))
    sig = inspect.signature(fn)
    fname = fn.__name__
    positional = [p.name for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    known = set(sig.parameters)

    def check(name, value):
        if name == "dps":
            if value is not None:
                check_int(f"{fname}: dps", value, minimum=1, maximum=100_000)
        elif name == "halted":
            check_bool(f"{fname}: halted", value)
        else:
            check_formula_number(fname, name, value, infinite_ok=name in infinite_ok)

    def shown(args, kwargs):
        pairs = list(zip(positional, args)) + [(k, v) for k, v in kwargs.items() if k != "dps"]
        return ", ".join(f"{k}={v!r}" for k, v in pairs)

    @functools.wraps(fn)
    def guarded_formula(*args, **kwargs):
        if len(args) > len(positional):
            raise InvalidParameter(f"{fname}: too many positional arguments ({len(args)})")
        for name, value in zip(positional, args):
            check(name, value)
        for name, value in kwargs.items():
            if name not in known:
                raise InvalidParameter(f"{fname}: unexpected argument {name!r}")
            check(name, value)
        try:
            result = fn(*args, **kwargs)
        except GTMError:
            raise
        except OverflowError:
            raise FormulaOverflow(f"{fname}: float64 overflow on ({shown(args, kwargs)})") from None
        except ZeroDivisionError:
            raise FormulaZeroDivision(f"{fname}: division by zero on ({shown(args, kwargs)})") from None
        except (ArithmeticError, ValueError, TypeError):
            raise InvalidParameter(f"{fname}: arguments outside the formula's domain ({shown(args, kwargs)})") from None
        if isinstance(result, (complex, mpmath.mpc)) or (
                isinstance(result, float) and math.isnan(result)) or (
                isinstance(result, mpmath.mpf) and mpmath.isnan(result)):
            raise InvalidParameter(f"{fname}: arguments outside the formula's domain ({shown(args, kwargs)}); "
                                   "the result is not a real number")
        return result

    return guarded_formula
