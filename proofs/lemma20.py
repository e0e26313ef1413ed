"""Lemma 20 (parameter selection): halting and continuation in both directions, and the base-rate lower bound.

lambda^l(c, .) and lambda^r(c, .) enter as numbers carrying the properties the
proof uses: Lemma 11(1) (lambda^l <= gamma lambda^r), Lemma 11(2) (c+1 > 2 max L),
and Lemma 10(3a)/(3b) as implications from the Poisson mean to the error bound.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q

TAIL_A = "Lemma 10(3a): lambda p >= lambda^l(c, b) => Pr[K <= c] <= b"
TAIL_B = "Lemma 10(3b): c+1 >= 2 ln(1/b) and lambda p <= lambda^r(c, b) => Pr[K >= c+1] <= b"


def _vars(q: Q):
    p_star, g, Lam, lam, p, rho = Q.real("p_star g Lambda lam p rho")
    q.hyp(p_star > 0, p_star < 1, g > 1, g <= 2, Lam >= 1, lam > 0, p > 0, p < 1)
    return p_star, g, Lam, lam, p, rho


# --- above threshold (s = +1): (alpha, beta) = (beta^II, beta^I) -------------------------------


def _above_halting(k=1):
    q = Q()
    p_star, g, Lam, lam, p, rho = _vars(q)
    ll = Q.real("lam_l_II")  # lambda^l(c, beta^II)
    q.hyp(ll > 0, rho * p_star == ll)
    q.hyp(lam >= k * rho, p >= p_star)
    return q.query(lam * p >= ll)


def _above_continuation(k=1):
    q = Q()
    p_star, g, Lam, lam, p, rho = _vars(q)
    ll, lr = Q.real("lam_l_II lam_r_I")  # lambda^l(c, beta^II), lambda^r(c, beta^I)
    q.hyp(ll > 0, rho * p_star == ll, ll <= g * lr)  # Lemma 11(1)
    q.hyp(lam <= rho * Lam, p <= k * p_star / (g * Lam))
    return q.query(lam * p <= lr)


def _above_statement():
    q = Q()
    p_star, g, Lam, lam, p, rho = _vars(q)
    ll, lr, c, LI, LII, PK_low, PK_high, bI, bII = Q.real("lam_l_II lam_r_I c L_I L_II P_low P_high b_I b_II")
    q.hyp(ll > 0, rho * p_star == ll, ll <= g * lr, c + 1 > 2 * LI, c + 1 > 2 * LII)
    q.fact(z3.Implies(lam * p >= ll, PK_low <= bII), TAIL_A)
    q.fact(z3.Implies(z3.And(c + 1 >= 2 * LI, lam * p <= lr), PK_high <= bI), TAIL_B)
    halting = z3.Implies(z3.And(lam >= rho, p >= p_star), PK_low <= bII)
    continuation = z3.Implies(z3.And(lam <= rho * Lam, p <= p_star / (g * Lam)), PK_high <= bI)
    return q.query(z3.And(halting, continuation))


def _above_chain():
    st = _above_statement()
    a, b = _above_halting(), _above_continuation()
    st.hyps += [a.implication(), b.implication()]
    return st


LEMMA20_1 = LemmaCheck(
    key="lemma20.1",
    ref="Lemma 20(1)",
    statement="s=+1, rho = lambda^l(c, beta^II)/p*: halting if lambda >= rho, p >= p*; "
    "continuation if lambda <= rho Lambda, p <= p*/(gamma Lambda)",
    steps=[
        Check("halting", "lambda p >= rho p* = lambda^l(c, beta^II)", _above_halting),
        Check("continuation", "lambda p <= rho p*/gamma = lambda^l/gamma <= lambda^r(c, beta^I)", _above_continuation),
    ],
    chain=_above_chain,
    mutants=[
        Mutant("lambda >= 0.9 rho", "halting with lambda only >= 0.9 rho", lambda: _above_halting(k=0.9)),
        Mutant("p <= 1.1 p*/(gamma Lambda)", "continuation threshold 10% too high", lambda: _above_continuation(k=1.1)),
    ],
)


# --- below threshold (s = -1): (alpha, beta) = (beta^I, beta^II) ----------------------------


def _below_halting(k=1):
    q = Q()
    p_star, g, Lam, lam, p, rho = _vars(q)
    lr = Q.real("lam_r_II")
    q.hyp(lr > 0, rho * p_star == lr)
    q.hyp(lam <= rho, p <= k * p_star)
    return q.query(lam * p <= lr)


def _below_continuation(k=1):
    q = Q()
    p_star, g, Lam, lam, p, rho = _vars(q)
    ll, lr = Q.real("lam_l_I lam_r_II")
    q.hyp(lr > 0, rho * p_star == lr, ll <= g * lr)  # Lemma 11(1) with (alpha, beta) = (beta^I, beta^II)
    q.hyp(lam >= rho / Lam, p >= k * g * Lam * p_star)
    return q.query(lam * p >= ll)


def _below_domain(k=2):
    q = Q()
    c, LII = Q.real("c L_II")
    q.hyp(LII > 0, c + 1 > 2 * LII)  # Lemma 11(2)
    return q.query(c + 1 >= k * LII)


def _below_chain():
    q = Q()
    p_star, g, Lam, lam, p, rho = _vars(q)
    ll, lr, c, LI, LII, PK_low, PK_high, bI, bII = Q.real("lam_l_I lam_r_II c L_I L_II P_low P_high b_I b_II")
    q.hyp(lr > 0, rho * p_star == lr, ll <= g * lr, LII > 0, c + 1 > 2 * LII)
    q.fact(z3.Implies(z3.And(c + 1 >= 2 * LII, lam * p <= lr), PK_high <= bII), TAIL_B)
    q.fact(z3.Implies(lam * p >= ll, PK_low <= bI), TAIL_A)
    q.hyp(_below_halting().implication(), _below_continuation().implication(), _below_domain().implication())
    halting = z3.Implies(z3.And(lam <= rho, p <= p_star), PK_high <= bII)
    continuation = z3.Implies(z3.And(lam >= rho / Lam, p >= g * Lam * p_star), PK_low <= bI)
    return q.query(z3.And(halting, continuation))


LEMMA20_2 = LemmaCheck(
    key="lemma20.2",
    ref="Lemma 20(2)",
    statement="s=-1, rho = lambda^r(c, beta^II)/p*: halting if lambda <= rho, p <= p*; "
    "continuation if lambda >= rho/Lambda, p >= gamma Lambda p*",
    steps=[
        Check("halting", "lambda p <= rho p* = lambda^r(c, beta^II)", _below_halting),
        Check("domain", "c + 1 > 2 L^II => Lemma 10(3b) applies", _below_domain),
        Check("continuation", "lambda p >= gamma rho p* = gamma lambda^r >= lambda^l(c, beta^I)", _below_continuation),
    ],
    chain=_below_chain,
    mutants=[
        Mutant("p <= 1.1 p*", "halting for p up to 1.1 p*", lambda: _below_halting(k=1.1)),
        Mutant("p >= 0.9 gamma Lambda p*", "continuation threshold 10% too low", lambda: _below_continuation(k=0.9)),
        Mutant("domain 2L -> 2.2L", "claimed c + 1 >= 2.2 L^II", lambda: _below_domain(k=2.2)),
    ],
)


# --- base-rate lower bound ----------------------------------------------------------------


def _ll_lower():
    q = Q()
    c, L = Q.real("c L")
    q.hyp(c >= 0, L > 0)
    s = q.sqrt("sl", 2 * c * L + L * L)
    return q.query(c + L + s >= c + 2 * L)


def _base_above(need_L1=True, k=1):
    q = Q()
    c, LI, LII, rp = Q.real("c L_I L_II rho_p")  # rho_p = rho p* = lambda^l(c, beta^II)
    q.hyp(c >= 0, c + 1 > 2 * LI, c + 1 > 2 * LII, LI > 0, LII > 0)
    if need_L1:
        q.hyp(LI >= 1, LII >= 1)  # beta^I, beta^II <= 1/e
    q.hyp(rp >= c + 2 * LII)
    # the paper's intermediate bound rho p* >= L^I + 2 L^II, then the max
    return q.query(z3.And(rp >= k * (LI + 2 * LII), rp >= LI, rp >= LII))


def _base_below(need_L1=True, k=1):
    q = Q()
    c, LI, LII, rp, g = Q.real("c L_I L_II rho_p g")  # rho_p = rho p* = lambda^r(c, beta^II)
    q.hyp(c >= 0, c + 1 > 2 * LI, c + 1 > 2 * LII, LI > 0, LII > 0, g > 1, g <= 2)
    if need_L1:
        q.hyp(LI >= 1, LII >= 1)
    q.hyp(g * rp >= c + 2 * LI)  # gamma lambda^r(c, beta^II) >= lambda^l(c, beta^I) >= c + 2 L^I
    return q.query(z3.And(rp >= k * LI, rp >= k * LII))


def _base_chain():
    """beta <= 1/e and rho = lambda^l(c, beta^II)/p* (s=+1) or lambda^r(c, beta^II)/p* (s=-1) => the bound."""
    q = Q()
    c, LI, LII, g, rp_up, rp_down = Q.real("c L_I L_II g rho_p_up rho_p_down")
    q.hyp(c >= 0, c + 1 > 2 * LI, c + 1 > 2 * LII, LI >= 1, LII >= 1, g > 1, g <= 2)
    s2 = q.sqrt("sl2", 2 * c * LII + LII * LII)
    s1 = q.sqrt("sl1", 2 * c * LI + LI * LI)
    q.hyp(rp_up == c + LII + s2)  # s = +1: rho p* = lambda^l(c, beta^II)
    q.hyp(g * rp_down >= c + LI + s1)  # s = -1: gamma lambda^r(c, beta^II) >= lambda^l(c, beta^I) (Lemma 11(1))
    q.hyp(_ll_lower().instance(L=LII, sl=s2), _ll_lower().instance(L=LI, sl=s1))
    q.hyp(_base_above().instance(rho_p=rp_up), _base_below().instance(rho_p=rp_down))
    return q.query(z3.And(rp_up >= LI, rp_up >= LII, rp_down >= LI, rp_down >= LII))


LEMMA20_BASE = LemmaCheck(
    key="lemma20.base",
    ref="Lemma 20 (base-rate lower bound)",
    statement="beta^I, beta^II <= 1/e  =>  rho >= max(ln(1/beta^I), ln(1/beta^II))/p* in both directions",
    steps=[
        Check("lambda^l >= c + 2L", "sqrt(2cL + L^2) >= L", _ll_lower),
        Check("above threshold", "rho p* >= c + 2L^II >= L^I + 2L^II >= max(L^I, L^II)", _base_above),
        Check("below threshold", "gamma rho p* >= c + 2 L^I, gamma <= 2 => rho p* >= max(L^I, L^II)", _base_below),
    ],
    chain=_base_chain,
    mutants=[
        Mutant("drop beta <= 1/e (above)", "above threshold without L >= 1", lambda: _base_above(need_L1=False)),
        Mutant("drop beta <= 1/e (below)", "below threshold without L >= 1", lambda: _base_below(need_L1=False)),
        Mutant("L^I + 2L^II -> 1.1(L^I + 2L^II)", "intermediate bound constant moved 10%", lambda: _base_above(k=1.1)),
    ],
)

LEMMAS = [LEMMA20_1, LEMMA20_2, LEMMA20_BASE]
