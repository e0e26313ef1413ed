"""The certified, budget-tight BatchToCO (``[co] variant = "certified"``), beside the literal Algorithm 3.

Same structure as Algorithm 3 (:mod:`.driver`): a first call A(X_1), then levels l with thresholds
h_l = (1 + kappa)^l, one GTM_l per level deciding when OPT has passed h_l (Definition 36's test
mechanism), ThresholdSelect_l (Algorithm 2) choosing the new solution at the checkpoint. What changes
is the privacy budget split, chosen so that the whole of epsilon is spent and every share is charged at
what its component actually spends (docs/batchtoco.md, "The certified variant", lists every departure):

* **finitely many levels, uniform shares.** The run is planned for a horizon T (updates beyond T are
  refused, as for the doubling baseline, which also needs T). Levels l_0 .. l_0 + L - 1; after the last
  checkpoint the output is held (post-processing: no component runs). Each level gets
  b = (1 - first_share) eps / L instead of Section 7.3's C_eps omega_l eps (sum of omega over levels
  that cannot occur was reserved and never spent).
* **the first call** A(X_1) gets first_share * eps (the literal reserves omega_1 eps ~ 0.61 eps for a
  call that spends eps(1,1) ~ 0.014).
* **a warm-up** (not in Algorithm 3): until the first checkpoint, A(X_t) is recomputed at the doubling
  schedule's times t = 2, 4, 8, ... <= T, each with eps_W = warmup_share eps / R, R = floor(log2 T)
  (at most R calls whatever the data; they stop at the first checkpoint, or with
  ``warmup_after_checkpoint`` continue at every such t to T, the output being the most recent solution:
  exactly R calls, :func:`warmup_call_bound`). Thresholds below the test's slack S are passed on the
  test's noise alone, so the levels start at h_{l_0} >= S and the stream before OPT reaches S would
  otherwise keep Y_1.
* **GTM_l** gets eps_G = gtm_share * b, planned by the project's ``horizon`` planner (a certified union
  bound over the level's horizon <= T; Lemma 17: the transcript is (1/tau_1 + 2/tau_2 <= eps_G)-DP for
  any eps_t, c, rho) with input privacy eps_t = eps_G / test_ratio and failure beta_l = C_beta beta / L.
* **ThresholdSelect_l** gets the rest, eps_S = (1 - gtm_share) b, charged at Lemma 34(1)'s actual cost
  2 eps_Q + eps_0 (not Lemma 38's 3 eps(l)/C_1): its scored mechanism Q is Definition 36(2) at its own
  privacy eps_Q = (1 - eps0_share) eps_S / 2 (A at eps_Q/2, Lap(2/eps_Q)), eps_0 = eps0_share * eps_S,
  threshold h_l - S_l where S_l = (2/eps_t) ln(1/(2 p_bar)) is Lemma 39's halting slack (a public
  constant), stopping probability xi_l = p_bar beta_l.

Privacy (the composition of Lemma 38 with these shares, basic composition over the components that
run): eps_first + R eps_W + L (eps_G + 2 eps_Q + eps_0) <= eps, proved symbolically in :mod:`proofs.co_certified`
and certified for the floats actually run in :mod:`proofs.co_certified_ledger`. All floats are rounded
down (relative 1e-12) so that the float shares never exceed their exact values.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..config import GTMConfig
from ..errors import InvalidParameter
from ..planners import global_noise, plan_step
from ..planners.horizon_problem import HorizonProblem
from .params import COConfig

#: relative rounding applied to every float share (down), far above float64's error on the formulas
ROUND_DOWN = 1e-12


def _down(x: float) -> float:
    return float(x) * (1 - ROUND_DOWN)


@dataclass(frozen=True)
class CertifiedSplit:
    """The certified variant's budget split (floats as run; every one rounded down)."""

    epsilon: float
    levels: int
    first_level: int
    eps_first: float  # the first call A(X_1)
    warmup_calls: int  # R: warm-up recomputations at most (t = 2, 4, ... <= T)
    eps_warmup: float  # eps_W: each warm-up recomputation
    eps_level: float  # b: one level's budget (GTM_l + ThresholdSelect_l)
    eps_gtm: float  # eps_G: GTM_l's output privacy (Lemma 17)
    eps_selection: float  # eps_S: ThresholdSelect_l's budget, >= 2 eps_Q + eps_0
    eps_q: float  # the scored mechanism's privacy (A at eps_q/2, Lap(2/eps_q))
    eps_0: float  # Lemma 34's eps_0
    eps_t: float  # GTM_l's input privacy (the test mechanism: A at eps_t/2, Lap(2/eps_t))
    beta_level: float  # GTM_l's failure probability

    @property
    def last_level(self) -> int:
        return self.first_level + self.levels - 1

    def total(self) -> float:
        """eps_first + L (eps_G + 2 eps_Q + eps_0) in float64 (the ledger encloses it in arb)."""
        return (self.eps_first + self.warmup_calls * self.eps_warmup
                + self.levels * (self.eps_gtm + 2 * self.eps_q + self.eps_0))

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def check_certified(config: COConfig) -> COConfig:
    if not isinstance(config, COConfig):
        raise InvalidParameter(f"config must be a COConfig, got {type(config).__name__}")
    if config.variant != "certified":
        raise InvalidParameter(f"the certified split needs variant = 'certified', got {config.variant!r}")
    if config.delta != 0:
        raise InvalidParameter("variant = 'certified' covers pure DP (delta = 0)")
    return config


