"""Deliberately broken BatchToCO implementations: the power suite of the continual-observation layer.

A :class:`BatchToCOImplementation` describes how a BatchToCO deployment calls its batch algorithm A,
scores candidates and re-initialises its GTM instances, as a small frozen value (the shape of the GTM's
:class:`audits.power.broken.Implementation`, a different concept). ``BatchToCOImplementation()`` is
Algorithm 3 as printed; every field that differs from its default is one implementation mistake. The core
(:mod:`gtm_core.batchtoco.driver`, :mod:`~gtm_core.batchtoco.codes`, :mod:`~gtm_core.batchtoco.witness`)
takes it as its ``implementation``:

=========================  ====================================================================================
variant                    mistake
=========================  ====================================================================================
``correct``                none (Algorithm 3)
``unnoised_score``         ThresholdSelect compares f(X_t, Y^) itself with h_l (no Laplace noise)
``batch_eps_level``        A called with eps(l) instead of eps_t / 2
``reused_gtm``             GTM_2's noise eta_1 (and tau_1, mu_1) kept across checkpoints (exact witness only)
``selection_up``           certified variant: ThresholdSelect's Q run at 8 eps_Q while the split charges eps_Q
``warmup_at_checkpoints``  certified variant: a warm-up call at every checkpoint as well as at t = 2, 4, ...
                           (up to R + L calls at eps_W while the split charges R)
=========================  ====================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gtm_core.batchtoco.gtm_instance import InstancePlan
from gtm_core.validation import check_choice, check_positive

BATCH_PRIVACIES = ("step", "level")
INSTANCE_NOISES = ("fresh", "reused")


@dataclass(frozen=True)
class BatchToCOImplementation:
    """How a BatchToCO deployment calls A and draws its noise (defaults = Algorithm 3)."""

    batch_privacy: str = "step"  # "step": A at eps_t / 2 (Definition 36) | "level": A at eps(l)
    score_noise: bool = True  # ThresholdSelect's score f(X_t, Y^) + Lap(2/eps_t); False: f itself
    instance_noise: str = "fresh"  # "fresh": every GTM_l.Init draws noise | "reused": GTM_2's kept
    selection_scale: float = 1.0  # certified variant: Q runs at selection_scale * eps_Q (1 = as charged)
    checkpoint_warmup: bool = False  # certified variant: True = also a warm-up call at every checkpoint

    def __post_init__(self):
        check_choice("batch_privacy", self.batch_privacy, BATCH_PRIVACIES)
        check_choice("instance_noise", self.instance_noise, INSTANCE_NOISES)
        check_choice("score_noise", self.score_noise, (True, False))
        check_positive("selection_scale", self.selection_scale)
        check_choice("checkpoint_warmup", self.checkpoint_warmup, (True, False))

    def batch_epsilon(self, plan: InstancePlan, eps_t: float) -> float:
        """The privacy parameter A is called with at a step of GTM_l."""
        return eps_t / 2 if self.batch_privacy == "step" else plan.epsilon_c

    def selection_epsilon(self, eps_q: float) -> float:
        """The privacy ThresholdSelect's scored mechanism runs at (certified variant)."""
        return eps_q * self.selection_scale

    @property
    def warmup_at_checkpoints(self) -> bool:
        return self.checkpoint_warmup

    @property
    def noised_score(self) -> bool:
        return self.score_noise

    @property
    def fresh_instance_noise(self) -> bool:
        return self.instance_noise == "fresh"

    @property
    def is_algorithm3(self) -> bool:
        return self == BatchToCOImplementation()


CORRECT = BatchToCOImplementation()

VARIANTS: dict[str, BatchToCOImplementation] = {
    "correct": CORRECT,
    "unnoised_score": replace(CORRECT, score_noise=False),
    "batch_eps_level": replace(CORRECT, batch_privacy="level"),
    "reused_gtm": replace(CORRECT, instance_noise="reused"),
    "selection_up": replace(CORRECT, selection_scale=8.0),
    "warmup_at_checkpoints": replace(CORRECT, checkpoint_warmup=True),
}

#: the variants the sampled driver runs (reused instance noise has an exact law only)
SAMPLED_VARIANTS = tuple(name for name, impl in VARIANTS.items() if impl.fresh_instance_noise)


def variant(name: str) -> BatchToCOImplementation:
    """The implementation called ``name`` (see :data:`VARIANTS`)."""
    check_choice("variant", name, VARIANTS)
    return VARIANTS[name]
