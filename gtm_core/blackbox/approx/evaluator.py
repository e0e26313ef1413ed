"""Algorithm 2: the approximate-DP black-box evaluator (Theorem 2.6), for d in {1, 2, 3}.

The extraction has no pseudocode for Algorithm 2; it is read off the proof of Theorem 2.6
(Theorem C.7) and mirrors Algorithm 4 without its uniform branch:

    eps_0 = eps/2, delta_0 = delta/2, beta_0 = beta/2              (params.evaluator_budget)
    Delta = Algorithm 6's Delta_0 on Y~ at (eps_0, beta_0, delta_0)  (params.highdim_margin)
    K = ceil((d+1)(Delta+1)),  R = TLap(1, eps_0, delta_0)'s radius
    n~ = |S| + Z, Z ~ TLap(1, eps_0, delta_0);  h = floor(n~ - R - K)
    h <= 0: return f(empty set);  else: Algorithm 6 on depth_h^f over Y~ at (eps_0, beta_0, delta_0)

Privacy (proof of 2.6): (eps_0, delta_0) for n~, (eps_0, delta_0) for Algorithm 6 (Theorem G.4, any C),
basic composition -> (eps, delta). It holds for every ``ApproxConstants`` (C only moves K, a public
number). The utility statement (lambda = ceil(K + 2R + 1)) holds only where Theorem G.4's utility does
(C large enough, which the paper does not compute) - see docs/blackbox.md.

The depth oracle is the pure evaluator's (:class:`gtm_core.blackbox.evaluator.BlackBoxEvaluator`):
exact enumeration for n <= 16, the monotone method for d = 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ...errors import InvalidParameter
from ...validation import check_real
from .. import params as P
from ..evaluator import BlackBoxEvaluator, EvaluatorConfig, point_code
from ..mechanisms import sample_tlap
from .highdim import algorithm6_law, algorithm6_run
from .onedim import Algorithm5Variant
from .params import ApproxConstants, depth_margin, evaluator_budget, highdim_margin, log_star

__all__ = ["ApproxConfig", "ApproxParameters", "approx_parameters", "ApproxEvaluator"]


@dataclass(frozen=True)
class ApproxConfig:
    """epsilon, delta in (0, 1) (Theorem 2.6), beta in (0, 1), the domain Y and the open constants."""

    epsilon: float
    delta: float
    beta: float
    domain: tuple
    constants: ApproxConstants = field(default_factory=ApproxConstants)

    def __post_init__(self):
        check_real("epsilon", self.epsilon, low=0, high=1, low_open=True, high_open=True)
        check_real("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        if not isinstance(self.constants, ApproxConstants):
            raise InvalidParameter(f"constants must be ApproxConstants, got {type(self.constants).__name__}")
        pure = EvaluatorConfig(self.epsilon, self.beta, self.domain)  # validates beta and the domain
        object.__setattr__(self, "domain", pure.domain)

    @property
    def pure(self) -> EvaluatorConfig:
        return EvaluatorConfig(self.epsilon, self.beta, self.domain)

    @property
    def d(self) -> int:
        return len(self.domain[0])

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "beta": self.beta,
                "domain": [list(p) for p in self.domain], "constants": self.constants.to_dict()}


@dataclass(frozen=True)
class ApproxParameters:
    """Algorithm 2's derived quantities for one configuration (M = |Y~|, H = log* M)."""

    epsilon: float
    delta: float
    beta: float
    d: int
    M: int
    H: int
    eps0: float
    beta0: float
    delta0: float
    Delta: float
    K: int
    R: float

    @property
    def locality(self) -> int:
        """lambda = ceil(K + 2R + 1) (proof of Theorem 2.6)."""
        return P.locality(self.R, self.K)

    def to_dict(self) -> dict:
        return dict(self.__dict__, locality=self.locality)


def approx_parameters(config: ApproxConfig, M: int) -> ApproxParameters:
    """Algorithm 2's parameters (see the module docstring) for |Y~| = M."""
    e0, b0, d0 = evaluator_budget(config.epsilon, config.beta, config.delta)
    H = log_star(M)
    Delta = highdim_margin(e0, b0, d0, config.d, H, config.constants.C)
    return ApproxParameters(config.epsilon, config.delta, config.beta, config.d, M, H, e0, b0, d0, Delta,
                            depth_margin(Delta, config.d), P.tlap_radius(e0, d0))


class ApproxEvaluator:
    """Algorithm 2 for a configuration and a black-box f (a callable on a list of records)."""

    def __init__(self, config: ApproxConfig, f: Callable, *, depth_method: str = "auto",
                 variant: Algorithm5Variant = Algorithm5Variant()):
        self.config, self.variant = config, variant
        self.oracle = BlackBoxEvaluator(config.pure, f, depth_method=depth_method)
        self.extended = self.oracle.extended
        self.params = approx_parameters(config, len(self.extended))

    def empty_point(self) -> tuple:
        """f(empty set) as a point of Y (Algorithm 2's h <= 0 branch)."""
        return self.extended[self.oracle.empty_output()]

    def cutoff_law(self, n: int) -> dict:
        """P(h = k) for the size estimate (float64; the exact version is in :mod:`.exact`)."""
        from ..mechanisms import tlap_cdf
        p = self.params
        out: dict = {}
        base = n - p.R - p.K
        for k in range(int(np.floor(base - p.R)) - 1, int(np.floor(base + p.R)) + 2):
            # h = k  <=>  k <= base + Z < k + 1
            pk = tlap_cdf(k + 1 - base, p.eps0, p.R) - tlap_cdf(k - base, p.eps0, p.R)
            if pk > 0:
                out[max(k, 0)] = out.get(max(k, 0), 0.0) + pk
        return out

    def run(self, S: Sequence, rng: np.random.Generator) -> tuple:
        """One run of Algorithm 2 on S: a point of CH(Y~) (tuple of Fractions)."""
        p = self.params
        Z = float(sample_tlap(rng, p.eps0, p.R))
        h = P.cutoff(len(S) + Z, p.R, p.K)
        if h <= 0:
            return self.empty_point()
        return algorithm6_run(self.extended, self.oracle.depths(S, h), p.eps0, p.beta0, p.delta0,
                              self.config.constants.C, rng, variant=self.variant)

    def law_given_cutoff(self, S: Sequence, h: int, *, exact: bool = False) -> dict:
        """The output law of Algorithm 2 conditional on the cutoff h."""
        p = self.params
        if h <= 0:
            return {self.empty_point(): 1}
        return algorithm6_law(self.extended, self.oracle.depths(S, h), p.eps0, p.beta0, p.delta0,
                              self.config.constants.C, exact=exact, variant=self.variant)

    def sample(self, S: Sequence, n: int, rng: np.random.Generator) -> dict:
        """n independent outputs drawn from :meth:`law` (the same law as :meth:`run`, checked by a chi-square
        test in tests/gtm_core/blackbox/approx/test_evaluator.py): {point code: count}."""
        law = self.law(S)
        keys = sorted(law)
        p = np.array([law[k] for k in keys])
        counts = rng.multinomial(int(n), p / p.sum())
        return {point_code(k): int(c) for k, c in zip(keys, counts) if c}

    def law(self, S: Sequence) -> dict:
        """The full output law (float64): mixture over the cutoff law."""
        out: dict = {}
        for h, ph in self.cutoff_law(len(S)).items():
            for y, py in self.law_given_cutoff(S, h).items():
                out[y] = out.get(y, 0.0) + ph * float(py)
        return out
