"""Shared Hypothesis strategies: the paper's parameter boxes and GTM configurations.

Probabilities are drawn log-uniformly (so 1e-30 is as likely as 0.3); every strategy
produces plain floats, which both backends of :mod:`gtm_core.formulas` take exactly.
"""

from __future__ import annotations

import functools
import math

from hypothesis import strategies as st

from gtm_core.config import GTMConfig


class _Clip:
    """min(max(x, lo), hi) as a named callable (Hypothesis reprs lambdas by parsing source)."""

    def __init__(self, lo: float, hi: float):
        self.lo, self.hi = lo, hi

    def __call__(self, x: float) -> float:
        return min(max(x, self.lo), self.hi)

    def __repr__(self) -> str:
        return f"clip({self.lo!r}, {self.hi!r})"


@functools.lru_cache(maxsize=None)
def log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Floats in [lo, hi] whose logarithm is uniform (endpoints included). Cached: building
    strategies inside composites on every draw is what makes Hypothesis slow."""
    return st.one_of(
        st.sampled_from([lo, hi]),
        st.floats(math.log(lo), math.log(hi)).map(math.exp).map(_Clip(lo, hi)),
    )


@functools.lru_cache(maxsize=None)
def failure_probabilities(lo: float = 1e-30, hi: float = 0.9) -> st.SearchStrategy[float]:
    """alpha, beta, beta^I, beta^II in (0, 1)."""
    return log_uniform(lo, hi)


@functools.lru_cache(maxsize=None)
def gammas(lo: float = 1.0 + 1e-3) -> st.SearchStrategy[float]:
    """The gap parameter gamma in (1, 2] (Lemma 11), 2 included."""
    return st.one_of(st.just(2.0), st.just(1.5), st.floats(lo, 2.0))


@functools.lru_cache(maxsize=None)
def targets(lo: float = 1e-4, hi: float = 1 - 1e-4) -> st.SearchStrategy[float]:
    """Target thresholds p* in (0, 1)."""
    return st.one_of(st.sampled_from([0.5, 0.05, 0.95]), st.floats(lo, hi))


@functools.lru_cache(maxsize=None)
def epsilons(lo: float = 1e-2, hi: float = 10.0) -> st.SearchStrategy[float]:
    return log_uniform(lo, hi)


@functools.lru_cache(maxsize=None)
def thetas(lo: float = 1e-2, hi: float = 100.0) -> st.SearchStrategy[float]:
    return log_uniform(lo, hi)


@functools.lru_cache(maxsize=None)
def input_epsilons(lo: float = 1e-4, hi: float = 1.0) -> st.SearchStrategy[float]:
    """eps_t, the input mechanisms' privacy parameter."""
    return log_uniform(lo, hi)


@functools.lru_cache(maxsize=None)
def noise_ranges(hi: float = 1e6) -> st.SearchStrategy[float]:
    """Lambda_t >= 1."""
    return st.one_of(st.just(1.0), log_uniform(1.0, hi))


@st.composite
def theorem21_parameters(draw, *, max_t: int = 10**9):
    """(eps, theta, gamma, beta, eps_t, p*, t) from the box of Theorem 21."""
    return dict(
        epsilon=draw(epsilons()),
        theta=draw(thetas()),
        gamma=draw(gammas()),
        beta=draw(failure_probabilities(1e-12, 0.5)),
        eps_t=draw(input_epsilons()),
        p_star=draw(targets()),
        t=draw(st.integers(1, max_t)),
    )


@st.composite
def theorem23_parameters(draw, *, max_t: int = 10**9):
    """(eps_C, C_H, gamma, beta, eps_t, p*, t) from the box of Theorem 23."""
    return dict(
        epsilon_c=draw(epsilons()),
        c_h=draw(log_uniform(0.1, 10.0)),
        gamma=draw(gammas()),
        beta=draw(failure_probabilities(1e-12, 0.5)),
        eps_t=draw(st.one_of(st.just(0.0), input_epsilons())),
        p_star=draw(targets()),
        t=draw(st.integers(1, max_t)),
    )


def _per_step(draw, scalar: st.SearchStrategy, horizon: int, max_list: int):
    if horizon <= max_list and draw(st.booleans()):
        return draw(st.lists(scalar, min_size=horizon, max_size=horizon))
    return draw(scalar)


@st.composite
def config_dicts(draw, *, parameterizations=("theorem21", "theorem23"), max_horizon: int = 10**6,
                 max_list: int = 12):
    """A valid configuration as the dict a TOML file parses to (scalars or per-step lists)."""
    name = draw(st.sampled_from(parameterizations))
    horizon = draw(st.one_of(st.integers(1, max_list), st.integers(1, max_horizon)))
    gtm = {
        "parameterization": name,
        "gamma": draw(gammas()),
        "beta": draw(failure_probabilities(1e-12, 0.5)),
    }
    if name == "theorem23":
        gtm["epsilon_c"] = draw(epsilons())
        gtm["c_h"] = draw(log_uniform(0.1, 10.0))
    else:
        gtm["epsilon"] = draw(epsilons(0.1, 10.0))
        gtm["theta"] = draw(thetas(0.1, 10.0))
    eps_t = _per_step(draw, input_epsilons(1e-3, 0.5), horizon, max_list)
    stream = {
        "eps_t": eps_t,
        "p_star": _per_step(draw, targets(1e-3, 1 - 1e-3), horizon, max_list),
        "horizon": horizon,
    }
    if draw(st.booleans()):
        # delta_t > 0 needs eps_t > 0 (always true here) - purification (Lemma 24)
        stream["delta_t"] = _per_step(
            draw, st.one_of(st.just(0.0), log_uniform(1e-12, 1e-3)), horizon, max_list
        )
    return {"gtm": gtm, "stream": stream}


def configs(**kwargs) -> st.SearchStrategy[GTMConfig]:
    """Valid :class:`GTMConfig` values (see :func:`config_dicts`)."""
    return config_dicts(**kwargs).map(GTMConfig.from_dict)
