"""The exact transcript distribution of the GTM (Lemma 17, equations (9)-(12))."""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import mpmath
from flint import arb

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import check_int
from .arb import bits_for_dps, to_arb, working_precision
from .budgeted import GUARD_BITS, TOLERANCE_EXTRA_BITS, BudgetedStepEval
from .quadrature import Integrand, initial_edges, integrate_certified, integrate_estimated
from .results import TranscriptDistribution, probability_from_ball
from .step import StepEval, step_models


def transcript_distribution(
    plan,
    p: Sequence[Any],
    *,
    dps: int = 25,
    certified: bool = False,
    nodes_per_panel: int | None = None,
    max_panels: int = 4000,
) -> TranscriptDistribution:
    """Exact probabilities of all 2T transcripts for the stream p (length T <= horizon).

    The law is that of the mechanism the plan deploys: under an enforced evaluation budget
    (:meth:`gtm_core.planners.Plan.enforced_budget`, the ``"refuse"`` policy) every step also has the
    outcome "refused at t" (the run's terminal failed state), and the distribution carries the T
    refusal probabilities (:mod:`.budgeted`); under ``"none"`` it is Algorithm 1's 2T transcripts.

    ``dps``: target significant digits for every transcript probability.
    ``certified``: rigorous enclosures (Gauss-Legendre remainder bounds on
    Bernstein ellipses) instead of the coefficient-decay error estimate (see ``_gl_panel_with_error``).

    Phases: the per-step evaluators (:func:`_step_evaluators`), the panel edges up to the last node X
    (:func:`_initial_panel_edges`), the panel integration, the rigorous tails on [X, inf)
    (:func:`_totals_with_tails`), then the probabilities at ``dps`` digits.
    """
    check_int("dps", dps, minimum=5, maximum=500)
    T = len(p)
    horizon = getattr(plan, "horizon", None)
    if horizon is not None and T > horizon:
        raise InvalidParameter(f"stream length {T} exceeds the plan's horizon={horizon}")
    start = time.process_time()
    bits = bits_for_dps(dps)
    evals, tau1, budgeted = _step_evaluators(plan, p, bits, dps, certified, nodes_per_panel)
    f = Integrand(evals, tau1, bits)
    w = f.width
    rel_tol = mpmath.mpf(10) ** (-dps)
    edges = _initial_panel_edges(plan, evals, budgeted, dps)
    if certified:
        n = nodes_per_panel or max(12, int(dps * 0.8))
        panels = integrate_certified(f, evals, tau1, edges, n, bits, rel_tol, max_panels)
    else:
        n = nodes_per_panel or max(16, int(dps * 1.6))
        panels, edges = integrate_estimated(f, edges, n, bits, rel_tol, max_panels, float(plan.tau1))
    totals = _totals_with_tails(panels, edges, evals, tau1, w, T, bits)
    halts = tuple(probability_from_ball(totals[w * i], dps) for i in range(T))
    conts = tuple(probability_from_ball(totals[w * i + 1], dps) for i in range(T))
    refused = tuple(probability_from_ball(totals[w * i + 2], dps) for i in range(T)) if w == 3 else ()
    return TranscriptDistribution(
        T=T,
        halt=halts,
        cont=conts,
        dps=dps,
        certified=certified,
        nodes=f.count,
        seconds=time.process_time() - start,
        refused=refused,
    )


