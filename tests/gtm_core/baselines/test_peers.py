"""Peers of Section 9 / Section 7: parameters, claims, simulators and their quadrature laws.

Statistical tests: exact binomial tests with ALPHA = 1e-3 and fixed seeds (listed per test).
Each law/claim test has a power companion that uses the same test on a point (or a broken
variant) where the statement is false and must be rejected.
"""

import math

import numpy as np
import pytest
from scipy import stats

from gtm_core import formulas as F
from gtm_core.baselines import (
    AboveThreshold,
    CohenTest,
    GhaziRandomDropping,
    LiuTalwar,
    ThresholdSelectTester,
    laplace_probability,
    laplace_quantile,
    threshold_select,
    threshold_select_iterations,
)
from gtm_core.errors import InvalidParameter

ALPHA = 1e-3
BETA = 0.05
T = 20


def _peers(eps=1.0, ratio=0.1, p_star=0.5, beta=BETA, T=T):
    e1 = eps * ratio
    return [
        LiuTalwar(epsilon=eps, eps_1=e1, p_star=p_star, beta=beta, T=T),
        CohenTest(epsilon=eps, eps_1=e1, p_star=p_star, beta=beta),
        GhaziRandomDropping(epsilon=eps, eps_1=e1, p_star=p_star, beta=beta),
        ThresholdSelectTester(epsilon=eps, eps_1=e1, p_star=p_star, beta=beta),
        AboveThreshold(epsilon=eps, eps_1=e1, p_star=p_star, beta=beta, T=T),
    ]


def _binom_two_sided(k, n, prob):
    return stats.binomtest(k, n, prob).pvalue


def _binom_greater(k, n, prob):
    """p-value of H0: rate <= prob against rate > prob."""
    return stats.binomtest(k, n, prob, alternative="greater").pvalue


def _binom_less(k, n, prob):
    return stats.binomtest(k, n, prob, alternative="less").pvalue


# --- validation -----------------------------------------------------------------


@pytest.mark.parametrize("cls", [CohenTest, GhaziRandomDropping])
def test_dropping_testers_need_eps_above_twice_eps1(cls):
    with pytest.raises(InvalidParameter, match="epsilon > 2 eps_1"):
        cls(epsilon=1.0, eps_1=0.5, p_star=0.5, beta=0.05)


@pytest.mark.parametrize("field,value", [("p_star", 1.5), ("beta", 0.0), ("epsilon", -1.0)])
def test_bad_parameters_name_field_and_value(field, value):
    kw = dict(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, T=10)
    kw[field] = value
    with pytest.raises(InvalidParameter, match=field):
        LiuTalwar(**kw)


def test_simulate_rejects_bad_streams():
    peer = CohenTest(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05)
    with pytest.raises(InvalidParameter, match="p must"):
        peer.simulate([0.1, 1.5], 10, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="n must"):
        peer.simulate([0.1], -1, np.random.default_rng(0))


# --- equation (25) and the printed constants ---------------------------------------


def test_liu_talwar_equation_25():
    lt = LiuTalwar(epsilon=1.0, eps_1=0.1, p_star=0.3, beta=0.05, T=100, delta=1e-6, eps_0=0.2)
    assert lt.sigma == pytest.approx(12 * 0.3)
    C = 2 * (math.exp(0.3) + 1 + math.exp(0.1))
    assert lt.C == pytest.approx(C) and lt.C < 21
    Delta = C * math.log(8 * 100 / 1e-6) / (0.2 * (math.exp(0.3) - 1))
    assert lt.Delta == pytest.approx(Delta)
    N = math.exp(0.2) * Delta / 0.3 * (101 / 0.05) ** 3.6
    assert lt.N == pytest.approx(N, rel=1e-12)
    # Phi_Delta -> odds for large N
    assert float(np.exp(lt.log_phi(0.3))) == pytest.approx(0.3 / 0.7, rel=1e-6)
    # the halting threshold solves Phi(p) = e^{eps0} beta^{-sigma} Phi(p*)
    lt2 = LiuTalwar(epsilon=1.0, eps_1=0.01, p_star=0.01, beta=0.05, T=10, eps_0=0.01)
    ph = lt2.claimed_halt_threshold(1)
    assert float(lt2.log_phi(ph)) == pytest.approx(0.01 + lt2.sigma * math.log(20) + float(lt2.log_phi(0.01)))


