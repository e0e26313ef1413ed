"""``gtm tune``: a certified horizon design for a required p_bar or an evaluation budget, and the frontier.

:func:`tune` runs the float search of :mod:`.horizon_search`, builds the winner's configuration and
certifies it in arb (:func:`.horizon.certificate`). If the certificate misses beta (it did not in any
configuration tried), the search is repeated aiming lower (the margin doubled), up to
:data:`MAX_ATTEMPTS` times, then the request is refused. :func:`frontier` lists, for p_bar on a log grid,
the cheapest grid design and its certificate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from ..config import GTMConfig
from ..errors import InvalidParameter, UnsupportedConfiguration
from .horizon import certificate
from .horizon_bound import FailureBound, expected_evaluations_per_step
from .horizon_problem import HorizonDesign, HorizonProblem, NotAchievable, config_of
from .horizon_search import SEARCH_MARGIN, ShapeKey, ShapeSearch
from .steps import global_noise

__all__ = [
    "MAX_ATTEMPTS",
    "TuneRequest",
    "FrontierPoint",
    "TuneResult",
    "tune",
    "frontier",
    "largest_certifiable_p_bar",
]

MAX_ATTEMPTS = 4


@dataclass(frozen=True)
class TuneRequest:
    """What ``tune`` was asked: a required ``p_bar`` or a budget ``max_evaluations`` (exactly one is set)."""

    p_bar: float | None = None
    max_evaluations: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TuneRequest:
        return cls(**d)


@dataclass(frozen=True)
class FrontierPoint:
    """One point of the searched frontier: the cheapest grid shape (s, c, theta) at ``p_bar`` (not
    refined), its base rate, its expected evaluations over the horizon (a run that never halts) and its
    arb certificate's verdict and bound."""

    p_bar: float
    s: int
    c: int
    theta: float
    rho: float
    expected_evaluations: float
    certified: bool
    failure_upper: float

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> FrontierPoint:
        return cls(**d)


@dataclass(frozen=True)
class TuneResult:
    """A certified design and how it was found.

    ``config``: the ``parameterization = "horizon"`` configuration carrying ``design``; ``certificate``:
    its arb failure bound (certified <= beta); ``expected_evaluations``: the total over the horizon of
    a run that never halts (Lemma 12(2)); ``frontier``: the searched frontier (empty unless asked for);
    ``request``: what was asked; ``seconds``: wall time of the search."""

    config: GTMConfig
    design: HorizonDesign
    certificate: FailureBound
    expected_evaluations: float
    frontier: tuple[FrontierPoint, ...] = ()
    request: TuneRequest = TuneRequest()
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"config": self.config.to_dict(), "design": asdict(self.design),
                "certificate": self.certificate.to_dict(), "expected_evaluations": self.expected_evaluations,
                "frontier": [p.to_dict() for p in self.frontier], "request": self.request.to_dict(),
                "seconds": self.seconds}


def _design_for(problem: HorizonProblem, key: ShapeKey, ell: float, p_bar: float) -> tuple[HorizonDesign, GTMConfig]:
    """The design of shape ``key`` at log count mean ``ell`` (rho = e^{ell - s eps_t mu_1} / r*) and its
    configuration (mu_1 depends on theta only, so it is read from a probe configuration)."""
    s, c, theta = key
    probe = config_of(problem, HorizonDesign(s=s, c=c, rho=1.0, p_bar=p_bar, theta=float(theta)))
    tau1, mu1, tau2 = global_noise(probe)
    rho = math.exp(ell - s * problem.eps_t * mu1) / problem.target_rate(s)
    design = HorizonDesign(s=s, c=c, rho=float(rho), p_bar=float(p_bar), theta=float(theta))
    return design, config_of(problem, design)


def _expected_evaluations(problem: HorizonProblem, design: HorizonDesign, config: GTMConfig) -> float:
    """Expected evaluations over the horizon of a run that never halts, the deployed numbers."""
    tau1, mu1, tau2 = global_noise(config)
    return expected_evaluations_per_step(problem, design, tau1=tau1, mu1=mu1, tau2=tau2) * problem.T


def _check_request(problem: HorizonProblem, p_bar: float | None, max_evaluations: float | None) -> None:
    if (p_bar is None) == (max_evaluations is None):
        raise InvalidParameter("give exactly one of p_bar and max_evaluations")
    if p_bar is not None and not (0 < p_bar < problem.p_star):
        raise InvalidParameter(f"p_bar must be in (0, p_star={problem.p_star}), got {p_bar!r}")
    if max_evaluations is not None and not (max_evaluations > 0):
        raise InvalidParameter(f"max_evaluations must be > 0, got {max_evaluations!r}")


def _cheapest_at(search: ShapeSearch, p_bar: float, say) -> tuple[float, ShapeKey, float]:
    """(p_bar, key, ell) of the cheapest refined shape at a required p_bar; NotAchievable if none."""
    say(f"searching {len(search.grid_keys())} shapes (direction, c, theta) at p_bar={p_bar:g}")
    _, key, _ = search.best_at(p_bar)
    if key is None:
        best = largest_certifiable_p_bar(search)
        raise NotAchievable(
            f"no certified design reaches p_bar={p_bar:g} (largest certifiable p_bar is about {best:.6g})",
            {"p_bar": best})
    _, key, ell = search.refine(p_bar, key)
    return p_bar, key, ell


