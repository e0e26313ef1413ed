"""Where a GTM's random bits come from, and the float path's Poisson draw.

:func:`randomness` is the one rng-or-seed rule of :class:`gtm_core.reference.GTM`,
:class:`gtm_core.reference.GTMRun` and deployments (:mod:`gtm_core.deployment`): exact sampling from a
:class:`~gtm_core.exact_sampling.BitSource` (the operating system's CSPRNG unless a generator or seed is
given, then reproducible and "not for deployment"), or the float64 numpy samplers (``sampler="float"``,
simulation-speed comparisons only), whose count N_t is :func:`draw_poisson_within_budget`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .errors import EvaluationBudgetExceeded, InvalidParameter
from .exact_sampling import BitSource, GeneratorBits, SeededBits, SystemBits
from .validation import check_nonnegative_int

# numpy's Poisson sampler refuses means above ~9.2e18; far below that we switch to an exact
# two-stage draw (is N_t within the budget? if so, draw N_t from the truncated law).
_DIRECT_POISSON_MAX = 1e15


def draw_poisson_within_budget(rng: np.random.Generator, lam: float, budget: int | None) -> int | None:
    """The float path's N_t: draw N ~ Po(lam) from a numpy generator; None if N > budget (budget None =
    unlimited).

    Raises:
        EvaluationBudgetExceeded: lam beyond numpy's direct sampler and no budget set.
    """
    if lam < _DIRECT_POISSON_MAX:
        n = int(rng.poisson(lam))
        return None if budget is not None and n > budget else n
    if budget is None:
        raise EvaluationBudgetExceeded("lambda_t is too large to sample and no budget is set")
    # Pr[N <= budget] = Q(budget + 1, lam) (regularised upper incomplete gamma)
    cdf = float(special.gammaincc(budget + 1, lam)) if np.isfinite(lam) else 0.0
    u = rng.random()
    if u >= cdf:
        return None
    # conditional on N <= budget: inversion on the (tiny) truncated law, computed in log space
    ks = np.arange(budget + 1)
    logp = ks * math.log(lam) - lam - special.gammaln(ks + 1)
    logp -= logp.max()
    p = np.exp(logp)
    return int(rng.choice(ks, p=p / p.sum()))


SAMPLERS = ("exact", "float")


def randomness(rng: np.random.Generator | BitSource | None = None, seed: int | None = None, *,
               sampler: str = "exact") -> tuple[np.random.Generator | BitSource, bool]:
    """Where a GTM's random bits come from: ``(what GTM(...) takes, seeded)``. The one rule, for
    :class:`gtm_core.reference.GTM`, :class:`gtm_core.reference.GTMRun` and deployments (:mod:`gtm_core.deployment`).

    Exact sampler: a :class:`BitSource` as given (seeded unless it is deployable), a numpy
    Generator's raw bits (:class:`GeneratorBits`: reproducible, seeded), a seed's
    :class:`SeededBits` (seeded), and with neither the operating system's CSPRNG
    (:class:`SystemBits`, not seeded: the only source a deployment may use). Float sampler: the
    given Generator, or :func:`default_rng` of the seed. Seeded randomness is "not for deployment".
    """
    if sampler not in SAMPLERS:
        raise InvalidParameter(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if rng is not None and seed is not None:
        raise InvalidParameter("pass either rng or seed, not both")
    if isinstance(rng, BitSource):
        if sampler == "float":
            raise InvalidParameter("the float sampler needs a numpy.random.Generator, got a BitSource")
        return rng, not rng.deployable
    if rng is not None:
        if not isinstance(rng, np.random.Generator):
            raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        return (GeneratorBits(rng) if sampler == "exact" else rng), True
    if sampler == "float":
        return default_rng(seed)
    if seed is None:
        return SystemBits(), False
    return SeededBits(check_nonnegative_int("seed", seed)), True


def default_rng(seed: int | None = None) -> tuple[np.random.Generator, bool]:
    """(generator, seeded). Without a seed the generator is seeded from the operating system."""
    if seed is None:
        return np.random.default_rng(np.random.SeedSequence()), False
    return np.random.default_rng(check_nonnegative_int("seed", seed)), True


NOT_FOR_DEPLOYMENT = "seeded generator: not for deployment"
