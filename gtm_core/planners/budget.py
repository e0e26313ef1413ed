"""Probability that a step needs more evaluations than its budget.

lambda_t = rho exp(eps_t s (mu_1 - eta_1 + eta_2)) is, up to the constant
rho e^{s eps_t mu_1}, a ratio of two independent Pareto variables (Lemma 12(1)):
V = e^{eps_t eta_1} ~ Par(sigma_1 = 1/(eps_t tau_1)), W = e^{eps_t eta_2} ~ Par(sigma_2 = 1/(eps_t tau_2)).
For s = +1, lambda = rho e^{eps_t mu_1} W / V; for s = -1, lambda = rho e^{-eps_t mu_1} V / W.
For Pareto ratios, with y = L / const:
    Pr[W/V > y] = y^{-s2} s1/(s1+s2)          (y >= 1)
                = 1 - s2/(s1+s2) y^{s1}        (y < 1)
Then Pr[N > B] <= min_L ( Pr[lambda > L] + Pr[Po(L) > B] ).
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np
from scipy import stats

from ..errors import GTMError, InvalidParameter
from ..validation import check_nonnegative_int, check_real


def _typed_errors(fn):
    """Arguments must be real numbers, +-inf allowed (or an array / list of them, for the first
    one), never NaN; arithmetic failures on extreme arguments end in InvalidParameter, never in a
    bare ArithmeticError; a NaN result is refused."""
    names = list(inspect.signature(fn).parameters)

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        for i, (name, value) in enumerate(list(zip(names, args)) + list(kwargs.items())):
            if i == 0 and isinstance(value, (np.ndarray, list, tuple)):
                try:
                    arr = np.asarray(value, dtype=float)
                except (TypeError, ValueError, OverflowError):
                    raise InvalidParameter(f"{fn.__name__}: expected real numbers, got {value!r:.60}") from None
                if np.isnan(arr).any():
                    raise InvalidParameter(f"{fn.__name__}: arguments must not be NaN")
                continue
            check_real(f"{fn.__name__}: {name}", value, infinite_ok=True)
        try:
            with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
                out = fn(*args, **kwargs)
        except GTMError:
            raise
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise InvalidParameter(f"{fn.__name__}: arguments outside the domain ({type(exc).__name__})") from None
        if np.isnan(np.asarray(out, dtype=float)).any():
            raise InvalidParameter(f"{fn.__name__}: arguments outside the domain (NaN result)")
        return out

    return guarded


@_typed_errors
def pareto_ratio_tail(y, sigma_num: float, sigma_den: float):
    """Pr[W/V > y] for independent W ~ Par(sigma_num), V ~ Par(sigma_den) (vectorised in y).

    An infinite shape means the variable is identically 1.
    """
    y = np.asarray(y, dtype=float)
    with np.errstate(divide="ignore"):
        logy = np.log(np.maximum(y, 1e-300))
    if math.isinf(sigma_num) and math.isinf(sigma_den):
        out = (y < 1).astype(float)
    elif math.isinf(sigma_num):  # W == 1: Pr[V < 1/y]
        out = np.where(y >= 1, 0.0, 1.0 - np.exp(sigma_den * np.minimum(logy, 0)))
    elif math.isinf(sigma_den):  # V == 1: Pr[W > y]
        out = np.where(y >= 1, np.exp(-sigma_num * np.maximum(logy, 0)), 1.0)
    else:
        tot = sigma_num + sigma_den
        out = np.where(
            y >= 1,
            np.exp(-sigma_num * np.maximum(logy, 0)) * sigma_den / tot,
            1.0 - sigma_num / tot * np.exp(sigma_den * np.minimum(logy, 0)),
        )
    return np.where(y <= 0, 1.0, out)


@_typed_errors
def lambda_tail(L, *, s: int, rho: float, eps_t: float, tau1: float, mu1: float, tau2: float):
    """Pr[lambda_t > L] over eta_1 ~ Exp(tau1), eta_2 ~ Exp(tau2) (vectorised in L)."""
    L = np.asarray(L, dtype=float)
    if eps_t == 0:
        return (rho > L).astype(float)
    s1 = 1.0 / (eps_t * tau1)
    s2 = math.inf if math.isinf(tau2) else 1.0 / (eps_t * tau2)
    if s == 1:
        return pareto_ratio_tail(L / (rho * math.exp(eps_t * mu1)), s2, s1)
    return pareto_ratio_tail(L / (rho * math.exp(-eps_t * mu1)), s1, s2)


@_typed_errors
def budget_exceed_probability(budget: int, *, s: int, rho: float, eps_t: float, tau1: float,
                              mu1: float, tau2: float) -> float:
    """An upper bound on Pr[N_t > budget] (unconditional): min over L of
    Pr[lambda_t > L] + Pr[Po(L) > budget]."""
    check_nonnegative_int("budget", budget)
    if eps_t == 0:
        return float(stats.poisson.sf(float(budget), rho))  # float: budgets can exceed int64
    grid = budget * np.geomspace(0.05, 0.999, 160)
    tails = lambda_tail(grid, s=s, rho=rho, eps_t=eps_t, tau1=tau1, mu1=mu1, tau2=tau2)
    total = tails + stats.poisson.sf(float(budget), grid)
    return float(min(1.0, total.min()))