def _largest_within(search: ShapeSearch, max_evaluations: float, say) -> tuple[float, ShapeKey, float]:
    """(p_bar, key, ell) of the largest p_bar within the budget over the horizon; NotAchievable if none."""
    T = search.problem.T
    say(f"searching {len(search.grid_keys())} shapes for the largest p_bar at "
        f"{max_evaluations:g} expected evaluations")
    p_bar, cost, key, ell = search.max_p_bar(max_evaluations / T)
    if key is None or not math.isfinite(p_bar):
        p_lo = search.p_bar_range()[0]
        raise NotAchievable(
            f"no certified design fits {max_evaluations:g} expected evaluations over T={T} "
            f"(the cheapest considered needs about {cost * T:.6g})",
            {"expected_evaluations": cost * T, "p_bar": p_lo})
    return p_bar, key, ell


def tune(problem: HorizonProblem, *, p_bar: float | None = None, max_evaluations: float | None = None,
         progress=None, frontier_points: int = 0,
         screen: Callable[[GTMConfig], tuple[str, dict] | None] | None = None) -> TuneResult:
    """A certified design: the cheapest at a required ``p_bar``, or the largest p_bar whose expected
    evaluations over the horizon (a run that never halts) are at most ``max_evaluations``.

    ``screen``: the refusals the design's users apply (``gtm tune`` passes ``gtm plan``'s usability
    screen); called on the certified configuration, it returns None or (reason, best achievable value),
    and a design it refuses is not returned. The p_bar is the request's or the largest within the budget,
    so no other design of the request passes a threshold-ratio screen either.

    The configuration has ``evaluation_budget = "none"``: the budget is reported, never enforced, so no
    run stops on it and the certified failure bound is the whole failure probability.

    Raises :class:`NotAchievable` (with the best achievable value) when no certified design meets the
    request or ``screen`` refuses it."""
    t0 = time.perf_counter()
    say = progress or (lambda msg: None)
    _check_request(problem, p_bar, max_evaluations)
    search = ShapeSearch(problem, say)
    for attempt in range(MAX_ATTEMPTS):
        search.target = problem.beta * (1 - SEARCH_MARGIN * 2 ** attempt)
        if p_bar is not None:
            target_pb, key, ell = _cheapest_at(search, p_bar, say)
        else:
            target_pb, key, ell = _largest_within(search, max_evaluations, say)
        design, config = _design_for(problem, key, ell, target_pb)
        say(f"certifying s={design.s} c={design.c} theta={design.theta:.4g} p_bar={design.p_bar:.6g} in arb")
        cert = certificate(config)
        evaluations = _expected_evaluations(problem, design, config)
        if cert.certified and (max_evaluations is None or evaluations <= max_evaluations):
            break
        say(f"certificate {cert.failure_upper:.6g} vs beta {problem.beta:g}: retrying with a larger margin")
    else:
        raise UnsupportedConfiguration("the horizon search found no design whose certificate reaches beta")
    refused = screen(config) if screen is not None else None
    if refused is not None:
        raise NotAchievable(*refused)
    points = frontier(problem, search, points=frontier_points) if frontier_points else ()
    return TuneResult(config=config, design=design, certificate=cert, expected_evaluations=evaluations,
                      frontier=tuple(points), request=TuneRequest(p_bar=p_bar, max_evaluations=max_evaluations),
                      seconds=time.perf_counter() - t0)


def largest_certifiable_p_bar(search: ShapeSearch) -> float:
    """The largest p_bar any grid shape certifies at any cost (branch and bound over the shapes)."""
    lo, hi = search.p_bar_range()
    best = 0.0
    for key in search.grid_keys():
        p_bar = search.shape(*key).max_p_bar(math.inf, search.target, max(lo, best), hi)
        if math.isfinite(p_bar) and p_bar > best:
            best = p_bar
    return best


def frontier(problem: HorizonProblem, search: ShapeSearch | None = None, *, points: int = 12,
             p_bars=None) -> tuple[FrontierPoint, ...]:
    """The searched frontier: for p_bar on a log grid up to the largest certifiable one, the cheapest
    grid shape's design (not refined), its expected evaluations over the horizon and its arb certificate
    (``certified``, ``failure_upper``) - every point printed is certified or flagged."""
    search = search or ShapeSearch(problem)
    if p_bars is None:
        hi = largest_certifiable_p_bar(search)
        if hi <= 0:
            return ()
        p_bars = np.geomspace(hi * 1e-2, hi, points)
    out = []
    for p_bar in map(float, p_bars):
        _, key, ell = search.best_at(p_bar)
        if key is None:
            continue
        design, config = _design_for(problem, key, ell, p_bar)
        cert = certificate(config)
        out.append(FrontierPoint(p_bar=p_bar, s=key[0], c=key[1], theta=float(key[2]), rho=design.rho,
                                 expected_evaluations=_expected_evaluations(problem, design, config),
                                 certified=cert.certified, failure_upper=cert.failure_upper))
    return tuple(out)
