"""The horizon planner's rigorous failure bound (python-flint ``arb``) and its float64 mirror.

The claim over steps 1..T (module :mod:`.horizon`):

    Pr[ some t <= T halts with p_t <= p_bar, or some t <= T with p_t >= p* continues ] <= beta     (*)

Why (*) holds for adaptive streams
----------------------------------
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
sum over panels in ``arb`` ball arithmetic (H, C as balls at :data:`CERT_BITS` bits, the panel masses
exact up to ball radii); a design is certified only if the whole ball is <= beta.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from flint import arb

from ..exact import StepModel, step_probabilities_ball, working_precision
from ..numeric import upper_float
from .exact_noise import step_probabilities_float
from .horizon_problem import HorizonDesign, HorizonProblem

__all__ = [
    "CERT_BITS",
    "TAIL_FRACTION",
    "FailureBound",
    "failure_bound",
    "failure_bound_float",
    "expected_evaluations_per_step",
]

CERT_BITS = 128
TAIL_FRACTION = 1e-3       # the eta_1 tail beyond the last node: <= this fraction of beta
_GAP_FRACTION = 0.01       # panels refined until (upper - lower float sum) <= this fraction of beta
_MAX_PANELS = 6000
_INITIAL_EDGES = 129
_REFINEMENT_ROUNDS = 12


@dataclass(frozen=True)
class FailureBound:
    """The certified bound on Pr[(*) fails] of one design, for the deployed floats.

    ``failure_upper``: a float >= the whole arb ball ``failure_ball`` (its text, 10 digits with radius);
    ``certified``: the ball lies at or below ``beta``; ``panels``: the panels on [0, ``eta1_cutoff``]
    (U of the module docstring); ``tail_upper``: e^{-U/tau_1} rounded up; ``type_I_at_eta1_0`` and
    ``type_II_at_eta1_0``: H(0) and C(0) rounded up; ``precision_bits``: the ball precision.
    :meth:`to_dict` is the serialised form (``gtm tune --json``'s ``certificate``; U under key ``"U"``).
    """

    failure_upper: float
    failure_ball: str
    beta: float
    certified: bool
    panels: int
    eta1_cutoff: float
    tail_upper: float
    type_I_at_eta1_0: float
    type_II_at_eta1_0: float
    precision_bits: int

    def to_dict(self) -> dict:
        d = asdict(self)
        return {("U" if k == "eta1_cutoff" else k): v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict) -> FailureBound:
        return cls(**{("eta1_cutoff" if k == "U" else k): v for k, v in d.items()})


def _engine_models(problem: HorizonProblem, design: HorizonDesign, tau2: float) -> tuple[StepModel, StepModel]:
    """(C model at p = p*, H model at p = p_bar): the engine's view, r = p (s = +1) or 1 - p (s = -1)."""
    with working_precision(CERT_BITS + 64):
        if design.s == 1:
            r_cont, r_halt = arb(problem.p_star), arb(design.p_bar)
        else:
            r_cont, r_halt = 1 - arb(problem.p_star), 1 - arb(design.p_bar)

    def model(r: arb) -> StepModel:
        return StepModel(1, design.s, int(design.c), float(design.rho), float(problem.eps_t), float(tau2), r)

    return model(r_cont), model(r_halt)


def _float_error_probabilities(problem: HorizonProblem, design: HorizonDesign, mu1: float, tau2: float,
                               xs) -> tuple[np.ndarray, np.ndarray]:
    """Float64 C(x), H(x) at the nodes (node placement and the float mirror only)."""
    s, eps = design.s, problem.eps_t
    sigma2 = 1.0 / (eps * tau2)
    r_cont = problem.target_rate(s)
    r_halt = design.p_bar if s == 1 else 1 - design.p_bar
    cont, halt = np.empty(len(xs)), np.empty(len(xs))
    for i, x in enumerate(xs):
        scale = design.rho * math.exp(eps * s * (mu1 - x))
        cont[i] = step_probabilities_float(s, design.c, scale * r_cont, sigma2)[0]
        halt[i] = step_probabilities_float(s, design.c, scale * r_halt, sigma2)[1]
    return cont, halt


def _panel_error_sums(problem: HorizonProblem, edges: np.ndarray, cont: np.ndarray, halt: np.ndarray,
                      tau1: float) -> tuple[np.ndarray, np.ndarray]:
    """Per panel, the float upper sum min(1, T max(H(x_a), C(x_b))) mass and the matching lower sum."""
    mass = np.exp(-edges[:-1] / tau1) - np.exp(-edges[1:] / tau1)
    upper = np.minimum(1.0, problem.T * np.maximum(halt[:-1], cont[1:])) * mass
    lower = np.minimum(1.0, problem.T * np.maximum(halt[1:], cont[:-1])) * mass
    return upper, lower


def _panel_edges(problem: HorizonProblem, design: HorizonDesign, tau1: float, mu1: float, tau2: float, *,
                 refine_all: bool = False) -> list[float]:
    """Panel edges on [0, U]: panels split in halves where the float upper and lower sums differ."""
    beta = problem.beta
    cutoff = tau1 * math.log(1.0 / (TAIL_FRACTION * beta))
    xs = list(np.linspace(0.0, cutoff, _INITIAL_EDGES))
    tol = _GAP_FRACTION * beta
    for _ in range(_REFINEMENT_ROUNDS):
        x = np.asarray(xs)
        cont, halt = _float_error_probabilities(problem, design, mu1, tau2, xs)
        upper, lower = _panel_error_sums(problem, x, cont, halt, tau1)
        gap = upper - lower
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
                  nodes=None, refine_all: bool = False) -> FailureBound:
    """Rigorous upper bound (arb) on Pr[(*) fails] of the module docstring, for the deployed floats.

    ``nodes``: panel edges to use (default: the adaptive float placement); ``refine_all`` halves every
    panel of the default placement (an independent, finer grid: the certify witness uses it)."""
    xs = list(nodes) if nodes is not None else _panel_edges(problem, design, tau1, mu1, tau2,
                                                            refine_all=refine_all)
    model_cont, model_halt = _engine_models(problem, design, tau2)
    with working_precision(CERT_BITS):
        cont = [probs[0] for probs in step_probabilities_ball(model_cont, mu1, xs, CERT_BITS)]
        halt = [probs[1] for probs in step_probabilities_ball(model_halt, mu1, xs, CERT_BITS)]
        tau1_ball = arb(tau1)
        steps = arb(problem.T)
        one = arb(1)
        total = arb(0)
        survival = [(-arb(x) / tau1_ball).exp() for x in xs]  # Pr[eta_1 > x] = e^{-x/tau_1}
        for i in range(len(xs) - 1):
            panel_error = steps * halt[i].max(cont[i + 1])
            capped = one if panel_error.upper() >= 1 else panel_error
            total += capped * (survival[i] - survival[i + 1])
        tail = survival[-1]
        total += tail
        return FailureBound(
            failure_upper=upper_float(total),
            failure_ball=total.str(10, radius=True),
            beta=problem.beta,
            certified=bool(total <= arb(problem.beta)),
            panels=len(xs) - 1,
            eta1_cutoff=xs[-1],
            tail_upper=upper_float(tail),
            type_I_at_eta1_0=upper_float(halt[0]),
            type_II_at_eta1_0=upper_float(cont[0]),
            precision_bits=CERT_BITS,
        )


