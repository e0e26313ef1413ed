"""The horizon planner's float64 search for a cheap design (documented, not globally optimal).

Every design it proposes is certified afterwards in arb (:mod:`.horizon_bound`); nothing here is a
certificate.

The model
---------
With v = eps_t eta_1 ~ Exp(rate sigma_1 = 1/(eps_t tau_1)) and sigma_2 = 1/(eps_t tau_2), C and H are
functions of a log count mean: s = +1, C(v) = cont(ell - v), H(v) = halt(ell - kappa - v) with
ell = ln(rho e^{eps mu_1} p*), kappa = ln(p*/p_bar); s = -1, C(v) = cont(ell + v), H(v) =
halt(ell + kappa + v) with ell = ln(rho e^{-eps mu_1} (1 - p*)), kappa = ln((1 - p_bar)/(1 - p*)).
The expected evaluations per step of a run that never halts (Lemma 12(2) Pareto moments) are
e^ell/p* sigma_1/(sigma_1+1) sigma_2/(sigma_2-1) (s = +1) and e^ell/(1-p*) sigma_1/(sigma_1-1)
sigma_2/(sigma_2+1) (s = -1); the total over the horizon is T times that.

The search
----------
For each *shape* (s, c, theta) on a grid (both directions, c on a geometric grid of 0..~2000, theta on
a log grid where the needed Pareto moment is finite) a float64 table of ln cont / ln halt over the log
count mean (the closed forms of :func:`gtm_core.planners.exact_noise.step_probabilities_float`) gives
the failure integral B(ell, kappa) by the trapezoid rule on a v-grid (:class:`ShapeModel`). For a
required p_bar the cheapest ell of a shape is the smallest ell with B <= beta (1 - margin) (B decreases
in ell until the Type I part takes over; scanned then bisected); the cheapest shape wins, then c is
refined over the integers between its grid neighbours and theta by golden section
(:class:`ShapeSearch`). For an evaluation budget, the largest p_bar whose cheapest cost fits is found
by bisection on ln p_bar (the cheapest cost is non-increasing as p_bar decreases).
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from .. import formulas as F
from ..numeric import golden_section_minimum, integer_ternary_minimum
from .exact_noise import step_probabilities_float
from .horizon_bound import TAIL_FRACTION
from .horizon_problem import HorizonProblem, NotAchievable

__all__ = [
    "SEARCH_MARGIN",
    "C_GRID",
    "ShapeKey",
    "ShapeModel",
    "ShapeSearch",
    "noise_rates",
    "cost_factor",
    "log_gap",
]

SEARCH_MARGIN = 0.03  # the float search aims at beta (1 - margin); the certificate must reach beta
C_GRID = (0, 1, 2, 3, 4, 6, 8, 11, 15, 20, 27, 36, 48, 64, 85, 113, 150, 200, 270, 360, 480, 640,
          850, 1130, 1500, 2000)
_V_NODES = 700               # trapezoid nodes of the v-integral
_LOG_MEAN_STEP = 0.04        # spacing of the ln cont / ln halt tables
_ELL_SCAN_STEP = 0.2         # the ell scan before bisection
_THETA_GRID = (0.05, 20.0, 9)  # log grid of theta: lower end, upper end, points
_MIN_SIGMA = 1.05            # the needed Pareto moment's rate must exceed this on the theta grid
_REFINE_ITERATIONS = 10      # golden-section steps in ln theta

ShapeKey = tuple  # (s, c, theta): direction, threshold, noise split of one shape


def noise_rates(problem: HorizonProblem, theta: float) -> tuple[float, float]:
    """(sigma_1, sigma_2) = (1/(eps_t tau_1), 1/(eps_t tau_2)) for Theorem 21's split at theta."""
    tau1 = float(F.theorem21_tau1(problem.epsilon, theta))
    tau2 = float(F.theorem21_tau2(problem.epsilon, theta))
    return 1.0 / (problem.eps_t * tau1), 1.0 / (problem.eps_t * tau2)


def cost_factor(s: int, p_star: float, sigma1: float, sigma2: float) -> float:
    """E[lambda_t] / e^ell (Lemma 12(2)); inf when the Pareto moment diverges."""
    if s == 1:
        if sigma2 <= 1:
            return math.inf
        return sigma1 / (sigma1 + 1) * sigma2 / (sigma2 - 1) / p_star
    if sigma1 <= 1:
        return math.inf
    return sigma1 / (sigma1 - 1) * sigma2 / (sigma2 + 1) / (1 - p_star)


