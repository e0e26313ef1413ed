"""The broken BatchToCO implementations: one frozen value per mistake, injected into the core."""

import pytest

from audits.power.batchtoco import CORRECT, SAMPLED_VARIANTS, VARIANTS, BatchToCOImplementation, variant
from gtm_core.batchtoco.gtm_instance import InstancePlan
from gtm_core.batchtoco.implementation import ALGORITHM3
from gtm_core.batchtoco.params import COConfig
from gtm_core.errors import InvalidParameter


def test_the_correct_implementation_behaves_as_algorithm3():
    plan = InstancePlan(COConfig(), 3)
    eps_t = plan.step(2).eps_t
    assert CORRECT.is_algorithm3 and variant("correct") is CORRECT
    assert CORRECT.batch_epsilon(plan, eps_t) == ALGORITHM3.batch_epsilon(plan, eps_t) == eps_t / 2
    assert CORRECT.noised_score == ALGORITHM3.noised_score is True
    assert CORRECT.fresh_instance_noise == ALGORITHM3.fresh_instance_noise is True


def test_every_broken_variant_changes_exactly_one_member():
    plan = InstancePlan(COConfig(), 3)
    eps_t = plan.step(2).eps_t

    def members(impl):
        return (impl.batch_epsilon(plan, eps_t), impl.noised_score, impl.fresh_instance_noise,
                impl.selection_epsilon(0.01), impl.warmup_at_checkpoints)

    good = members(CORRECT)
    for name, impl in VARIANTS.items():
        if name == "correct":
            continue
        assert not impl.is_algorithm3
        assert sum(a != b for a, b in zip(members(impl), good)) == 1, name
    assert VARIANTS["batch_eps_level"].batch_epsilon(plan, eps_t) == plan.epsilon_c
    assert VARIANTS["selection_up"].selection_epsilon(0.01) == pytest.approx(0.08)
    assert CORRECT.selection_epsilon(0.01) == ALGORITHM3.selection_epsilon(0.01) == 0.01
    assert VARIANTS["warmup_at_checkpoints"].warmup_at_checkpoints is True
    assert CORRECT.warmup_at_checkpoints == ALGORITHM3.warmup_at_checkpoints is False
    assert SAMPLED_VARIANTS == ("correct", "unnoised_score", "batch_eps_level", "selection_up", "warmup_at_checkpoints")


def test_bad_fields_and_names_are_refused():
    with pytest.raises(InvalidParameter, match="batch_privacy must be one of"):
        BatchToCOImplementation(batch_privacy="half")
    with pytest.raises(InvalidParameter, match="instance_noise must be one of"):
        BatchToCOImplementation(instance_noise="none")
    with pytest.raises(InvalidParameter, match="score_noise must be one of"):
        BatchToCOImplementation(score_noise=1)
    with pytest.raises(InvalidParameter, match="checkpoint_warmup must be one of"):
        BatchToCOImplementation(checkpoint_warmup=1)
    with pytest.raises(InvalidParameter, match="variant must be one of"):
        variant("nope")
