"""Theorem 21 (global utility): the parameter identities and the flipping rule.

* 1/tau_1 + 2/tau_2 = eps for 1/tau_1 = theta eps/(theta+2), 2/tau_2 = 2 eps/(theta+2);
* the Lambda_t exponent bookkeeping: ln Lambda_t = eps_t (mu_1 + tau_2 ln(4/beta_t))
  = (eps_t/eps)(1 + 2/theta) ln(4/beta) + (eps_t/eps)(2 + theta) ln(4/beta_t);
* e^{-mu_1/tau_1} = beta/4 and the failure accounting beta/2 + beta/4 + beta/4 <= beta;
* sigma_t = 1/(eps_t tau_2) = eps/(eps_t (theta+2)) and e^{eps_t mu_1} = (4/beta)^{(1+2/theta) eps_t/eps};
* the flipping-rule identity p*/x - (1 - x(1-p*)) = (1-p*)(x-1)(x - p*/(1-p*))/x and its sign.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q


def _params(q: Q, *, theta_shift=0):
    eps, theta, it1, it2 = Q.real("eps theta inv_tau1 inv_tau2")
    q.hyp(eps > 0, theta > 0)
    q.hyp(it1 == theta * eps / (theta + 2), 2 * it2 == 2 * eps / (theta + 2 + theta_shift))
    return eps, theta, it1, it2


def _privacy_identity(theta_shift=0):
    q = Q()
    eps, theta, it1, it2 = _params(q, theta_shift=theta_shift)
    return q.query(it1 + 2 * it2 == eps)


def _taus(q: Q):
    """tau_1 = (theta+2)/(theta eps), tau_2 = (theta+2)/eps, stated multiplicatively."""
    eps, theta, tau1, tau2 = Q.real("eps theta tau1 tau2")
    q.hyp(eps > 0, theta > 0, tau1 * theta * eps == theta + 2, tau2 * eps == theta + 2)
    return eps, theta, tau1, tau2


def _lambda_exponent(k_theta=2):
    q = Q()
    eps, theta, tau1, tau2 = _taus(q)
    et, Lb, Lt = Q.real("eps_t L_beta L_beta_t")  # L_beta = ln(4/beta), L_beta_t = ln(4/beta_t)
    q.hyp(et >= 0, Lb > 0, Lt > 0)
    mu1 = tau1 * Lb  # mu_1 = tau_1 ln(4/beta)
    lnLam = et * (mu1 + tau2 * Lt)  # eps_t (mu_1 + tau_2 ln(4/beta_t)), ln(1/(c_G beta_t)) = L_beta_t for c_G = 1/4
    return q.query(lnLam == (et / eps) * (1 + 2 / theta) * Lb + (et / eps) * (k_theta + theta) * Lt)


def _good_event(share=4):
    q = Q()
    beta, it1 = Q.real("beta inv_tau1")
    q.hyp(beta > 0, beta < 1, it1 > 0)
    Lb = q.log("L_beta", 4 / beta)
    mu1 = Lb / it1  # mu_1 = tau_1 ln(4/beta)
    e = q.exp("e_mu", -mu1 * it1)
    q.fact(e == beta / 4, "exp(-ln(4/beta)) = beta/4")
    fail_G = e + beta / 4  # Lemma 19(1), c_G = 1/4, sum_t beta_t = beta
    return q.query(z3.And(fail_G == beta / 2, fail_G + beta / share + beta / 4 <= beta))


def _pareto_shape(k=2):
    q = Q()
    eps, theta, tau1, tau2 = _taus(q)
    et = Q.real("eps_t")
    q.hyp(et > 0)
    sigma = 1 / (et * tau2)
    return q.query(sigma == eps / (et * (theta + k)))


def _shared_exponent(k=1):
    q = Q()
    eps, theta, tau1, tau2 = _taus(q)
    et, Lb = Q.real("eps_t L_beta")
    q.hyp(et > 0, Lb > 0)
    return q.query(et * tau1 * Lb == (k + 2 / theta) * (et / eps) * Lb)  # ln e^{eps_t mu_1}


def _flip_identity(k=1):
    q = Q()
    p, x = Q.real("p_star x")
    q.hyp(p > 0, p < 1, x >= 1)
    return q.query(p / x - (1 - x * (1 - p)) == (1 - p) * (x - k) * (x - p / (1 - p)) / x)


def _flip_sign(strict_direct=True):
    q = Q()
    p, x = Q.real("p_star x")
    q.hyp(p > 0, p < 1, x >= 1)
    direct, flipped = p / x, 1 - x * (1 - p)
    pbar = z3.If(direct >= flipped, direct, flipped)
    s_direct = x * (1 - p) > p
    chosen = z3.If(s_direct, direct, flipped) if strict_direct else z3.If(s_direct, flipped, direct)
    # the rule's choice attains the max, and p_bar <= p*
    return q.query(z3.And(chosen == pbar, pbar <= p))


THEOREM21 = LemmaCheck(
    key="theorem21",
    ref="Theorem 21 (proof)",
    statement="1/tau_1 + 2/tau_2 = eps; "
    "Lambda_t = (4/beta)^{(eps_t/eps)(1+2/theta)} (4/beta_t)^{(eps_t/eps)(2+theta)}; "
    "Pr[G^c] <= beta/2 and total failure <= beta; sigma_t = eps/(eps_t(theta+2)); flipping rule",
    steps=[
        Check("privacy identity", "1/tau_1 + 2/tau_2 = eps", _privacy_identity),
        Check("Lambda_t exponent", "eps_t(mu_1 + tau_2 ln(4/beta_t)) = ...", _lambda_exponent),
        Check("good event and failure accounting", "e^{-mu_1/tau_1} = beta/4; beta/2 + beta/4 + beta/4 <= beta",
            _good_event),
        Check("Pareto shape", "sigma_t = 1/(eps_t tau_2) = eps/(eps_t(theta+2))", _pareto_shape),
        Check("shared noise factor", "e^{eps_t mu_1} = (4/beta)^{(1+2/theta) eps_t/eps}", _shared_exponent),
        Check("flipping identity", "p*/x - (1 - x(1-p*)) = (1-p*)(x-1)(x - p*/(1-p*))/x", _flip_identity),
        Check("flipping rule attains the max", "s=+1 iff x(1-p*) > p* picks max(p*/x, 1-x(1-p*)) <= p*", _flip_sign),
    ],
    mutants=[
        Mutant("2/tau_2 = 2eps/(theta+3)", "privacy identity with a wrong tau_2",
            lambda: _privacy_identity(theta_shift=1)),
        Mutant("(2+theta) -> (1.8+theta)", "Lambda_t exponent constant moved", lambda: _lambda_exponent(k_theta=1.8)),
        Mutant("failure share beta/4 -> beta/3.6", "failure accounting with a 10% larger Type I share",
               lambda: _good_event(share=3.6)),
        Mutant("(x-1) -> (x-1.1)", "flipping identity factor moved", lambda: _flip_identity(k=1.1)),
        Mutant("rule inverted", "s=+1 picks the flipped threshold", lambda: _flip_sign(strict_direct=False)),
        Mutant("sigma with theta+2.2", "Pareto shape constant moved", lambda: _pareto_shape(k=2.2)),
        Mutant("(1+2/theta) -> (1.1+2/theta)", "shared noise exponent moved", lambda: _shared_exponent(k=1.1)),
    ],
)

LEMMAS = [THEOREM21]