def _step_evaluators(plan, p: Sequence[Any], bits: int, dps: int, certified: bool,
                     nodes_per_panel: int | None) -> tuple[list, arb, bool]:
    """The per-step evaluators of the stream p at ``bits`` (a :class:`.budgeted.BudgetedStepEval` for a
    step under an enforced budget, else a :class:`.step.StepEval`), tau1 as a ball, and whether any step
    is budgeted.

    Raises:
        UnsupportedConfiguration: ``certified`` under an enforced evaluation budget.
    """
    with working_precision(bits):
        models = step_models(plan, p)
        tau1 = to_arb(plan.tau1)
        mu1 = to_arb(plan.mu1)
    budgeted = any(m.budget is not None for m in models)
    if budgeted and any(not to_arb(m.r).is_exact() for m in models):
        # an inexact r (a decimal string's ball at ``bits``) would be a relative 2^-bits uncertainty of the
        # refusal correction's integrand, which its panels (tolerance 2^-(bits + 8)) never resolve: convert
        # the stream at the integrand's own precision instead
        with working_precision(bits + GUARD_BITS + TOLERANCE_EXTRA_BITS):
            models = step_models(plan, p)
    if budgeted and certified:
        raise UnsupportedConfiguration(
            "certified=True is not available under an enforced evaluation budget (evaluation_budget = "
            "\"refuse\"): the refusal correction's integral carries an estimated error bound")
    inner = (nodes_per_panel or max(16, int(dps * 1.6)), max(2.0 ** -(bits + TOLERANCE_EXTRA_BITS), 1e-300))
    with working_precision(bits):
        evals = [BudgetedStepEval(m, mu1, bits, *inner) if m.budget is not None else StepEval(m, mu1, bits)
                 for m in models]
    return evals, tau1, budgeted


def _initial_panel_edges(plan, evals: list, budgeted: bool, dps: int) -> list:
    """The initial panel edges on [0, X], refined at the steps' transition points: X is the last node, beyond
    which the tail is bounded rigorously (and must be negligible at ``dps`` digits)."""
    tau1f, mu1f = float(plan.tau1), float(plan.mu1)
    trans = [ev.transition_x() for ev in evals]
    if budgeted:
        trans += [ev.budget_transition_x() for ev in evals if isinstance(ev, BudgetedStepEval)]
    trans = sorted({round(x, 1) for x in trans if x is not None and x > 0})
    X = max([mu1f] + trans) + tau1f * (dps + 8) * math.log(10)
    edges = initial_edges(trans, mu1f, tau1f, X)
    return sorted(set(edges))


def _totals_with_tails(panels: list, edges: list, evals: list, tau1: arb, w: int, T: int, bits: int) -> list[arb]:
    """The w*T outcome totals: the panels' sums plus the rigorous tail of each outcome on [X, inf), X the
    last edge (w = 2: halt_t and cont_t; w = 3 under a budget, :func:`_budgeted_tails`)."""
    with working_precision(bits + 20):
        totals = [sum((pv[j] for pv in panels), arb(0)) for j in range(w * T)]
        Xa = arb(edges[-1])
        eX = (-Xa / tau1).exp()
        Pc = arb(1)
        for i, ev in enumerate(evals):
            if w == 2:
                cont, halt = ev.probs(Xa)
                # halt_t tail in [0, (1 - h_t(X)) e^{-X/tau1}]; cont_t tail in [prod h(X) e^{-X/tau1}, e^{-X/tau1}]
                totals[2 * i] += arb(0, (halt * eX).upper())
                Pc = Pc * cont
                lo_c = (Pc * eX).lower()
                hi_c = eX.upper()
                totals[2 * i + 1] += (lo_c + hi_c) / 2 + arb(0, ((hi_c - lo_c) / 2).upper())
                continue
            totals[w * i], totals[w * i + 1], totals[w * i + 2] = _budgeted_tails(
                ev, Xa, eX, totals[w * i:w * i + 3])
    return totals


def _budgeted_tails(ev: BudgetedStepEval, Xa: arb, eX: arb, totals: list[arb]) -> tuple[arb, arb, arb]:
    """The rigorous [X, inf) tails of (halt_t, cont_t, refused_t) under a budget: halt_t <= the
    untruncated 1 - h_t, decreasing in x; refused_t <= Pr[N_t > B_t], decreasing in x for s = +1 (the
    count mean falls with eta_1), else <= 1; cont_t in [0, e^{-X/tau1}]."""
    _, halt_u = ev.base.probs(Xa)
    a, b = ev.refusal.probs(Xa)
    refused_cap = b if ev.s == 1 else arb(1)
    hi = eX.upper()
    return (totals[0] + arb(0, (halt_u * eX).upper()),
            totals[1] + hi / 2 + arb(0, (hi / 2).upper()),
            totals[2] + arb(0, (refused_cap * eX).upper()))