def test_cohen_parameters_and_proposition48_erratum():
    c = CohenTest(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05)
    assert c.theta_C == pytest.approx(8.0)
    assert c.calls == math.ceil(math.log(40) / (0.025 ** (1 / 8) * 0.5))
    # As printed, Proposition 48(2b) raises a negative number (beta/2 - beta) to 1/theta_C: not a probability.
    with np.errstate(invalid="ignore"):
        printed = np.float64(0.05 / 2 - 0.05) ** (1 / c.theta_C)
    assert math.isnan(printed)
    # The proof's value, implemented, respects the proof's final inequality.
    for t in (1, 10, 1000):
        beta_t = float(F.step_failure_probability(t, 0.05))
        upper = 0.5 * beta_t * 0.025 ** (1 / 8) / (2 * math.log(40) * 0.975 ** (1 / 8))
        assert 0 < c.claimed_p_bar(t) <= upper
    assert c.corollary51_ceiling(100) > c.claimed_p_bar(100)


def test_ghazi_parameters():
    g = GhaziRandomDropping(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05)
    assert g.theta_G == pytest.approx(0.8)
    assert g.calls == math.ceil(40 ** (0.1 / 0.8) * math.log(40) / 0.5)
    k = np.arange(2000)
    w = (1 - math.exp(-0.8)) * np.exp(-0.8 * k)
    assert g.mean_pass_probability == pytest.approx(float(np.sum(w * np.exp(-0.1 * k))))
    # the pass-probability sampler has Pr[k >= j] = e^{-theta_G j}  (seed 11, alpha 1e-3)
    pi = g.sample_pass_probability(200_000, np.random.default_rng(11))
    kk = np.rint(-np.log(pi) / 0.1).astype(int)
    assert _binom_two_sided(int(np.sum(kk >= 2)), kk.size, math.exp(-1.6)) > ALPHA


def test_laplace_quantile_round_trip():
    p = np.array([1e-9, 0.01, 0.3, 0.5, 0.7, 0.999])
    assert np.allclose(laplace_probability(laplace_quantile(p, 0.3), 0.3), p, rtol=1e-12)


# --- quadrature law == simulation (the two computations check each other) -------------------


@pytest.mark.parametrize("peer", _peers(), ids=lambda p: p.name)
def test_quadrature_matches_simulation(peer):
    """seed 2026, n = 40 000, alpha = 1e-3 two-sided binomial test at the peer's own p_bar x 30 (a rate ~ 5-30%)."""
    rng = np.random.default_rng(2026)
    n = 40_000
    # a point in the interesting range: where the false-halt probability is between 2% and 60%
    p = _probe_point(peer)
    prob = peer.false_halt_probability(p, T)
    assert 0.02 < prob < 0.6
    k = int(np.count_nonzero(peer.simulate(np.full(T, p), n, rng).halt))
    assert _binom_two_sided(k, n, prob) > ALPHA


@pytest.mark.parametrize("peer", _peers(), ids=lambda p: p.name)
def test_power_companion_quadrature_vs_simulation(peer):
    """Same test, same seed: a simulation at a 1.5x larger p (a broken coupling) is rejected."""
    rng = np.random.default_rng(2026)
    n = 40_000
    p = _probe_point(peer)
    prob = peer.false_halt_probability(p, T)
    k = int(np.count_nonzero(peer.simulate(np.full(T, min(1.0, 1.5 * p)), n, rng).halt))
    assert _binom_two_sided(k, n, prob) < ALPHA


def _probe_point(peer):
    from audits.bench import solve_monotone

    return solve_monotone(lambda p: peer.false_halt_probability(p, T), 0.15)


# --- each peer's own accuracy statement, checked in simulation -------------------------------


