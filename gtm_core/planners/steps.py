"""What every step planner shares: the :class:`StepPlan` record, the global noise (tau_1, mu_1,
tau_2), Lemma 11's threshold, Lemma 20's direct-or-flipped choice, the purification and
evaluation-budget tail of a step (:func:`finish_step`) and the float64 guard of a planner run."""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Callable

from .. import formulas as F
from ..config import GTMConfig, StepSpec
from ..errors import GTMError, UnsupportedConfiguration
from ..validation import check_finite
from . import rounding as R
from .budget import budget_exceed_probability


@dataclass(frozen=True)
class StepPlan:
    """Per-step parameters of Algorithm 1 and the guarantees they carry.

    ``s = -1`` means the flipped variant: the GTM is fed the negated mechanism
    (success probability q_t = 1 - p_t) with target q*_t = 1 - p*_t.
    Thresholds ``p_star``/``p_bar`` are always in terms of the original p_t.

    Attributes:
        t: the step (1-based).
        s: +1 (direct) or -1 (flipped variant).
        c: the count threshold c_t: the step halts when s_t (K_t - c_t - 1/2) > 0.
        rho: rho_t, the scale of the Poisson rate lambda_t = rho_t exp(eps_t Z_t).
        tau2: the scale of the per-step noise eta_{2,t} ~ Exp(tau2).
        Lambda: the noise range Lambda_t (Theorem 21 / 23).
        p_bar: the rejection threshold: the GTM continues (w.h.p.) past a step with p_t <= p_bar.
        lambda_max: lambda_max_t, the largest rate on the good event (Lemma 22).
        eps_t: the input mechanism's privacy at this step.
        p_star: the target p*_t.
        delta_t: the input mechanism's delta_t (0 = pure).
        beta_t: this step's share of the failure probability beta.
        beta_I: the Type I error allowance (halting although p_t <= p_bar_t: the continuation
            guarantee; ``horizon``, ``exact_noise`` and Lemma 20 (1b)/(2b) use the same names).
        beta_II: the Type II error allowance (continuing although p_t >= p*_t: the halting
            guarantee, Lemma 20 (1a)/(2a)).
        phi: the purification crossover phi_t (Lemma 24; 0 when delta_t = 0).
        evaluation_budget: the most mechanism evaluations this step may make.
        budget_exceed_probability: an upper bound on Pr[N_t > evaluation_budget].
    """

    t: int
    s: int
    c: int
    rho: float
    tau2: float
    Lambda: float
    p_bar: float
    lambda_max: float
    eps_t: float
    p_star: float
    delta_t: float
    beta_t: float
    beta_I: float
    beta_II: float
    phi: float
    evaluation_budget: int
    budget_exceed_probability: float

    @property
    def flipped(self) -> bool:
        return self.s == -1

    @property
    def halt_threshold(self) -> float:
        """Corollary 25(1): halts (w.h.p.) whenever p_t >= p*_t + phi_t."""
        return self.p_star + self.phi

    @property
    def continue_threshold(self) -> float:
        """Corollary 25(2): continues (w.h.p.) whenever p_t <= p_bar_t - phi_t."""
        return self.p_bar - self.phi

    def to_dict(self) -> dict:
        d = asdict(self)
        d["halt_threshold"] = self.halt_threshold
        d["continue_threshold"] = self.continue_threshold
        return d

# ---------------------------------------------------------------------------


def lemma11_c(alpha: float, beta: float, gamma: float) -> int:
    """Lemma 11's integer c, exact: float64 unless within 1e-9 of a tie, then 60 digits."""
    A, B = -math.log(alpha), -math.log(beta)
    r = F.lemma11_root(alpha, beta, gamma)
    lo, hi = 2 * max(A, B), r * r
    if min(abs(lo - round(lo)), abs(hi - round(hi))) < 1e-9 * max(1.0, hi):
        return F.lemma11_threshold(alpha, beta, gamma, dps=60)
    return int(max(math.floor(lo), math.ceil(hi)))


def direct_or_flipped(spec: StepSpec, gamma: float, Lambda: float, beta_I: float, beta_II: float):
    """Lemma 20 with the flipping rule of Theorem 21: (s, c, rho, lambda_max).

    rho is rounded in the safe direction so Lemma 20's base-rate identity holds exactly
    (rho p* >= lambda^l(c, beta^II) for s=+1; rho q* <= lambda^r(c, beta^II) for s=-1).
    """
    s = F.direction(spec.p_star, gamma, Lambda)
    if s == 1:
        c = lemma11_c(beta_II, beta_I, gamma)  # (alpha, beta) = (beta^II, beta^I)
        rho = R.round_base_rate_above(F.base_rate_above(c, beta_II, spec.p_star), c, beta_II, spec.p_star)
        lam_max = R.round_product_up(rho, Lambda)  # an upper bound on lambda_t on G
    else:
        q_star = 1 - spec.p_star
        c = lemma11_c(beta_I, beta_II, gamma)  # (alpha, beta) = (beta^I, beta^II)
        rho = R.round_base_rate_below(F.base_rate_below(c, beta_II, q_star), c, beta_II, q_star)
        lam_max = rho
    return s, c, rho, lam_max


