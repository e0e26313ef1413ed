"""One whole step of Algorithm 1 with exact sampling, from the plan's numbers.

Phase 1 (noise only): eta_{2,t} ~ Exp(tau_{2,t}) lazily, lambda_t = rho_t exp(eps_t Z_t) with
Z_t = s_t (mu_1 - eta_1 + eta_{2,t}), N_t ~ Po(lambda_t) by exact inversion
(:func:`draw_count`). Phase 2 (data): the caller's ``count_positive(N_t)`` evaluates the
*original* mechanism M_t N_t times and returns its number of +1 outputs. Purification
(Lemma 24: each output flipped independently with probability phi_t) and the flipped variant
(s_t = -1: the GTM is fed -M_t) are then applied to the count exactly (:func:`fed_count`).
Phase 3: a_t = s_t (halt) iff s_t (K_t - c_t - 1/2) > 0 (:func:`halts`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from flint import arb, ctx

from ..errors import InvalidParameter, MechanismError
from ..validation import (
    check_direction,
    check_nonnegative,
    check_nonnegative_int,
    check_positive,
    check_real,
    is_integer,
    check_probability,
)
from .bits import BitSource
from .lazy import GUARD_BITS, ExactConstant, LazyExponential, LazyReal, LazyUniform
from .poisson import bernoulli_count, poisson_inverse

__all__ = [
    "MAX_UNBUDGETED_COUNT",
    "check_tau2",
    "purification_crossover",
    "SharedNoise",
    "PoissonMean",
    "StepOutcome",
    "draw_count",
    "fed_count",
    "halts",
    "exact_step",
    "step_kwargs",
]

#: A step without an evaluation budget still refuses N_t above this (as the float path does).
MAX_UNBUDGETED_COUNT = 10 ** 15


class SharedNoise:
    """GTM.Init's state: eta_1 ~ Exp(tau_1) as a lazy real (drawn once, refined, never redrawn)
    and mu_1. The drawn bits of eta_1 are the deployment's secret (:meth:`secret_hex`)."""

    __slots__ = ("tau1", "mu1", "eta1")

    def __init__(self, tau1: float, mu1: float, eta1: LazyExponential):
        self.tau1 = check_positive("tau1", tau1)
        self.mu1 = check_positive("mu1", mu1)
        if not isinstance(eta1, LazyExponential) or eta1.scale != self.tau1:
            raise InvalidParameter("eta1 must be a LazyExponential with scale tau1")
        self.eta1 = eta1

    @classmethod
    def draw(cls, tau1: float, mu1: float, source: BitSource) -> "SharedNoise":
        """GTM.Init(tau1, mu1): eta_1 ~ Exp(tau_1) (no bits are read until a step needs them)."""
        return cls(tau1, mu1, LazyExponential.draw(check_positive("tau1", tau1), source))

    def secret_hex(self) -> str:
        """eta_1's drawn bits, fixed width (:meth:`LazyUniform.to_hex`). A secret."""
        return self.eta1.uniform.to_hex()

    @classmethod
    def from_secret_hex(cls, text: str, tau1: float, mu1: float, source: BitSource) -> "SharedNoise":
        return cls(tau1, mu1, LazyExponential(check_positive("tau1", tau1), LazyUniform.from_hex(text, source)))

    def __repr__(self) -> str:
        return "SharedNoise(<hidden>)"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("SharedNoise holds a secret and cannot be pickled")


class PoissonMean(LazyReal):
    """lambda_t = rho_t exp(eps_t s_t (mu_1 - eta_1 + eta_{2,t})) (Definition 14), as a lazy real."""

    def __init__(self, rho: float, eps_t: float, s: int, mu1: float, eta1: LazyReal, eta2: LazyReal):
        self.rho, self.eps_t, self.s, self.mu1 = rho, eps_t, s, mu1
        self.eta1, self.eta2 = eta1, eta2

    def enclosure(self, prec: int) -> arb:
        e1 = self.eta1.enclosure(prec)
        e2 = self.eta2.enclosure(prec)
        with ctx.workprec(prec + GUARD_BITS):
            z = (arb(self.mu1) - e1 + e2) * self.s
            return arb(self.rho) * (arb(self.eps_t) * z).exp()


def check_tau2(tau2, eps_t: float) -> float:
    """tau_{2,t} > 0 as a float; tau_{2,t} = inf (no per-step noise) only when eps_t = 0."""
    tau2 = check_real("tau2", tau2, low=0.0, low_open=True, infinite_ok=True)
    if math.isinf(tau2) and eps_t > 0:
        raise InvalidParameter("tau2 = inf is only allowed when eps_t = 0")
    return tau2


