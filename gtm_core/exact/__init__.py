"""Exact transcript distribution of the GTM (Lemma 17, equations (9)-(12)).

For a plan and a Bernoulli stream p_1..p_T (p_t = Pr[M_t = +1] of the original
mechanism) this module computes, at a chosen precision, the probability of
every transcript: "continue through t" (all outputs -s_1..-s_t) and "halt
exactly at t" (outputs -s_1..-s_{t-1}, s_t).  Every number carries an error
bound; the privacy ratios of two neighbouring streams are compared with the
bounds (6) and (7) of Lemma 17.

The closed form (derived here, checked against nested quadrature in the tests)
-----------------------------------------------------------------------------
Condition on eta_1 = x.  By Lemma 15(1) step i continues with probability
g_i(Z_i), a Poisson CDF at c_i with mean lambda_i(Z_i) r_i, where r_i = p_i for
the direct variant (s_i = +1) and r_i = q_i = 1 - p_i for the flipped one (the
GTM is fed the negated mechanism).  Write w = e^{eps_i eta_2} ~ Pareto(sigma),
sigma = 1/(eps_i tau_{2,i}) (Pr[w > u] = u^{-sigma}, u >= 1), G ~ Gamma(c+1, 1)
and use F(c; m) = Pr[Po(m) <= c] = Pr[G > m].

* s = +1: the count mean is a w with a = rho r e^{eps (mu_1 - x)}, and
  h(x) = Pr[G > a w] = E_G[(1 - (G/a)^{-sigma}) 1{G > a}]
       = Q(c+1, a) - a^sigma Gamma(c+1-sigma, a) / c!,
  halting 1 - h(x) = P(c+1, a) + a^sigma Gamma(c+1-sigma, a) / c!.
* s = -1: the count mean is b / w with b = rho r e^{-eps (mu_1 - x)}, and
  h(x) = Pr[G <= b / w] = E_G[(1 - (G/b)^sigma) 1{G <= b}]
       = P(c+1, b) - b^{-sigma} gamma(c+1+sigma, b) / c!,
  halting 1 - h(x) = Q(c+1, b) + b^{-sigma} gamma(c+1+sigma, b) / c!.

Here P, Q are the regularised lower/upper incomplete gamma functions, so
Q(c+1, m) is exactly the Poisson CDF F(c; m).  Expanding F(c; a w) as the
finite sum of Poisson terms gives the equivalent "finite sum of upper
incomplete gamma functions" sigma a^sigma sum_k Gamma(k - sigma, a)/k!; the
recurrence Gamma(s+1, a) = s Gamma(s, a) + a^s e^{-a} telescopes it into the
single term above (see :func:`continuation_probability_finite_sum`, used as an
independent check).  With eps_i = 0 there is no noise: h = F(c; rho r) (s=+1)
or 1 - F(c; rho r) (s=-1), a constant.

Both h and 1 - h are increasing/decreasing in x (more shared noise eta_1
means a smaller count mean above threshold, a larger one below), so the
transcript probabilities are the one-dimensional integrals

  C_t = int_0^inf prod_{i<=t} h_i(x) f_1(x) dx,
  H_t = int_0^inf prod_{i<t} h_i(x) (1 - h_t(x)) f_1(x) dx,   f_1 = Exp(tau_1) density,

computed together on one adaptive Gauss-Legendre grid (all 2T integrands share
the evaluations of h_i at each node), with a rigorous bound for the tail
beyond the last node (monotonicity: h_i <= 1, 1 - h_t decreasing).

Arithmetic is python-flint ``arb`` ball arithmetic throughout, so rounding is
accounted for rigorously.  The quadrature error is either *estimated* (default:
comparison of each panel with its two halves) or, with ``certified=True``,
*bounded rigorously* through the Gauss-Legendre remainder theorem on a
Bernstein ellipse, with |h| bounded on the ellipse by real evaluations (see
:func:`_ellipse_bound`).  Results are reported as mpmath numbers at ``dps``
digits, with their error bound and the arb ball.

Where things live
-----------------
:mod:`.arb` (ball helpers), :mod:`.step` (the closed form of one step), :mod:`.results`,
:mod:`.quadrature` (integration over eta_1), :mod:`.transcripts` (the distribution),
:mod:`.privacy` (ratios against Lemma 17), :mod:`.accuracy` (exact Type I / II and the exact
rejection threshold), :mod:`.search` (worst-case privacy search over neighbouring streams) with
its start points in :mod:`.starts`.
The calibrated planners built on this engine live in :mod:`gtm_core.planners`.
"""

from ..errors import NotNeighbouring
from ..neighbours import neighbour_interval
from .accuracy import exact_rejection_threshold, step_error_probabilities
from .arb import bits_for_dps, probabilities_as_arb, to_arb, to_mpf, working_precision
from .privacy import PrivacyReport, PrivacyRow, check_neighbouring, privacy_ratios
from .results import Probability, TranscriptDistribution
from .search import PerturbedPlan, SearchResult, exact_loss, perturbed_plan, worst_case_search
from .step import (
    StepEval,
    StepModel,
    continuation_probability,
    continuation_probability_finite_sum,
    step_models,
    step_probabilities_ball,
)
from .transcripts import transcript_distribution

__all__ = [
    "NotNeighbouring",
    "Probability",
    "TranscriptDistribution",
    "PrivacyRow",
    "PrivacyReport",
    "StepModel",
    "StepEval",
    "step_models",
    "step_probabilities_ball",
    "continuation_probability",
    "continuation_probability_finite_sum",
    "transcript_distribution",
    "privacy_ratios",
    "check_neighbouring",
    "neighbour_interval",
    "step_error_probabilities",
    "exact_rejection_threshold",
    "to_arb",
    "to_mpf",
    "bits_for_dps",
    "working_precision",
    "probabilities_as_arb",
    "PerturbedPlan",
    "perturbed_plan",
    "SearchResult",
    "worst_case_search",
    "exact_loss",
]
