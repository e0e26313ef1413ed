"""Parameter formulas of the approximate-DP black-box evaluator (Algorithms 2, 5, 6), one function each.

Paper: "Private black-box evaluation via down sensitivity" (docs/blackbox.md, section "Approximate
DP"). The constants the paper leaves open are explicit fields of :class:`ApproxConstants`:

* ``gap_max_constant`` C_0 - the constant hidden in Theorem A.5's Omega(.). Our GAP-MAX is the
  exponential mechanism (:mod:`.onedim`), whose utility (Theorem A.2) gives C_0 = 2 in the regime
  |C_J| <= 1/delta_level (there min{log|Y|, log 1/delta} = log|Y|).
* ``C`` - the universal constant of Theorems G.2 / G.4 / 4.9. Default 80 C_0 = 160: the proof of
  Theorem G.2 ends with "C >= 80 C_0". The proof of G.4 additionally absorbs log*|Y'| <= log*|Y| + 5
  into C without computing it, so the G.4 / Theorem 2.6 utility statement is not claimed for any
  computed C; privacy does not depend on C at all (see :func:`privacy_parameters`).
* the recursion depth H = log*|Y| of Algorithm 5 - fixed by the paper; it is the number of
  non-trivial levels (checked in :mod:`.onedim`), and the privacy split eps/(2H), delta/H depends on it.

Every function computes in float64 (``dps=None``) or mpmath (``dps=N``) via :func:`gtm_core.numeric.backend`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InvalidParameter
from ...numeric import backend
from ...validation import check_nonnegative_int, check_positive, check_positive_int, check_real

__all__ = [
    "ApproxConstants",
    "log_star",
    "tower",
    "level_budget",
    "onedim_margin",
    "highdim_budget",
    "advanced_composition_epsilon",
    "highdim_margin",
    "highdim_margin_as_printed",
    "qco_margin_theorem32",
    "evaluator_budget",
    "depth_margin",
    "gap_max_requirement",
    "privacy_parameters",
]


@dataclass(frozen=True)
class ApproxConstants:
    """The constants Algorithms 2, 5 and 6 leave open (utility only; privacy holds for every value)."""

    C: float = 160.0
    gap_max_constant: float = 2.0

    def __post_init__(self):
        check_positive("C", self.C)
        check_positive("gap_max_constant", self.gap_max_constant)

    @property
    def is_proof_default(self) -> bool:
        """True for C = 80 C_0 (the value at which the proof of Theorem G.2 goes through)."""
        return self.C >= 80 * self.gap_max_constant

    def to_dict(self) -> dict:
        return {"C": self.C, "gap_max_constant": self.gap_max_constant, "is_proof_default": self.is_proof_default}


def tower(k: int) -> int:
    """Definition F.1: Tow(0) = 1, Tow(k) = 2^Tow(k-1)."""
    t = 1
    for _ in range(check_nonnegative_int("k", k)):
        t = 1 << t
    return t


def log_star(n: int) -> int:
    """log* n for an integer n >= 1: the least k with Tow(k) >= n (= 0 for n = 1; log*2 = 1, log*5 = 3)."""
    n = check_positive_int("n", n)
    k, t = 0, 1
    while t < n:
        k, t = k + 1, 1 << t
    return k


def level_budget(eps, beta, delta, H: int, *, dps: int | None = None):
    """Algorithm 5 line 2 (initial call): eps/(2H), beta/(2H), delta/H per recursion level."""
    H = check_positive_int("H", H)
    m = backend(dps)
    with m.context():
        return m.num(eps) / (2 * H), m.num(beta) / (2 * H), m.num(delta) / H


def onedim_margin(eps, beta, delta, H: int, C, *, dps: int | None = None):
    """Theorem G.2: Delta = C 8^H (1 + (H/eps) log(8 H^2 / (beta delta))), H = log*(R + 1)."""
    H = check_positive_int("H", H)
    m = backend(dps)
    with m.context():
        e, b, dl = m.num(eps), m.num(beta), m.num(delta)
        return m.num(C) * m.num(8) ** H * (1 + H / e * m.log(8 * H * H / (b * dl)))


def gap_max_requirement(eps, beta, size: int, t: int, C0, *, delta=None, dps: int | None = None):
    """Theorem A.5's Omega(.) with its constant explicit: C_0 (1 + (min{log|Y|, log 1/delta} + log(t/beta))/eps)."""
    m = backend(dps)
    with m.context():
        lg = m.log(m.num(size))
        if delta is not None:
            ld = m.log(1 / m.num(delta))
            lg = lg if lg < ld else ld
        return m.num(C0) * (1 + (lg + m.log(m.num(t) / m.num(beta))) / m.num(eps))


