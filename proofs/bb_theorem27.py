"""Black-box evaluator paper, Theorem 2.7 (pure-DP evaluator, Algorithm 4): the inequality steps of
its proof (privacy of the uniform mixture, failure budget, the cutoff window n - h in [K, K + 2R + 1),
and K/(d+1) - Delta >= 1 so the EM output has depth >= 1).

Exponentials enter as variables: E = e^eps, E0 = e^{eps_0}; the certified fact E0 <= E (exp is
increasing and eps_0 = eps/2 <= eps) is a hypothesis.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q

EXP_MONO = "exp is increasing; eps_0 = eps/2 <= eps"


def _uniform_absorbs_delta(delta_scale=1, with_fact=True):
    """(1 - eta) delta_0 - eta (e^eps - 1)/M <= 0 given delta_0 <= eta (e^{eps_0} - 1)/M."""
    q = Q()
    E, E0, eta, d0, M = Q.real("E E0 eta delta0 M")
    q.hyp(E0 > 1, E > 1, eta > 0, eta < 1, M >= 2, d0 > 0)
    q.hyp(d0 <= delta_scale * eta * (E0 - 1) / M)
    if with_fact:
        q.fact(E0 <= E, EXP_MONO)
    return q.query((1 - eta) * d0 - eta * (E - 1) / M <= 0)


def _pointwise_pure(extra_eta=1):
    """P_S(y) = eta/M + (1-eta) p_S(y) with p_S(y) <= e^eps p_S'(y) + delta_0  =>  P_S(y) <= e^eps P_S'(y)."""
    q = Q()
    E, eta, d0, M, p, pp = Q.real("E eta delta0 M p p_prime")
    q.hyp(E > 1, eta > 0, eta < 1, M >= 2, d0 >= 0, p >= 0, p <= 1, pp >= 0, pp <= 1)
    q.hyp(p <= E * pp + d0, (1 - eta) * d0 - eta * (E - 1) / M <= 0)
    P, PP = extra_eta * eta / M + (1 - eta) * p, eta / M + (1 - eta) * pp
    return q.query(P <= E * PP)


def _failure_budget(eta_factor=z3.RealVal("1/2")):
    """eta + (1 - eta) beta_0 <= beta with eta = beta_0 = beta/2."""
    q = Q()
    b = Q.real("beta")
    q.hyp(b > 0, b < 1)
    eta, b0 = eta_factor * b, b / 2
    return q.query(eta + (1 - eta) * b0 <= b)


def _cutoff_window(z_bound=1):
    """h = floor(n + Z - R - K), |Z| <= R  =>  K <= n - h < K + 2R + 1."""
    q = Q()
    n, Z, R, K, h = Q.real("n Z R K h")
    q.hyp(R > 0, K >= 1, -z_bound * R <= Z, Z <= z_bound * R)
    q.hyp(h <= n + Z - R - K, n + Z - R - K < h + 1)  # h is the floor
    return q.query(z3.And(n - h >= K, n - h < K + 2 * R + 1))


def _depth_at_least_one(plus_one=1):
    """K >= (d+1)(Delta + 1), n - h >= K  =>  (n - h)/(d+1) - Delta >= 1."""
    q = Q()
    K, d, D, nh = Q.real("K d Delta n_minus_h")
    q.hyp(d >= 1, D > 0, K >= (d + 1) * (D + plus_one), nh >= K)
    return q.query(nh / (d + 1) - D >= 1)


THEOREM27 = LemmaCheck(
    key="bb_theorem2.7",
    ref="Black-box paper, Theorem 2.7 (proof), Algorithm 4",
    statement="delta_0 <= eta (e^{eps_0} - 1)/M makes the mixture pure eps-DP pointwise; eta + (1-eta) beta_0 <= beta; "
              "K <= n - h < K + 2R + 1 when |Z| <= R; K >= (d+1)(Delta+1) gives depth >= (n-h)/(d+1) - Delta >= 1",
    steps=[
        Check("uniform branch absorbs delta_0", "(1 - eta) delta_0 <= eta (e^eps - 1)/M", _uniform_absorbs_delta),
        Check("pointwise pure DP", "P_S(y) <= e^eps P_S'(y) for the eta-mixture", _pointwise_pure),
        Check("failure budget", "eta + (1 - eta) beta_0 <= beta", _failure_budget),
        Check("cutoff window", "K <= n - h < K + 2R + 1 (locality lambda = ceil(K + 2R + 1))", _cutoff_window),
        Check("depth >= 1", "K >= (d+1)(Delta+1) => (n-h)/(d+1) - Delta >= 1", _depth_at_least_one),
    ],
    mutants=[
        Mutant("delta_0 doubled", "delta_0 <= 2 eta (e^{eps_0}-1)/M", lambda: _uniform_absorbs_delta(delta_scale=2)),
        Mutant("no eps_0 <= eps", "the fact e^{eps_0} <= e^eps dropped", lambda: _uniform_absorbs_delta(with_fact=False)),
        Mutant("uniform weight doubled on one side", "2 eta / M on S only",
               lambda: _pointwise_pure(extra_eta=z3.RealVal(2))),
        Mutant("eta = beta", "eta = beta instead of beta/2", lambda: _failure_budget(eta_factor=z3.RealVal(1))),
        Mutant("|Z| <= 2R", "noise not truncated at R", lambda: _cutoff_window(z_bound=2)),
        Mutant("K = (d+1) Delta", "the +1 of K dropped", lambda: _depth_at_least_one(plus_one=0)),
    ],
)

LEMMAS = [THEOREM27]
