"""Exact sampling for Algorithm 1: every random quantity a step needs, drawn from uniformly
random bits with rigorous ball arithmetic (python-flint ``arb``); no float decides an outcome.

What is sampled (Algorithm 1)
-----------------------------
* GTM.Init: eta_1 ~ Exp(tau_1) once (:class:`SharedNoise`), a lazily refined random real;
* step t: eta_{2,t} ~ Exp(tau_{2,t}) (lazy), Z_t = s_t (mu_1 - eta_1 + eta_{2,t}),
  lambda_t = rho_t e^{eps_t Z_t}, N_t ~ Po(lambda_t) (:func:`draw_count`); after the
  mechanism's evaluations, purification's channel (Lemma 24) and the flip (s_t = -1) on the
  count (:func:`fed_count`), then the decision (:func:`halts`). :func:`exact_step` runs a
  whole step; bits come from a :class:`BitSource` (:class:`SystemBits`, the OS CSPRNG, for
  deployments; :class:`SeededBits` / :class:`GeneratorBits` for tests, not for deployment).

Why the output law is exactly Algorithm 1's (given ideal random bits)
--------------------------------------------------------------------
Let U_0, U_1, U_2, ... be independent uniforms on (0, 1), each the value of an infinite
sequence of fair bits. Define the *ideal* outputs by inversion (the inverse-transform lemma:
if F is a distribution function and F^-(u) = inf{x : F(x) >= u}, then F^-(U) has law F;
Devroye, Non-Uniform Random Variate Generation, 1986, Thm II.2.1):
eta_1 = -tau_1 ln U_0 ~ Exp(tau_1) (mean tau_1; 1 - U ~ U), eta_{2,t} = -tau_{2,t} ln U_{2t-1},
and N_t = min{n : U_{2t} <= F(n; lambda_t)} ~ Po(lambda_t) given the eta's, with
F(n; lambda) = Q(n + 1, lambda) (DLMF 8.4.10). These are Algorithm 1's laws, with the
independence structure of Algorithm 1 (one eta_1 for the whole run, fresh eta_2, U per step).
The sampler computes the *same* functions of the *same* uniforms: it only ever knows a prefix
of each U_i and returns a decision ("N_t <= n", "N_t > budget", "U < phi") only when an arb
ball - which by arb's guarantee contains the exact value for *every* continuation of the
prefixes - lies entirely on one side of the comparison. Hence whenever it returns, its output
equals the ideal output, and it returns with probability 1: a comparison stays undecided
only while the balls overlap, their radii tend to 0 as bits and precision grow, and an exact
tie U_{2t} = F(n; lambda_t) has probability 0 (U_{2t} is continuous and independent of
lambda_t). Bits not needed by a decision are drawn later, if ever, from the same prefix
(eta_1's prefix is extended, never redrawn), so by the principle of deferred decisions the
joint law is that of drawing every sequence in full up front. Purification flips each of the
N_t outputs independently with probability phi (a float, i.e. an exact dyadic rational) by
comparing a fresh uniform with phi bit by bit (Pr = phi exactly); flipping the count instead of
the individual outputs is equal in law because the evaluations are i.i.d. The parameters
(tau's, mu_1, rho_t, eps_t, phi_t) are the plan's float64 numbers taken as exact rationals:
the law sampled is Algorithm 1's with exactly those parameters (the ones the proofs and
certificates check). Not covered: a bit source that is not uniform (the OS CSPRNG is assumed
ideal), and timing (a step's running time depends on the noise, never on the data).

A decision that would need more than :data:`MAX_BITS` bits of one uniform (probability about
2^-4000 per comparison) raises :class:`PrecisionLimitExceeded` rather than looping.
"""

from .bits import NOT_FOR_DEPLOYMENT, BitSource, GeneratorBits, SeededBits, SystemBits
from .lazy import (
    GUARD_BITS,
    MAX_BITS,
    ExactConstant,
    LazyExponential,
    LazyReal,
    LazyUniform,
    PrecisionLimitExceeded,
    exact_arb,
)
from .poisson import START_PREC, bernoulli_count, poisson_cdf, poisson_inverse, poisson_pmf
from .step import (
    MAX_UNBUDGETED_COUNT,
    PoissonMean,
    SharedNoise,
    StepOutcome,
    check_tau2,
    draw_count,
    exact_step,
    fed_count,
    halts,
    purification_crossover,
    step_kwargs,
)

__all__ = [
    "NOT_FOR_DEPLOYMENT",
    "BitSource",
    "SystemBits",
    "SeededBits",
    "GeneratorBits",
    "GUARD_BITS",
    "MAX_BITS",
    "START_PREC",
    "MAX_UNBUDGETED_COUNT",
    "PrecisionLimitExceeded",
    "LazyReal",
    "LazyUniform",
    "LazyExponential",
    "ExactConstant",
    "exact_arb",
    "poisson_cdf",
    "poisson_inverse",
    "poisson_pmf",
    "bernoulli_count",
    "SharedNoise",
    "PoissonMean",
    "StepOutcome",
    "check_tau2",
    "purification_crossover",
    "draw_count",
    "fed_count",
    "halts",
    "exact_step",
    "step_kwargs",
]
