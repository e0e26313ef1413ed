"""Algorithm 1 as written: init once, step semantics, halting, refusals and typed errors."""

import math

import numpy as np
import pytest

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import (
    EvaluationBudgetExceeded,
    HaltedError,
    InvalidParameter,
    MechanismError,
)
from gtm_core.evaluation import BernoulliMechanism
from gtm_core.reference import GTM, GTMRun, run_reference


def plan(**stream):
    s = {"eps_t": 0.1, "p_star": 0.5, "horizon": 20}
    s.update(stream)
    return make_plan(GTMConfig.from_dict(
        {"gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05}, "stream": s}))


def test_init_draws_once_and_refuses_twice():
    g = GTM(np.random.default_rng(0))
    g.init(3.0, 10.0)
    with pytest.raises(HaltedError, match="exactly once"):
        g.init(3.0, 10.0)


def test_step_before_init_is_refused():
    with pytest.raises(HaltedError):
        GTM(np.random.default_rng(0)).step(lambda x: 1, None, 0.1, 3.0, 5, 10.0, 1)


def test_direct_step_halts_on_certain_success_and_then_refuses():
    g = GTM(np.random.default_rng(1))
    g.init(3.0, 10.0)
    # p = 1, rho = 1000 >> c: K = N >= c+1 with overwhelming probability -> a_t = s = +1
    assert g.step(lambda x: 1, None, 0.1, 3.0, 5, 1000.0, 1) == 1
    assert g.halted
    with pytest.raises(HaltedError):
        g.step(lambda x: 1, None, 0.1, 3.0, 5, 1000.0, 1)


def test_direct_step_continues_on_certain_failure():
    g = GTM(np.random.default_rng(1))
    g.init(3.0, 10.0)
    assert g.step(lambda x: -1, None, 0.1, 3.0, 5, 1000.0, 1) == -1  # K = 0 <= c
    assert not g.halted


def test_below_threshold_step_halts_when_few_successes():
    g = GTM(np.random.default_rng(2))
    g.init(3.0, 10.0)
    assert g.step(lambda x: False, None, 0.1, 3.0, 5, 1000.0, -1) == -1  # K = 0 <= c -> a = s = -1
    assert g.halted


def test_eps_zero_means_lambda_equals_rho():
    # with eps_t = 0 the count is Po(rho) whatever the noise: K ~ Po(rho p); rho=0.5, p=1, c=0
    rng = np.random.default_rng(3)
    halts = 0
    n = 4000
    for _ in range(n):
        g = GTM(rng)
        g.init(3.0, 10.0)
        halts += g.step(lambda x: 1, None, 0.0, math.inf, 0, 0.5, 1) == 1
    p = 1 - math.exp(-0.5)  # Pr[Po(0.5) >= 1]
    assert abs(halts / n - p) < 5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("value", [0, 2, "1", None, 0.5, [1]])
def test_non_sign_outputs_are_typed_errors_and_fail_the_gtm(value):
    g = GTM(np.random.default_rng(4))
    g.init(3.0, 10.0)
    with pytest.raises(MechanismError):
        g.step(lambda x: value, None, 0.1, 3.0, 5, 100.0, 1)
    assert g.failed
    with pytest.raises(HaltedError):
        g.step(lambda x: 1, None, 0.1, 3.0, 5, 100.0, 1)


def test_mechanism_exception_becomes_mechanism_error():
    def boom(x):
        raise RuntimeError("secret data 12345")

    g = GTM(np.random.default_rng(4))
    g.init(3.0, 10.0)
    with pytest.raises(MechanismError) as info:
        g.step(boom, None, 0.1, 3.0, 5, 100.0, 1)
    assert "12345" not in str(info.value)


def test_evaluation_budget_refuses_before_evaluating():
    calls = []
    g = GTM(np.random.default_rng(5))
    g.init(3.0, 10.0)
    with pytest.raises(EvaluationBudgetExceeded):
        g.step(lambda x: calls.append(1) or 1, None, 0.1, 3.0, 5, 1e6, 1, evaluation_budget=10)
    assert calls == [] and g.failed


def test_astronomical_lambda_is_handled_by_the_budget():
    g = GTM(np.random.default_rng(6))
    g.init(3.0, 10.0)
    with pytest.raises(EvaluationBudgetExceeded):
        g.step(lambda x: 1, None, 50.0, 3.0, 5, 1e3, 1, evaluation_budget=1000)


def test_repr_hides_secrets():
    run = GTMRun(plan(), seed=123)
    run.step(BernoulliMechanism(0.0, np.random.default_rng(0)))
    eta1 = float(run._gtm._noise.eta1.enclosure(64).mid())  # exact sampler: eta_1 is a lazy real
    bits = run._gtm._noise.secret_hex()[4:20]
    text = repr(run) + str(run) + repr(run._gtm) + repr(run._gtm._noise)
    assert repr(eta1) not in text and f"{eta1:.6g}" not in text and bits not in text
    assert "not for deployment" in repr(run)


def test_unseeded_run_is_not_marked_seeded():
    from gtm_core.exact_sampling import SeededBits, SystemBits

    run = GTMRun(plan())
    assert not run.seeded and isinstance(run._gtm._source, SystemBits)  # the OS CSPRNG
    assert isinstance(GTMRun(plan(), seed=1)._gtm._source, SeededBits)
    assert GTMRun(plan(), sampler="float")._gtm._source is None


def test_run_records_transcript_and_refuses_after_halt():
    run = GTMRun(plan(), seed=7)
    assert run.step(BernoulliMechanism(1.0, np.random.default_rng(0))) is True
    assert run.transcript == [1] and run.halted_at == 1
    assert len(run.evaluation_counts()) == 1
    with pytest.raises(HaltedError):
        run.step(BernoulliMechanism(1.0, np.random.default_rng(0)))


def test_flipped_run_halts_when_p_is_high():
    p = plan(eps_t=0.01, p_star=0.95)
    assert p.step(1).s == -1
    halted = [run_reference(p, [0.999], np.random.default_rng(i))[0] for i in range(20)]
    assert halted == [1] * 20
    never = [run_reference(p, [0.5], np.random.default_rng(i))[0] for i in range(20)]
    assert never == [0] * 20


def test_rng_type_checked():
    with pytest.raises(InvalidParameter):
        GTM(rng=42)


# --- the public phases the deployment runtime uses ----------------------------


def test_public_phases_reproduce_step_draw_for_draw():
    from gtm_core.evaluation import count_positive
    from gtm_core.evaluation import BernoulliMechanism
    from gtm_core.reference import GTM, StepArguments

    args = dict(eps_t=0.1, tau2=3.0, c=4, rho=2.0, s=1)
    whole, phased = GTM(np.random.default_rng(11)), GTM(np.random.default_rng(11))
    whole.init(3.0, 13.0)
    phased.init(3.0, 13.0)
    assert phased.secret_eta1_bits() == whole.secret_eta1_bits()
    for _ in range(5):
        m1, m2 = BernoulliMechanism(0.3, whole._rng), BernoulliMechanism(0.3, phased._rng)
        a = whole.step(m1, None, **args)
        pending = phased.begin_step(StepArguments(**args))
        assert "evaluations" not in repr(pending)  # N_t is hidden
        b = phased.finish_step(pending, lambda n: count_positive(m2, None, n))
        assert a == b and whole.steps_taken == phased.steps_taken
        if whole.halted:
            break
    from gtm_core.exact_sampling import SeededBits, SharedNoise

    source = SeededBits(0)
    noise = SharedNoise.from_secret_hex(whole.secret_eta1_bits(), 3.0, 13.0, source)
    restored = GTM.restore_exact(source, noise, steps_taken=2)
    assert restored.secret_eta1_bits() == whole.secret_eta1_bits() and restored.steps_taken == 2
    floaty = GTM.restore(np.random.default_rng(0), eta1=1.5, mu1=13.0, steps_taken=2)
    assert floaty.secret_eta1() == 1.5 and floaty.sampler == "float"


def test_secret_eta1_before_init_is_refused():
    from gtm_core.errors import HaltedError
    from gtm_core.reference import GTM

    with pytest.raises(HaltedError):
        GTM(np.random.default_rng(0)).secret_eta1_bits()
    with pytest.raises(HaltedError):
        GTM(np.random.default_rng(0), sampler="float").secret_eta1()


# --- one step sequence: begin_step -> PendingStep -> finish_step -----------------------------


def _initialised(seed=0):
    from gtm_core.reference import GTM

    g = GTM(np.random.default_rng(seed))
    g.init(3.0, 13.0)
    return g


def test_a_pending_step_is_finished_once_and_blocks_the_next():
    from gtm_core.reference import StepArguments

    g = _initialised()
    args = StepArguments(eps_t=0.1, tau2=3.0, c=4, rho=2.0, s=1)
    pending = g.begin_step(args)
    assert pending.t == 1 == g.steps_taken and pending.arguments is args
    with pytest.raises(HaltedError, match="pending"):
        g.begin_step(args)
    g.finish_step(pending, lambda n: 0)
    with pytest.raises(HaltedError, match="once"):
        g.finish_step(pending, lambda n: 0)
    with pytest.raises(HaltedError, match="once"):  # a forged pending step
        g.finish_step(type(pending)(2, args, 5), lambda n: 0)


@pytest.mark.parametrize("fault", [RuntimeError, KeyboardInterrupt])
def test_any_exception_of_the_evaluation_fails_the_gtm(fault):
    from gtm_core.reference import StepArguments

    g = _initialised()
    pending = g.begin_step(StepArguments(0.1, 3.0, 4, 2.0, 1))

    def count(n):
        raise fault("boom")

    with pytest.raises(fault):
        g.finish_step(pending, count)
    assert g.failed and "failed" in repr(g)
    with pytest.raises(HaltedError, match="failed"):
        g.begin_step(StepArguments(0.1, 3.0, 4, 2.0, 1))


def test_a_reported_count_above_n_fails_the_gtm():
    from gtm_core.reference import StepArguments

    g = _initialised()
    pending = g.begin_step(StepArguments(0.1, 3.0, 4, 2.0, 1))
    with pytest.raises(MechanismError):
        g.finish_step(pending, lambda n: n + 1)
    assert g.failed


def test_the_count_transform_negates_and_purifies():
    """negate: K_t = N_t - k (the flipped variant); phi = 1/2: K_t ~ Bin(N_t, 1/2) whatever k
    (seeded; N_t ~ Po(50), so Pr[K_t = 0] ~ 2^-50)."""
    from gtm_core.reference import StepArguments

    g = _initialised(3)
    pending = g.begin_step(StepArguments(0.0, 3.0, 0, 50.0, -1, negate=True))
    assert pending.evaluations > 0
    # s = -1 halts iff K_t <= c = 0: negated, iff every original output was +1
    assert g.finish_step(pending, lambda n: n) == -1 and g.halted
    g = _initialised(4)
    pending = g.begin_step(StepArguments(0.0, 3.0, 0, 50.0, 1))
    assert g.finish_step(pending, lambda n: 0) == -1  # K_t = 0 <= c: continue
    pending = g.begin_step(StepArguments(0.0, 3.0, 0, 50.0, 1, phi=0.5))
    assert g.finish_step(pending, lambda n: 0) == 1 and g.halted  # purified: K_t > 0


@pytest.mark.parametrize("field, value", [("eps_t", -1.0), ("tau2", 0.0), ("tau2", "3"), ("c", -1),
                                          ("rho", 0.0), ("s", 0), ("evaluation_budget", -2),
                                          ("phi", 0.6), ("phi", -0.1), ("negate", 1)])
def test_step_arguments_are_checked_when_built(field, value):
    from gtm_core.reference import StepArguments

    kw = dict(eps_t=0.1, tau2=3.0, c=4, rho=2.0, s=1)
    kw[field] = value
    with pytest.raises(InvalidParameter, match=field):
        StepArguments(**kw)


def test_tau2_inf_only_without_privacy_noise():
    from gtm_core.reference import StepArguments

    assert StepArguments(0.0, math.inf, 1, 2.0, 1).tau2 == math.inf
    with pytest.raises(InvalidParameter, match="tau2"):
        StepArguments(0.1, math.inf, 1, 2.0, 1)


def test_the_float_path_refuses_purification_on_the_count():
    from gtm_core.reference import GTM, StepArguments

    g = GTM(np.random.default_rng(0), sampler="float")
    g.init(3.0, 13.0)
    with pytest.raises(InvalidParameter, match="phi"):
        g.begin_step(StepArguments(0.1, 3.0, 4, 2.0, 1, phi=0.1))


def test_one_rng_or_seed_rule():
    from gtm_core.exact_sampling import GeneratorBits, SeededBits, SystemBits
    from gtm_core.reference import randomness

    source, seeded = randomness()
    assert isinstance(source, SystemBits) and not seeded
    source, seeded = randomness(seed=3)
    assert isinstance(source, SeededBits) and seeded
    source, seeded = randomness(np.random.default_rng(1))
    assert isinstance(source, GeneratorBits) and seeded
    assert randomness(SystemBits()) [1] is False and randomness(SeededBits(1))[1] is True
    gen = np.random.default_rng(2)
    assert randomness(gen, sampler="float") == (gen, True)
    rng, seeded = randomness(seed=5, sampler="float")
    assert isinstance(rng, np.random.Generator) and seeded
    assert randomness(sampler="float")[1] is False
    for kw in ({"rng": np.random.default_rng(0), "seed": 1}, {"rng": 42}, {"seed": -1}, {"seed": True},
               {"rng": SystemBits(), "sampler": "float"}, {"sampler": "fast"}):
        with pytest.raises(InvalidParameter):
            randomness(**kw)


def test_reference_runs_are_unchanged_draw_for_draw():
    """GTMRun and a GTM driven through begin_step / finish_step give the same outcomes and
    counts for the same seed (GTMRun adds nothing to the sequence)."""
    from gtm_core.evaluation import count_positive
    from gtm_core.reference import StepArguments

    from gtm_core.exact_sampling import SeededBits
    from gtm_core.reference import GTM

    p = plan()
    run = GTMRun(p, seed=7)
    g = GTM(SeededBits(7))
    g.init(p.tau1, p.mu1)
    for t in range(1, 6):
        sp = p.step(t)
        m1, m2 = BernoulliMechanism(0.2, np.random.default_rng(t)), BernoulliMechanism(0.2, np.random.default_rng(t))
        halted = run.step(m1)
        pending = g.begin_step(StepArguments.planned(sp, p.enforced_budget(sp)))
        a = g.finish_step(pending, lambda n: count_positive(m2, None, n))
        assert halted == (a == sp.s) and run.evaluation_counts()[-1] == pending.evaluations
        if halted:
            break


def test_float_path_lambda_beyond_the_sampler_fails_the_gtm():
    from gtm_core.reference import GTM

    g = GTM.restore(np.random.default_rng(0), eta1=0.0, mu1=13.0, steps_taken=0)
    with pytest.raises(EvaluationBudgetExceeded, match="too large"):
        g.step(lambda x: 1, None, 10.0, 1e-300, 4, 1e300, 1)  # lambda_t = rho e^{eps mu_1} ~ 1e356
    assert g.failed
