"""Horizon-aware certified calibration: the ``horizon`` planner (beyond the paper).

Theorem 21 spreads its failure probability over an infinite stream (beta_t = beta/(zeta t ln^3(t+2)))
and charges the shared noise eta_1 at its worst case on [0, mu_1] plus a beta/4 tail. A configuration
states its horizon T, and the deployment stops there (``gtm deploy``), so this planner certifies the
accuracy claim over steps 1..T directly:

    Pr[ some t <= T halts with p_t <= p_bar, or some t <= T with p_t >= p* continues ] <= beta     (*)

for adaptive streams, by integrating eta_1 exactly and applying the union bound over the T steps
*inside* that integral.

The mechanism is Algorithm 1 unchanged: eta_1 ~ Exp(tau_1), eta_{2,t} ~ Exp(tau_2), Z_t = s (mu_1 -
eta_1 + eta_{2,t}), N_t ~ Po(rho e^{eps_t Z_t}). Privacy is Lemma 17, which holds for every c_t, rho_t,
s_t and mu_1: 1/tau_1 + 2/tau_2 = eps with Theorem 21's split 1/tau_1 = theta eps/(theta+2),
2/tau_2 = 2 eps/(theta+2) (any theta > 0; the planner chooses it). mu_1 = tau_1 ln(4/beta) as in
Theorem 21 (it only shifts the count mean and is absorbed by rho).

The bound (why (*) holds for adaptive streams)
----------------------------------------------
Condition on eta_1 = x. At step t the analyst's choice of M_t (hence p_t) is a function of the
history H_{t-1} (previous outputs, the analyst's own randomness); step t's fresh randomness
(eta_{2,t}, N_t and the evaluations) is independent of H_{t-1} given x. So

    Pr[step t errs | H_{t-1}, x] = 1{p_t <= p_bar} halt_t(x, p_t) + 1{p_t >= p*} cont_t(x, p_t)
                                 <= max(H(x), C(x)),   H(x) := halt(x, p_bar), C(x) := cont(x, p*),

because the halting probability increases in p (Lemma 15: s = +1 counts K ~ Po(lambda p) and halts
iff K >= c+1; s = -1 counts K ~ Po(lambda (1-p)) of the negated mechanism and halts iff K <= c).
Taking expectations and summing over t (first error at t requires reaching t),

    Pr[(*) fails | x] <= min(1, T max(H(x), C(x))),   Pr[(*) fails] <= int_0^inf min(1, T max(H, C)) f_1.

Every step has the same inputs (eps_t, p*) and the same (s, c, rho, p_bar), so H and C do not depend
on t. H(x), C(x) are the exact engine's closed form (:mod:`gtm_core.exact`, Lemma 15(1) integrated
over eta_2 ~ Exp(tau_2) and the Poisson count). In x, the count mean is rho r e^{eps s (mu_1 - x)} w^s
(r = p or 1 - p, w = e^{eps eta_2}): for s = +1 it decreases in x, for s = -1 it increases; in both
cases C is non-decreasing and H non-increasing in x. Hence on a panel [x_a, x_b]

    int_{x_a}^{x_b} min(1, T max(H, C)) f_1  <=  min(1, T max(H(x_a), C(x_b))) (e^{-x_a/tau_1} - e^{-x_b/tau_1}),

and beyond the last node U the integrand is <= 1, contributing e^{-U/tau_1}. The certificate is this
sum over panels in python-flint ``arb`` ball arithmetic (H, C as balls at 128 bits, the panel masses
exact up to ball radii); a design is certified only if the whole ball is <= beta. A design that
cannot be certified is refused (:class:`UnsupportedConfiguration`), never planned.

The optimisation (documented, not globally optimal)
---------------------------------------------------
With v = eps_t eta_1 ~ Exp(rate sigma_1 = 1/(eps_t tau_1)) and sigma_2 = 1/(eps_t tau_2), C and H are
functions of a log count mean: s = +1, C(v) = cont(ell - v), H(v) = halt(ell - kappa - v) with
ell = ln(rho e^{eps mu_1} p*), kappa = ln(p*/p_bar); s = -1, C(v) = cont(ell + v), H(v) =
halt(ell + kappa + v) with ell = ln(rho e^{-eps mu_1} (1 - p*)), kappa = ln((1 - p_bar)/(1 - p*)).
The expected evaluations per step of a run that never halts (Lemma 12(2) Pareto moments) are
e^ell/p* sigma_1/(sigma_1+1) sigma_2/(sigma_2-1) (s = +1) and e^ell/(1-p*) sigma_1/(sigma_1-1)
sigma_2/(sigma_2+1) (s = -1); the total over the horizon is T times that.

For each *shape* (s, c, theta) on a grid (both directions, c on a geometric grid of 0..~2000, theta on
a log grid where the needed Pareto moment is finite) a float64 table of ln cont / ln halt over the log
count mean (the closed forms of :func:`gtm_core.planners.exact_noise.step_probabilities_float`) gives
the failure integral B(ell, kappa) by the trapezoid rule on a v-grid. For a required p_bar the cheapest
ell of a shape is the smallest ell with B <= beta (1 - margin) (B decreases in ell until the Type I part
takes over; scanned then bisected); the cheapest shape wins, then c is refined over the integers
between its grid neighbours and theta by golden section. For an evaluation budget, the largest p_bar
whose cheapest cost fits is found by bisection on ln p_bar (the cheapest cost is non-increasing as
p_bar decreases). The winner is certified in arb; if the certificate misses beta (it did not in any
configuration tried), the search is repeated with a doubled margin, up to four times, then refused.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np
from flint import arb

from .. import formulas as F
from ..config import GTMConfig
from ..errors import InvalidParameter, UnsupportedConfiguration
from ..exact import StepModel, step_probabilities_ball, working_precision
from . import rounding as R
from .budget import budget_exceed_probability
from .exact_noise import step_probabilities_float
from .steps import StepPlan, global_noise

__all__ = [
    "HorizonProblem",
    "HorizonDesign",
    "TuneResult",
    "NotAchievable",
    "failure_bound",
    "failure_bound_float",
    "certificate",
    "horizon_step",
    "expected_evaluations_per_step",
    "tune",
    "frontier",
    "problem_of",
    "design_of",
    "config_of",
]

CERT_BITS = 128
_TAIL_FRACTION = 1e-3      # the eta_1 tail beyond the last node: <= this fraction of beta
_SEARCH_MARGIN = 0.03      # the float search aims at beta (1 - margin); the certificate must reach beta
_GAP_FRACTION = 0.01       # certificate panels refined until (upper - lower sum) <= this fraction of beta
_MAX_PANELS = 6000
_C_GRID = (0, 1, 2, 3, 4, 6, 8, 11, 15, 20, 27, 36, 48, 64, 85, 113, 150, 200, 270, 360, 480, 640,
           850, 1130, 1500, 2000)


class NotAchievable(UnsupportedConfiguration):
    """No certified design meets the request; ``best`` holds the best achievable value."""

    def __init__(self, message: str, best: dict):
        super().__init__(message)
        self.best = best


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


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
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise InvalidParameter(f"{name} must be a positive finite number, got {v!r}")
        if not (isinstance(self.p_star, (int, float)) and 0 < self.p_star < 1):
            raise InvalidParameter(f"p_star must be in (0, 1), got {self.p_star!r}")
        if isinstance(self.T, bool) or not isinstance(self.T, int) or self.T < 1:
            raise InvalidParameter(f"horizon must be a positive integer, got {self.T!r}")
        if not (isinstance(self.beta, (int, float)) and 0 < self.beta < 1):
            raise InvalidParameter(f"beta must be in (0, 1), got {self.beta!r}")
        if self.eps_t >= self.epsilon:
            raise InvalidParameter(
                f"eps_t must be below epsilon for a finite expected cost, got eps_t={self.eps_t!r} "
                f">= epsilon={self.epsilon!r}")


@dataclass(frozen=True)
class HorizonDesign:
    """The chosen numbers: direction s, threshold c, base rate rho, claimed p_bar, noise split theta."""

    s: int
    c: int
    rho: float
    p_bar: float
    theta: float


@dataclass
class TuneResult:
    config: GTMConfig
    design: HorizonDesign
    certificate: dict
    expected_evaluations: float          # total over the horizon, run that never halts
    frontier: list = field(default_factory=list)
    request: dict = field(default_factory=dict)
    seconds: float = 0.0


# ---------------------------------------------------------------------------
# configuration <-> design
# ---------------------------------------------------------------------------


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
    g = config.gtm
    if g.parameterization != "horizon":
        raise UnsupportedConfiguration(f"not a horizon configuration: parameterization={g.parameterization!r}")
    return HorizonDesign(s=g.direction, c=g.c, rho=g.rho, p_bar=g.p_bar, theta=g.theta)


# ---------------------------------------------------------------------------
# float64 model (search only)
# ---------------------------------------------------------------------------


def _sigmas(problem: HorizonProblem, theta: float) -> tuple[float, float]:
    """(sigma_1, sigma_2) = (1/(eps_t tau_1), 1/(eps_t tau_2)) for Theorem 21's split at theta."""
    tau1 = float(F.theorem21_tau1(problem.epsilon, theta))
    tau2 = float(F.theorem21_tau2(problem.epsilon, theta))
    return 1.0 / (problem.eps_t * tau1), 1.0 / (problem.eps_t * tau2)


