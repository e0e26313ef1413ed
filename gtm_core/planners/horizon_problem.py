"""The horizon planner's values: what the user fixes, the chosen numbers, and their configuration.

A :class:`HorizonProblem` (output privacy, the inputs' privacy and target, horizon T, failure
probability beta) and a :class:`HorizonDesign` (direction s, threshold c, base rate rho, claimed
rejection threshold p_bar, noise split theta) are the two halves of a ``parameterization = "horizon"``
configuration (docs/horizon.md); :func:`config_of`, :func:`problem_of` and :func:`design_of` convert
between them. The bound and the planner step are in :mod:`.horizon_bound` and :mod:`.horizon`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import GTMConfig
from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import check_open_unit, check_positive, check_positive_int

__all__ = [
    "HorizonProblem",
    "HorizonDesign",
    "NotAchievable",
    "config_of",
    "problem_of",
    "design_of",
]


class NotAchievable(UnsupportedConfiguration):
    """No certified design meets the request; ``best`` holds the best achievable value."""

    def __init__(self, message: str, best: dict):
        super().__init__(message)
        self.best = best


@dataclass(frozen=True)
class HorizonProblem:
    """What the user fixes: output privacy, the inputs' privacy and target, horizon, failure probability."""

    epsilon: float
    eps_t: float
    p_star: float
    T: int
    beta: float = 0.05
    gamma: float = 1.5  # carried into the configuration (the horizon planner does not use it)

    def __post_init__(self):
        for name in ("epsilon", "eps_t"):
            check_positive(name, getattr(self, name))
        check_open_unit("p_star", self.p_star)
        check_positive_int("horizon", self.T)
        check_open_unit("beta", self.beta)
        if self.eps_t >= self.epsilon:
            raise InvalidParameter(
                f"eps_t must be below epsilon for a finite expected cost, got eps_t={self.eps_t!r} "
                f">= epsilon={self.epsilon!r}")

    def target_rate(self, s: int) -> float:
        """r* of the count mean at p = p*: p* for the direct direction (s = +1), 1 - p* flipped."""
        return self.p_star if s == 1 else 1 - self.p_star


@dataclass(frozen=True)
class HorizonDesign:
    """The chosen numbers: direction s, threshold c, base rate rho, claimed p_bar, noise split theta."""

    s: int
    c: int
    rho: float
    p_bar: float
    theta: float


def config_of(problem: HorizonProblem, design: HorizonDesign) -> GTMConfig:
    """The ``parameterization = "horizon"`` configuration carrying a design (see docs/horizon.md)."""
    return GTMConfig.from_dict({
        "gtm": {"parameterization": "horizon", "epsilon": float(problem.epsilon), "theta": float(design.theta),
                "gamma": float(problem.gamma), "beta": float(problem.beta), "direction": int(design.s),
                "c": int(design.c), "rho": float(design.rho), "p_bar": float(design.p_bar)},
        "stream": {"eps_t": float(problem.eps_t), "p_star": float(problem.p_star), "horizon": int(problem.T),
                   "delta_t": 0.0},
    })


def problem_of(config: GTMConfig) -> HorizonProblem:
    """The problem of a configuration; refuses streams the horizon planner does not support
    (per-step lists, purification, eps_t = 0)."""
    s = config.stream
    for name in ("eps_t", "p_star", "delta_t"):
        if isinstance(getattr(s, name), tuple):
            raise UnsupportedConfiguration(
                f"parameterization 'horizon' needs a scalar [stream].{name} (all steps alike), got a per-step list")
    if s.delta_t != 0:
        raise UnsupportedConfiguration(
            f"parameterization 'horizon' does not support purification: [stream].delta_t must be 0, got {s.delta_t!r}")
    if s.eps_t == 0:
        raise UnsupportedConfiguration("parameterization 'horizon' needs eps_t > 0 (with eps_t = 0 use 'exact')")
    g = config.gtm
    return HorizonProblem(epsilon=g.epsilon, eps_t=s.eps_t, p_star=s.p_star, T=s.horizon, beta=g.beta,
                          gamma=g.gamma)


def design_of(config: GTMConfig) -> HorizonDesign:
    """The design a ``parameterization = "horizon"`` configuration carries."""
    g = config.gtm
    if g.parameterization != "horizon":
        raise UnsupportedConfiguration(f"not a horizon configuration: parameterization={g.parameterization!r}")
    return HorizonDesign(s=g.direction, c=g.c, rho=g.rho, p_bar=g.p_bar, theta=g.theta)