def log_gap(s: int, p_star: float, p_bar: float) -> float:
    """kappa: the log count-mean gap between p* and p_bar (ln(p*/p_bar) direct, ln((1-p_bar)/(1-p*)) flipped)."""
    return math.log(p_star / p_bar) if s == 1 else math.log((1 - p_bar) / (1 - p_star))


class ShapeModel:
    """One shape (s, c, theta): the float failure integral B(ell, kappa) of the module docstring.

    ``v_nodes``, ``v_weights``: trapezoid rule for int_0^{v_cutoff} . sigma_1 e^{-sigma_1 v} dv, with
    ``tail_mass`` = e^{-sigma_1 v_cutoff} added for the rest; ``log_means``, ``log_cont``, ``log_halt``:
    the table of ln cont and ln halt over the log count mean, centred on ``log_threshold`` = ln(c + 1).
    ``factor`` is :func:`cost_factor` of the shape."""

    KAPPA_MAX = 25.0

    def __init__(self, problem: HorizonProblem, s: int, c: int, theta: float):
        self.problem, self.s, self.c, self.theta = problem, s, c, theta
        self.T = problem.T
        self.sigma1, self.sigma2 = noise_rates(problem, theta)
        self.factor = cost_factor(s, problem.p_star, self.sigma1, self.sigma2)
        self.v_cutoff = math.log(1.0 / (TAIL_FRACTION * problem.beta)) / self.sigma1
        self.tail_mass = math.exp(-self.sigma1 * self.v_cutoff)
        v = np.linspace(0.0, self.v_cutoff, _V_NODES)
        w = np.full(_V_NODES, v[1] - v[0])
        w[0] = w[-1] = (v[1] - v[0]) / 2
        self.v_nodes = v
        self.v_weights = w * self.sigma1 * np.exp(-self.sigma1 * v)
        self.log_threshold = math.log(c + 1.0)
        span = self.v_cutoff + 10  # beyond it ln halt (s=+1 low end, s=-1 high end) is clamped: an overestimate
        if s == 1:
            lo, hi = self.log_threshold - span, self.log_threshold + 6
        else:
            lo, hi = self.log_threshold - 6, self.log_threshold + span
        self.log_means = np.arange(lo, hi, _LOG_MEAN_STEP)
        self.log_cont, self.log_halt = np.empty(self.log_means.size), np.empty(self.log_means.size)
        for i, log_mean in enumerate(self.log_means):
            cont, halt = step_probabilities_float(s, c, math.exp(log_mean), self.sigma2)
            self.log_cont[i] = math.log(max(cont, 1e-300))
            self.log_halt[i] = math.log(max(halt, 1e-300))

    def failure(self, ells, kappa: float) -> np.ndarray:
        """B(ell, kappa) at every ell of ``ells``: int min(1, T max(H, C)) over v, plus the tail mass."""
        ells = np.atleast_1d(np.asarray(ells, dtype=float))
        log_mean_cont = ells[:, None] - self.s * self.v_nodes[None, :]
        log_mean_halt = log_mean_cont - self.s * kappa
        log_error = np.maximum(np.interp(log_mean_cont, self.log_means, self.log_cont),
                               np.interp(log_mean_halt, self.log_means, self.log_halt))
        capped = np.minimum(1.0, self.T * np.exp(log_error))
        return capped @ self.v_weights + self.tail_mass

    def ell_min(self, kappa: float, target: float, ell_max: float = math.inf) -> float:
        """Smallest ell (<= ell_max) with B(ell, kappa) <= target; inf if none."""
        if not (0 < kappa <= self.KAPPA_MAX):
            return math.inf
        shift = kappa if self.s == -1 else 0.0  # flipped: H sits kappa above C in the log mean
        top = min(self.log_threshold + self.v_cutoff + 3 + shift, ell_max)
        start = self.log_threshold - 3 - shift
        grid = np.arange(start, top + _ELL_SCAN_STEP, _ELL_SCAN_STEP)
        if grid.size == 0:
            return math.inf
        grid = np.minimum(grid, top)
        ok = np.flatnonzero(self.failure(grid, kappa) <= target)
        if ok.size == 0:
            return math.inf
        i = ok[0]
        if i == 0:
            return float(grid[0])
        lo, hi = grid[i - 1], grid[i]
        for _ in range(30):
            mid = (lo + hi) / 2
            if self.failure([mid], kappa)[0] <= target:
                hi = mid
            else:
                lo = mid
            if hi - lo < 1e-7:
                break
        return float(hi)

    def feasible(self, p_bar: float, target: float, budget_per_step: float) -> bool:
        """Some ell with B <= target and expected evaluations per step <= budget_per_step."""
        if not math.isfinite(self.factor) or budget_per_step <= 0:
            return False
        ell_max = math.log(budget_per_step / self.factor) if math.isfinite(budget_per_step) else math.inf
        return math.isfinite(self.ell_min(log_gap(self.s, self.problem.p_star, p_bar), target, ell_max))

    def max_p_bar(self, budget_per_step: float, target: float, p_lo: float, p_hi: float) -> float:
        """Largest p_bar in [p_lo, p_hi) feasible within the budget (bisection on ln p_bar); nan if p_lo is not."""
        if not self.feasible(p_lo, target, budget_per_step):
            return math.nan
        a, b = math.log(p_lo), math.log(p_hi)
        while b - a > 2e-4:
            mid = (a + b) / 2
            if self.feasible(math.exp(mid), target, budget_per_step):
                a = mid
            else:
                b = mid
        return math.exp(a)

    def cost(self, p_bar: float, target: float) -> tuple[float, float]:
        """(expected evaluations per step, ell) of the cheapest ell meeting the target at p_bar."""
        if not math.isfinite(self.factor):
            return math.inf, math.inf
        ell = self.ell_min(log_gap(self.s, self.problem.p_star, p_bar), target)
        return (math.exp(ell) * self.factor if math.isfinite(ell) else math.inf), ell


