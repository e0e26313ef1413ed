"""Deliberately broken GTM deployments: the auditor's power suite.

A :class:`Implementation` describes *how* an implementation of Algorithm 1 draws its noise and
counts, as a small frozen value. ``Implementation()`` is the correct algorithm; every field that
differs from its default is one implementation mistake a real deployment could make:

=========================  ===================================================================
variant                    mistake
=========================  ===================================================================
``correct``                none (Algorithm 1)
``shared-noise-per-step``  eta_1 redrawn at every step instead of once (loss grows with t)
``no-step-noise``          eta_{2,t} omitted (one-sided shared noise cannot cover halting)
``step-noise-quarter``     eta_{2,t} ~ Exp(tau_2 / 4) (per-step noise four times too small)
``shared-noise-third``     eta_1 ~ Exp(tau_1 / 3) (shared noise three times too concentrated)
``step-noise-reused``      eta_{2,1} drawn once and reused at every step
``fixed-count``            N_t = round(lambda_t) instead of N_t ~ Po(lambda_t)
``eps-t-halved``           lambda_t = rho exp(eps_t Z_t / 2) (noise scaled for eps_t/2 inputs)
``shared-noise-sign``      Z_t = s (mu_1 + eta_1 + eta_{2,t}) (eta_1 added, not subtracted)
``off-by-one-threshold``   halts when K_t >= c_t instead of K_t >= c_t + 1
``no-offset``              mu_1 = 0
=========================  ===================================================================

One family of broken GTMs: the exact engine's :class:`gtm_core.exact.PerturbedPlan` (noise scales
multiplied, claims kept) is the part of this family the exact engine can compute -
:meth:`Implementation.perturbed_plan` maps ``step-noise-quarter`` and ``shared-noise-third`` (and any
other noise-scale-only implementation) onto it, and a test checks that both give the same halting
law. The structural mistakes (redrawn or reused noise, fixed counts, signs, offsets) have no
closed form in the exact engine, so they are sampled here and their laws computed numerically.

Whether a variant is *truly* not eps-DP is a mathematical question, answered for a concrete
pair of neighbouring streams by :mod:`audits.power.distribution` (numerical halting-time law). Some
mistakes here do not break privacy at all (the privacy proof of Lemma 17 holds for any c_t and
any offset mu_1): those variants break *accuracy*, and the power suite lists them as "still DP"
rather than counting them as misses.

:func:`simulate_deployment` samples halting times (and evaluation counts) of a deployment on a
Bernoulli stream, vectorised like :func:`gtm_core.simulator.simulate`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from gtm_core.errors import InvalidParameter, UnsupportedConfiguration
from gtm_core.exact import PerturbedPlan, perturbed_plan
from gtm_core.planners import Plan
from gtm_core.simulator import SimulationResult, fed_success_probability, simulate
from gtm_core.validation import check_nonnegative_int, check_stream


@dataclass(frozen=True)
class Implementation:
    """How a deployment draws its noise (defaults = Algorithm 1)."""

    shared_noise: str = "once"  # "once" (Algorithm 1) | "per-step" (eta_1 redrawn every step)
    step_noise: str = "fresh"  # "fresh" (Algorithm 1) | "reused" (eta_{2,1} reused) | "none"
    tau1_scale: float = 1.0  # eta_1 ~ Exp(tau1_scale * tau_1)
    tau2_scale: float = 1.0  # eta_{2,t} ~ Exp(tau2_scale * tau_{2,t})
    shared_noise_sign: int = -1  # Z = s (mu_1 + sign * eta_1 + eta_2); Algorithm 1 has -1
    count: str = "poisson"  # "poisson" (Algorithm 1) | "fixed" (N_t = round(lambda_t))
    threshold_offset: int = 0  # halts (s=+1) when K_t >= c_t + 1 + threshold_offset
    eps_scale: float = 1.0  # lambda = rho exp(eps_scale * eps_t * Z)
    mu1_scale: float = 1.0  # offset used = mu1_scale * mu_1

    def __post_init__(self):
        if self.shared_noise not in ("once", "per-step"):
            raise InvalidParameter(f"shared_noise must be 'once' or 'per-step', got {self.shared_noise!r}")
        if self.step_noise not in ("fresh", "reused", "none"):
            raise InvalidParameter(f"step_noise must be 'fresh', 'reused' or 'none', got {self.step_noise!r}")
        if self.count not in ("poisson", "fixed"):
            raise InvalidParameter(f"count must be 'poisson' or 'fixed', got {self.count!r}")
        if self.shared_noise_sign not in (-1, 1):
            raise InvalidParameter(f"shared_noise_sign must be -1 or +1, got {self.shared_noise_sign!r}")
        for name in ("tau1_scale", "tau2_scale", "eps_scale"):
            if not getattr(self, name) > 0:
                raise InvalidParameter(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.mu1_scale >= 0:
            raise InvalidParameter(f"mu1_scale must be >= 0, got {self.mu1_scale!r}")

    @property
    def is_algorithm1(self) -> bool:
        return self == Implementation()

    @property
    def scales_noise_only(self) -> bool:
        """Only the noise scales differ from Algorithm 1 (the exact engine can compute this one)."""
        return replace(self, tau1_scale=1.0, tau2_scale=1.0).is_algorithm1

    def perturbed_plan(self, plan) -> PerturbedPlan:
        """This implementation as the exact engine's :class:`gtm_core.exact.PerturbedPlan` (the noise
        scales multiplied, the claims kept) - defined only when it :attr:`scales_noise_only`."""
        if not self.scales_noise_only:
            correct = asdict(Implementation())
            changed = [k for k, v in asdict(self).items() if k not in ("tau1_scale", "tau2_scale") and v != correct[k]]
            raise UnsupportedConfiguration("the exact engine models only noise-scale mistakes (tau1_scale, "
                                           f"tau2_scale); this implementation also changes {', '.join(changed)}")
        return perturbed_plan(plan, tau1_factor=self.tau1_scale, tau2_factor=self.tau2_scale)

    def to_dict(self) -> dict:
        return asdict(self)


CORRECT = Implementation()

VARIANTS: dict[str, Implementation] = {
    "correct": CORRECT,
    "shared-noise-per-step": replace(CORRECT, shared_noise="per-step"),
    "no-step-noise": replace(CORRECT, step_noise="none"),
    "step-noise-quarter": replace(CORRECT, tau2_scale=0.25),
    "shared-noise-third": replace(CORRECT, tau1_scale=1 / 3),
    "step-noise-reused": replace(CORRECT, step_noise="reused"),
    "fixed-count": replace(CORRECT, count="fixed"),
    "eps-t-halved": replace(CORRECT, eps_scale=0.5),
    "shared-noise-sign": replace(CORRECT, shared_noise_sign=1),
    "off-by-one-threshold": replace(CORRECT, threshold_offset=-1),
    "no-offset": replace(CORRECT, mu1_scale=0.0),
}

DESCRIPTIONS: dict[str, str] = {
    "correct": "Algorithm 1",
    "shared-noise-per-step": "eta_1 redrawn at every step",
    "no-step-noise": "per-step noise eta_2,t omitted",
    "step-noise-quarter": "eta_2,t ~ Exp(tau_2/4)",
    "shared-noise-third": "eta_1 ~ Exp(tau_1/3)",
    "step-noise-reused": "eta_2,1 reused at every step",
    "fixed-count": "N_t = round(lambda_t) instead of Poisson",
    "eps-t-halved": "lambda_t = rho exp(eps_t Z_t / 2)",
    "shared-noise-sign": "Z_t = s(mu_1 + eta_1 + eta_2,t)",
    "off-by-one-threshold": "halts when K_t >= c_t",
    "no-offset": "mu_1 = 0",
}


def variant(name: str) -> Implementation:
    """The deployment called ``name`` (see :data:`VARIANTS`)."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise InvalidParameter(
            f"broken variant must be one of {', '.join(sorted(VARIANTS))}; got {name!r}"
        ) from None


