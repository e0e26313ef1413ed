"""Privacy ratios of two neighbouring streams against Lemma 17 (6)-(7), and the certified
neighbouring check (the rule of :mod:`gtm_core.neighbours` on arb balls)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import mpmath
from flint import arb

from ..errors import NotNeighbouring
from ..neighbours import ratio_within
from .arb import bits_for_dps, float_upper, probabilities_as_arb, radius_mpf, to_arb, to_mpf, working_precision
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
    d1, d2 = neighbouring_laws(plan, p, p_prime, dps=dps, certified=certified)
    return ratio_report(plan, d1, d2, dps)


def neighbouring_laws(plan, p, p_prime, *, dps: int, certified: bool = False
                      ) -> tuple[TranscriptDistribution, TranscriptDistribution]:
    """The exact laws of the deployed mechanism on two streams, after the rigorous neighbouring check."""
    if len(p) != len(p_prime):
        raise NotNeighbouring(f"p and p_prime must have the same length, got {len(p)} and {len(p_prime)}")
    check_neighbouring(p, p_prime, [plan.step(t).eps_t for t in range(1, len(p) + 1)])
    return (transcript_distribution(plan, p, dps=dps, certified=certified),
            transcript_distribution(plan, p_prime, dps=dps, certified=certified))


def ratio_report(plan, d1: TranscriptDistribution, d2: TranscriptDistribution, dps: int) -> PrivacyReport:
    """The rows of :func:`privacy_ratios` from two computed laws. Under an enforced budget the outcome
    "refused at t" gets a row too, against the plan's uniform claim (:meth:`Plan.worst_claimed_loss`):
    a pure claim covers every outcome, and Lemma 17 says nothing of refusals."""
    rows = []
    bits = bits_for_dps(dps)
    for t in range(1, d1.T + 1):
        cells = [("halt", d1.halt[t - 1], d2.halt[t - 1]), ("continue", d1.cont[t - 1], d2.cont[t - 1])]
        if d1.refused:
            cells.append(("refused", d1.refused[t - 1], d2.refused[t - 1]))
        for kind, A, B in cells:
            bound = float(plan.claimed_loss(t, kind == "halt") if kind != "refused" else plan.worst_claimed_loss())
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


# ---------------------------------------------------------------------------
# approximate DP: the hockey-stick divergence over the run's finite outcomes
# ---------------------------------------------------------------------------


def hockey_stick_delta(dist: TranscriptDistribution, dist_prime: TranscriptDistribution,
                       eps: float) -> tuple[mpmath.mpf, mpmath.mpf]:
    """delta_eps(P || P') = sum_o max(0, P(o) - e^eps P'(o)) over every outcome of the run (halted at t,
    refused at t, continued through T: :meth:`TranscriptDistribution.outcomes`), and an upper bound on
    its error (max(0, .) is 1-Lipschitz: the sum of P(o)'s error and e^eps times P'(o)'s). The mechanism
    is (eps, delta)-DP on this pair in this direction iff delta_eps <= delta."""
    a, b = dist.outcomes(), dist_prime.outcomes()
    with mpmath.workdps(max(dist.dps, dist_prime.dps) + 10):
        E = mpmath.exp(mpmath.mpf(eps))
        total, err = mpmath.mpf(0), mpmath.mpf(0)
        for o, P in a.items():
            Q = b[o]
            total += max(mpmath.mpf(0), P.value - E * Q.value)
            err += P.error + E * Q.error
    return +total, +err


def hockey_stick_delta_ball(dist: TranscriptDistribution, dist_prime: TranscriptDistribution, eps: Any) -> arb:
    """delta_eps(P || P') of :func:`hockey_stick_delta` as an arb ball from the probabilities' balls:
    max(0, x) of a ball x is x when x > 0, 0 when x < 0, else [0, upper(x)]; e^eps is taken of eps
    exactly (a float is an exact ball). The ball is rigorous given the laws' balls: those of a budgeted
    law carry the refusal correction's *estimated* quadrature error (:mod:`.budgeted`)."""
    a, b = dist.outcomes(), dist_prime.outcomes()
    with working_precision(bits_for_dps(max(dist.dps, dist_prime.dps)) + 20):
        E = to_arb(eps).exp()
        total = arb(0)
        for o, P in a.items():
            x = P.ball - E * b[o].ball
            if x > 0:
                total += x
            elif not x < 0:
                up = x.upper()
                total += up / 2 + arb(0, (up / 2).upper())
        return total


@dataclass(frozen=True)
class ApproximateDPCheck:
    """The (eps, delta) claim of a plan checked on one neighbouring pair with the exact law, both directions.

    ``delta``: max of delta_eps(P || P') and delta_eps(P' || P) at the plan's eps; ``delta_error``: its
    error bound; ``delta_ball``: that direction's arb enclosure (:func:`hockey_stick_delta_ball`);
    ``delta_claimed``: :meth:`gtm_core.planners.Plan.privacy_delta`; ``pure_loss``: the largest
    |ln(P(o) / P'(o))| over the outcomes (the pure-DP loss of the pair; infinite if one side is 0)."""

    eps: float
    delta: mpmath.mpf
    delta_error: mpmath.mpf
    delta_claimed: float
    direction: str  # "p||p'" or "p'||p"
    pure_loss: mpmath.mpf
    pure_loss_outcome: int
    dist: TranscriptDistribution
    dist_prime: TranscriptDistribution
    delta_ball: Any = field(default=None, repr=False, compare=False)

    @property
    def delta_upper(self) -> float:
        """The smallest float64 above the enclosure of delta found."""
        return float_upper(self.delta_ball)

    @property
    def ok(self) -> bool:
        """The claim holds on this pair: the enclosure of delta found lies below delta claimed (arb)."""
        with working_precision(64):
            return bool(self.delta_ball <= to_arb(float(self.delta_claimed)))


def approximate_dp_check(plan, p, p_prime, *, dps: int = 20, eps: float | None = None) -> ApproximateDPCheck:
    """Check the plan's (eps, delta) claim (eps = its worst claimed loss unless given) on the neighbouring
    pair (p, p') with the exact law of the deployed mechanism (refusals included)."""
    d1, d2 = neighbouring_laws(plan, p, p_prime, dps=dps)
    return approximate_dp_from(plan, d1, d2, eps=eps)


def approximate_dp_from(plan, d1: TranscriptDistribution, d2: TranscriptDistribution, *,
                        eps: float | None = None) -> ApproximateDPCheck:
    """:func:`approximate_dp_check` on two computed laws (the direction with the larger upper bound)."""
    e = float(plan.worst_claimed_loss()) if eps is None else float(eps)
    fwd, fwd_err = hockey_stick_delta(d1, d2, e)
    bwd, bwd_err = hockey_stick_delta(d2, d1, e)
    fb, bb = hockey_stick_delta_ball(d1, d2, e), hockey_stick_delta_ball(d2, d1, e)
    if float_upper(fb) >= float_upper(bb):
        delta, err, direction, ball = fwd, fwd_err, "p||p'", fb
    else:
        delta, err, direction, ball = bwd, bwd_err, "p'||p", bb
    loss, where = pure_loss(d1, d2)
    claimed = float(plan.privacy_delta()) if hasattr(plan, "privacy_delta") else 0.0
    return ApproximateDPCheck(e, delta, err, claimed, direction, loss, where, d1, d2, ball)


def pure_loss(dist: TranscriptDistribution, dist_prime: TranscriptDistribution) -> tuple[mpmath.mpf, int]:
    """max over outcomes o of |ln(P(o) / P'(o))| and the outcome code attaining it (0/0 skipped)."""
    a, b = dist.outcomes(), dist_prime.outcomes()
    best, where = mpmath.mpf(0), 0
    for o, P in a.items():
        Q = b[o]
        if P.value <= 0 and Q.value <= 0:
            continue
        v = mpmath.inf if P.value <= 0 or Q.value <= 0 else abs(mpmath.log(P.value) - mpmath.log(Q.value))
        if v > best:
            best, where = v, o
    return best, where
