"""The exact witness: the exact probability of every output sequence (Y_1, ..., Y_T) of
BatchToCO on a tiny stream and on its neighbour (one edge absent), and the privacy loss.

How the law is assembled (Algorithm 3, nothing sampled):
* Y_1 ~ A(X_1, eps(1,1)) - the batch algorithm's exact law (``problem.law``; coverage with
  k = 1 or Max-Cut).
* A *pattern* is the set of checkpoint times H within 2..T. Instance l starts the step after
  checkpoint l-1 and its halting law is the project's exact engine
  (:func:`gtm_core.exact.transcript_distribution`) on the exact test probabilities
  p_t = sum_Y Pr[A(X_t, eps_t/2) = Y] Pr[f(X_t, Y) + Lap(2/eps_t) >= h_l] (Definition 36).
  Instances are independent (fresh noise at every Init).
* At a checkpoint, ThresholdSelect's output law is closed-form: with q_Y = Pr[draw Y and pass]
  and r = 1 - sum_Y q_Y, Pr[Y] = q_Y (1 - (r(1 - xi))^T) / (1 - r(1 - xi)), Pr[-1] = rest.

The law is that of an ``implementation`` (:mod:`.implementation`; default Algorithm 3 as
printed): the privacy parameter A is called with (``batch_epsilon``), whether ThresholdSelect's
score is noised (``noised_score``), and whether every GTM_l.Init draws fresh noise
(``fresh_instance_noise``). Without fresh noise, the one eta_1 - and tau_1, mu_1 - of GTM_2 is
kept across checkpoints, and the halting law is integrated jointly over eta_1 with
:func:`gtm_core.exact.continuation_probability`. The power suite's broken implementations are in
:mod:`audits.power.batchtoco`.

Pure DP only (delta = 0). The loss is max over sequences of |ln P(seq) / P'(seq)|
(infinite when one side is 0); for approximate claims :func:`hockey_stick` gives delta(eps).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass

import mpmath

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..exact import continuation_probability, transcript_distribution
from ..validation import check_int
from . import certified as C
from . import params as P
from .gtm_instance import InstancePlan, step_privacy_used
from .implementation import ALGORITHM3, Algorithm3
from .params import COConfig

def laplace_survival(x, scale):
    """Pr[Lap(scale) >= x] (mpmath)."""
    x, b = mpmath.mpf(x), mpmath.mpf(scale)
    if x >= 0:
        return mpmath.exp(-x / b) / 2
    return 1 - mpmath.exp(x / b) / 2


@dataclass
class _Context:
    config: COConfig
    problem: object
    states: list
    implementation: Algorithm3
    dps: int


def _plan(ctx: _Context, level: int, horizon: int | None = None):
    if ctx.config.variant == "certified":
        return C.CertifiedInstancePlan(ctx.config, level, horizon=horizon)
    return InstancePlan(ctx.config, level, horizon=horizon)


def _step_eps(ctx: _Context, level: int, j: int) -> float:
    return _plan(ctx, level).step(j).eps_t


def _batch_eps(ctx: _Context, level: int, eps_t: float) -> float:
    return ctx.implementation.batch_epsilon(InstancePlan(ctx.config, level), eps_t)


def test_probability(ctx: _Context, level: int, t: int, eps_t: float):
    """p_t of Definition 36(1) at global time t for instance ``level`` (exact, mpmath)."""
    h = P.threshold_level(level, ctx.config.kappa, dps=ctx.dps)
    law = ctx.problem.law(ctx.states[t], _batch_eps(ctx, level, eps_t), dps=ctx.dps)
    with mpmath.workdps(ctx.dps):
        return mpmath.fsum(pr * laplace_survival(h - v, 2 / mpmath.mpf(eps_t)) for _, pr, v in law)


def selection_law(ctx: _Context, level: int, t: int, eps_t: float) -> list:
    """ThresholdSelect_l's output law at checkpoint time t: [(solution or None, probability)]."""
    c = ctx.config
    if c.variant == "certified":
        split = C.certified_split(c)
        eps_q = ctx.implementation.selection_epsilon(split.eps_q)
        h = mpmath.mpf(C.selection_threshold(c, level))
        xi = mpmath.mpf(C.selection_stopping(c))
        cap = P.threshold_select_iterations(xi, split.eps_0)
        law = ctx.problem.law(ctx.states[t], eps_q / 2, dps=ctx.dps)
        return _selection_from_law(ctx, law, h, xi, cap, eps_q)
    h = P.threshold_level(level, c.kappa, dps=ctx.dps)
    xi = P.stopping_probability(level, P.co_rejection_threshold(c.p_star, c.gamma, c.c_1, c.c_h, dps=ctx.dps),
                                c.beta, c.c_beta, dps=ctx.dps)
    cap = P.threshold_select_iterations(xi, min(eps_t, 1.0))
    law = ctx.problem.law(ctx.states[t], _batch_eps(ctx, level, eps_t), dps=ctx.dps)
    return _selection_from_law(ctx, law, h, xi, cap, eps_t)


