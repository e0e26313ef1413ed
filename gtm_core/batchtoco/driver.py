"""Algorithm 3 (BatchToCO): a batch DP maximiser run under continual observation.

t = 1: Y_1 = A(X_1, eps(1,1), delta(1,1)); l = 2; GTM_2.Init.
t >= 2: a_t = GTM_l.Step(M_t^{h_l}, X_t, eps_t, delta_t)  (eps_t = eps(l, j), j = local step);
        a_t = -1: Y_t = Y_cur;
        a_t = +1 (checkpoint l): Y^ = ThresholdSelect(Q_t, h_l, xi_l, min(eps_t, 1));
                 Y_cur = Y^ unless Y^ = -1; Y_t = Y_cur; l = l + 1; GTM_l.Init (fresh noise).

GTM_l is the project's reference GTM (Algorithm 1, :class:`gtm_core.reference.GTM`) with
the Theorem 23 step plan of :class:`~gtm_core.batchtoco.gtm_instance.InstancePlan`;
purification (Lemma 24) is applied by :func:`gtm_core.evaluation.mechanism_for_step` when
delta_t > 0. How A is called and the score noised comes from an ``implementation``
(:mod:`.implementation`; the default is Algorithm 3 as printed, the power suite injects broken ones).

The evaluation budget and the privacy claim: GTM_l's steps run as Algorithm 1 states them, with
the Lemma 22 budget B = ``StepPlan.evaluation_budget`` *reported* (``StepRecord.call_bound``) and
not enforced. Refusing a step whose count N exceeds B - what this driver did before - breaks the
pure epsilon-DP of each GTM_l exactly as in a deployment (docs/deployment.md, "The evaluation
budget and the privacy claim": the refused runs are the only ones that can halt on a tiny p), and
would make the whole run (epsilon, delta + (1 + e^epsilon) sum_{l,j} Pr[N_{l,j} > B_{l,j}])-DP
instead of the (epsilon, delta) of Lemma 38; for the default ``COConfig`` that sum over l, j <= 64
is about 1.07e-7. The one refusal left is the float sampler's machine limit (lambda >= 1e15, no
deployment could evaluate that often).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..evaluation import mechanism_for_step
from ..reference import GTM
from . import params as P
from . import certified as C
from .errors import StreamError
from .gtm_instance import InstancePlan, step_privacy_used
from .implementation import ALGORITHM3, Algorithm3
from .mechanisms import ScoredMechanism, TestMechanism
from .params import COConfig
from .threshold_select import threshold_select

@dataclass(frozen=True)
class StepRecord:
    """What step t released (``solution``) and public bookkeeping for benchmarks.
    ``checkpoint``/``level``/``batch_calls`` are NOT part of the private output."""

    t: int
    solution: object
    checkpoint: bool
    selected: bool
    level: int
    eps_t: float
    batch_calls: int
    call_bound: int = 0  # the explicit per-step bound: GTM evaluation budget (+ k_max at a checkpoint)
    warmup_calls: int = 0  # certified: warm-up recomputations made at this step (0 or 1 as charged)


class BatchToCO:
    """Algorithm 3 on an insertion stream; call :meth:`step` with each inserted element."""

    def __init__(self, config: COConfig, problem, rng: np.random.Generator, *,
                 implementation: Algorithm3 = ALGORITHM3):
        if not isinstance(config, COConfig):
            raise InvalidParameter(f"config must be a COConfig, got {type(config).__name__}")
        if not isinstance(rng, np.random.Generator):
            raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if not implementation.fresh_instance_noise:
            raise UnsupportedConfiguration("the sampled BatchToCO draws fresh noise at every GTM_l.Init; reused "
                                           "instance noise is modelled by the exact witness only")
        self.config, self.problem, self.implementation = config, problem, implementation
        self._rng = rng
        self.state = problem.empty_state()
        self.t = 0
        self.level = 1
        self.local_step = 0
        self.current = None
        self.checkpoints: list[int] = []
        self.warmup_calls = 0  # warm-up recomputations made (certified; <= certified.warmup_call_bound)
        self._gtm: GTM | None = None
        self.certified = config.variant == "certified"
        self.split = C.certified_split(config) if self.certified else None

    # ------------------------------------------------------------------
    def _new_instance(self) -> None:
        if self.certified and self.level > self.split.last_level:
            self._gtm = None  # every level used: the output is held (post-processing, no component runs)
            return
        plan = C.CertifiedInstancePlan(self.config, self.level) if self.certified else InstancePlan(self.config, self.level)
        self._plan = plan
        self._gtm = GTM(self._rng)
        self._gtm.init(plan.tau1, plan.mu1)
        self.local_step = 0

    def _warmup(self) -> None:
        """One warm-up recomputation Y = A(X_t) at eps_W; it becomes the current (most recent) solution."""
        sols, _ = self.problem.sample(self.state, self.split.eps_warmup, self._rng, 1)
        self.current = sols[0]
        self.warmup_calls += 1

    def step(self, element) -> StepRecord:
        """Insert ``element`` (an edge, or None for an empty update) and release Y_t."""
        before = self.warmup_calls
        record = self._step(element)
        return replace(record, warmup_calls=self.warmup_calls - before) if self.warmup_calls != before else record

    def _step(self, element) -> StepRecord:
        c = self.config
        if self.certified and self.t >= c.horizon:
            raise StreamError(f"update {self.t + 1} is beyond the planned horizon T = {c.horizon} "
                              "(variant = 'certified' plans T updates)")
        self.problem.insert(self.state, element)
        self.t += 1
        if self.t == 1:
            eps1 = self.split.eps_first if self.certified else step_privacy_used(c, 1, 1)
            sols, _ = self.problem.sample(self.state, eps1, self._rng, 1)
            self.current = sols[0]
            self.level = self.split.first_level if self.certified else 2
            self._new_instance()
            return StepRecord(t=1, solution=self.current, checkpoint=False, selected=False, level=1, eps_t=eps1,
                              batch_calls=1, call_bound=1)
        if (self.certified and (not self.checkpoints or c.warmup_after_checkpoint) and self.split.eps_warmup > 0
                and self.t & (self.t - 1) == 0):
            # certified warm-up: recompute at t = 2, 4, 8, ... until the first checkpoint, or with
            # warmup_after_checkpoint at every such t <= T (R calls either way: certified.warmup_call_bound)
            self._warmup()
        if self._gtm is None:  # certified, after the last level: hold
            return StepRecord(t=self.t, solution=self.current, checkpoint=False, selected=False, level=self.level,
                              eps_t=0.0, batch_calls=0, call_bound=0)
        self.local_step += 1
        sp = self._plan.step(self.local_step)
        h = float(P.threshold_level(self.level, c.kappa))
        batch_eps = self.implementation.batch_epsilon(self._plan, sp.eps_t)
        test = TestMechanism(self.problem, self.state, sp.eps_t, h, self._rng, batch_eps=batch_eps)
        # the evaluation budget is reported (call_bound), never enforced: see the module docstring
        a = self._gtm.step(mechanism_for_step(test, sp, self._rng), None, sp.eps_t, sp.tau2, sp.c, sp.rho,
                           sp.s, evaluation_budget=None)
        calls = test.calls
        if a != sp.s:
            return StepRecord(t=self.t, solution=self.current, checkpoint=False, selected=False, level=self.level,
                              eps_t=sp.eps_t, batch_calls=calls, call_bound=sp.evaluation_budget)
        if self.certified:
            # checkpoint: ThresholdSelect_l with Q at its own share eps_Q, threshold h_l - S_l (certified.py)
            eps_q = self.implementation.selection_epsilon(self.split.eps_q)
            xi = C.selection_stopping(c)
            scored = ScoredMechanism(self.problem, self.state, eps_q, self._rng, batch_eps=eps_q / 2,
                                     noised=self.implementation.noised_score)
            result = threshold_select(scored, C.selection_threshold(c, self.level), xi, self.split.eps_0, self._rng)
        else:
            # checkpoint: ThresholdSelect_l with Q_t at the same (eps_t, delta_t)
            xi = float(P.stopping_probability(self.level, c.p_bar, c.beta, c.c_beta))
            scored = ScoredMechanism(self.problem, self.state, sp.eps_t, self._rng, batch_eps=batch_eps,
                                     noised=self.implementation.noised_score)
            result = threshold_select(scored, h, xi, min(sp.eps_t, 1.0), self._rng)
        if result.solution is not None:
            self.current = result.solution
        if self.certified and self.split.eps_warmup > 0 and self.implementation.warmup_at_checkpoints:
            self._warmup()  # a broken implementation (power suite): one more warm-up call than charged
        self.checkpoints.append(self.t)
        level = self.level
        self.level += 1
        self._new_instance()
        cap = result.iterations_cap if self.certified else P.selection_draw_cap(level, c.p_bar, c.beta)
        return StepRecord(t=self.t, solution=self.current, checkpoint=True, selected=result.solution is not None,
                          level=level, eps_t=sp.eps_t, batch_calls=calls + result.draws,
                          call_bound=sp.evaluation_budget + cap)


def run_stream(config: COConfig, problem, edges, rng: np.random.Generator, *,
               implementation: Algorithm3 = ALGORITHM3, progress=None) -> list[StepRecord]:
    """Run BatchToCO over a whole sequence of updates; ``progress(t, T)`` is called now and then."""
    algo = BatchToCO(config, problem, rng, implementation=implementation)
    out = []
    T = len(edges)
    for i, e in enumerate(edges, start=1):
        out.append(algo.step(e))
        if progress is not None and (i % 1000 == 0 or i == T):
            progress(i, T)
    return out