def _cost_factor(s: int, p_star: float, sigma1: float, sigma2: float) -> float:
    """E[lambda_t] / e^ell (Lemma 12(2)); inf when the Pareto moment diverges."""
    if s == 1:
        if sigma2 <= 1:
            return math.inf
        return sigma1 / (sigma1 + 1) * sigma2 / (sigma2 - 1) / p_star
    if sigma1 <= 1:
        return math.inf
    return sigma1 / (sigma1 - 1) * sigma2 / (sigma2 + 1) / (1 - p_star)


def _kappa(s: int, p_star: float, p_bar: float) -> float:
    return math.log(p_star / p_bar) if s == 1 else math.log((1 - p_bar) / (1 - p_star))


class _Shape:
    """One (s, c, theta): the float failure integral B(ell, kappa) of the module docstring."""

    KAPPA_MAX = 25.0

    def __init__(self, problem: HorizonProblem, s: int, c: int, theta: float):
        self.problem, self.s, self.c, self.theta = problem, s, c, theta
        self.sigma1, self.sigma2 = _sigmas(problem, theta)
        self.factor = _cost_factor(s, problem.p_star, self.sigma1, self.sigma2)
        beta = problem.beta
        self.V = math.log(1.0 / (_TAIL_FRACTION * beta)) / self.sigma1
        self.tail = math.exp(-self.sigma1 * self.V)
        nv = 700
        v = np.linspace(0.0, self.V, nv)
        w = np.full(nv, v[1] - v[0])
        w[0] = w[-1] = (v[1] - v[0]) / 2
        self.v = v
        self.w = w * self.sigma1 * np.exp(-self.sigma1 * v)
        self.m0 = math.log(c + 1.0)
        span = self.V + 10  # beyond it ln halt (s=+1 low end, s=-1 high end) is clamped: an overestimate
        if s == 1:
            lo, hi = self.m0 - span, self.m0 + 6
        else:
            lo, hi = self.m0 - 6, self.m0 + span
        self.m = np.arange(lo, hi, 0.04)
        lc, lh = np.empty(self.m.size), np.empty(self.m.size)
        for i, mm in enumerate(self.m):
            cont, halt = step_probabilities_float(s, c, math.exp(mm), self.sigma2)
            lc[i] = math.log(max(cont, 1e-300))
            lh[i] = math.log(max(halt, 1e-300))
        self.lc, self.lh = lc, lh
        self.T = problem.T

    def failure(self, ells, kappa: float) -> np.ndarray:
        ells = np.atleast_1d(np.asarray(ells, dtype=float))
        mC = ells[:, None] - self.s * self.v[None, :]
        mH = mC - self.s * kappa
        le = np.maximum(np.interp(mC, self.m, self.lc), np.interp(mH, self.m, self.lh))
        e = np.minimum(1.0, self.T * np.exp(le))
        return e @ self.w + self.tail

    def ell_min(self, kappa: float, target: float, ell_max: float = math.inf) -> float:
        """Smallest ell (<= ell_max) with B(ell, kappa) <= target; inf if none."""
        if not (0 < kappa <= self.KAPPA_MAX):
            return math.inf
        top = min(self.m0 + self.V + 3 + (kappa if self.s == -1 else 0.0), ell_max)
        start = self.m0 - 3 - (kappa if self.s == -1 else 0.0)
        grid = np.arange(start, top + 0.2, 0.2)
        if grid.size == 0:
            return math.inf
        grid = np.minimum(grid, top)
        B = self.failure(grid, kappa)
        ok = np.flatnonzero(B <= target)
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
        return math.isfinite(self.ell_min(_kappa(self.s, self.problem.p_star, p_bar), target, ell_max))

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
        k = _kappa(self.s, self.problem.p_star, p_bar)
        ell = self.ell_min(k, target)
        return (math.exp(ell) * self.factor if math.isfinite(ell) else math.inf), ell