def finish_step(config, spec, *, s, c, rho, tau1, mu1, tau2, Lambda, lam_max, beta_t, beta_I, beta_II):
    """The StepPlan of a step whose (s, c, rho, lambda_max) and noise are chosen: adds the purification
    crossover phi_t (Lemma 24), the rejection threshold p_bar_t, the evaluation budget (Lemma 22) and its
    exceed probability."""
    g = config.gtm
    phi = (
        R.round_crossover_up(float(F.purification_crossover(spec.eps_t, spec.delta_t)), spec.eps_t, spec.delta_t)
        if spec.delta_t > 0
        else 0.0
    )
    # Lemma 22(1): on G, N_t is dominated by Po(lambda_bar) with lambda_bar >= ln(4/beta_t),
    # so Pr[N_t > e lambda_bar | G] <= beta_t/4 (Lemma 55). The budget is factor * lambda_bar.
    lam_bar = max(lam_max, math.log(4 / beta_t))
    budget = R.evaluation_budget(g.evaluation_budget_factor, lam_bar)
    p_exceed = budget_exceed_probability(
        budget, s=s, rho=rho, eps_t=spec.eps_t, tau1=tau1, mu1=mu1, tau2=tau2
    )
    return StepPlan(
        t=spec.t,
        s=s,
        c=c,
        rho=rho,
        tau2=tau2,
        Lambda=Lambda,
        p_bar=R.round_rejection_threshold(
            F.rejection_threshold(spec.p_star, g.gamma, Lambda), s, spec.p_star, g.gamma, Lambda
        ),
        lambda_max=lam_max,
        eps_t=spec.eps_t,
        p_star=spec.p_star,
        delta_t=spec.delta_t,
        beta_t=beta_t,
        beta_I=beta_I,
        beta_II=beta_II,
        phi=phi,
        evaluation_budget=budget,
        budget_exceed_probability=p_exceed,
    )

@functools.lru_cache(maxsize=1024)
def global_noise(config: GTMConfig) -> tuple[float, float, float | None]:
    """(tau_1, mu_1, tau_2) of a configuration, rounded so the proofs' conditions hold exactly:
    1/tau_1 + 2/tau_2 <= eps (Theorem 21) or 1/tau_1 <= eps_C (Theorem 23), and
    mu_1 >= tau_1 ln(4/beta) so that Pr[eta_1 > mu_1] <= beta/4 (Lemma 19).
    tau_2 is None for theorem23, whose per-step tau_{2,t} varies."""
    g = config.gtm
    if g.parameterization == "theorem23":
        tau1 = R.round_tau1_at_least(F.theorem23_tau1(g.epsilon_c), g.epsilon_c)
        tau2 = None
    else:
        tau1, tau2 = R.round_noise_scales_theorem21(
            F.theorem21_tau1(g.epsilon, g.theta), F.theorem21_tau2(g.epsilon, g.theta), g.epsilon
        )
    mu1 = R.round_mu1(tau1 * math.log(4 / g.beta), tau1, g.beta)
    return tau1, mu1, tau2

def checked_step_plan(planner: Callable[[GTMConfig, int], StepPlan], config: GTMConfig, t: int) -> StepPlan:
    """Run a step planner; parameters so extreme that float64 overflows (or yields a non-finite
    rate or budget) end in UnsupportedConfiguration naming the step, never in a bare
    ArithmeticError or a NaN plan."""
    try:
        sp = planner(config, t)
    except (OverflowError, ZeroDivisionError):  # also the formulas' FormulaOverflow / FormulaZeroDivision
        raise UnsupportedConfiguration(
            f"step t={t}: the noise range Lambda_t or base rate overflows float64 "
            f"(eps_t/eps too large for this beta/theta); no usable rejection threshold"
        ) from None
    except GTMError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise UnsupportedConfiguration(
            f"the configuration cannot be planned at step {t}: parameters too extreme for float64 "
            f"({type(exc).__name__})"
        ) from None
    for name in ("rho", "Lambda", "p_bar", "lambda_max", "budget_exceed_probability"):
        check_finite(f"the configuration cannot be planned at step {t}: {name}", getattr(sp, name),
                     error=UnsupportedConfiguration)
    return sp