def _selection_from_law(ctx: _Context, law, h, xi, cap, eps_t) -> list:
    with mpmath.workdps(ctx.dps):
        if not ctx.implementation.noised_score:
            q = [(y, pr * (1 if v >= h else 0)) for y, pr, v in law]
        else:
            q = [(y, pr * laplace_survival(h - v, 2 / mpmath.mpf(eps_t))) for y, pr, v in law]
        r = 1 - mpmath.fsum(x for _, x in q)
        rho = r * (1 - xi)
        factor = (1 - rho ** cap) / (1 - rho)
        out = [(y, x * factor) for y, x in q]
        out.append((None, 1 - mpmath.fsum(x for _, x in out)))
        return out


class _ReusedNoisePlan:
    """GTM_l's step plans with GTM_2's tau_1, mu_1 (instance noise reused across checkpoints)."""

    def __init__(self, plan: InstancePlan, first: InstancePlan):
        self._plan, self.tau1, self.mu1, self.horizon = plan, first.tau1, first.mu1, None

    def step(self, j):
        return self._plan.step(j)


def _segments(T: int, halts: tuple, first: int = 2, last: int | None = None) -> list:
    """[(level, start, end, halted)] for a checkpoint pattern (levels first..last; after the last, hold)."""
    segs, start, level = [], 2, first
    for h in halts:
        segs.append((level, start, h, True))
        start, level = h + 1, level + 1
    if start <= T and (last is None or level <= last):
        segs.append((level, start, T, False))
    return segs


def _levels(config: COConfig) -> tuple[int, int | None]:
    if config.variant == "certified":
        split = C.certified_split(config)
        return split.first_level, split.last_level
    return 2, None


def _pattern_probability(ctx: _Context, T: int, halts: tuple, cache: dict):
    segs = _segments(T, halts, *_levels(ctx.config))
    if ctx.implementation.fresh_instance_noise:
        total = mpmath.mpf(1)
        for level, start, end, halted in segs:
            key = (level, start)
            if key not in cache:
                n = T - start + 1
                ps = [test_probability(ctx, level, start + j - 1, _step_eps(ctx, level, j)) for j in range(1, n + 1)]
                cache[key] = transcript_distribution(_plan(ctx, level, horizon=n), ps, dps=max(ctx.dps, 20))
            dist = cache[key]
            j = end - start + 1
            total *= dist.halt[j - 1].value if halted else dist.cont[j - 1].value
        return total
    first = InstancePlan(ctx.config, 2)
    factors = []
    for level, start, end, halted in segs:
        plan = _ReusedNoisePlan(InstancePlan(ctx.config, level), first)
        for j in range(1, end - start + 2):
            p = test_probability(ctx, level, start + j - 1, _step_eps(ctx, level, j))
            factors.append((plan, j, p, halted and start + j - 1 == end))
    tau1, mu1 = mpmath.mpf(first.tau1), mpmath.mpf(first.mu1)

    def integrand(x):
        v = mpmath.exp(-x / tau1) / tau1
        for plan, j, p, halt in factors:
            cont, hal = continuation_probability(plan, j, p, x, dps=ctx.dps)
            v *= hal if halt else cont
        return v

    with mpmath.workdps(ctx.dps):
        pts = [0, mu1 / 2, mu1, mu1 + 5 * tau1, mu1 + 60 * tau1]
        return mpmath.quad(integrand, pts) + mpmath.quad(integrand, [pts[-1], mpmath.inf])


