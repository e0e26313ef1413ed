"""Corollary 30 (lower bound for generalized private testers): the three cases and the odds-ratio bound.

Logarithms are variables (ln 2, ln p*, ln p_bar, ln(1-p*), ln(1-p_bar)) tied by
ln(xy) = ln x + ln y; exponentiating uses that exp is increasing.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q

HALF = z3.RealVal("1/2")


def _exponent(k=2):
    q = Q()
    e1, eps, lT, l1, lnL0 = Q.real("eps_1 eps ell_T ell_1 ln_Lambda0")
    q.hyp(e1 > 0, eps > 0)
    q.hyp(lnL0 == -2 * e1 + (e1 / eps) * (lT + l1))  # ln Lambda_0 from its definition
    return q.query(e1 * ((lT + l1) / eps - k) == lnL0)  # eps_1 x RHS of (16)


def _case_logs(case=1, k4=4):
    q = Q()
    l2, lp, lb, l1p, l1b, l4 = Q.real("ln2 ln_p ln_pbar ln_1mp ln_1mpbar ln4")
    q.hyp(l4 == 2 * l2)  # ln 4 = 2 ln 2
    if case == 1:  # log(2p*) - log(2 p_bar) = log(p*/p_bar)
        return q.query((l2 + lp) - (l2 + lb) == lp - lb)
    if case == 2:  # log 1/(2(1-p*)) - log 1/(2(1-p_bar)) = log (1-p_bar)/(1-p*)
        return q.query((-l2 - l1p) - (-l2 - l1b) == l1b - l1p)
    # case 3: log 1/(2(1-p*)) - log(2 p_bar) = log 1/(4 p_bar (1-p*))
    return q.query((-l2 - l1p) - (l2 + lb) == -(k4 / 4) * l4 - lb - l1p)


def _odds(case: int, *, drop_order=False, quarter="1/4"):
    q = Q()
    p, pb, L0 = Q.real("p_star p_bar Lambda0")
    q.hyp(p > 0, p < 1, pb > 0, pb < 1, L0 > 0)
    if not drop_order:
        q.hyp(p >= pb)
    odds = (p / (1 - p)) / (pb / (1 - pb))
    if case == 1:
        q.hyp(p <= HALF, pb <= HALF, p / pb >= L0)
        return q.query(odds >= L0)
    if case == 2:
        q.hyp(p >= HALF, pb >= HALF, (1 - pb) / (1 - p) >= L0)
        return q.query(odds >= L0)
    q.hyp(pb < HALF, HALF < p, 1 / (4 * pb * (1 - p)) >= L0)
    return q.query(z3.And(p * (1 - pb) > z3.RealVal(quarter), odds >= L0))


COROLLARY30 = LemmaCheck(
    key="corollary30",
    ref="Corollary 30, equations (16)-(17)",
    statement="cases (1) p*/p_bar >= Lambda_0, (2) (1-p_bar)/(1-p*) >= Lambda_0, (3) 1/(4 p_bar (1-p*)) >= Lambda_0; "
    "in all cases the odds ratio is >= Lambda_0",
    steps=[
        Check("exponent of (16)", "eps_1 (RHS of (16)) = ln Lambda_0", _exponent),
        Check("case 1 logs", "eps_1 (q(p*) - q(p_bar)) = ln(p*/p_bar)", lambda: _case_logs(1)),
        Check("case 2 logs", "= ln((1-p_bar)/(1-p*))", lambda: _case_logs(2)),
        Check("case 3 logs", "= ln(1/(4 p_bar (1-p*)))", lambda: _case_logs(3)),
        Check("odds ratio, case 1", "p*, p_bar <= 1/2", lambda: _odds(1)),
        Check("odds ratio, case 2", "p*, p_bar >= 1/2", lambda: _odds(2)),
        Check("odds ratio, case 3", "p_bar < 1/2 < p*: p*(1-p_bar) > 1/4", lambda: _odds(3)),
    ],
    mutants=[
        Mutant("case 1 without p* >= p_bar", "hypothesis dropped", lambda: _odds(1, drop_order=True)),
        Mutant("case 3: 1/4 -> 0.275", "p*(1-p_bar) > 0.275 claimed", lambda: _odds(3, quarter="11/40")),
        Mutant("e^{-2 eps_1} -> e^{-1.8 eps_1}", "exponent constant moved", lambda: _exponent(k=1.8)),
        Mutant("case 3: 4 -> 3.6", "ln 1/(3.6 p_bar (1-p*))", lambda: _case_logs(3, k4=3.6)),
    ],
)

LEMMAS = [COROLLARY30]