@functools.lru_cache(maxsize=8192)
def _shape(problem: HorizonProblem, s: int, c: int, theta: float) -> _Shape:
    """Shapes are cached across searches of the same problem (the tables dominate the search time)."""
    return _Shape(problem, s, c, theta)


def _theta_grid(problem: HorizonProblem, s: int) -> list[float]:
    """Log grid of theta where the direction's needed Pareto moment is finite (sigma > 1.05)."""
    r = problem.epsilon / problem.eps_t
    lo, hi = 0.05, 20.0
    if s == 1:  # sigma_2 = r/(theta + 2) > 1.05
        hi = min(hi, r / 1.05 - 2)
    else:       # sigma_1 = theta r/(theta + 2) > 1.05  <=>  theta (r - 1.05) > 2.1
        if r <= 1.05:
            return []
        lo = max(lo, 2.1 / (r - 1.05))
    if hi <= lo:
        return []
    return list(np.geomspace(lo, hi, 9))


class _Search:
    """The shape grid of one problem (tables cached), and the two questions."""

    def __init__(self, problem: HorizonProblem, progress=None):
        self.problem = problem
        self.progress = progress or (lambda msg: None)
        self.target = problem.beta * (1 - _SEARCH_MARGIN)
        # both directions always: the flipped variant's gap is capped at 1/(1 - p*) in the odds, so for
        # p* near 1 the direct one can still be the only feasible one (as in Theorem 21's flipping rule)
        self.directions = [1, -1]
        self.thetas = {s: _theta_grid(problem, s) for s in self.directions}
        if not any(self.thetas.values()):
            raise NotAchievable("no noise split gives a finite expected cost at this eps_t/epsilon", {})

    def shape(self, s: int, c: int, theta: float) -> _Shape:
        return _shape(self.problem, s, c, float(theta))

    def grid_keys(self):
        return [(s, c, th) for s in self.directions for th in self.thetas[s] for c in _C_GRID]

    def best_at(self, p_bar: float, keys=None) -> tuple[float, tuple, float]:
        """(cost per step, shape key, ell) of the cheapest grid shape at p_bar."""
        best = (math.inf, None, math.inf)
        for key in keys or self.grid_keys():
            sh = self.shape(*key)
            if not math.isfinite(sh.factor):
                continue
            ell_max = math.log(best[0] / sh.factor) if math.isfinite(best[0]) else math.inf
            ell = sh.ell_min(_kappa(sh.s, self.problem.p_star, p_bar), self.target, ell_max)
            if math.isfinite(ell):
                cost = math.exp(ell) * sh.factor
                if cost < best[0]:
                    best = (cost, key, ell)
        return best

    def refine(self, p_bar: float, key) -> tuple[float, tuple, float]:
        """Refine c over the integers next to the grid winner, then theta by golden section."""
        s, c0, th0 = key
        i = _C_GRID.index(c0)
        lo = _C_GRID[max(i - 1, 0)]
        hi = _C_GRID[min(i + 1, len(_C_GRID) - 1)]

        def cost_c(c):
            return self.shape(s, c, th0).cost(p_bar, self.target)[0]

        a, b = lo, hi  # integer golden/ternary search on a unimodal-looking cost
        while b - a > 3:
            m1, m2 = a + (b - a) // 3, b - (b - a) // 3
            if cost_c(m1) <= cost_c(m2):
                b = m2
            else:
                a = m1
        c_best = min(range(a, b + 1), key=cost_c)
        thetas = self.thetas[s]
        j = min(range(len(thetas)), key=lambda k: abs(thetas[k] - th0))
        tl = math.log(thetas[max(j - 1, 0)])
        tr = math.log(thetas[min(j + 1, len(thetas) - 1)])

        def cost_t(lt):
            return self.shape(s, c_best, math.exp(lt)).cost(p_bar, self.target)[0]

        g = (math.sqrt(5) - 1) / 2
        x1, x2 = tr - g * (tr - tl), tl + g * (tr - tl)
        f1, f2 = cost_t(x1), cost_t(x2)
        for _ in range(10):
            if f1 <= f2:
                tr, x2, f2 = x2, x1, f1
                x1 = tr - g * (tr - tl)
                f1 = cost_t(x1)
            else:
                tl, x1, f1 = x1, x2, f2
                x2 = tl + g * (tr - tl)
                f2 = cost_t(x2)
        cands = [(cost_c(c_best), (s, c_best, th0))]
        lt = x1 if f1 <= f2 else x2
        cands.append((cost_t(lt), (s, c_best, math.exp(lt))))
        cost, k = min(cands, key=lambda z: z[0])
        return cost, k, self.shape(*k).cost(p_bar, self.target)[1]

    def p_bar_range(self) -> tuple[float, float]:
        """(smallest, largest) p_bar the search considers."""
        ps = self.problem.p_star
        return ps * math.exp(-_Shape.KAPPA_MAX + 0.5), ps * (1 - 1e-6)

    def max_p_bar(self, budget_per_step: float) -> tuple[float, float, tuple, float]:
        """Largest p_bar whose cost per step fits the budget: branch and bound over the grid shapes
        (a shape is bisected only if it is feasible at the best p_bar so far), then the winner refined
        (c over the integers between its grid neighbours, theta by golden section)."""
        lo_pb, hi_pb = self.p_bar_range()
        best_pb, best_key = math.nan, None
        keys = self.grid_keys()
        for i, key in enumerate(keys):
            sh = self.shape(*key)
            start = lo_pb if best_key is None else best_pb
            pb = sh.max_p_bar(budget_per_step, self.target, start, hi_pb)
            if math.isfinite(pb) and (best_key is None or pb > best_pb):
                best_pb, best_key = pb, key
            if (i + 1) % 50 == 0:
                self.progress(f"{i + 1}/{len(keys)} shapes: best p_bar so far {best_pb:.6g}")
        if best_key is None:
            cost, key, ell = self.best_at(lo_pb)
            return math.nan, cost, key, ell
        s, c0, th0 = best_key

        def pb_of(c, th):
            return self.shape(s, c, th).max_p_bar(budget_per_step, self.target, lo_pb, hi_pb)

        i = _C_GRID.index(c0)
        a, b = _C_GRID[max(i - 1, 0)], _C_GRID[min(i + 1, len(_C_GRID) - 1)]
        val = lambda c: -(pb_of(c, th0) if math.isfinite(pb_of(c, th0)) else 0.0)  # noqa: E731
        cache: dict = {}
        f = lambda c: cache.setdefault(c, val(c))  # noqa: E731
        while b - a > 3:
            m1, m2 = a + (b - a) // 3, b - (b - a) // 3
            if f(m1) <= f(m2):
                b = m2
            else:
                a = m1
        c_best = min(range(a, b + 1), key=f)
        thetas = self.thetas[s]
        j = min(range(len(thetas)), key=lambda k: abs(thetas[k] - th0))
        tl, tr = math.log(thetas[max(j - 1, 0)]), math.log(thetas[min(j + 1, len(thetas) - 1)])
        g = lambda lt: -(pb_of(c_best, math.exp(lt)) if math.isfinite(pb_of(c_best, math.exp(lt))) else 0.0)  # noqa: E731
        gr = (math.sqrt(5) - 1) / 2
        x1, x2 = tr - gr * (tr - tl), tl + gr * (tr - tl)
        f1, f2 = g(x1), g(x2)
        for _ in range(10):
            if f1 <= f2:
                tr, x2, f2 = x2, x1, f1
                x1 = tr - gr * (tr - tl)
                f1 = g(x1)
            else:
                tl, x1, f1 = x1, x2, f2
                x2 = tl + gr * (tr - tl)
                f2 = g(x2)
        cands = [(f(c_best), (s, c_best, th0)), (min(f1, f2), (s, c_best, math.exp(x1 if f1 <= f2 else x2)))]
        negpb, key = min(cands, key=lambda z: z[0])
        pb = -negpb
        sh = self.shape(*key)
        ell = sh.ell_min(_kappa(s, self.problem.p_star, pb), self.target,
                         math.log(budget_per_step / sh.factor))
        return pb, math.exp(ell) * sh.factor, key, ell