def test_cohen_proposition48_holds():
    """seed 48, n = 20 000, alpha = 1e-3: false-halt at the claimed p_bar_T <= beta; miss at p* <= beta."""
    c = CohenTest(epsilon=1.0, eps_1=0.1, p_star=0.3, beta=BETA)
    rng = np.random.default_rng(48)
    n = 20_000
    k = int(np.count_nonzero(c.simulate(np.full(T, c.claimed_p_bar(T)), n, rng).halt))
    assert _binom_greater(k, n, 2 * BETA) > ALPHA
    miss = int(np.count_nonzero(c.simulate([0.3], n, rng).halt == 0))
    assert _binom_greater(miss, n, 2 * BETA) > ALPHA
    # power companion: same test at 1000x the claimed threshold (where the claim does not hold)
    k_bad = int(np.count_nonzero(c.simulate(np.full(T, 3000 * c.claimed_p_bar(T)), n, rng).halt))
    assert _binom_greater(k_bad, n, 2 * BETA) < ALPHA


def test_ghazi_theorem52_halting_and_derived_p_bar():
    """seed 52, n = 20 000, alpha = 1e-3."""
    g = GhaziRandomDropping(epsilon=1.0, eps_1=0.2, p_star=0.2, beta=BETA)
    rng = np.random.default_rng(52)
    n = 20_000
    miss = int(np.count_nonzero(g.simulate([0.2], n, rng).halt == 0))
    assert _binom_greater(miss, n, BETA) > ALPHA
    k = int(np.count_nonzero(g.simulate(np.full(T, g.claimed_p_bar(T)), n, rng).halt))
    assert _binom_greater(k, n, BETA) > ALPHA
    # power companion: a mechanism well below p* (p*/20) is missed far more often than beta
    miss_bad = int(np.count_nonzero(g.simulate([0.01], n, rng).halt == 0))
    assert _binom_greater(miss_bad, n, BETA) < ALPHA


def test_ghazi_corollary53_toy_example_ceiling():
    """Corollary 53's ceiling is below the derived per-step claim times T only by the beta/T slack."""
    g = GhaziRandomDropping(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=BETA)
    assert g.claimed_p_bar(100) < g.corollary53_ceiling(100, G=1)


def test_threshold_select_lemma34():
    """Lemma 34(2)-(3), seed 34, n = 200 000, alpha = 1e-3 (one-sided binomial tests)."""
    rng = np.random.default_rng(34)
    n = 200_000
    p1, xi, eps0 = 0.2, 0.01, 0.5
    ok, draws = threshold_select(p1, xi, eps0, n, rng)
    bound = (1 - p1) * (1 + eps0 / 2) * xi / p1
    fails = int(np.count_nonzero(~ok))
    assert _binom_greater(fails, n, bound) > ALPHA
    Tmax = threshold_select_iterations(xi, eps0)
    assert draws.max() <= Tmax
    # stochastic domination by Geo(p1 (1 - xi) + xi): compare tail at 10 draws
    q = p1 * (1 - xi) + xi
    tail = int(np.count_nonzero(draws > 10))
    assert _binom_greater(tail, n, (1 - q) ** 10) > ALPHA
    # power companion: the same failure bound does not hold for a ten times smaller p1
    ok_b, _ = threshold_select(0.02, xi, eps0, n, rng)
    bound_b = (1 - 0.2) * (1 + eps0 / 2) * xi / 0.2  # the bound for p1 = 0.2, misapplied
    assert _binom_greater(int(np.count_nonzero(~ok_b)), n, bound_b) < ALPHA


def test_threshold_select_tester_claims():
    """seed 35, n = 20 000, alpha = 1e-3."""
    ts = ThresholdSelectTester(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=BETA)
    rng = np.random.default_rng(35)
    n = 20_000
    miss = int(np.count_nonzero(ts.simulate([0.5], n, rng).halt == 0))
    assert _binom_greater(miss, n, BETA) > ALPHA
    assert ts.false_halt_probability(ts.claimed_p_bar(T), T) <= BETA
    assert ts.false_halt_probability(1e4 * ts.claimed_p_bar(T), T) > BETA  # power companion
    assert ts.guarantee()["per_step"] is True


