"""Privacy ratios of two neighbouring streams against Lemma 17 (6)-(7), and the certified
neighbouring check (the rule of :mod:`gtm_core.neighbours` on arb balls)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import mpmath
from flint import arb

from ..errors import NotNeighbouring
from ..neighbours import ratio_within
from .arb import bits_for_dps, probabilities_as_arb, radius_mpf, to_arb, to_mpf, working_precision
from .results import Probability, TranscriptDistribution
from .transcripts import transcript_distribution


# ---------------------------------------------------------------------------
# privacy ratios (Lemma 17 (6)-(7))
# ---------------------------------------------------------------------------


def check_neighbouring(p: Sequence[Any], p_prime: Sequence[Any], eps: Sequence[Any]) -> None:
    """Raise :class:`NotNeighbouring` unless every step satisfies the eps_t ratio rule (rigorously)."""
    if len(p) != len(p_prime):
        raise NotNeighbouring(f"p and p_prime must have the same length, got {len(p)} and {len(p_prime)}")
    with working_precision(200):
        ps = probabilities_as_arb("p", p)
        qs = probabilities_as_arb("p_prime", p_prime)
        for t, (a, b) in enumerate(zip(ps, qs), start=1):
            e = to_arb(eps[t - 1])
            E = e.exp()
            ok = ratio_within(a, b, E) and ratio_within(1 - a, 1 - b, E)
            if not ok:
                raise NotNeighbouring(
                    f"step {t}: p={p[t - 1]!r} and p_prime={p_prime[t - 1]!r} are not neighbours at "
                    f"eps_t={float(eps[t - 1])!r} (need p'/p and (1-p')/(1-p) in [e^-eps_t, e^eps_t])"
                )


@dataclass(frozen=True)
class PrivacyRow:
    kind: str  # "continue" or "halt"
    t: int
    P: Probability
    P_prime: Probability
    log_ratio: mpmath.mpf  # ln(P / P')
    log_ratio_error: mpmath.mpf
    bound: float  # Lemma 17: 1/tau1 (continue) or 1/tau1 + 2/tau2_t (halt), from plan.claimed_loss
    ok: bool  # |ln(P/P')| <= bound, certified by the error bound

    @property
    def slack(self) -> float:
        return float(self.bound - abs(self.log_ratio))

    def to_dict(self, dps: int) -> dict:
        return {
            "transcript": self.kind,
            "t": self.t,
            "P": mpmath.nstr(self.P.value, dps),
            "P_error": mpmath.nstr(self.P.error, 3),
            "P_prime": mpmath.nstr(self.P_prime.value, dps),
            "P_prime_error": mpmath.nstr(self.P_prime.error, 3),
            "log_ratio": mpmath.nstr(self.log_ratio, min(dps, 20)),
            "log_ratio_error": mpmath.nstr(self.log_ratio_error, 3),
            "bound": self.bound,
            "ok": self.ok,
        }


@dataclass(frozen=True)
class PrivacyReport:
    rows: tuple[PrivacyRow, ...]
    dist: TranscriptDistribution
    dist_prime: TranscriptDistribution

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def worst(self) -> PrivacyRow:
        return max(self.rows, key=lambda r: abs(r.log_ratio) - r.bound)

    def max_loss(self, kind: str | None = None) -> PrivacyRow:
        rows = [r for r in self.rows if kind is None or r.kind == kind]
        return max(rows, key=lambda r: abs(r.log_ratio))


def privacy_ratios(plan, p, p_prime, *, dps: int = 25, certified: bool = False) -> PrivacyReport:
    """ln(P/P') of every transcript of two neighbouring streams, against Lemma 17 (6)-(7)."""
    if len(p) != len(p_prime):
        raise NotNeighbouring(f"p and p_prime must have the same length, got {len(p)} and {len(p_prime)}")
    eps = [plan.step(t).eps_t for t in range(1, len(p) + 1)]
    check_neighbouring(p, p_prime, eps)
    d1 = transcript_distribution(plan, p, dps=dps, certified=certified)
    d2 = transcript_distribution(plan, p_prime, dps=dps, certified=certified)
    rows = []
    bits = bits_for_dps(dps)
    for t in range(1, len(p) + 1):
        for kind, A, B in (("halt", d1.halt[t - 1], d2.halt[t - 1]), ("continue", d1.cont[t - 1], d2.cont[t - 1])):
            bound = float(plan.claimed_loss(t, kind == "halt"))
            with working_precision(bits):
                if A.ball > 0 and B.ball > 0:
                    lr = A.ball.log() - B.ball.log()
                    ok = bool(abs(lr) <= arb(bound))
                    lr_val, lr_err = to_mpf(lr, dps), radius_mpf(lr)
                elif A.ball == 0 and B.ball == 0:
                    lr_val, lr_err, ok = mpmath.mpf(0), mpmath.mpf(0), True
                else:
                    lr_val, lr_err, ok = mpmath.mpf("nan"), mpmath.inf, False
            rows.append(PrivacyRow(kind, t, A, B, lr_val, lr_err, bound, ok))
    return PrivacyReport(rows=tuple(rows), dist=d1, dist_prime=d2)