def output_law(config: COConfig, problem, edges, *, implementation: Algorithm3 = ALGORITHM3, dps: int = 25) -> dict:
    """{output sequence (tuple of solutions): exact probability} for BatchToCO on ``edges``."""
    if config.delta != 0:
        raise UnsupportedConfiguration("the exact witness covers pure DP (delta = 0) only")
    T = len(edges)
    if not 1 <= T <= 8:
        raise InvalidParameter(f"the exact witness enumerates patterns: the stream must have 1..8 updates, got {T}")
    state = problem.empty_state()
    states = [None]
    for e in edges:
        problem.insert(state, e)
        states.append(copy.deepcopy(state))
    ctx = _Context(config, problem, states, implementation, dps)
    first, last = _levels(config)
    if config.variant == "certified":
        if C.certified_split(config).eps_warmup > 0:
            raise UnsupportedConfiguration("the exact witness of the certified variant covers warmup_share = 0")
        eps11 = C.certified_split(config).eps_first
    else:
        eps11 = step_privacy_used(config, 1, 1)
    law1 = problem.law(states[1], eps11, dps=dps)
    out: dict = {}
    cache: dict = {}
    with mpmath.workdps(dps):
        max_halts = T if last is None else min(T, last - first + 1 + 1)
        for r in range(0, min(T, max_halts)):
            if last is not None and r > last - first + 1:
                break
            for halts in itertools.combinations(range(2, T + 1), r):
                pg = _pattern_probability(ctx, T, halts, cache)
                segs = _segments(T, halts, first, last)
                sels = [selection_law(ctx, first + i, h, _step_eps(ctx, first + i, h - segs[i][1] + 1))
                        for i, h in enumerate(halts)]
                for y1, p1, _ in law1:
                    for choice in itertools.product(*sels):
                        prob = p1 * pg
                        seq, cur, t = [y1], y1, 2
                        for (y, py), h in zip(choice, halts):
                            prob *= py
                            seq.extend([cur] * (h - t))
                            cur = y if y is not None else cur
                            seq.append(cur)
                            t = h + 1
                        seq.extend([cur] * (T - t + 1))
                        key = tuple(seq)
                        out[key] = out.get(key, 0) + prob
    return out


@dataclass(frozen=True)
class WitnessResult:
    """The exact privacy loss of one implementation (named ``variant``) on a stream and its neighbour."""

    variant: str
    epsilon: float
    loss: float  # max |ln P/P'| over sequences (inf if a sequence has probability 0 on one side)
    worst_sequence: tuple
    total: float  # sum of probabilities on the first stream (should be 1)
    total_neighbour: float
    sequences: int
    delta_at_epsilon: float = 0.0  # hockey-stick delta(eps) between the two output laws (claimed: 0)

    @property
    def exceeds(self) -> bool:
        return self.loss > self.epsilon

    def to_dict(self) -> dict:
        return {"variant": self.variant, "epsilon": self.epsilon, "loss": self.loss,
                "loss_over_epsilon": self.loss / self.epsilon, "exceeds": self.exceeds,
                "worst_sequence": [str(y) for y in self.worst_sequence], "total": self.total,
                "total_neighbour": self.total_neighbour, "sequences": self.sequences,
                "delta_at_epsilon": self.delta_at_epsilon}


