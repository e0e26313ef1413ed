"""The values of one GTM step: its checked arguments and a step whose noise is drawn.

:class:`StepArguments` is GTM.Step's (eps_t, tau_{2,t}, c_t, rho_t, s_t), its enforced evaluation budget
and how the reported count becomes K_t, checked once when built; :class:`PendingStep` is what
:meth:`gtm_core.reference.GTM.begin_step` returns and :meth:`gtm_core.reference.GTM.finish_step` consumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InvalidParameter
from .exact_sampling import check_tau2, purification_crossover
from .planners import StepPlan
from .validation import (
    check_bool,
    check_direction,
    check_nonnegative,
    check_nonnegative_int,
    check_positive,
    check_probability,
)


@dataclass(frozen=True)
class StepArguments:
    """The checked arguments of one GTM.Step: eps_t, tau_{2,t}, c_t, rho_t, s_t, the enforced
    evaluation budget (None: none) and how the count the caller reports becomes K_t of the
    mechanism Algorithm 1 is fed: ``phi`` (purification's crossover, Lemma 24; 0: none) then
    ``negate`` (the flipped variant s_t = -1 feeds -M_t). With ``phi = 0`` and ``negate`` False
    the caller reports K_t itself (it evaluated the fed mechanism)."""

    eps_t: float
    tau2: float
    c: int
    rho: float
    s: int
    evaluation_budget: int | None = None
    phi: float = 0.0
    negate: bool = False

    def __post_init__(self):
        """Refuse arguments outside their domains (InvalidParameter naming the field and value)."""
        eps_t = check_nonnegative("eps_t", self.eps_t)
        values = {
            "eps_t": eps_t,
            "c": check_nonnegative_int("c", self.c),
            "rho": check_positive("rho", self.rho),
            "s": check_direction("s", self.s),
            "tau2": check_tau2(self.tau2, eps_t),
            "evaluation_budget": None if self.evaluation_budget is None
            else check_nonnegative_int("evaluation_budget", self.evaluation_budget),
            "phi": check_probability("phi", self.phi),
        }
        if not values["phi"] <= 0.5:
            raise InvalidParameter(f"phi must be in [0, 1/2], got {self.phi!r}")
        object.__setattr__(self, "negate", check_bool("negate", self.negate))
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @classmethod
    def planned(cls, sp: StepPlan, evaluation_budget: int | None) -> "StepArguments":
        """Step sp.t of a plan with the count of the *original* mechanism M_t: purified if
        delta_t > 0, negated for the flipped variant (the exact path and deployments)."""
        return cls(sp.eps_t, sp.tau2, sp.c, sp.rho, sp.s, evaluation_budget,
                   phi=purification_crossover(sp), negate=sp.s == -1)


@dataclass(frozen=True)
class PendingStep:
    """A step whose noise is drawn (eta_{2,t}, N_t) and whose mechanism is not evaluated yet:
    what :meth:`gtm_core.reference.GTM.begin_step` returns and
    :meth:`gtm_core.reference.GTM.finish_step` consumes, once.

    ``t`` is the step's number; ``evaluations`` is N_t, a secret (hidden from ``repr``; never
    print, log or release it)."""

    t: int
    arguments: StepArguments
    evaluations: int = field(repr=False)