# ---------------------------------------------------------------------------
# the rigorous bound
# ---------------------------------------------------------------------------


def _models(problem: HorizonProblem, design: HorizonDesign, tau2: float) -> tuple[StepModel, StepModel]:
    """(C model at p = p*, H model at p = p_bar): the engine's view, r = p (s = +1) or 1 - p (s = -1)."""
    with working_precision(CERT_BITS + 64):
        if design.s == 1:
            r_C, r_H = arb(problem.p_star), arb(design.p_bar)
        else:
            r_C, r_H = 1 - arb(problem.p_star), 1 - arb(design.p_bar)
    mk = lambda r: StepModel(1, design.s, int(design.c), float(design.rho), float(problem.eps_t), float(tau2), r)  # noqa: E731
    return mk(r_C), mk(r_H)


def _float_probs(problem, design, mu1, tau2, xs) -> tuple[np.ndarray, np.ndarray]:
    """Float64 C(x), H(x) at the nodes (node placement only)."""
    s, eps = design.s, problem.eps_t
    sigma2 = 1.0 / (eps * tau2)
    r_C = problem.p_star if s == 1 else 1 - problem.p_star
    r_H = design.p_bar if s == 1 else 1 - design.p_bar
    C, H = np.empty(len(xs)), np.empty(len(xs))
    for i, x in enumerate(xs):
        scale = design.rho * math.exp(eps * s * (mu1 - x))
        C[i] = step_probabilities_float(s, design.c, scale * r_C, sigma2)[0]
        H[i] = step_probabilities_float(s, design.c, scale * r_H, sigma2)[1]
    return C, H