def levels_to_cover(config: COConfig, first_level: int) -> int:
    """Default L: levels first_level .. l with h_l > T, so a threshold above OPT_T <= T exists."""
    top = first_level
    while (1 + config.kappa) ** top <= config.horizon:
        top += 1
    return max(1, top - first_level + 1)


@functools.lru_cache(maxsize=256)
def certified_split(config: COConfig) -> CertifiedSplit:
    """The shares of ``config`` (variant = "certified"), module docstring. Unset ``first_level``: the
    first level whose threshold reaches the test's halting slack S (thresholds below S are passed on
    the test's Laplace noise alone and would spend a level each), found by a short fixed-point iteration
    (S depends on the shares, which depend on the number of levels); unset ``levels``: enough for h > T."""
    c = check_certified(config)
    first = c.first_level if c.first_level is not None else 2
    for _ in range(6):
        L = c.levels if c.levels is not None else levels_to_cover(c, first)
        split = _split(c, first, L)
        if c.first_level is not None:
            return split
        p_bar = _tuned(split.eps_gtm, split.eps_t, c.p_star, c.horizon, split.beta_level,
                       c.max_evaluations).design.p_bar
        slack = halting_slack(split.eps_t, p_bar)
        nxt = max(2, math.ceil(math.log(max(slack, 1.0)) / math.log1p(c.kappa)))
        if nxt == first:
            break
        first = nxt
    return split


def _split(c: COConfig, first: int, L: int) -> CertifiedSplit:
    eps_first = _down(c.first_share * c.epsilon)
    R = max(0, c.horizon.bit_length() - 1)  # t = 2, 4, ..., 2^R <= T
    eps_w = _down(c.warmup_share * c.epsilon / R) if R and c.warmup_share > 0 else 0.0
    b = _down((c.epsilon - eps_first - R * eps_w) / L)
    eps_gtm = _down(c.gtm_share * b)
    eps_s = _down(b - eps_gtm)
    eps_0 = _down(c.eps0_share * eps_s)
    eps_q = _down((eps_s - eps_0) / 2)
    eps_t = _down(eps_gtm / c.test_ratio)
    beta_level = _down(c.c_beta * c.beta / L)
    return CertifiedSplit(c.epsilon, L, first, eps_first, R, eps_w, b, eps_gtm, eps_s, eps_q, eps_0, eps_t, beta_level)