@functools.lru_cache(maxsize=8192)
def _shape_model(problem: HorizonProblem, s: int, c: int, theta: float) -> ShapeModel:
    """Shapes are cached across searches of the same problem (the tables dominate the search time)."""
    return ShapeModel(problem, s, c, theta)


def _theta_grid(problem: HorizonProblem, s: int) -> list[float]:
    """Log grid of theta where the direction's needed Pareto moment is finite (sigma > _MIN_SIGMA)."""
    r = problem.epsilon / problem.eps_t
    lo, hi, points = _THETA_GRID
    if s == 1:  # sigma_2 = r/(theta + 2) > 1.05
        hi = min(hi, r / _MIN_SIGMA - 2)
    else:       # sigma_1 = theta r/(theta + 2) > 1.05  <=>  theta (r - 1.05) > 2.1
        if r <= _MIN_SIGMA:
            return []
        lo = max(lo, 2 * _MIN_SIGMA / (r - _MIN_SIGMA))
    if hi <= lo:
        return []
    return list(np.geomspace(lo, hi, points))


def _nearest_neighbours(grid, value) -> tuple:
    """The grid points either side of the point of ``grid`` nearest ``value`` (clipped at the ends)."""
    j = min(range(len(grid)), key=lambda k: abs(grid[k] - value))
    return grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]