def _nodes(problem, design, tau1, mu1, tau2, *, refine_all: bool = False) -> list[float]:
    """Panel edges on [0, U]: geometric refinement where the float upper/lower panel sums differ."""
    beta, T = problem.beta, problem.T
    U = tau1 * math.log(1.0 / (_TAIL_FRACTION * beta))
    xs = list(np.linspace(0.0, U, 129))
    tol = _GAP_FRACTION * beta
    for _ in range(12):
        x = np.asarray(xs)
        C, H = _float_probs(problem, design, mu1, tau2, xs)
        mass = np.exp(-x[:-1] / tau1) - np.exp(-x[1:] / tau1)
        up = np.minimum(1.0, T * np.maximum(H[:-1], C[1:])) * mass
        low = np.minimum(1.0, T * np.maximum(H[1:], C[:-1])) * mass
        gap = up - low
        if gap.sum() <= tol or len(xs) > _MAX_PANELS:
            break
        split = np.flatnonzero(gap > tol / (4 * len(gap)))
        new = [(x[i] + x[i + 1]) / 2 for i in split]
        xs = sorted(set(xs) | set(float(v) for v in new))
    if refine_all:
        mids = [(a + b) / 2 for a, b in zip(xs[:-1], xs[1:])]
        xs = sorted(set(xs) | set(mids))
    return [float(v) for v in xs]