def simulate_deployment(
    plan: Plan,
    deployment: Implementation,
    p,
    n: int,
    rng: np.random.Generator,
    *,
    evaluations: bool = False,
    chunk: int = 1 << 19,
) -> SimulationResult:
    """n runs of ``deployment`` on the Bernoulli stream p (halting times 0 = never, 1..T)."""
    if deployment.is_algorithm1:
        return simulate(plan, p, n, rng, evaluations=evaluations)
    arr = check_stream("p", p)
    check_nonnegative_int("n", n)
    if arr.size > plan.horizon:
        raise InvalidParameter(f"stream length {arr.size} exceeds the plan's horizon {plan.horizon}")
    steps = plan.steps(range(1, arr.size + 1))
    halt = np.zeros(n, dtype=np.int64)
    evals = np.zeros(n, dtype=np.int64) if evaluations else None
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        _chunk(plan, deployment, steps, arr, rng, halt[start:stop],
               None if evals is None else evals[start:stop])
    return SimulationResult(halt=halt, evaluations=evals, T=arr.size)


def _chunk(plan, d: Implementation, steps, p, rng, halt_out, evals_out) -> None:
    m = halt_out.size
    idx = np.arange(m)
    tau1 = d.tau1_scale * plan.tau1
    mu1 = d.mu1_scale * plan.mu1
    eta1 = rng.exponential(tau1, m)
    eta2_first = None
    for sp, pt in zip(steps, p):
        if idx.size == 0:
            break
        q = fed_success_probability(sp, float(pt))
        if d.shared_noise == "per-step":
            eta1 = rng.exponential(tau1, idx.size)
        tau2 = d.tau2_scale * sp.tau2
        if d.step_noise == "none" or sp.eps_t == 0:
            eta2 = 0.0
        elif d.step_noise == "fresh":
            eta2 = rng.exponential(tau2, idx.size)
        else:  # reused: the first step's draw, for every run
            if eta2_first is None:
                eta2_first = rng.exponential(tau2, m)
            eta2 = eta2_first[idx]
        z = sp.s * (mu1 + d.shared_noise_sign * eta1 + eta2)
        with np.errstate(over="ignore"):
            lam = sp.rho * np.exp(d.eps_scale * sp.eps_t * z)
        lam = np.minimum(lam, 1e17)
        c = sp.c + d.threshold_offset
        if d.count == "fixed":
            n_eval = np.rint(lam).astype(np.int64)
            k = rng.binomial(n_eval, q)
            if evals_out is not None:
                evals_out[idx] += n_eval
            above = k > c
        elif evals_out is not None:
            k = rng.poisson(lam * q)
            evals_out[idx] += k + rng.poisson(lam * (1.0 - q))
            above = k > c
        else:
            above = rng.standard_gamma(c + 1.0, idx.size) <= lam * q
        stop = above if sp.s == 1 else ~above
        if stop.any():
            halt_out[idx[stop]] = sp.t
            keep = ~stop
            idx = idx[keep]
            if d.shared_noise == "once":
                eta1 = eta1[keep]
