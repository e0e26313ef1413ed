"""The exact transcript distribution of the GTM (Lemma 17, equations (9)-(12))."""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import mpmath
from flint import arb

from ..errors import InvalidParameter
from .arb import bits_for_dps, to_arb, working_precision
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

    ``dps``: target significant digits for every transcript probability.
    ``certified``: rigorous enclosures (Gauss-Legendre remainder bounds on
    Bernstein ellipses) instead of the coefficient-decay error estimate (see ``_gl_panel_with_error``).
    """
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 5 or dps > 500:
        raise InvalidParameter(f"dps must be an integer in [5, 500], got {dps!r}")
    T = len(p)
    horizon = getattr(plan, "horizon", None)
    if horizon is not None and T > horizon:
        raise InvalidParameter(f"stream length {T} exceeds the plan's horizon={horizon}")
    start = time.process_time()
    bits = bits_for_dps(dps)
    with working_precision(bits):
        models = step_models(plan, p)
        tau1 = to_arb(plan.tau1)
        mu1 = to_arb(plan.mu1)
        evals = [StepEval(m, mu1, bits) for m in models]
    f = Integrand(evals, tau1, bits)
    rel_tol = mpmath.mpf(10) ** (-dps)

    # the last node X: beyond it the tail is bounded rigorously (and must be negligible)
    tau1f, mu1f = float(plan.tau1), float(plan.mu1)
    trans = [ev.transition_x() for ev in evals]
    trans = sorted({round(x, 1) for x in trans if x is not None and x > 0})
    X = max([mu1f] + trans) + tau1f * (dps + 8) * math.log(10)
    edges = initial_edges(trans, mu1f, tau1f, X)
    edges = sorted(set(edges))
    if certified:
        n = nodes_per_panel or max(12, int(dps * 0.8))
        panels = integrate_certified(f, evals, tau1, edges, n, bits, rel_tol, max_panels)
    else:
        n = nodes_per_panel or max(16, int(dps * 1.6))
        panels, edges = integrate_estimated(f, edges, n, bits, rel_tol, max_panels, tau1f)
    with working_precision(bits + 20):
        totals = [sum((pv[j] for pv in panels), arb(0)) for j in range(2 * T)]
        # rigorous tail on [X, inf)
        Xa = arb(edges[-1])
        eX = (-Xa / tau1).exp()
        Pc = arb(1)
        for i, ev in enumerate(evals):
            cont, halt = ev.probs(Xa)
            # halt_t tail in [0, (1 - h_t(X)) e^{-X/tau1}]; cont_t tail in [prod h(X) e^{-X/tau1}, e^{-X/tau1}]
            totals[2 * i] += arb(0, (halt * eX).upper())
            Pc = Pc * cont
            lo_c = (Pc * eX).lower()
            hi_c = eX.upper()
            totals[2 * i + 1] += (lo_c + hi_c) / 2 + arb(0, ((hi_c - lo_c) / 2).upper())
    halts = tuple(probability_from_ball(totals[2 * i], dps) for i in range(T))
    conts = tuple(probability_from_ball(totals[2 * i + 1], dps) for i in range(T))
    return TranscriptDistribution(
        T=T,
        halt=halts,
        cont=conts,
        dps=dps,
        certified=certified,
        nodes=f.count,
        seconds=time.process_time() - start,
    )
