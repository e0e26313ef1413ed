"""The ball-arithmetic certificate of one step of the ``exact_noise`` planner.

:func:`certify_step` evaluates the step's two error probabilities (the module docstring of
:mod:`gtm_core.planners.exact_noise`) with python-flint ``arb`` balls of the exact engine
(:class:`gtm_core.exact.StepEval`, 160 bits):

  (II) Pr[continue at t | eta_1 = mu_1, p_t = p*_t]   <= beta^II_t,
  (I)  Pr[halt at t     | eta_1 = 0,   p_t = p_bar_t] <= beta^I_t,

and certifies each only if its whole ball lies at or below its budget (:class:`StepCertificate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from flint import arb

from ..exact import StepEval, StepModel, working_precision
from ..numeric import upper_float

CERT_BITS = 160


@dataclass(frozen=True)
class StepCertificate:
    """The ball-arithmetic certificate of one step's (I) and (II) (module docstring of :mod:`gtm_core.planners.exact_noise`).

    ``type_II`` = Pr[continue | eta_1 = mu_1, p = p*] and ``type_I`` = Pr[halt | eta_1 = 0, p = p_bar]
    as ball texts (12 digits with radius), ``type_II_upper`` / ``type_I_upper`` floats >= the whole
    balls, ``beta_II`` / ``beta_I`` their budgets and ``type_II_certified`` / ``type_I_certified``
    whether each whole ball lies at or below its budget; ``certified`` is both.
    :meth:`to_dict` is the serialised form (it adds the two evaluation points as text)."""

    s: int
    c: int
    rho: float
    type_II: str
    type_I: str
    type_II_upper: float
    type_I_upper: float
    beta_II: float
    beta_I: float
    type_II_certified: bool
    type_I_certified: bool
    precision_bits: int

    TYPE_II_POINT: ClassVar[str] = "eta_1 = mu_1, p = p*"
    TYPE_I_POINT: ClassVar[str] = "eta_1 = 0, p = p_bar"

    @property
    def certified(self) -> bool:
        return self.type_II_certified and self.type_I_certified

    def tied_certified(self, s: int) -> bool:
        """The inequality the base rate is solved on: (II) for s = +1, (I) for s = -1."""
        return self.type_II_certified if s == 1 else self.type_I_certified

    def to_dict(self) -> dict:
        return {
            "s": self.s,
            "c": self.c,
            "rho": self.rho,
            "type_II": self.type_II,
            "type_I": self.type_I,
            "type_II_upper": self.type_II_upper,
            "type_I_upper": self.type_I_upper,
            "beta_II": self.beta_II,
            "beta_I": self.beta_I,
            "type_II_certified": self.type_II_certified,
            "type_I_certified": self.type_I_certified,
            "certified": self.certified,
            "type_II_point": self.TYPE_II_POINT,
            "type_I_point": self.TYPE_I_POINT,
            "precision_bits": self.precision_bits,
        }

    @classmethod
    def from_dict(cls, d: dict) -> StepCertificate:
        fields = {k: v for k, v in d.items() if k not in ("certified", "type_II_point", "type_I_point")}
        return cls(**fields)


def certify_step(s: int, c: int, rho: float, *, eps_t: float, tau2: float, mu1: float, p_star: float,
                 p_bar: float, beta_I: float, beta_II: float, t: int = 0) -> StepCertificate:
    """Ball-arithmetic certificate of (I) and (II) for one step (module docstring of :mod:`gtm_core.planners.exact_noise`).

    type_II = Pr[continue | eta_1 = mu_1, p = p*], type_I = Pr[halt | eta_1 = 0, p = p_bar], both
    integrated exactly over eta_{2,t} and the Poisson count by ``gtm_core.exact.StepEval``.
    Certified only if the whole ball lies at or below its budget.
    """
    bits = CERT_BITS
    with working_precision(bits):
        mu1_a = arb(float(mu1))
        if s == 1:
            r_II, r_I = arb(float(p_star)), arb(float(p_bar))
        else:  # exact at 160 bits: 1 - (a float in (0, 1)) needs at most ~110 bits
            r_II, r_I = 1 - arb(float(p_star)), 1 - arb(float(p_bar))
        ev_II = StepEval(StepModel(t, s, int(c), float(rho), float(eps_t), tau2, r_II), mu1_a, bits)
        ev_I = StepEval(StepModel(t, s, int(c), float(rho), float(eps_t), tau2, r_I), mu1_a, bits)
        type_II = ev_II.probs(mu1_a)[0]
        type_I = ev_I.probs(arb(0))[1]
        ok_II = bool(type_II <= arb(float(beta_II)))
        ok_I = bool(type_I <= arb(float(beta_I)))
    return StepCertificate(
        s=s, c=int(c), rho=float(rho),
        type_II=type_II.str(12, radius=True), type_I=type_I.str(12, radius=True),
        type_II_upper=upper_float(type_II), type_I_upper=upper_float(type_I),
        beta_II=float(beta_II), beta_I=float(beta_I),
        type_II_certified=ok_II, type_I_certified=ok_I, precision_bits=bits,
    )