def failure_bound_float(problem: HorizonProblem, design: HorizonDesign, *, tau1: float, mu1: float,
                        tau2: float) -> float:
    """The same panel sum in float64 (search and plots only; never a certificate)."""
    xs = _panel_edges(problem, design, tau1, mu1, tau2)
    x = np.asarray(xs)
    cont, halt = _float_error_probabilities(problem, design, mu1, tau2, xs)
    upper, _ = _panel_error_sums(problem, x, cont, halt, tau1)
    return float(upper.sum() + math.exp(-x[-1] / tau1))


def expected_evaluations_per_step(problem: HorizonProblem, design: HorizonDesign, *, tau1: float, mu1: float,
                                  tau2: float) -> float:
    """E[lambda_t] of a step that is run (Lemma 12(2) Pareto moments), the deployed numbers; inf when the
    needed moment diverges (sigma_2 <= 1 for s = +1, sigma_1 <= 1 for s = -1)."""
    e = problem.eps_t
    sigma1, sigma2 = 1 / (e * tau1), 1 / (e * tau2)
    if design.s == 1:
        if sigma2 <= 1:
            return math.inf
        return design.rho * math.exp(e * mu1) * sigma1 / (sigma1 + 1) * sigma2 / (sigma2 - 1)
    if sigma1 <= 1:
        return math.inf
    return design.rho * math.exp(-e * mu1) * sigma1 / (sigma1 - 1) * sigma2 / (sigma2 + 1)