def failure_bound(problem: HorizonProblem, design: HorizonDesign, *, tau1: float, mu1: float, tau2: float,
                  nodes=None, refine_all: bool = False) -> dict:
    """Rigorous upper bound (arb) on Pr[(*) fails] of the module docstring, for the deployed floats.

    ``nodes``: panel edges to use (default: the adaptive float placement); ``refine_all`` halves every
    panel of the default placement (an independent, finer grid: the certify witness uses it)."""
    xs = list(nodes) if nodes is not None else _nodes(problem, design, tau1, mu1, tau2, refine_all=refine_all)
    mC, mH = _models(problem, design, tau2)
    with working_precision(CERT_BITS):
        Cb = [cb[0] for cb in step_probabilities_ball(mC, mu1, xs, CERT_BITS)]
        Hb = [hb[1] for hb in step_probabilities_ball(mH, mu1, xs, CERT_BITS)]
        t1 = arb(tau1)
        Tn = arb(problem.T)
        one = arb(1)
        total = arb(0)
        E = [(-arb(x) / t1).exp() for x in xs]
        worst_panel = 0.0
        for i in range(len(xs) - 1):
            e = Tn * Hb[i].max(Cb[i + 1])
            u = e.upper()
            term = (one if u >= 1 else e) * (E[i] - E[i + 1])
            total += term
        tail = E[-1]
        total += tail
        ok = bool(total <= arb(problem.beta))
        upper = _upper_float(total)
        return {
            "failure_upper": upper,
            "failure_ball": total.str(10, radius=True),
            "beta": problem.beta,
            "certified": ok,
            "panels": len(xs) - 1,
            "U": xs[-1],
            "tail_upper": _upper_float(tail),
            "type_I_at_eta1_0": _upper_float(Hb[0]),
            "type_II_at_eta1_0": _upper_float(Cb[0]),
            "precision_bits": CERT_BITS,
        }


def _upper_float(x: arb) -> float:
    if not x.is_finite():
        return math.inf
    v = float(x.upper())
    while not arb(v) >= x.upper():
        v = math.nextafter(v, math.inf)
    return v


def failure_bound_float(problem: HorizonProblem, design: HorizonDesign, *, tau1: float, mu1: float,
                        tau2: float) -> float:
    """The same panel sum in float64 (search and plots only; never a certificate)."""
    xs = _nodes(problem, design, tau1, mu1, tau2)
    x = np.asarray(xs)
    C, H = _float_probs(problem, design, mu1, tau2, xs)
    mass = np.exp(-x[:-1] / tau1) - np.exp(-x[1:] / tau1)
    return float((np.minimum(1.0, problem.T * np.maximum(H[:-1], C[1:])) * mass).sum() + math.exp(-x[-1] / tau1))