class ShapeSearch:
    """The shape grid of one problem (tables cached) and the two questions: the cheapest shape at a
    required p_bar (:meth:`best_at`, :meth:`refine`) and the largest p_bar within a budget
    (:meth:`max_p_bar`). ``target`` is the float failure level aimed at, beta (1 - margin); the
    tuner lowers it when a certificate misses beta."""

    def __init__(self, problem: HorizonProblem, progress=None):
        self.problem = problem
        self.progress = progress or (lambda msg: None)
        self.target = problem.beta * (1 - SEARCH_MARGIN)
        # both directions always: the flipped variant's gap is capped at 1/(1 - p*) in the odds, so for
        # p* near 1 the direct one can still be the only feasible one (as in Theorem 21's flipping rule)
        self.directions = [1, -1]
        self.thetas = {s: _theta_grid(problem, s) for s in self.directions}
        if not any(self.thetas.values()):
            raise NotAchievable("no noise split gives a finite expected cost at this eps_t/epsilon", {})

    def shape(self, s: int, c: int, theta: float) -> ShapeModel:
        return _shape_model(self.problem, s, c, float(theta))

    def grid_keys(self) -> list[ShapeKey]:
        return [(s, c, th) for s in self.directions for th in self.thetas[s] for c in C_GRID]

    def p_bar_range(self) -> tuple[float, float]:
        """(smallest, largest) p_bar the search considers."""
        ps = self.problem.p_star
        return ps * math.exp(-ShapeModel.KAPPA_MAX + 0.5), ps * (1 - 1e-6)

    def best_at(self, p_bar: float, keys=None) -> tuple[float, ShapeKey | None, float]:
        """(cost per step, shape key, ell) of the cheapest grid shape at p_bar."""
        best = (math.inf, None, math.inf)
        for key in keys or self.grid_keys():
            model = self.shape(*key)
            if not math.isfinite(model.factor):
                continue
            ell_max = math.log(best[0] / model.factor) if math.isfinite(best[0]) else math.inf
            ell = model.ell_min(log_gap(model.s, self.problem.p_star, p_bar), self.target, ell_max)
            if math.isfinite(ell):
                cost = math.exp(ell) * model.factor
                if cost < best[0]:
                    best = (cost, key, ell)
        return best

    def _refine_around(self, key: ShapeKey, objective: Callable[[int, float], float]) -> tuple[float, ShapeKey]:
        """(objective, key) of the best of: the grid key with c refined over the integers between its
        grid neighbours, then that c with theta refined by golden section in ln theta between the
        theta grid's neighbours of the key's theta (ties keep the unrefined theta)."""
        s, grid_c, grid_theta = key
        c_lo, c_hi = _nearest_neighbours(C_GRID, grid_c)
        c_best = integer_ternary_minimum(lambda c: objective(c, grid_theta), c_lo, c_hi)
        th_lo, th_hi = _nearest_neighbours(self.thetas[s], grid_theta)
        log_theta, value = golden_section_minimum(lambda lt: objective(c_best, math.exp(lt)),
                                                  math.log(th_lo), math.log(th_hi), _REFINE_ITERATIONS)
        candidates = [(objective(c_best, grid_theta), (s, c_best, grid_theta)),
                      (value, (s, c_best, math.exp(log_theta)))]
        return min(candidates, key=lambda z: z[0])

    def refine(self, p_bar: float, key: ShapeKey) -> tuple[float, ShapeKey, float]:
        """(cost per step, key, ell) after refining the grid winner ``key`` at p_bar (:meth:`_refine_around`)."""

        def cost(c: int, theta: float) -> float:
            return self.shape(key[0], c, theta).cost(p_bar, self.target)[0]

        best_cost, best_key = self._refine_around(key, cost)
        return best_cost, best_key, self.shape(*best_key).cost(p_bar, self.target)[1]

    def max_p_bar(self, budget_per_step: float) -> tuple[float, float, ShapeKey | None, float]:
        """(p_bar, cost per step, key, ell) of the largest p_bar whose cost per step fits the budget:
        branch and bound over the grid shapes (a shape is bisected only if it is feasible at the best
        p_bar so far), then the winner refined (:meth:`_refine_around`)."""
        p_lo, p_hi = self.p_bar_range()
        best_p_bar, best_key = math.nan, None
        keys = self.grid_keys()
        for i, key in enumerate(keys):
            start = p_lo if best_key is None else best_p_bar
            p_bar = self.shape(*key).max_p_bar(budget_per_step, self.target, start, p_hi)
            if math.isfinite(p_bar) and (best_key is None or p_bar > best_p_bar):
                best_p_bar, best_key = p_bar, key
            if (i + 1) % 50 == 0:
                self.progress(f"{i + 1}/{len(keys)} shapes: best p_bar so far {best_p_bar:.6g}")
        if best_key is None:
            cost, key, ell = self.best_at(p_lo)
            return math.nan, cost, key, ell

        def minus_p_bar(c: int, theta: float) -> float:
            p_bar = self.shape(best_key[0], c, theta).max_p_bar(budget_per_step, self.target, p_lo, p_hi)
            return -(p_bar if math.isfinite(p_bar) else 0.0)

        minus_best, key = self._refine_around(best_key, minus_p_bar)
        p_bar = -minus_best
        model = self.shape(*key)
        ell = model.ell_min(log_gap(model.s, self.problem.p_star, p_bar), self.target,
                            math.log(budget_per_step / model.factor))
        return p_bar, math.exp(ell) * model.factor, key, ell


def clear_cache() -> None:
    """Forget this module's memoised results (benchmarks that time a cold start call this)."""
    _shape_model.cache_clear()
