"""Lemma 19 (bounding lambda_t): failure probability of the good event, the noise range on G, the halting range.

ell = ln(1/(c_G beta_t)) and ln Lambda_t = eps_t (mu_1 + tau_2,t ell) enter as
variables; E = e^{eps_t s_t Z_t} is an auxiliary with the certified monotonicity
of exp: 0 <= x <= ln Lambda => 1 <= e^x <= Lambda.
"""

from __future__ import annotations

import z3

from .common import sign_vals
from .core import Check, LemmaCheck, Mutant, Q


def _signed_noise():
    q = Q()
    s, mu, eta1, eta2, Z = Q.real("s mu eta1 eta2 Z")
    q.hyp(sign_vals(s), Z == s * (mu - eta1 + eta2))
    return q.query(s * Z == mu - eta1 + eta2)


def _range_on_G(drop_mu=False):
    q = Q()
    mu, eta1, eta2, tau2, ell = Q.real("mu eta1 eta2 tau2 ell")
    q.hyp(mu > 0, tau2 > 0, ell > 0)
    q.hyp(eta1 >= 0, eta2 >= 0, eta1 <= mu, eta2 <= tau2 * ell)  # G, and Exp noise is >= 0
    sZ = mu - eta1 + eta2
    return q.query(z3.And(sZ >= 0, sZ <= (0 if drop_mu else mu) + tau2 * ell))


def _lambda_range(sign=1, swap=False):
    q = Q()
    rho, eps, sZ, R = Q.real("rho eps sZ R")  # R = mu_1 + tau_2,t ell
    q.hyp(rho > 0, eps >= 0, sZ >= 0, sZ <= R)
    E = q.exp("E", eps * sZ)  # e^{eps s Z}
    Lam = q.exp("Lambda", eps * R)
    q.fact(z3.And(E >= 1, E <= Lam), "exp increasing: 0 <= eps sZ <= eps R => 1 <= e^{eps sZ} <= Lambda")
    lam = rho * E if sign == 1 else rho / E  # lambda_t = rho e^{eps Z}, Z = s (sZ)
    if (sign == 1) != swap:
        return q.query(z3.And(lam >= rho, lam <= rho * Lam))
    return q.query(z3.And(lam >= rho / Lam, lam <= rho))


def _failure(cg_scale=1):
    q = Q()
    mu, tau1, cG, bt = Q.real("mu tau1 cG beta_t")
    q.hyp(mu > 0, tau1 > 0, cG > 0, cG <= 1, bt > 0, bt < 1)
    p1 = q.exp("e_mu", -mu / tau1)  # Pr[eta_1 > mu_1] = e^{-mu_1/tau_1}
    ell = q.log("ell", 1 / (cG * bt))  # ell = ln(1/(c_G beta_t))
    p2 = q.exp("e_ell", -ell)  # Pr[eta_2,t > tau_2,t ell] = e^{-ell}
    q.fact(p2 == cG * bt, "exp(-ln(1/x)) = x with x = c_G beta_t")
    return q.query(p1 + p2 <= p1 + cg_scale * cG * bt)  # union bound (one step; the sums add termwise)


def _halting_range(sign=1):
    q = Q()
    rho, eps, mu, eta1, eta2 = Q.real("rho eps mu eta1 eta2")
    q.hyp(rho > 0, eps >= 0, eta1 >= 0, eta2 >= 0, eta1 <= mu)  # only {eta_1 <= mu_1}
    sZ = mu - eta1 + eta2
    E = q.exp("E", eps * sZ)
    q.fact(z3.Implies(eps * sZ >= 0, E >= 1), "exp increasing, exp(0) = 1")
    lam = rho * E if sign == 1 else rho / E
    return q.query(lam >= rho if sign == 1 else lam <= rho)


def _chain():
    """Item 2 for s = +1 and s = -1 from the signed-noise, range and lambda-range steps."""
    q = Q()
    s, mu, eta1, eta2, tau2, ell, Z, rho, eps = Q.real("s mu eta1 eta2 tau2 ell Z rho eps")
    q.hyp(z3.Or(s == 1, s == -1), mu > 0, tau2 > 0, ell > 0, rho > 0, eps >= 0)
    q.hyp(Z == s * (mu - eta1 + eta2), eta1 >= 0, eta2 >= 0, eta1 <= mu, eta2 <= tau2 * ell)  # on G
    sZ, R = mu - eta1 + eta2, mu + tau2 * ell
    E = q.exp("E", eps * sZ)
    Lam = q.exp("Lambda", eps * R)
    q.fact(z3.Implies(z3.And(sZ >= 0, sZ <= R), z3.And(E >= 1, E <= Lam)), "exp increasing")
    lam = z3.If(s == 1, rho * E, rho / E)  # lambda_t = rho e^{eps Z} = rho e^{s eps (sZ)}
    q.hyp(_signed_noise().implication(), _range_on_G().implication())
    q.hyp(_lambda_range().instance(sZ=sZ, R=R), _lambda_range(sign=-1).instance(sZ=sZ, R=R))
    return q.query(z3.And(z3.Implies(s == 1, z3.And(lam >= rho, lam <= rho * Lam)),
                          z3.Implies(s == -1, z3.And(lam >= rho / Lam, lam <= rho))))


LEMMA19 = LemmaCheck(
    key="lemma19",
    ref="Lemma 19(1)-(3)",
    statement="Pr[G^c] <= e^{-mu_1/tau_1} + c_G sum beta_t; on G: s_t Z_t in [0, mu_1 + tau_2,t ln(1/(c_G beta_t))], "
    "lambda_t in [rho_t, rho_t Lambda_t] (s=+1), [rho_t/Lambda_t, rho_t] (s=-1); on {eta_1 <= mu_1} the halting side",
    steps=[
        Check("s Z = mu - eta1 + eta2", "s in {-1, +1}", _signed_noise),
        Check("range on G", "0 <= s Z <= mu_1 + tau_2,t ell", _range_on_G),
        Check("lambda range s=+1", "lambda in [rho, rho Lambda]", _lambda_range),
        Check("lambda range s=-1", "lambda in [rho/Lambda, rho]", lambda: _lambda_range(sign=-1)),
        Check("failure probability", "union bound with Pr[eta_2,t > tau_2,t ell] = c_G beta_t", _failure),
        Check("halting range s=+1", "eta_1 <= mu_1 => lambda >= rho", _halting_range),
        Check("halting range s=-1", "eta_1 <= mu_1 => lambda <= rho", lambda: _halting_range(sign=-1)),
    ],
    chain=_chain,
    mutants=[
        Mutant("range without mu_1", "s Z <= tau_2,t ell", lambda: _range_on_G(drop_mu=True)),
        Mutant("s=-1 with the s=+1 range", "lambda in [rho, rho Lambda] for s = -1", lambda: _lambda_range(sign=-1,
            swap=True)),
        Mutant("c_G beta_t -> 0.9 c_G beta_t", "union bound constant shrunk 10%", lambda: _failure(cg_scale=0.9)),
    ],
)

LEMMAS = [LEMMA19]
