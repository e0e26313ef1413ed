"""Lemma 17 (privacy of the GTM): the change-of-variables bookkeeping behind e^{1/tau_1} and e^{1/tau_1 + 2/tau_2,t}.

Checked: the shifted noise arguments (u = x + 1, v = y + 2) for both signs s, the
integration domains, the density shifts (Lemma 10(5) at Delta = -1, -2), the
product of the factors, and the chain from the shift inequalities (Lemma 15(3))
to the transcript bounds (6) and (7) over abstract integrals.
"""

from __future__ import annotations

import z3

from .common import sign_vals
from .core import Check, LemmaCheck, Mutant, Q

EXP_ADD = "exp(a + b) = exp(a) exp(b)"


def _continuation_argument():
    q = Q()
    s, mu, x, eta = Q.real("s mu x eta")
    q.hyp(sign_vals(s))
    return q.query(s * (mu - x + eta) - s == s * (mu - (x + 1) + eta))


def _halting_argument(v_shift=2):
    q = Q()
    s, mu, x, y = Q.real("s mu x y")
    q.hyp(sign_vals(s))
    u, v = x + 1, y + v_shift
    return q.query(z3.And(s * (mu - x + y) + s == s * (mu - u + v), x == u - 1, y == v - v_shift))


def _domains(v_shift=2):
    q = Q()
    x, y = Q.real("x y")
    u, v = x + 1, y + v_shift
    return q.query(z3.And((x >= 0) == (u >= 1), (y >= 0) == (v >= 2)))


def _density(delta=1, factor_num=1):
    """f(u - delta) = e^{delta/tau} f(u) for f the Exp(tau) density (Lemma 10(5) with Delta = -delta)."""
    q = Q()
    tau, u = Q.real("tau u")
    q.hyp(tau > 0, u >= delta)
    a = q.exp("e_u", -u / tau)
    b = q.exp("e_shift", -(u - delta) / tau)
    k = q.exp("e_factor", factor_num * delta / tau)  # the claimed factor
    e_plus = q.exp("e_plus", delta / tau)  # the true factor e^{delta/tau}
    q.fact(b == a * e_plus, EXP_ADD)
    q.fact(z3.Implies(factor_num * delta / tau == delta / tau, k == e_plus), "exp is a function")
    q.fact(z3.Implies(factor_num * delta / tau < delta / tau, k < e_plus), "exp is increasing")
    return q.query(b / tau == k * (a / tau))


def _factor_product(two=2):
    q = Q()
    t1, t2 = Q.real("inv_tau1 inv_tau2")  # 1/tau_1, 1/tau_2,t
    q.hyp(t1 > 0, t2 > 0)
    e1 = q.exp("e1", t1)
    e2 = q.exp("e2", 2 * t2)
    e12 = q.exp("e12", t1 + two * t2)  # the claimed factor
    e_sum = q.exp("e_sum", t1 + 2 * t2)
    q.fact(e1 * e2 == e_sum, EXP_ADD)
    q.fact(z3.Implies(t1 + two * t2 < t1 + 2 * t2, e12 < e_sum), "exp is increasing")
    q.fact(z3.Implies(t1 + two * t2 == t1 + 2 * t2, e12 == e_sum), "exp is a function")
    return q.query(e1 * e2 == e12)


def _transcript_chain(factor=None):
    """Abstract integrals: shift inequality, density shift on {u>=1, v>=2}, enlarge domain (integrand >= 0)."""
    q = Q()
    P, I_shift, I_restricted, I_rest, Pp, F = Q.real("P I_shift I_restricted I_rest Pprime F")
    q.hyp(F > 0)
    q.hyp(P <= I_shift)  # Lemma 15(3) inside the integral (g_i <= g'_i(z - s_i), 1-g_t <= 1-g'_t(z+s_t))
    q.hyp(I_shift == F * I_restricted)  # change of variables + density shifts: f1(u-1) f2(v-2) = F f1(u) f2(v)
    q.hyp(I_rest >= 0, Pp == I_restricted + I_rest)  # integrand >= 0 off {u>=1, v>=2}
    return q.query(P <= (factor if factor is not None else F) * Pp)


LEMMA17 = LemmaCheck(
    key="lemma17",
    ref="Lemma 17 (6)-(7)",
    statement="Pr[continue through t] <= e^{1/tau_1} Pr'[...];  Pr[halt at t] <= e^{1/tau_1 + 2/tau_2,t} Pr'[...]",
    steps=[
        Check("continuation argument", "s(mu - x + eta) - s = s(mu - (x+1) + eta)", _continuation_argument),
        Check("halting argument", "s(mu - x + y) + s = s(mu - u + v), u = x+1, v = y+2", _halting_argument),
        Check("domains", "{x >= 0} = {u >= 1}, {y >= 0} = {v >= 2}", _domains),
        Check("density shift eta_1", "f_1(u - 1) = e^{1/tau_1} f_1(u)", _density),
        Check("density shift eta_2,t", "f_2,t(v - 2) = e^{2/tau_2,t} f_2,t(v)", lambda: _density(delta=2)),
        Check("factor product", "e^{1/tau_1} e^{2/tau_2,t} = e^{1/tau_1 + 2/tau_2,t}", _factor_product),
        Check("transcript chain", "P <= F I_restricted <= F P'", _transcript_chain),
    ],
    mutants=[
        Mutant("v = y + 1", "halting change of variables shifts eta_2,t by 1", lambda: _halting_argument(v_shift=1)),
        Mutant("e^{1/tau1 + 1/tau2}", "factor product with 1/tau_2,t instead of 2/tau_2,t",
            lambda: _factor_product(two=1)),
        Mutant("density factor e^{0.9/tau}", "f_1(u-1) = e^{0.9/tau_1} f_1(u)", lambda: _density(factor_num=0.9)),
        Mutant("dropped domain term", "P <= 0.9 F P' (constant moved)",
            lambda: _transcript_chain(factor=0.9 * z3.Real("F"))),
    ],
)

LEMMAS = [LEMMA17]