def privacy_loss(law: dict, law_prime: dict, dps: int = 25) -> tuple[float, tuple]:
    worst, where = mpmath.mpf(0), ()
    with mpmath.workdps(dps):
        for key in set(law) | set(law_prime):
            a, b = law.get(key, 0), law_prime.get(key, 0)
            if a <= mpmath.mpf(10) ** (-dps + 3) and b <= mpmath.mpf(10) ** (-dps + 3):
                continue
            if a == 0 or b == 0:
                return float("inf"), key
            v = abs(mpmath.log(a / b))
            if v > worst:
                worst, where = v, key
    return float(worst), where


def hockey_stick(law: dict, law_prime: dict, epsilon) -> float:
    """delta(eps) = max over directions of sum_seq (P(seq) - e^eps P'(seq))^+."""
    e = mpmath.exp(mpmath.mpf(epsilon))
    keys = set(law) | set(law_prime)
    d1 = mpmath.fsum(max(law.get(k, 0) - e * law_prime.get(k, 0), 0) for k in keys)
    d2 = mpmath.fsum(max(law_prime.get(k, 0) - e * law.get(k, 0), 0) for k in keys)
    return float(max(d1, d2))


def witness(config: COConfig, problem, edges, absent: int, *, implementation: Algorithm3 = ALGORITHM3,
            name: str = "correct", dps: int = 25) -> WitnessResult:
    """Exact output laws on ``edges`` and on its neighbour with update ``absent`` (1-based) empty;
    ``name`` labels the implementation in the result."""
    check_int("absent", absent, minimum=1, maximum=len(edges))
    other = list(edges)
    other[absent - 1] = None
    a = output_law(config, problem, edges, implementation=implementation, dps=dps)
    b = output_law(config, problem, other, implementation=implementation, dps=dps)
    loss, where = privacy_loss(a, b, dps)
    with mpmath.workdps(dps):
        delta = hockey_stick(a, b, config.epsilon)
    return WitnessResult(name, config.epsilon, loss, where, float(mpmath.fsum(a.values())),
                         float(mpmath.fsum(b.values())), len(set(a) | set(b)), delta)


@dataclass(frozen=True)
class InstanceInputWitness:
    """GTM_l's exact transcript loss on neighbouring constant p-streams p' = p e^{eps_in}."""

    level: int
    steps: int
    eps_in: float  # the input mechanism's actual privacy
    loss: float  # max over transcripts and the probed p of |ln Pr/Pr'|
    share: float  # Lemma 38's (1 + C_H/C_1) eps(l)

    @property
    def exceeds(self) -> bool:
        return self.loss > self.share

    def to_dict(self) -> dict:
        return {"level": self.level, "steps": self.steps, "eps_in": self.eps_in, "loss": self.loss,
                "share": self.share, "exceeds": self.exceeds}


def instance_input_witness(config: COConfig, level: int, *, implementation: Algorithm3 = ALGORITHM3,
                           steps: int = 3, probes=(0.2, 0.35, 0.5), dps: int = 20) -> InstanceInputWitness:
    """Exact engine on GTM_l alone: the test mechanism's actual input privacy is
    eps_in = batch_epsilon + eps_t/2 (A, then the Laplace test at eps_t/2; eps_t for Algorithm 3);
    neighbouring streams shift every step's success probability by e^{eps_in} (the edge is present
    from its insertion on). A loss above the share means Lemma 38's per-instance accounting fails
    for that implementation."""
    plan = InstancePlan(config, level, horizon=steps)
    eps_t = plan.step(1).eps_t
    eps_in = implementation.batch_epsilon(plan, eps_t) + eps_t / 2
    worst = mpmath.mpf(0)
    with mpmath.workdps(dps):
        for p in probes:
            q = min(mpmath.mpf(p) * mpmath.exp(eps_in), mpmath.mpf("0.999"))
            a = transcript_distribution(plan, [p] * steps, dps=dps)
            b = transcript_distribution(plan, [q] * steps, dps=dps)
            for x, y in zip(a.halt + (a.cont[-1],), b.halt + (b.cont[-1],)):
                worst = max(worst, abs(mpmath.log(x.value / y.value)))
    return InstanceInputWitness(level, steps, float(eps_in), float(worst), plan.claimed_loss())
