"""Theorem 23 (ex-post privacy): the exact cancellation and the parameter bookkeeping.

* eps_t tau_2,t ln(4/beta_t) = 2/C_H for tau_2,t = 2/(C_H eps_t ln(4/beta_t));
* ln Lambda_t = eps_t(mu_1 + tau_2,t ln(4/beta_t)) = (eps_t/eps_C) ln(4/beta) + 2/C_H;
* 1/tau_1 + 2/tau_2,t = eps_C + C_H eps_t ln(4/beta_t) (the ex-post loss at halting);
* lambda_bar_t >= ln(6/beta_t) on both paths, and the failure accounting beta/2 + 3 beta/6 <= beta.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q


def _params(q: Q, *, ch_scale=1):
    eps_c, ch, et, Lt, Lb, tau1, tau2 = Q.real("eps_C C_H eps_t L_beta_t L_beta tau1 tau2")
    q.hyp(eps_c > 0, ch > 0, et > 0, Lt > 0, Lb > 0)
    # 1/tau_1 = eps_C, tau_2,t = 2/(C_H eps_t ln(4/beta_t)), stated multiplicatively
    q.hyp(tau1 * eps_c == 1, tau2 * ch_scale * ch * et * Lt == 2)
    return eps_c, ch, et, Lt, Lb, tau1, tau2


def _cancellation(ch_scale=1):
    q = Q()
    eps_c, ch, et, Lt, Lb, tau1, tau2 = _params(q, ch_scale=ch_scale)
    return q.query(et * tau2 * Lt == 2 / ch)


def _lambda(k=1):
    q = Q()
    eps_c, ch, et, Lt, Lb, tau1, tau2 = _params(q)
    mu1 = tau1 * Lb  # mu_1 = ln(4/beta)/eps_C
    return q.query(et * (mu1 + tau2 * Lt) == k * (et / eps_c) * Lb + 2 / ch)


def _expost_loss(two=2):
    q = Q()
    eps_c, ch, et, Lt, Lb, tau1, tau2 = _params(q)
    return q.query(1 / tau1 + two / tau2 == eps_c + ch * et * Lt)


def _lambda_bar_direct():
    q = Q()
    c, L6, ll, p = Q.real("c L6 lam_l p_star")  # L6 = ln(6/beta_t)
    q.hyp(c >= 0, L6 > 0, p > 0, p <= 1)
    s = q.sqrt("sl", 2 * c * L6 + L6 * L6)
    q.hyp(ll == c + L6 + s)
    return q.query(z3.And(ll / p >= ll, ll >= c + L6, c + L6 >= L6))


def _lambda_bar_flipped(gmax=2, pmin="1/2"):
    q = Q()
    c, L6, ll, lr, g, p = Q.real("c L6 lam_l lam_r g p_star")
    q.hyp(c >= 0, L6 > 0, g > 1, g <= gmax, p >= z3.RealVal(pmin), p < 1)
    s = q.sqrt("sl", 2 * c * L6 + L6 * L6)
    q.hyp(ll == c + L6 + s, lr * g >= ll)  # Lemma 11(1): lambda^r >= lambda^l / gamma
    return q.query(z3.And(ll >= 2 * L6, lr / (1 - p) >= L6))


def _failure(share=6):
    q = Q()
    beta = Q.real("beta")
    q.hyp(beta > 0, beta < 1)
    return q.query(beta / 2 + beta / share + beta / 6 + beta / 6 <= beta)


THEOREM23 = LemmaCheck(
    key="theorem23",
    ref="Theorem 23 (proof)",
    statement="eps_t tau_2,t ln(4/beta_t) = 2/C_H; Lambda_t = (4/beta)^{eps_t/eps_C} e^{2/C_H}; "
    "1/tau_1 + 2/tau_2,t = eps_C + C_H eps_t ln(4/beta_t); lambda_bar_t >= ln(6/beta_t); failure <= beta",
    steps=[
        Check("exact cancellation", "eps_t tau_2,t ln(4/beta_t) = 2/C_H", _cancellation),
        Check("Lambda_t exponent", "eps_t(mu_1 + tau_2,t L) = (eps_t/eps_C) ln(4/beta) + 2/C_H", _lambda),
        Check("ex-post loss", "1/tau_1 + 2/tau_2,t = eps_C + C_H eps_t ln(4/beta_t)", _expost_loss),
        Check("lambda_bar, direct path", "lambda^l/p* >= lambda^l >= c + ln(6/beta_t) >= ln(6/beta_t)",
            _lambda_bar_direct),
        Check("lambda_bar, flipped path", "gamma <= 2: lambda^r/(1-p*) >= ln(6/beta_t)", _lambda_bar_flipped),
        Check("failure accounting", "beta/2 + 3 beta/6 <= beta", _failure),
    ],
    mutants=[
        Mutant("C_H -> 1.1 C_H in tau_2,t", "cancellation with a 10% larger C_H", lambda: _cancellation(ch_scale=1.1)),
        Mutant("eps_t/eps_C -> 0.9 eps_t/eps_C", "Lambda_t exponent constant moved", lambda: _lambda(k=0.9)),
        Mutant("2/tau_2,t -> 1/tau_2,t", "ex-post loss with a single tau_2 shift", lambda: _expost_loss(two=1)),
        Mutant("gamma <= 2.2, any p*", "flipped path with gamma <= 2.2 and p* not restricted to >= 1/2",
               lambda: _lambda_bar_flipped(gmax=2.2, pmin="0")),
        Mutant("share beta/6 -> beta/5.4", "failure accounting constant moved", lambda: _failure(share=5.4)),
    ],
)

LEMMAS = [THEOREM23]