def expected_evaluations_per_step(problem: HorizonProblem, design: HorizonDesign, *, tau1: float, mu1: float,
                                  tau2: float) -> float:
    """E[lambda_t] of a step that is run (Lemma 12(2)), the deployed numbers."""
    e = problem.eps_t
    s1, s2 = 1 / (e * tau1), 1 / (e * tau2)
    if design.s == 1:
        return math.inf if s2 <= 1 else design.rho * math.exp(e * mu1) * s1 / (s1 + 1) * s2 / (s2 - 1)
    return math.inf if s1 <= 1 else design.rho * math.exp(-e * mu1) * s1 / (s1 - 1) * s2 / (s2 + 1)


# ---------------------------------------------------------------------------
# planner
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def certificate(config: GTMConfig) -> dict:
    """The rigorous failure bound of a horizon configuration (cached); see :func:`failure_bound`."""
    problem, design = problem_of(config), design_of(config)
    if design.s == 1 and not design.p_bar < problem.p_star:
        raise UnsupportedConfiguration(f"p_bar={design.p_bar!r} must be below p_star={problem.p_star!r}")
    if design.s == -1 and not design.p_bar < problem.p_star:
        raise UnsupportedConfiguration(f"p_bar={design.p_bar!r} must be below p_star={problem.p_star!r}")
    tau1, mu1, tau2 = global_noise(config)
    return failure_bound(problem, design, tau1=tau1, mu1=mu1, tau2=tau2)


def horizon_step(config: GTMConfig, t: int) -> StepPlan:
    """The ``horizon`` planner: the configuration's (s, c, rho, p_bar) at every step t <= T, after the
    union bound inside the eta_1 integral is certified <= beta in arb (else UnsupportedConfiguration)."""
    problem, design = problem_of(config), design_of(config)
    if t > problem.T:
        raise UnsupportedConfiguration(
            f"step t={t} is beyond the horizon T={problem.T}: the horizon planner certifies steps 1..T only "
            f"(the deployment stops at its horizon)")
    cert = certificate(config)
    if not cert["certified"]:
        raise UnsupportedConfiguration(
            f"the horizon design is not certified: failure probability <= {cert['failure_upper']:.6g} is not "
            f"<= beta = {problem.beta:g} (run `gtm tune` for a certified design)")
    g = config.gtm
    tau1, mu1, tau2 = global_noise(config)
    beta_t = problem.beta / problem.T  # nominal per-step share (reporting and the evaluation budget only)
    Lambda = R.round_noise_range(
        math.exp(problem.eps_t * (mu1 + tau2 * math.log(4 / beta_t))), problem.eps_t, mu1, tau2, beta_t)
    lam_max = R.round_product_up(design.rho, Lambda) if design.s == 1 else design.rho
    lam_bar = max(lam_max, math.log(4 / beta_t))
    budget = R.evaluation_budget(g.evaluation_budget_factor, lam_bar)
    p_exceed = budget_exceed_probability(budget, s=design.s, rho=design.rho, eps_t=problem.eps_t, tau1=tau1,
                                         mu1=mu1, tau2=tau2)
    return StepPlan(
        t=t, s=design.s, c=design.c, rho=design.rho, tau2=tau2, Lambda=Lambda, p_bar=design.p_bar,
        lambda_max=lam_max, eps_t=problem.eps_t, p_star=problem.p_star, delta_t=0.0, beta_t=beta_t,
        beta_I=beta_t / 2, beta_II=beta_t / 2, phi=0.0, evaluation_budget=budget,
        budget_exceed_probability=p_exceed,
    )


# ---------------------------------------------------------------------------
# tuning
# ---------------------------------------------------------------------------


def _design_for(problem: HorizonProblem, key, ell: float, p_bar: float) -> tuple[HorizonDesign, GTMConfig]:
    s, c, theta = key
    probe = config_of(problem, HorizonDesign(s=s, c=c, rho=1.0, p_bar=p_bar, theta=float(theta)))
    tau1, mu1, tau2 = global_noise(probe)
    r_star = problem.p_star if s == 1 else 1 - problem.p_star
    rho = math.exp(ell - s * problem.eps_t * mu1) / r_star
    design = HorizonDesign(s=s, c=c, rho=float(rho), p_bar=float(p_bar), theta=float(theta))
    return design, config_of(problem, design)