def highdim_budget(eps, beta, delta, d: int, *, dps: int | None = None):
    """Algorithm 6 line 6: beta' = beta/d, eps' = eps/(2 sqrt(2 d log(2/delta))), delta' = delta/(2d)."""
    d = check_positive_int("d", d)
    m = backend(dps)
    with m.context():
        e, b, dl = m.num(eps), m.num(beta), m.num(delta)
        return b / d, e / (2 * m.sqrt(2 * d * m.log(2 / dl))), dl / (2 * d)


def advanced_composition_epsilon(eps_each, t: int, delta_slack, *, dps: int | None = None):
    """Theorem A.1: eps_each sqrt(2 t log(1/delta_slack)) + t eps_each (e^eps_each - 1)."""
    m = backend(dps)
    with m.context():
        e = m.num(eps_each)
        return e * m.sqrt(2 * t * m.log(1 / m.num(delta_slack))) + t * e * m.expm1(e)


def highdim_margin(eps, beta, delta, d: int, H: int, C, *, dps: int | None = None):
    """Algorithm 6 line 5 (repaired, see docs/blackbox.md erratum A6-Delta0):
    Delta_0 = C d^1.5 8^H H sqrt(2 log(2/delta)) / eps * log(16 (d H)^2 / (beta delta)), H = log*|Y|.

    The extraction prints "delta log*|Y|" where Theorem G.4 (and the recursion, which divides Delta by
    8 per level) has 8^{log*|Y|} log*|Y|.
    """
    m = backend(dps)
    with m.context():
        e, b, dl = m.num(eps), m.num(beta), m.num(delta)
        return (m.num(C) * m.num(d) ** m.num(1.5) * m.num(8) ** H * H * m.sqrt(2 * m.log(2 / dl)) / e
                * m.log(16 * (d * H) ** 2 / (b * dl)))


def qco_margin_theorem32(eps, beta, delta, d: int, H: int, C, *, dps: int | None = None):
    """Theorem 3.2 / 4.9's rendering: C d^1.5 8^H H sqrt(log(1/delta)) / eps * log(d H / (beta delta))
    (kept to pin that Theorem G.4's form, which Algorithm 6 uses, is the larger, conservative one)."""
    m = backend(dps)
    with m.context():
        e, b, dl = m.num(eps), m.num(beta), m.num(delta)
        return (m.num(C) * m.num(d) ** m.num(1.5) * m.num(8) ** H * H * m.sqrt(m.log(1 / dl)) / e
                * m.log(d * H / (b * dl)))


def highdim_margin_as_printed(eps, beta, delta, d: int, H: int, C, *, dps: int | None = None):
    """Algorithm 6 line 5 as extracted: C d^1.5 delta H sqrt(2 log(2/delta)) / eps * log(16 (d H)^2 / (beta delta))
    (kept only to pin erratum A6-Delta0; never used by the algorithms)."""
    m = backend(dps)
    with m.context():
        return highdim_margin(eps, beta, delta, d, H, C, dps=dps) * m.num(delta) / m.num(8) ** H


def evaluator_budget(eps, beta, delta, *, dps: int | None = None):
    """Algorithm 2 (proof of Theorem 2.6, Theorem C.7): eps_0 = eps/2, delta_0 = delta/2 for each of the size
    estimate TLap(1, eps_0, delta_0) and Algorithm 6; beta_0 = beta/2 (Theorem 4.9 needs beta_0 < 1/2)."""
    m = backend(dps)
    with m.context():
        return m.num(eps) / 2, m.num(beta) / 2, m.num(delta) / 2


def depth_margin(Delta, d: int, *, dps: int | None = None) -> int:
    """Proof of Theorem 2.6: K = ceil((d + 1)(Delta + 1)), so K/(d+1) - Delta >= 1."""
    m = backend(dps)
    with m.context():
        return m.ceil((d + 1) * (m.num(Delta) + 1))


def privacy_parameters(eps, delta, *, d: int) -> dict:
    """What the (eps, delta) claim of Algorithm 2 depends on (read off the proofs of G.2, G.4, 2.6).

    It needs eps, delta in (0, 1) (G.4's composition step uses eps < 1), the per-level split of Algorithm 5,
    the split eps_0 = eps/2, delta_0 = delta/2 and the sensitivity-1 quality; it does not depend on C,
    C_0, Delta, K or beta (they move only thresholds and cutoffs, which are public or computed from
    sensitivity-1 quantities).
    """
    check_real("epsilon", eps, low=0, high=1, low_open=True, high_open=True)
    check_real("delta", delta, low=0, high=1, low_open=True, high_open=True)
    if d < 1:
        raise InvalidParameter(f"d must be >= 1, got {d}")
    return {"depends_on": ["epsilon", "delta", "d", "log* of each Algorithm 5 domain", "sensitivity 1"],
            "independent_of": ["C", "gap_max_constant", "beta", "Delta", "K"]}
