"""The deployed GTM of a plan, evaluation budget included, vectorised: :class:`DeployedSimulatorTarget`.

:class:`audits.targets.SimulatorTarget` models the mathematical Algorithm 1 (no budget);
:class:`audits.targets.ReferenceTarget` runs the literal reference GTM, budget included, one run at a
time (about 14 runs per second at step 1 of a configuration whose count means reach 10^8). This
target draws what the reference draws, for n runs at once, so an audit of a capped deployment
(``evaluation_budget = "refuse"``) can afford the 10^5 - 10^6 runs per input its rare events need.

Per run: eta_1 ~ Exp(tau_1) once; per step t, eta_2,t ~ Exp(tau_2,t) and the count mean
lambda_t = rho_t exp(eps_t s_t (mu_1 - eta_1 + eta_2,t)) (Algorithm 1, lines 1-5); by Poisson
splitting (Lemma 10(2)) the +1 answers are K_t ~ Po(lambda_t q_t) and the other evaluations
N_t - K_t ~ Po(lambda_t (1 - q_t)) independently, q_t the fed mechanism's Pr[+1]
(:func:`gtm_core.simulator.fed_success_probability`). A step whose N_t exceeds the enforced budget
(:meth:`gtm_core.planners.Plan.enforced_budget`; None under ``"none"``: never) is refused - outcome
``-t`` of docs/protocol.md, the run's terminal failed state - before K_t is looked at; otherwise the
run halts at t when K_t > c_t (s_t = +1) or K_t <= c_t (s_t = -1). Sampling is float64 numpy, like the
simulator (the reference draws with exact samplers).
"""

from __future__ import annotations

import numpy as np

from gtm_core.errors import InvalidParameter
from gtm_core.planners import Plan
from gtm_core.simulator import fed_success_probability
from gtm_core.validation import check_nonnegative_int, check_positive_int, check_stream

from .targets import Target, validate_sample

POISSON_MEAN_LIMIT = 1e18  # numpy's Poisson limit; a larger mean exceeds every budget anyway
CHUNK = 1 << 18


def deployed_outcomes(plan: Plan, p, n: int, rng: np.random.Generator, *, chunk: int = CHUNK) -> np.ndarray:
    """n outcome codes (docs/protocol.md: 0 never halted, t halted at t, -t refused at t on the
    evaluation budget) of the GTM ``plan`` deploys, on the Bernoulli stream ``p``."""
    if not isinstance(plan, Plan):
        raise InvalidParameter(f"plan must be a gtm_core Plan, got {type(plan).__name__}")
    arr = check_stream("p", p)
    n = check_nonnegative_int("n", n)
    chunk = check_positive_int("chunk", chunk)
    if arr.size > plan.horizon:
        raise InvalidParameter(f"stream length {arr.size} exceeds the plan's horizon {plan.horizon}")
    steps = plan.steps(range(1, arr.size + 1))
    out = np.zeros(n, dtype=np.int64)
    for start in range(0, n, chunk):
        _chunk(plan, steps, arr, rng, out[start:min(n, start + chunk)])
    return out


def _chunk(plan: Plan, steps, p, rng: np.random.Generator, out: np.ndarray) -> None:
    live = np.arange(out.size)
    base = plan.mu1 - rng.exponential(plan.tau1, out.size)  # mu_1 - eta_1, the run's shared noise
    for sp, pt in zip(steps, p):
        if live.size == 0:
            return
        q = fed_success_probability(sp, float(pt))
        z = base if sp.eps_t == 0 else base + rng.exponential(sp.tau2, live.size)
        with np.errstate(over="ignore"):
            lam = np.minimum(sp.rho * np.exp(sp.eps_t * sp.s * z), POISSON_MEAN_LIMIT)
        k = rng.poisson(lam * q)
        budget = plan.enforced_budget(sp)
        refused = np.zeros(live.size, dtype=bool)
        if budget is not None:
            refused = k + rng.poisson(lam * (1.0 - q)) > budget
        above = k > sp.c
        halted = ~refused & (above if sp.s == 1 else ~above)
        out[live[refused]] = -sp.t
        out[live[halted]] = sp.t
        keep = ~(refused | halted)
        live, base = live[keep], base[keep]


class DeployedSimulatorTarget(Target):
    """The GTM ``plan`` deploys, budget policy included (:func:`deployed_outcomes`), as an audit target.

    Example:
        >>> from gtm_core import GTMConfig, make_plan
        >>> target = DeployedSimulatorTarget(make_plan(GTMConfig.load("examples/unsafe_budget.toml")))
        >>> sorted(set(target.sample([0.9, 0.9], n=2000, seed=1).halt.tolist()))  # refused at 1, halted at 1
        [-1, 1]
    """

    def __init__(self, plan: Plan, *, name: str | None = None):
        if not isinstance(plan, Plan):
            raise InvalidParameter(f"plan must be a gtm_core Plan, got {type(plan).__name__}")
        self.plan = plan
        self.max_T = plan.horizon
        self.name = name or f"deployed-simulator(evaluation_budget={plan.budget_policy})"

    def sample(self, p, n, seed, *, evaluations=False):
        if evaluations:
            raise InvalidParameter("evaluations: this target answers outcomes only, got evaluations=True")
        check_nonnegative_int("seed", seed)
        arr = check_stream("p", p)
        halt = deployed_outcomes(self.plan, arr, n, np.random.default_rng(seed))
        return validate_sample(halt, None, int(n), arr.size, source=self.name)