def tune(problem: HorizonProblem, *, p_bar: float | None = None, max_evaluations: float | None = None,
         progress=None, frontier_points: int = 0) -> TuneResult:
    """A certified design: the cheapest at a required ``p_bar``, or the largest p_bar whose expected
    evaluations over the horizon (a run that never halts) are at most ``max_evaluations``.

    Raises :class:`NotAchievable` (with the best achievable value) when no certified design meets the request."""
    t0 = time.perf_counter()
    say = progress or (lambda msg: None)
    if (p_bar is None) == (max_evaluations is None):
        raise InvalidParameter("give exactly one of p_bar and max_evaluations")
    search = _Search(problem, say)
    T = problem.T
    for attempt in range(4):
        search.target = problem.beta * (1 - _SEARCH_MARGIN * 2 ** attempt)
        if p_bar is not None:
            if not (0 < p_bar < problem.p_star):
                raise InvalidParameter(f"p_bar must be in (0, p_star={problem.p_star}), got {p_bar!r}")
            say(f"searching {len(search.grid_keys())} shapes (direction, c, theta) at p_bar={p_bar:g}")
            cost, key, ell = search.best_at(p_bar)
            if key is None:
                best = _best_p_bar_any(search)
                raise NotAchievable(
                    f"no certified design reaches p_bar={p_bar:g} (largest certifiable p_bar is about {best:.6g})",
                    {"p_bar": best})
            cost, key, ell = search.refine(p_bar, key)
            target_pb = p_bar
        else:
            if not (max_evaluations > 0):
                raise InvalidParameter(f"max_evaluations must be > 0, got {max_evaluations!r}")
            say(f"searching {len(search.grid_keys())} shapes for the largest p_bar at "
                f"{max_evaluations:g} expected evaluations")
            target_pb, cost, key, ell = search.max_p_bar(max_evaluations / T)
            if key is None or not math.isfinite(target_pb):
                lo_pb = search.p_bar_range()[0]
                raise NotAchievable(
                    f"no certified design fits {max_evaluations:g} expected evaluations over T={T} "
                    f"(the cheapest considered needs about {cost * T:.6g})",
                    {"expected_evaluations": cost * T, "p_bar": lo_pb})
        design, config = _design_for(problem, key, ell, target_pb)
        say(f"certifying s={design.s} c={design.c} theta={design.theta:.4g} p_bar={design.p_bar:.6g} in arb")
        cert = certificate(config)
        tau1, mu1, tau2 = global_noise(config)
        ev = expected_evaluations_per_step(problem, design, tau1=tau1, mu1=mu1, tau2=tau2) * T
        if cert["certified"] and (max_evaluations is None or ev <= max_evaluations):
            break
        say(f"certificate {cert['failure_upper']:.6g} vs beta {problem.beta:g}: retrying with a larger margin")
    else:
        raise UnsupportedConfiguration("the horizon search found no design whose certificate reaches beta")
    fr = frontier(problem, search, points=frontier_points) if frontier_points else []
    return TuneResult(config=config, design=design, certificate=cert, expected_evaluations=ev, frontier=fr,
                      request={"p_bar": p_bar, "max_evaluations": max_evaluations},
                      seconds=time.perf_counter() - t0)


def _best_p_bar_any(search: _Search) -> float:
    """The largest p_bar any grid shape certifies at any cost (branch and bound over the shapes)."""
    lo, hi = search.p_bar_range()
    best = 0.0
    for key in search.grid_keys():
        pb = search.shape(*key).max_p_bar(math.inf, search.target, max(lo, best), hi)
        if math.isfinite(pb) and pb > best:
            best = pb
    return best


def frontier(problem: HorizonProblem, search: _Search | None = None, *, points: int = 12,
             p_bars=None) -> list[dict]:
    """The searched frontier: for p_bar on a log grid up to the largest certifiable one, the cheapest
    grid shape's design (not refined), its expected evaluations over the horizon and its arb certificate
    (``certified``, ``failure_upper``) - every point printed is certified or flagged."""
    search = search or _Search(problem)
    if p_bars is None:
        hi = _best_p_bar_any(search)
        if hi <= 0:
            return []
        p_bars = np.geomspace(hi * 1e-2, hi, points)
    out = []
    for pb in p_bars:
        cost, key, ell = search.best_at(float(pb))
        if key is None:
            continue
        design, config = _design_for(problem, key, ell, float(pb))
        cert = certificate(config)
        tau1, mu1, tau2 = global_noise(config)
        out.append({"p_bar": float(pb), "s": key[0], "c": key[1], "theta": float(key[2]), "rho": design.rho,
                    "expected_evaluations": expected_evaluations_per_step(
                        problem, design, tau1=tau1, mu1=mu1, tau2=tau2) * problem.T,
                    "certified": cert["certified"], "failure_upper": cert["failure_upper"]})
    return out
