"""Vectorised simulator of Algorithm 1 on streams of Bernoulli mechanisms.

n independent runs x T steps, driven by the same :class:`Plan` as the reference GTM.
Per step and per live run: eta_2 ~ Exp(tau2), lambda = rho exp(eps_t s (mu1 - eta1 + eta2)),
then by Poisson thinning (Lemma 10(2)) the count of +1 outputs is K ~ Po(lambda q) with
q = Pr[fed mechanism = +1] (q = p_t for s = +1, 1 - p_t for the flipped variant s = -1, after
purification (1 - 2 phi) p + phi when delta_t > 0). When evaluation counts are asked for,
N - K ~ Po(lambda (1 - q)) independently (Poisson splitting), so N = K + (N - K) has the law of
N ~ Po(lambda) with K | N ~ Binomial(N, q), exactly as in the reference implementation.

When evaluation counts are not needed, the halting decision K > c is drawn as
Gamma(c+1, 1) <= lambda q (the Poisson-process identity Pr[Po(mu) >= c+1] = Pr[Gamma(c+1) <= mu]),
which has exactly the same law and is three times faster than a Poisson draw.

The simulator models the mathematical Algorithm 1: no evaluation budget is enforced.

Sampling is float64 (numpy's exponential, gamma and Poisson samplers), for speed: those laws are
only approximations of the exact ones (docs/deployment.md, "Exact sampling", quantifies two
events where they differ). Deployments and the reference GTM draw with the exact samplers of
:mod:`gtm_core.exact_sampling`; results that rely on this simulator are float64 simulations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InvalidParameter
from .formulas import purified_probability
from .validation import check_bool, check_int, check_nonnegative_int, check_positive_int, check_probability, check_stream
from .planners import Plan


@dataclass(frozen=True)
class SimulationResult:
    """halt[i] = step at which run i halted (1..T), 0 if it never halted within T steps.
    evaluations[i] = total evaluations of run i (only when requested)."""

    halt: np.ndarray
    evaluations: np.ndarray | None
    T: int

    def halting_histogram(self) -> np.ndarray:
        """counts[k] for k = 0 (never), 1..T."""
        return np.bincount(self.halt, minlength=self.T + 1)


def fed_success_probability(step, p: float) -> float:
    """Pr[+1] of the mechanism actually fed to the GTM at this step (purified, then flipped if s = -1)."""
    q = check_probability("p", p)
    if step.delta_t > 0:
        q = purified_probability(q, step.phi)
    return q if step.s == 1 else 1.0 - q


def simulate(
    plan: Plan,
    p,
    n: int,
    rng: np.random.Generator,
    *,
    T: int | None = None,
    evaluations: bool = False,
    chunk: int = 1 << 20,
) -> SimulationResult:
    """Simulate n independent runs of the GTM of ``plan`` on the Bernoulli stream ``p``."""
    if not isinstance(plan, Plan):
        raise InvalidParameter(f"plan must be a gtm_core Plan, got {type(plan).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if T is not None:
        T = check_int("T", T)
    evaluations = check_bool("evaluations", evaluations)
    chunk = check_positive_int("chunk", chunk)
    p = check_stream("p", p, length=T)
    T = p.size
    n = check_nonnegative_int("n", n)
    if T > plan.horizon:
        raise InvalidParameter(f"stream length {T} exceeds the plan's horizon {plan.horizon}")
    steps = plan.steps(range(1, T + 1))
    try:
        halt = np.zeros(n, dtype=np.int64)
        evals = np.zeros(n, dtype=np.int64) if evaluations else None
    except (MemoryError, ValueError):
        raise InvalidParameter(f"n={n} runs do not fit in memory; simulate in smaller batches") from None
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        _simulate_chunk(plan, steps, p, rng, halt[start:stop],
                        None if evals is None else evals[start:stop])
    return SimulationResult(halt=halt, evaluations=evals, T=T)


def _simulate_chunk(plan, steps, p, rng, halt_out, evals_out) -> None:
    # Same random draws, in the same order, as the literal per-step formulas below; written with
    # in-place arithmetic, no index array until the first run halts and no compaction after the
    # last step (short audit streams spend most of their time on such bookkeeping).
    m = halt_out.size
    idx = None  # indices of the live runs; None = all m runs are live
    # shift eta_1 into the constant: base = mu1 - eta1 (the only per-run state);
    # tau1 * standard_exponential is exactly numpy's exponential(tau1)
    base = rng.standard_exponential(m)
    base *= -plan.tau1
    base += plan.mu1
    last = len(steps) - 1
    for i, (sp, pt) in enumerate(zip(steps, p)):
        n_live = m if idx is None else idx.size
        if n_live == 0:
            break
        q = fed_success_probability(sp, float(pt))
        if sp.eps_t == 0:
            lam = np.full(n_live, sp.rho)
        else:
            # lambda = rho exp(eps_t s (mu1 - eta1 + eta2)), eta2 ~ Exp(tau2); exp overflow -> inf
            # is caught below
            lam = rng.standard_exponential(n_live)
            lam *= sp.tau2
            lam += base
            lam *= sp.eps_t * sp.s
            with np.errstate(over="ignore"):
                np.exp(lam, out=lam)
            lam *= sp.rho
        if evals_out is not None:
            lam = np.minimum(lam, 1e18)  # numpy's Poisson limit; such runs are astronomically rare
            k = rng.poisson(lam * q)
            extra = k + rng.poisson(lam * (1.0 - q))
            if idx is None:
                evals_out += extra
            else:
                evals_out[idx] += extra
            above = k > sp.c
        else:
            # K >= c+1 for K ~ Po(mu)  <=>  the (c+1)-th arrival of a unit-rate Poisson process
            # comes before time mu  <=>  G <= mu with G ~ Gamma(c+1, 1). One gamma draw replaces
            # the (three times slower) Poisson draw; the decision has exactly the same law.
            lam *= q
            above = rng.standard_gamma(sp.c + 1.0, n_live) <= lam
        stop = above if sp.s == 1 else np.logical_not(above, out=above)
        if i == last:
            if idx is None:
                halt_out[stop] = sp.t
            else:
                halt_out[idx[stop]] = sp.t
            break
        keep = np.flatnonzero(~stop)
        if keep.size == n_live:
            continue
        if idx is None:
            halt_out[stop] = sp.t
            idx = keep
        else:
            halt_out[idx[stop]] = sp.t
            idx = idx[keep]
        base = base[keep]
