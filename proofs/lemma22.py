"""Lemma 22 (sample complexity): the algebraic case analysis and the amortised bookkeeping.

Item 1: the flipping rule controls max(Lambda_t/p*, 1/(1-p*)) in both cases, and
lambda_bar_t >= ln(4/beta_t) gives e^{-lambda_bar_t} <= beta_t/4. Item 2: A~_t >= 2,
M >= 2T, T >= 2 ln(16/beta) => e^{-M/4} <= beta/16, Lemma 54 at u = M gives
exponent M/4, W^{-sigma} = beta/(16T), and beta/4 + 3 beta/16 < beta/2.
"""

from __future__ import annotations

import z3

from .common import Max
from .core import Check, LemmaCheck, Mutant, Q

EXP_MONO = "exp is increasing"


def _case_direct(k=1):
    q = Q()
    p, g, Lam = Q.real("p_star g Lambda")
    q.hyp(p > 0, p < 1, g > 1, g <= 2, Lam >= 1, g * Lam * (1 - p) > p)  # rule chose s = +1
    return q.query(Max(Lam / p, 1 / (1 - p)) <= k * g * Lam / p)


def _case_flipped(strict=True):
    q = Q()
    p, g, Lam = Q.real("p_star g Lambda")
    q.hyp(p > 0, p < 1, g > 1, g <= 2, Lam >= 1)
    q.hyp(g * Lam * (1 - p) <= p if strict else g * Lam * (1 - p) <= 1.1 * p)  # rule chose s = -1
    return q.query(Max(Lam / p, 1 / (1 - p)) == 1 / (1 - p))


def _constant(k=1):
    q = Q()
    p, g, Lam, Cp, CA, K, lam = Q.real("p_star g Lambda C_prime C_A K lam")  # K = ln(t/beta)/(gamma-1)^2 > 0
    q.hyp(p > 0, p < 1, g > 1, g <= 2, Lam >= 1, Cp > 0, K > 0, g * Lam * (1 - p) > p)
    q.hyp(CA >= k * g * Cp, lam <= Cp * Lam * K / p)
    return q.query(lam <= CA * K * Max(Lam / p, 1 / (1 - p)))


def _tail(share=4):
    q = Q()
    bt, slack = Q.real("beta_t slack")
    q.hyp(bt > 0, bt < 1, slack >= 0)
    L4 = q.log("L4", 4 / bt)
    lb = L4 + slack  # lambda_bar >= ln(4/beta_t)
    e = q.exp("e_lb", -lb)
    e4 = q.exp("e_L4", -L4)
    q.fact(e4 == bt / 4, "exp(-ln(4/beta_t)) = beta_t/4")
    q.fact(z3.Implies(-lb <= -L4, e <= e4), EXP_MONO)
    return q.query(e <= bt / share)


def _A_tilde(k=2):
    q = Q()
    CA, g, mx, ln_tb = Q.real("C_A g max_term ln_t_beta")
    q.hyp(CA >= 2, g > 1, g <= 2, mx >= 1, ln_tb >= 1)  # beta <= 1/e, t >= 1
    return q.query(CA * ln_tb / (g - 1) ** 2 * mx >= k)


def _poisson_concentration(k=4):
    q = Q()
    beta, dT, dB, dM, u = Q.real("beta dT dB dM u")
    q.hyp(beta > 0, beta < 1, dT >= 0, dB >= 0, dM >= 0, u >= 0)
    L16 = q.log("L16", 16 / beta)
    q.fact(L16 > 2, "beta < 1 => ln(16/beta) > ln 16 > 2")
    T = 2 * L16 + dT  # T >= 2 ln(16/beta)
    B = 2 * T + dB  # B = sum A~_t >= 2T
    M = B + u + dM  # M = sigma/(sigma-1) B + u >= B + u
    e = q.exp("e_M", -M / k)
    e16 = q.exp("e_L16", -L16)
    q.fact(e16 == beta / 16, "exp(-ln(16/beta)) = beta/16")
    q.fact(z3.Implies(-M / k <= -L16, e <= e16), EXP_MONO)
    q.fact(z3.Implies(-M / k > -L16, e > e16), EXP_MONO)
    # Lemma 54(1) at u = M: u^2/(2(M + u)) = M/4
    return q.query(z3.And(M * M / (2 * (M + M)) == M / 4, e <= beta / 16))


def _truncation():
    q = Q()
    T, beta, sigma = Q.real("T beta sigma")
    q.hyp(T >= 1, beta > 0, beta < 1, sigma > 1)
    ell = q.log("ell", 16 * T / beta)
    lnW = ell / sigma  # W = (16T/beta)^{1/sigma}
    tail = q.exp("W_pow", -sigma * lnW)  # Pr[w > W] = W^{-sigma}
    q.fact(tail == beta / (16 * T), "exp(-ln(16T/beta)) = beta/(16T)")
    return q.query(z3.And(T * tail == beta / 16))


def _failure(bound="1/2"):
    q = Q()
    beta = Q.real("beta")
    q.hyp(beta > 0, beta < 1)
    return q.query(beta / 4 + beta / 16 + beta / 16 + beta / 16 < z3.RealVal(bound) * beta)


LEMMA22 = LemmaCheck(
    key="lemma22",
    ref="Lemma 22(1)-(2), algebraic parts",
    statement="lambda_t <= lambda_bar_t on G with Pr[N_t > e lambda_bar_t | G] <= beta_t/4; amortised bookkeeping",
    steps=[
        Check("case s=+1", "gamma Lambda (1-p*) > p* => max(Lambda/p*, 1/(1-p*)) <= gamma Lambda/p*", _case_direct),
        Check("case s=-1", "gamma Lambda (1-p*) <= p* => max(...) = 1/(1-p*)", _case_flipped),
        Check("constant C_A >= gamma C'", "lambda_t <= C_A ln(t/beta)/(gamma-1)^2 max(...)", _constant),
        Check("tail", "lambda_bar >= ln(4/beta_t) => e^{-lambda_bar} <= beta_t/4", _tail),
        Check("A~_t >= 2", "C_A >= 2, (gamma-1)^2 <= 1, max >= 1, ln(t/beta) >= 1", _A_tilde),
        Check("Poisson concentration", "M >= 2T >= 4 ln(16/beta) => e^{-M/4} <= beta/16", _poisson_concentration),
        Check("truncation", "T W^{-sigma} = beta/16", _truncation),
        Check("failure accounting", "beta/4 + 3 beta/16 < beta/2", _failure),
    ],
    mutants=[
        Mutant("gamma -> 0.9 gamma (case s=+1)", "max bounded by 0.9 gamma Lambda/p*", lambda: _case_direct(k=0.9)),
        Mutant("rule threshold 10% off (case s=-1)", "gamma Lambda (1-p*) <= 1.1 p*",
            lambda: _case_flipped(strict=False)),
        Mutant("C_A >= 0.9 gamma C'", "constant 10% too small", lambda: _constant(k=0.9)),
        Mutant("M/4 -> M/4.4", "Chernoff exponent constant moved", lambda: _poisson_concentration(k=4.4)),
        Mutant("failure < 0.4 beta", "accounting bound moved", lambda: _failure(bound="2/5")),
        Mutant("A~ >= 2.2", "claimed A~_t >= 2.2", lambda: _A_tilde(k=2.2)),
    ],
)

LEMMAS = [LEMMA22]