@functools.lru_cache(maxsize=64)
def _tuned(eps_gtm: float, eps_t: float, p_star: float, horizon: int, beta: float, max_evaluations: float):
    from ..planners.horizon_tune import tune

    problem = HorizonProblem(epsilon=eps_gtm, eps_t=eps_t, p_star=p_star, T=horizon, beta=beta)
    return tune(problem, max_evaluations=max_evaluations * horizon)


def gtm_configuration(config: COConfig) -> GTMConfig:
    """GTM_l's ``horizon`` configuration (the same for every level: uniform shares), tuned once by
    ``gtm tune``'s search for the largest certified p_bar within ``max_evaluations`` per step, and
    certified in arb (the planner refuses an uncertified design)."""
    s = certified_split(config)
    return _tuned(s.eps_gtm, s.eps_t, config.p_star, config.horizon, s.beta_level, config.max_evaluations).config


@dataclass(frozen=True)
class CertifiedInstancePlan:
    """GTM_l of the certified variant with the ``Plan`` interface (``tau1``, ``mu1``, ``step(j)``)."""

    config: COConfig
    level: int
    horizon: int | None = None

    @property
    def gtm(self) -> GTMConfig:
        return gtm_configuration(self.config)

    @property
    def epsilon_c(self) -> float:
        return certified_split(self.config).eps_gtm

    @property
    def beta(self) -> float:
        return certified_split(self.config).beta_level

    @property
    def tau1(self) -> float:
        return global_noise(self.gtm)[0]

    @property
    def mu1(self) -> float:
        return global_noise(self.gtm)[1]

    @property
    def p_bar(self) -> float:
        return self.gtm.gtm.p_bar

    def step(self, j: int):
        return plan_step(self.gtm, int(j))

    def claimed_loss(self) -> float:
        """Lemma 17: 1/tau_1 + 2/tau_2 <= eps_G (every step of the design uses the same tau_2)."""
        return certified_split(self.config).eps_gtm


def warmup_times(config: COConfig) -> tuple[int, ...]:
    """The doubling times t = 2, 4, ..., 2^R <= T at which a warm-up recomputation may run (public: they
    depend on T only). Without ``warmup_after_checkpoint`` the run uses a prefix of them (up to its first
    checkpoint), with it all of them."""
    R = max(0, check_certified(config).horizon.bit_length() - 1)
    return tuple(1 << i for i in range(1, R + 1))


def warmup_call_bound(config: COConfig, implementation=None) -> int:
    """The most warm-up recomputations a run of ``config`` makes, whatever the data: one per doubling time
    (:func:`warmup_times`; each at most once, with or without ``warmup_after_checkpoint``), plus one per
    checkpoint (<= L) for an implementation that also recomputes at checkpoints (the power suite's
    ``warmup_at_checkpoints`` mistake). The split charges R = len(warmup_times) calls; the ledger charges
    this bound, so an implementation exceeding R is refused."""
    split = certified_split(config)
    if split.eps_warmup == 0:
        return 0
    extra = split.levels if implementation is not None and implementation.warmup_at_checkpoints else 0
    return len(warmup_times(config)) + extra


def halting_slack(eps_t: float, p_bar: float) -> float:
    """Lemma 39(2) with delta = 0: a GTM halt (on its good event, p_t > p_bar) implies
    OPT_t > h_l - (2/eps_t) ln(1/(2 p_bar))."""
    return 2.0 / eps_t * math.log(1.0 / (2.0 * p_bar))


def selection_threshold(config: COConfig, level: int) -> float:
    """ThresholdSelect_l's threshold in the certified variant: h_l - S_l (module docstring)."""
    from . import params as P

    plan = CertifiedInstancePlan(config, level)
    return float(P.threshold_level(level, config.kappa)) - halting_slack(certified_split(config).eps_t, plan.p_bar)


def selection_stopping(config: COConfig) -> float:
    """xi_l = p_bar beta_l (Section 7.3's xi with the certified p_bar and beta_l)."""
    return CertifiedInstancePlan(config, certified_split(config).first_level).p_bar * certified_split(config).beta_level
