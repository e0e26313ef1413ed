"""How BatchToCO calls its parts: :class:`Algorithm3`, the algorithm as printed.

The sampled driver (:mod:`.driver`), its output codes (:mod:`.codes`) and the exact witness
(:mod:`.witness`) take an ``implementation``: any value with the members of
:class:`Algorithm3`. The default, :data:`ALGORITHM3`, is Algorithm 3 with Definition 36's
mechanisms; the deliberately broken implementations of the power suite are values of the same
shape kept in :mod:`audits.power.batchtoco`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .gtm_instance import InstancePlan


@dataclass(frozen=True)
class Algorithm3:
    """Algorithm 3 as printed: A at eps_t / 2, a Laplace-noised score, fresh noise at every GTM_l.Init."""

    def batch_epsilon(self, plan: InstancePlan, eps_t: float) -> float:
        """The privacy parameter A is called with at a step of GTM_l: eps_t / 2 (Definition 36)."""
        return eps_t / 2

    def selection_epsilon(self, eps_q: float) -> float:
        """The privacy of ThresholdSelect's scored mechanism in the certified variant: its share eps_Q."""
        return eps_q

    @property
    def warmup_at_checkpoints(self) -> bool:
        """Certified variant: the warm-up recomputes A only at the doubling times t = 2, 4, ... <= T,
        never additionally at a checkpoint (R calls at most, the split's charge)."""
        return False

    @property
    def noised_score(self) -> bool:
        """ThresholdSelect sees f(X_t, Y^) + Lap(2/eps_t) (Definition 36(2))."""
        return True

    @property
    def fresh_instance_noise(self) -> bool:
        """Every GTM_l.Init draws its own noise with GTM_l's tau_1, mu_1 (Algorithm 3)."""
        return True


ALGORITHM3 = Algorithm3()
