"""The certified variant: configuration, budget split spending eps, driver, horizon refusal, adaptive streams."""

import numpy as np
import pytest

from gtm_core.batchtoco import certified as C
from gtm_core.batchtoco.driver import BatchToCO, run_stream
from gtm_core.batchtoco.errors import StreamError
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.problems import make_problem
from gtm_core.batchtoco.streams import ADAPTIVE, adaptive_stream, synthetic_stream
from gtm_core.errors import InvalidParameter


def test_certified_fields_refused_with_literal_and_horizon_required():
    with pytest.raises(InvalidParameter, match="only used by variant"):
        COConfig(levels=3)
    with pytest.raises(InvalidParameter, match="horizon is required"):
        COConfig(variant="certified")
    with pytest.raises(InvalidParameter, match="gtm_share"):
        COConfig(variant="certified", horizon=10, gtm_share=1.5)
    assert COConfig.from_dict({"epsilon": 0.9, "variant": "certified", "horizon": 100}).horizon == 100


def test_split_spends_all_of_epsilon():
    s = C.certified_split(COConfig(variant="certified", horizon=2000, k=2))
    assert s.total() <= 0.9
    assert s.total() > 0.9 * (1 - 1e-9)
    assert 2 * s.eps_q + s.eps_0 <= s.eps_selection
    assert s.first_level >= 2 and s.levels >= 1


def test_driver_runs_and_refuses_updates_beyond_the_horizon():
    cfg = COConfig(variant="certified", horizon=300, k=2, seed=1)
    st = synthetic_stream(16, 301, 0)
    prob = make_problem("coverage", 16, 2)
    recs = run_stream(cfg, prob, st.edges[:300], np.random.default_rng(0))
    assert len(recs) == 300
    with pytest.raises(StreamError, match="beyond the planned horizon"):
        run_stream(cfg, prob, st.edges, np.random.default_rng(0))


@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_streams_are_seeded_and_valid(name):
    a, b = adaptive_stream(name, 3000, 4), adaptive_stream(name, 3000, 4)
    assert a.edges == b.edges and len(a) == 3000
    assert adaptive_stream(name, 3000, 5).edges != a.edges


# --- warmup_after_checkpoint: the warm-up continues at t = 2, 4, ... <= T after checkpoints -----------------

def _early_checkpoints(horizon=300, **extra):
    """Thresholds 4, 8, 16 are passed on the test's noise alone: three checkpoints in the first updates."""
    return COConfig(variant="certified", horizon=horizon, k=2, first_level=2, levels=3, **extra)


def test_warmup_after_checkpoint_is_a_validated_certified_flag():
    assert _early_checkpoints().warmup_after_checkpoint is False  # default: every existing result reproduces
    assert _early_checkpoints(warmup_after_checkpoint=True).warmup_after_checkpoint is True
    with pytest.raises(InvalidParameter, match="warmup_after_checkpoint is only used by variant = 'certified'"):
        COConfig(warmup_after_checkpoint=True)  # the literal variant is untouched
    for bad in (1, "true", 0.0):
        with pytest.raises(InvalidParameter, match="warmup_after_checkpoint must be a bool, got"):
            _early_checkpoints(warmup_after_checkpoint=bad)
    toml = {"epsilon": 0.9, "variant": "certified", "horizon": 100, "warmup_after_checkpoint": True}
    assert COConfig.from_dict(toml).warmup_after_checkpoint is True


class _Recording:
    """A problem that records every call of A: (update t, eps, first solution returned)."""

    def __init__(self, problem):
        self.inner, self.calls, self.t = problem, [], 0
        self.name = problem.name

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def insert(self, state, element):
        self.t += 1
        return self.inner.insert(state, element)

    def sample(self, state, eps, rng, n):
        sols, vals = self.inner.sample(state, eps, rng, n)
        self.calls.append((self.t, eps, tuple(int(v) for v in sols[0])))
        return sols, vals


def _run(cfg, seed, implementation=None):
    from audits.power.batchtoco import CORRECT

    problem = _Recording(make_problem("coverage", 16, 2))
    algo = BatchToCO(cfg, problem, np.random.default_rng(seed), implementation=implementation or CORRECT)
    records = [algo.step(e) for e in synthetic_stream(16, cfg.horizon, seed).edges]
    return algo, problem, records


@pytest.mark.parametrize("seed", range(3))
def test_warmup_continues_after_checkpoints_and_the_output_is_the_most_recent_solution(seed):
    cfg = _early_checkpoints(warmup_after_checkpoint=True)
    algo, problem, records = _run(cfg, seed)
    eps_w = C.certified_split(cfg).eps_warmup
    warm = [(t, sol) for t, eps, sol in problem.calls if eps == eps_w]
    assert algo.checkpoints and algo.checkpoints[-1] < 16  # all three levels used early
    assert [t for t, _ in warm] == list(C.warmup_times(cfg)) == [2, 4, 8, 16, 32, 64, 128, 256]
    for t, sol in warm:
        if t > algo.checkpoints[-1]:  # no later ThresholdSelect: the warm-up's solution is released
            assert tuple(int(v) for v in records[t - 1].solution) == sol
    # without the option the warm-up stops at the first checkpoint and its solution is held
    algo0, problem0, _ = _run(_early_checkpoints(), seed)
    assert algo0.checkpoints
    assert all(t <= algo0.checkpoints[0] for t, eps, _ in problem0.calls if eps == eps_w)


@pytest.mark.parametrize("wac", (False, True))
def test_warmup_calls_made_never_exceed_the_charged_r(wac):
    """The count the split charges (R = floor(log2 T)) against the count the driver makes, on runs with
    checkpoints; the power suite's warmup_at_checkpoints makes R + L and must fail this comparison."""
    from audits.power.batchtoco import variant

    for horizon in (300, 1000):
        cfg = _early_checkpoints(horizon, warmup_after_checkpoint=wac)
        R = C.certified_split(cfg).warmup_calls
        assert R == horizon.bit_length() - 1 == C.warmup_call_bound(cfg)
        for seed in range(3):
            algo, _, _ = _run(cfg, seed)
            assert algo.checkpoints
            assert algo.warmup_calls <= R
            assert (algo.warmup_calls == R) if wac else (algo.warmup_calls < R)
            broken, _, _ = _run(cfg, seed, variant("warmup_at_checkpoints"))
            assert broken.warmup_calls == algo.warmup_calls + len(broken.checkpoints)
            if wac:
                assert broken.warmup_calls > R  # the check above would catch this implementation
            assert broken.warmup_calls <= C.warmup_call_bound(cfg, variant("warmup_at_checkpoints")) == R + 3


def test_warmup_after_checkpoint_changes_no_charge():
    for horizon in (300, 2000):
        off = COConfig(variant="certified", horizon=horizon, k=2)
        on = COConfig(variant="certified", horizon=horizon, k=2, warmup_after_checkpoint=True)
        assert C.certified_split(on) == C.certified_split(off)
        assert C.warmup_call_bound(on) == C.warmup_call_bound(off) == C.certified_split(on).warmup_calls