def test_above_threshold_dwork_roth_accuracy():
    """Dwork-Roth Theorem 3.23 on the Laplace instance; seed 323, n = 20 000, alpha = 1e-3."""
    at = AboveThreshold(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=BETA, T=T)
    rng = np.random.default_rng(323)
    n = 20_000
    k = int(np.count_nonzero(at.simulate(np.full(T, at.claimed_p_bar(T)), n, rng).halt))
    assert _binom_greater(k, n, BETA) > ALPHA
    miss = int(np.count_nonzero(at.simulate([0.5], n, rng).halt == 0))
    assert _binom_greater(miss, n, BETA) > ALPHA
    assert at.evaluations_bound(1) == 0.0
    # power companion: with the threshold at q(p*) (no alpha shift) a p* mechanism is missed ~half the time
    miss_bad = float(1 - _laplace_shifted_halt(at))
    assert miss_bad > 0.3


def _laplace_shifted_halt(at):
    import dataclasses

    class Unshifted(AboveThreshold):
        @property
        def threshold(self):
            return float(laplace_quantile(self.p_star, self.eps_1))

    u = Unshifted(**{f.name: getattr(at, f.name) for f in dataclasses.fields(at) if f.init})
    return u.first_step_halt_probability(0.5)


def test_liu_talwar_theorem46_halting_and_not_too_early():
    """Theorem 46(2) and (4); quadrature (cross-checked with simulation above)."""
    lt = LiuTalwar(epsilon=1.0, eps_1=0.05, p_star=0.2, beta=BETA, T=T)
    ph = lt.claimed_halt_threshold(1)
    assert ph < 1
    assert lt.first_step_halt_probability(ph) >= 1 - BETA - lt.delta / (4 * T)
    # not stopping too early: at p = claimed p_bar_T the run halts w.p. <= beta + delta/2
    assert lt.false_halt_probability(lt.claimed_p_bar(T), T) <= BETA + lt.delta / 2
    # power companion: halting at p* itself is NOT guaranteed (the dagger of Table 1)
    assert lt.first_step_halt_probability(0.2) < 1 - BETA


def test_liu_talwar_moreover_bound_as_printed_is_an_erratum():
    """Theorem 46(3) 'moreover' as printed is >= 1/3 for every p*, yet (4) makes the mechanism halt
    w.p. >= 1 - beta at p ~ 0.023 (p* = 0.01) while it claims p_R >= 0.55: the printed bound cannot hold."""
    lt = LiuTalwar(epsilon=1.0, eps_1=0.01, p_star=0.01, beta=BETA, T=10, eps_0=0.01)
    printed = lt.moreover_bound_as_printed(1)
    ph = lt.claimed_halt_threshold(1)
    assert printed > 0.5 and ph < 0.05
    # halting at step R = 1 with p_1 = ph < printed bound happens w.p. > beta + delta/2
    assert lt.first_step_halt_probability(ph) > BETA + lt.delta / 2
    assert all(lt.moreover_bound_as_printed(t) >= 1 / 3 for t in (1, 5, 10))


def test_liu_talwar_huge_N_uses_normal_approximation():
    lt = LiuTalwar(epsilon=0.5, eps_1=0.125, p_star=0.5, beta=BETA, T=1000)
    assert lt.N > 2**63
    r = lt.simulate(np.full(5, 0.4), 100, np.random.default_rng(0))
    assert np.all(r.evaluations[r.halt == 0] == 5 * lt.N)


def test_peer_evaluations_on_null_stream():
    """seed 7: dropping testers evaluate Binomial(calls, pass prob) per step on p = 0 (mean check, 6 sd)."""
    c = CohenTest(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=BETA)
    r = c.simulate(np.zeros(10), 20_000, np.random.default_rng(7))
    assert np.all(r.halt == 0)
    mean = c.calls * c.theta_C / (c.theta_C + 1)
    per = r.evaluations / 10
    assert abs(per.mean() - mean) < 6 * per.std() / math.sqrt(per.size)
    assert per.max() <= c.evaluations_bound(1)