def draw_count(noise: SharedNoise, source: BitSource, *, eps_t: float, tau2: float, rho: float,
               s: int, budget: int | None) -> int | None:
    """Phase 1: N_t ~ Po(lambda_t) exactly; None if N_t exceeds the budget (decided exactly).

    Touches no data. Refines eta_1 in place (more bits of the same real) when the decision needs
    it; draws a fresh eta_{2,t} (not needed, hence not drawn, when eps_t = 0: lambda_t = rho_t).
    The returned N_t is a secret.
    """
    eps_t = check_nonnegative("eps_t", eps_t)
    tau2 = check_tau2(tau2, eps_t)
    rho = check_positive("rho", rho)
    s = check_direction("s", s)
    limit = MAX_UNBUDGETED_COUNT if budget is None else check_nonnegative_int("evaluation_budget", budget)
    if eps_t == 0.0:
        lam: LazyReal = ExactConstant(rho)
    else:
        eta2 = LazyExponential.draw(tau2, source)
        lam = PoissonMean(rho, eps_t, s, noise.mu1, noise.eta1, eta2)
    return poisson_inverse(LazyUniform(source), lam, limit=limit)


def fed_count(k_raw: int, n: int, *, phi: float, s: int, source: BitSource) -> int:
    """K_t of the mechanism Algorithm 1 is fed, from the count k_raw of +1 outputs of the
    original M_t among n evaluations: purification (Lemma 24; each output flipped with
    probability phi, so k_raw - Bin(k_raw, phi) + Bin(n - k_raw, phi)), then negation for the
    flipped variant (s = -1: K = n - K). Same law as flipping each evaluation (the n
    evaluations are exchangeable and the flips independent of them)."""
    if not (_is_count(n) and _is_count(k_raw) and k_raw <= n):  # values not shown: N_t, K_t are secrets
        raise MechanismError("the reported count of positive outputs is not an integer in [0, evaluations]")
    n, k_raw = int(n), int(k_raw)
    phi = check_probability("phi", phi)
    if not phi <= 0.5:
        raise InvalidParameter(f"phi must be in [0, 1/2], got {phi!r}")
    k = k_raw
    if phi > 0:
        k = k_raw - bernoulli_count(phi, k_raw, source) + bernoulli_count(phi, n - k_raw, source)
    return n - k if check_direction("s", s) == -1 else k


def _is_count(x) -> bool:
    return is_integer(x) and int(x) >= 0


def purification_crossover(sp) -> float:
    """phi_t of Lemma 24 when step sp.t is purified (delta_t > 0), else 0 (no flips)."""
    return sp.phi if sp.delta_t > 0 else 0.0


def halts(k: int, c: int, s: int) -> bool:
    """Algorithm 1's decision: a_t = s_t (halt) iff s_t (K_t - c_t - 1/2) > 0, i.e. K_t > c_t
    for s_t = +1 and K_t <= c_t for s_t = -1."""
    return k > c if s == 1 else k <= c


@dataclass(frozen=True)
class StepOutcome:
    """Result of one exact step. ``halted`` is public; ``evaluations`` (N_t) is a secret and
    is hidden from ``repr``. ``budget_exceeded``: N_t > budget, the mechanism was not run."""

    halted: bool
    budget_exceeded: bool
    evaluations: int = field(repr=False)


def exact_step(noise: SharedNoise, source: BitSource, count_positive: Callable[[int], int], *,
               eps_t: float, tau2: float, c: int, rho: float, s: int, phi: float = 0.0,
               budget: int | None = None) -> StepOutcome:
    """GTM.Step(M_t, X_t, eps_t, tau_{2,t}, c_t, rho_t, s_t) with exact sampling.

    ``count_positive(n)`` must evaluate the original mechanism M_t n times on the data and
    return its number of +1 outputs; it is not called when N_t exceeds the budget (the
    outcome then says ``budget_exceeded``). ``phi`` is purification's crossover (0: none).
    """
    c = check_nonnegative_int("c", c)
    n = draw_count(noise, source, eps_t=eps_t, tau2=tau2, rho=rho, s=s, budget=budget)
    if n is None:
        return StepOutcome(halted=False, budget_exceeded=True, evaluations=0)
    k_raw = count_positive(n)
    k = fed_count(k_raw, n, phi=phi, s=s, source=source)
    return StepOutcome(halted=halts(k, c, s), budget_exceeded=False, evaluations=n)


def step_kwargs(sp) -> dict:
    """The plan numbers :func:`exact_step` takes, from a :class:`gtm_core.planners.StepPlan`."""
    return {"eps_t": sp.eps_t, "tau2": sp.tau2, "c": sp.c, "rho": sp.rho, "s": sp.s,
            "phi": purification_crossover(sp), "budget": sp.evaluation_budget}

