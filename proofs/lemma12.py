"""Lemma 12 (Pareto facts): exponential-to-Pareto, moments, truncated moments.

Integrals enter through their antiderivatives (power rule), evaluated at the
limits; a power W^a (W >= 1) enters as a variable ranging over its certified
range: (0, 1] for a < 0, [1, inf) for a > 0 (exp increasing, ln W >= 0). What is checked is the algebra of the
proof: the closed forms and the three regimes of the second-moment bound.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q



def _exp_to_pareto(k=1):
    q = Q()
    tau, sigma, L = Q.real("tau sigma L")  # L = ln u, u >= 1
    q.hyp(tau > 0, sigma > 0, L >= 0)
    # Pr[e^{eta/(k sigma tau)} > u] = Pr[eta > k sigma tau ln u] = e^{-k sigma tau L / tau}
    tail = q.exp("tail", -(k * sigma * tau * L) / tau)
    pareto = q.exp("u_pow", -sigma * L)  # u^{-sigma}
    q.fact(z3.Implies(-(k * sigma * tau * L) / tau == -sigma * L, tail == pareto), "exp is a function")
    q.fact(z3.Implies(-(k * sigma * tau * L) / tau < -sigma * L, tail < pareto), "exp is increasing")
    return q.query(tail == pareto)


def _moment(kind="positive", flip=1):
    q = Q()
    sigma, k = Q.real("sigma k")
    q.hyp(sigma > 0, k > 0)
    if kind == "positive":
        q.hyp(k < sigma)
        a = k - sigma  # antiderivative of sigma u^{k-sigma-1} is sigma u^{k-sigma}/(k-sigma); u^{a} -> 0 (a < 0)
        value = sigma * (0 - 1) / a
        return q.query(value == flip * sigma / (sigma - k))
    a = -k - sigma
    value = sigma * (0 - 1) / a
    return q.query(value == flip * sigma / (sigma + k))


def _truncated_mean(sign=1):
    q = Q()
    sigma, P = Q.real("sigma P")  # P = W^{1-sigma}, W >= 1
    q.hyp(sigma > 1, P > 0, P <= 1)  # range of W^{1-sigma}: 0 < P <= 1
    integral = sigma / (1 - sigma) * (P - 1)  # int_1^W u sigma u^{-sigma-1} du
    value = integral + P  # + W * Pr[w > W] = W * W^{-sigma}
    closed = sigma / (sigma - 1) - sign * P / (sigma - 1)
    return q.query(z3.And(value == closed, closed <= sigma / (sigma - 1)))


def _truncated_second(regime="low", k=2):
    q = Q()
    sigma, Qv = Q.real("sigma Q")  # Q = W^{2-sigma}, W >= 1
    integral = sigma / (2 - sigma) * (Qv - 1)
    value = integral + Qv
    closed = (2 * Qv - sigma) / (2 - sigma)
    if regime == "low":
        q.hyp(sigma > 1, sigma < 2, Qv >= 1)  # range of W^{2-sigma} for sigma < 2
        return q.query(z3.And(value == closed, closed <= k * Qv / (2 - sigma)))
    q.hyp(sigma > 2, Qv > 0, Qv <= 1)  # range of W^{2-sigma} for sigma > 2
    return q.query(z3.And(value == closed, closed == (sigma - 2 * Qv) / (sigma - 2),
        closed <= k / 2 * sigma / (sigma - 2)))


def _truncated_second_sigma2():
    q = Q()
    LW = Q.real("LW")
    q.hyp(LW >= 0)
    # sigma = 2: int_1^W 2 u^{-1} du = 2 ln W, plus W^2 W^{-2} = 1
    return q.query(2 * LW + 1 == 2 * (LW - 0) + 1)


LEMMA12 = LemmaCheck(
    key="lemma12",
    ref="Lemma 12(1)-(3)",
    statement="e^{eta/(sigma tau)} ~ Par(sigma); E[w^k] = sigma/(sigma-k) (k < sigma), E[w^-k] = sigma/(sigma+k); "
    "E[min(w,W)] = sigma/(sigma-1) - W^{1-sigma}/(sigma-1) <= sigma/(sigma-1); "
    "E[min(w,W)^2] = (2W^{2-sigma} - sigma)/(2-sigma) with the three regime bounds",
    steps=[
        Check("(1) exponential to Pareto", "Pr[e^{eta/(sigma tau)} > u] = u^{-sigma}", _exp_to_pareto),
        Check("(2) positive moments", "sigma [u^{k-sigma}/(k-sigma)]_1^inf = sigma/(sigma-k)", _moment),
        Check("(2) negative moments", "sigma [u^{-k-sigma}/(-k-sigma)]_1^inf = sigma/(sigma+k)",
            lambda: _moment("negative")),
        Check("(3a) truncated mean", "closed form and the bound sigma/(sigma-1)", _truncated_mean),
        Check("(3b) second moment, 1 < sigma < 2", "closed form <= 2 W^{2-sigma}/(2-sigma)", _truncated_second),
        Check("(3b) second moment, sigma > 2", "closed form = (sigma - 2W^{2-sigma})/(sigma-2) <= sigma/(sigma-2)",
              lambda: _truncated_second("high")),
        Check("(3b) second moment, sigma = 2", "2 ln W + 1", _truncated_second_sigma2),
    ],
    mutants=[
        Mutant("sigma tau -> 1.1 sigma tau", "e^{eta/(1.1 sigma tau)} claimed Par(sigma)",
            lambda: _exp_to_pareto(k=1.1)),
        Mutant("sign of W^{1-sigma}", "E[min(w,W)] = sigma/(sigma-1) + W^{1-sigma}/(sigma-1)",
               lambda: _truncated_mean(sign=-1)),
        Mutant("2/(2-sigma) -> 1.8/(2-sigma)", "second-moment bound constant shrunk 10%",
               lambda: _truncated_second(k=1.8)),
        Mutant("moment sign", "E[w^k] = -sigma/(sigma-k)", lambda: _moment(flip=-1)),
    ],
)

LEMMAS = [LEMMA12]
