"""Black-box evaluator paper, Definition A.3 / Lemma A.4 (truncated Laplace TLap(1, eps, delta)) and
the closed form of R used in the proof of Theorem 2.7.

* R's role: with x = e^{-eps R}, R = (1/eps) log(1 + (e^eps - 1)/(2 delta)) <=> x = 2 delta/(e^eps - 1 + 2 delta),
  and then the mass of TLap outside the overlap of the two shifted supports,
  x (e^eps - 1) / (2 (1 - x)), equals delta (so the size estimate is (eps, delta)-DP).
* Inside the overlap the density ratio e^{-eps|z|} / e^{-eps|z-1|} is <= e^eps (| |z| - |z-1| | <= 1).
* delta_0 = 1/4 case: R = (1/eps_0) log(2 e^{eps_0} - 1) <= 1 + log 2 / eps_0 (arb certificate).
* Erratum: Definition A.3 prints R with e^eps instead of e^eps - 1 (x = 2 delta/(e^eps + 2 delta)): the
  outside mass is then delta (1 - e^{-eps}), not delta - the printed Lemma A.4 "(eps, delta)" holds
  but is not what Definition A.3's R gives exactly; Algorithm 4 uses the Geng et al. R.
"""

from __future__ import annotations

import mpmath
import z3
from flint import arb

from .core import Check, Erratum, LemmaCheck, Mutant, Q
from .interval import Certificate


def _outside_mass(num_shift=-1, claim_equal=True, factor=2):
    q = Q()
    E, d, x = Q.real("E delta x")
    q.hyp(E > 1, d > 0, d < z3.RealVal("1/2"))
    q.hyp(x * (E + num_shift + factor * d) == factor * d)  # x = e^{-eps R}
    mass = x * (E - 1) / (2 * (1 - x))
    return q.query(mass == d if claim_equal else mass <= d)


def _ratio(shift=1):
    """For |z| <= R and |z - shift| <= R: eps(|z-shift| - |z|) <= eps, i.e. the log density ratio <= eps."""
    q = Q()
    eps, z = Q.real("eps z")
    q.hyp(eps > 0)
    az = z3.If(z >= 0, z, -z)
    azs = z3.If(z - shift >= 0, z - shift, -(z - shift))
    return q.query(eps * (azs - az) <= eps)


def _quarter_ball(x: arb) -> arb:
    # (1 + log 2 / x) - log(2 e^x - 1)/x >= 0  <=>  x + log 2 - log(2 e^x - 1) = -log(1 - e^{-x}/2) >= 0;
    # scaled by e^x (> 0) so the certified function stays away from 0 as x grows (it tends to 1/2)
    return x.exp() * -(1 - (-x).exp() / 2).log()


QUARTER_CASE = Certificate(
    name="delta_0 = 1/4: R <= 1 + log 2 / eps_0",
    description="e^x (x + log 2 - log(2 e^x - 1)) = -e^x log(1 - e^{-x}/2) >= 0 for x = eps_0 in [1e-6, 60]",
    f_ball=_quarter_ball,
    f_mp=lambda x: mpmath.exp(x) * -mpmath.log(1 - mpmath.exp(-x) / 2),
    lo=1e-6,
    hi=60.0,
)


def _quarter_mutant():
    return Certificate(
        name="R <= 1 + log(1.5)/eps_0", description="log 2 replaced by log 1.5",
        f_ball=lambda x: x.exp() * (x + arb("1.5").log() - (2 * x.exp() - 1).log()),
        f_mp=lambda x: mpmath.exp(x) * (x + mpmath.log(1.5) - mpmath.log(2 * mpmath.exp(x) - 1)), lo=1e-6, hi=60.0)


TLAP = LemmaCheck(
    key="bb_tlap",
    ref="Black-box paper, Definition A.3, Lemma A.4; R in Algorithm 4 and the proof of Theorem 2.7",
    statement="x = e^{-eps R} = 2 delta/(e^eps - 1 + 2 delta) => outside mass = delta; log density ratio <= eps on "
              "the overlap; R <= 1 + log 2/eps_0 when delta_0 = 1/4",
    steps=[
        Check("outside mass", "x (e^eps - 1)/(2(1 - x)) = delta", _outside_mass),
        Check("density ratio", "eps(|z-1| - |z|) <= eps", _ratio),
        QUARTER_CASE,
    ],
    mutants=[
        Mutant("R with 4 delta instead of 2 delta", "x = 4 delta/(e^eps - 1 + 4 delta): mass <= delta fails",
               lambda: _outside_mass(claim_equal=False, factor=4)),
        Mutant("sensitivity 2", "shift 2: ratio <= e^eps fails", lambda: _ratio(shift=2)),
        Mutant("log 2 -> log 1.5", "closed form bound tightened", _quarter_mutant),
    ],
    errata=[
        Erratum("Definition A.3 radius",
                "Definition A.3 prints R = (s/eps) log(1 + e^eps/(2 delta)); then the outside mass is "
                "delta (1 - e^{-eps}) != delta (Algorithm 4 and Geng et al. use e^eps - 1)",
                counterexample=lambda: _outside_mass(num_shift=0),
                repaired=lambda: _outside_mass(num_shift=-1),
                fix="use R = (s/eps) log(1 + (e^eps - 1)/(2 delta)) as in Algorithm 4 (or read Lemma A.4 "
                    "with delta (1 - e^-eps) <= delta)"),
    ],
)

LEMMAS = [TLAP]
