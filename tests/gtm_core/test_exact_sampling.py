"""Exact samplers (gtm_core.exact_sampling): unit tests, adversarial boundary tests, and G-tests
of the sampled laws against the exact laws.

Statistical tests: G-test (scipy power_divergence, lambda_="log-likelihood"), alpha = 1e-3,
fixed seeds (stated per test). Default suite: 20 000 draws (Exp, Poisson at fixed lambda and at
fixed eta's) and 5 000 whole runs (GTM halting time, direct and flipped+purified). Slow suite
(-m slow): 10^6 Exp draws, 10^6 Poisson draws (lambda = 10), 10^6 two-step GTM runs and 10^6
single-step flipped+purified runs against the exact engine, and a 10^4-step tracemalloc soak.
Power companions: lambda off by 1% is rejected (Poisson at 2e4 and 1e6 draws, count law at fixed
eta's, GTM halting time at 3e5 runs); the 5 000-run GTM tests and the exponential test use a 5%
error (scale or lambda), or purification switched off, which is what their size can see.
"""

import dataclasses
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import arb, ctx
from scipy import stats

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter, MechanismError
from gtm_core.exact import transcript_distribution
from gtm_core.exact_sampling import (
    MAX_BITS,
    BitSource,
    ExactConstant,
    GeneratorBits,
    LazyExponential,
    LazyUniform,
    PrecisionLimitExceeded,
    SeededBits,
    SharedNoise,
    SystemBits,
    bernoulli_count,
    draw_count,
    exact_step,
    fed_count,
    halts,
    poisson_inverse,
    step_kwargs,
)

ALPHA = 1e-3


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


class ScriptedBits(BitSource):
    """A bit source that first hands out a fixed bit string, then bits from a seeded stream;
    records how many bits were handed out."""

    def __init__(self, prefix: str, seed: int = 0):
        self.prefix, self.pos = prefix, 0
        self.rest = SeededBits(seed)
        self.handed = ""

    def bits(self, k: int) -> int:
        out = ""
        take = self.prefix[self.pos:self.pos + k]
        self.pos += len(take)
        out += take
        if len(out) < k:
            more = k - len(out)
            out += format(self.rest.bits(more), f"0{more}b")
        self.handed += out
        return int(out, 2) if out else 0

    def words(self, n: int) -> np.ndarray:
        return np.array([self.bits(64) for _ in range(n)], dtype=np.uint64)


def g_test(observed, expected_probs, min_expected=5.0):
    """G-test p-value of counts against exact probabilities; bins with small expectation are
    merged into their neighbour (in order)."""
    obs = np.asarray(observed, dtype=float)
    exp = np.asarray(expected_probs, dtype=float) * obs.sum()
    o2, e2, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(obs, exp):
        acc_o += o
        acc_e += e
        if acc_e >= min_expected:
            o2.append(acc_o)
            e2.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        o2[-1] += acc_o
        e2[-1] += acc_e
    e2 = np.asarray(e2) * (sum(o2) / sum(e2))  # exact probs summed in float: renormalise rounding
    return stats.power_divergence(o2, e2, lambda_="log-likelihood").pvalue


def classify(x, edges) -> int:
    """Index of the bin [edges[i-1], edges[i]) containing the lazy real x, decided exactly
    (refining x until its enclosure is on one side of every edge)."""
    prec = 64
    while True:
        ball = x.enclosure(prec)
        with ctx.workprec(prec + 64):
            below = [ball < arb(e) for e in edges]
            above = [ball > arb(e) for e in edges]
        if all(b or a for b, a in zip(below, above)):
            return sum(above)
        prec *= 2


def exp_law_edges(scale):
    # 20 bins of probability 1/20 (edges at the exact quantiles rounded to floats), plus a tail split
    edges = [scale * -math.log(1 - k / 20) for k in range(1, 20)] + [scale * 8.0, scale * 12.0]
    return sorted(edges)


def exp_bin_probs(scale, edges):
    with mpmath.workdps(40):
        cdf = [mpmath.mpf(0)] + [1 - mpmath.exp(-mpmath.mpf(e) / mpmath.mpf(scale)) for e in edges] + [mpmath.mpf(1)]
        return [float(cdf[i + 1] - cdf[i]) for i in range(len(cdf) - 1)]


def poisson_probs(lam, kmax):
    with mpmath.workdps(40):
        lam = mpmath.mpf(lam)
        pmf = [mpmath.exp(-lam + k * mpmath.log(lam) - mpmath.loggamma(k + 1)) for k in range(kmax + 1)]
        tail = 1 - mpmath.fsum(pmf)
        return [float(p) for p in pmf] + [float(tail)]


def sample_poisson_counts(lam_sampled, lam_law, n, seed):
    src = SeededBits(seed)
    kmax = int(lam_law + 12 * math.sqrt(lam_law) + 20)
    counts = np.zeros(kmax + 2)
    c = ExactConstant(lam_sampled)
    for _ in range(n):
        k = poisson_inverse(LazyUniform(src), c, limit=10**15)
        counts[min(k, kmax + 1)] += 1
    return counts, poisson_probs(lam_law, kmax)


def gtm_config(**stream):
    base = {"gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05,
                    "parameterization": "exact_noise"},
            "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 3}}
    base["stream"].update(stream)
    return GTMConfig.from_dict(base)


class RhoScaled:
    """A plan whose rho_t (hence lambda_t) is off by a factor: the broken sampler of the
    power companions."""

    def __init__(self, plan, factor):
        self.plan, self.factor = plan, factor
        self.tau1, self.mu1, self.horizon = plan.tau1, plan.mu1, plan.horizon

    def step(self, t):
        sp = self.plan.step(t)
        return dataclasses.replace(sp, rho=sp.rho * self.factor)


def halting_histogram(plan, stream, runs, seed, sampled_plan=None):
    """Halting-time histogram [never, 1, ..., T] of whole exact GTM runs on a Bernoulli stream.
    The mechanism (not the GTM) draws its outputs with numpy: K_raw ~ Bin(N_t, p_t)."""
    sampled_plan = sampled_plan or plan
    src = SeededBits(seed)
    mech_rng = np.random.default_rng(seed + 1)
    hist = np.zeros(len(stream) + 1, dtype=np.int64)
    for _ in range(runs):
        noise = SharedNoise.draw(sampled_plan.tau1, sampled_plan.mu1, src)
        at = 0
        for t, p in enumerate(stream, start=1):
            kw = {**step_kwargs(sampled_plan.step(t)), "budget": None}  # the engine has no budget
            out = exact_step(noise, src, lambda n, p=p: int(mech_rng.binomial(n, p)), **kw)
            assert not out.budget_exceeded
            if out.halted:
                at = t
                break
        hist[at] += 1
    return hist


def exact_run_distribution(plan, stream):
    return [float(x) for x in transcript_distribution(plan, stream, dps=20).run_distribution()]


# ---------------------------------------------------------------------------
# lazy reals
# ---------------------------------------------------------------------------


def test_uniform_refinement_extends_the_same_prefix():
    src = ScriptedBits("1011" + "0" * 60 + "1")
    u = LazyUniform(src)
    u.refine_to(4)
    assert u.prefix() == (0b1011, 4)
    lo, hi = u.interval()
    u.refine_to(70)
    m, n = u.prefix()
    assert n == 70 and m >> 66 == 0b1011  # the first 4 bits are kept, not redrawn
    lo2, hi2 = u.interval()
    assert lo <= lo2 < hi2 <= hi
    assert src.handed == format(m, "070b")


def test_uniform_hex_round_trip_has_fixed_width():
    src = SeededBits(1)
    lengths = set()
    for n in (0, 1, 63, 64, 300, MAX_BITS):
        u = LazyUniform(src)
        u.refine_to(n)
        text = u.to_hex()
        lengths.add(len(text))
        v = LazyUniform.from_hex(text, src)
        assert v.prefix() == u.prefix()
    assert lengths == {4 + MAX_BITS // 4}
    with pytest.raises(InvalidParameter):
        LazyUniform.from_hex("00" + "0" * 5, src)
    bad = LazyUniform.from_hex(LazyUniform(src).to_hex(), src).to_hex()
    with pytest.raises(InvalidParameter, match="padding"):
        LazyUniform.from_hex(bad[:-1] + "1", src)


def test_uniform_refuses_more_than_max_bits():
    u = LazyUniform(SeededBits(2))
    u.refine_to(MAX_BITS)
    with pytest.raises(PrecisionLimitExceeded):
        u.refine_to(MAX_BITS + 1)


def test_exponential_enclosure_contains_every_continuation():
    prefix = "0110100111" * 10
    e = LazyExponential(2.5, LazyUniform(ScriptedBits(prefix)))
    ball = e.enclosure(100)
    m = int(prefix, 2)
    with mpmath.workdps(60):
        for v in (mpmath.mpf(m) / 2**100, mpmath.mpf(m + 1) / 2**100, (mpmath.mpf(m) + 0.37) / 2**100):
            x = -2.5 * mpmath.log(v)
            assert float(ball.lower()) <= float(x) <= float(ball.upper())
    assert float(ball.rad()) < 1e-25


def test_exponential_with_hundreds_of_leading_zero_bits():
    # U < 2^-300: E = -tau ln U > 300 ln 2 tau ~ 208 tau; needs > 300 bits to locate at all
    src = ScriptedBits("0" * 300 + "1")
    e = LazyExponential(1.0, LazyUniform(src))
    ball = e.enclosure(64)
    assert e.uniform.bits_drawn > 300
    assert float(ball.lower()) > 300 * math.log(2) - 1e-9
    assert float(ball.upper()) <= 301 * math.log(2) + 1e-9
    finer = e.enclosure(600)
    assert float(finer.rad()) < 2.0 ** -290  # 600 bits, 300 of them leading zeros
    assert finer.lower() >= ball.lower() and finer.upper() <= ball.upper()


def test_secret_reprs_hide_values():
    noise = SharedNoise.draw(3.0, 13.0, SeededBits(3))
    noise.eta1.enclosure(64)
    assert "hidden" in repr(noise) and "hidden" in repr(noise.eta1)
    out = exact_step(noise, SeededBits(4), lambda n: n, eps_t=0.1, tau2=3.0, c=1, rho=5.0, s=1)
    assert "evaluations" not in repr(out)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(noise)


def test_shared_noise_secret_round_trip_continues_the_same_real():
    src = SeededBits(5)
    noise = SharedNoise.draw(3.0, 13.0, src)
    b1 = noise.eta1.enclosure(128)
    text = noise.secret_hex()
    back = SharedNoise.from_secret_hex(text, 3.0, 13.0, SeededBits(99))
    b2 = back.eta1.enclosure(512)  # refined with other bits: still inside the old enclosure
    assert b2.lower() >= b1.lower() and b2.upper() <= b1.upper()
    assert back.eta1.uniform.prefix()[0] >> (512 - 128) == noise.eta1.uniform.prefix()[0]


# ---------------------------------------------------------------------------
# Poisson inversion: adversarial boundaries
# ---------------------------------------------------------------------------


def _cdf_bits(n, lam, nbits):
    """The first nbits bits of F(n; lam) (mpmath, independent of arb)."""
    with mpmath.workdps(nbits // 3 + 50):
        f = mpmath.gammainc(n + 1, mpmath.mpf(lam), mpmath.inf, regularized=True)
        return format(int(mpmath.floor(f * mpmath.mpf(2) ** nbits)), f"0{nbits}b")


@pytest.mark.parametrize("lam,n", [(10, 12), (1000, 1010), (1e6, 1000500)])
def test_uniform_on_a_cdf_boundary_forces_hundreds_of_bits(lam, n):
    """U's first 300 bits equal F(n; lam)'s: deciding N <= n needs > 300 bits of U; the answer
    is checked against mpmath on the bits actually drawn."""
    src = ScriptedBits(_cdf_bits(n, lam, 300), seed=11)
    u = LazyUniform(src)
    k = poisson_inverse(u, ExactConstant(lam), limit=10**12)
    assert u.bits_drawn > 300
    m, nb = u.prefix()
    with mpmath.workdps(nb // 3 + 60):
        f = mpmath.gammainc(n + 1, mpmath.mpf(lam), mpmath.inf, regularized=True)
        lo, hi = mpmath.mpf(m) / 2**nb, mpmath.mpf(m + 1) / 2**nb
        assert (hi <= f) or (lo >= f)  # the drawn prefix decides the comparison
        assert k == (n if hi <= f else n + 1)


@pytest.mark.parametrize("sign", [+1, -1])
def test_lambda_within_2_pow_minus_100_of_a_boundary(sign):
    """lam = lam0 + sign 2^-100 with U's first 300 bits those of F(n; lam0): the decision
    depends on lam's 100th bit, so lam must be resolved to better than 2^-100."""
    lam0, n = 50, 55
    lam = ExactConstant(Fraction(lam0) + sign * Fraction(1, 2**100))
    u = LazyUniform(ScriptedBits(_cdf_bits(n, lam0, 300), seed=12))
    k = poisson_inverse(u, lam, limit=10**9)
    # F(n; .) decreases in lam: lam0 + 2^-100 puts F below U (N > n), lam0 - 2^-100 above (N = n)
    assert k == (n + 1 if sign > 0 else n)
    assert lam.requested > 100 and u.bits_drawn > 100


def test_budget_decided_exactly_at_its_boundary():
    lam, budget = 200, 230
    u = LazyUniform(ScriptedBits(_cdf_bits(budget, lam, 260), seed=13))
    k = poisson_inverse(u, ExactConstant(lam), limit=budget)
    m, nb = u.prefix()
    with mpmath.workdps(nb // 3 + 60):
        f = mpmath.gammainc(budget + 1, lam, mpmath.inf, regularized=True)
        if mpmath.mpf(m) / 2**nb >= f:
            assert k is None
        else:
            assert k is not None and k <= budget


def test_huge_lambda_exceeds_any_budget_without_overflow():
    noise = SharedNoise.draw(1.0, 1.0, SeededBits(6))
    # eps * Z ~ 1e4: lambda ~ e^{10^4}, far beyond float range
    assert draw_count(noise, SeededBits(7), eps_t=1e4, tau2=1.0, rho=1.0, s=1, budget=10**9) is None
    assert draw_count(noise, SeededBits(7), eps_t=1e4, tau2=1.0, rho=1.0, s=1, budget=None) is None


def test_astronomically_small_lambda_gives_zero_and_eps_zero_is_rho():
    noise = SharedNoise.draw(1.0, 1.0, SeededBits(14))
    # flipped, eps * Z ~ -1e4: lambda ~ e^{-10^4}, far below the float range: N = 0
    assert [draw_count(noise, SeededBits(i), eps_t=1e4, tau2=1.0, rho=1.0, s=-1, budget=10)
            for i in range(5)] == [0] * 5
    # eps_t = 0: lambda = rho exactly, no eta_2 drawn (tau2 = inf allowed)
    src = SeededBits(15)
    draws = [draw_count(noise, src, eps_t=0.0, tau2=math.inf, rho=3.0, s=1, budget=None) for _ in range(4000)]
    kmax = 20
    assert g_test(np.bincount(np.minimum(draws, kmax + 1), minlength=kmax + 2), poisson_probs(3.0, kmax)) > ALPHA
    with pytest.raises(InvalidParameter):
        draw_count(noise, src, eps_t=0.1, tau2=math.inf, rho=3.0, s=1, budget=None)


def test_large_counts_need_few_cdf_evaluations(monkeypatch):
    import gtm_core.exact_sampling.poisson as P

    calls = []
    real = P.poisson_cdf
    monkeypatch.setattr(P, "poisson_cdf", lambda n, lam: calls.append(n) or real(n, lam))
    src = SeededBits(8)
    ks = [P.poisson_inverse(LazyUniform(src), ExactConstant(1e7), limit=10**12) for _ in range(20)]
    assert abs(np.mean(ks) - 1e7) < 5 * math.sqrt(1e7 / 20)
    assert len(calls) <= 20 * 6  # not O(N): about two certified comparisons per draw


# ---------------------------------------------------------------------------
# Bernoulli / purification / decision
# ---------------------------------------------------------------------------


def test_bernoulli_count_is_exact_on_dyadic_boundaries():
    # p = 1/2: trial succeeds iff the first bit is 0 -> exactly the number of words < 2^63
    src = SeededBits(9)
    ref = SeededBits(9).words(1000)
    assert bernoulli_count(0.5, 1000, src) == int(np.count_nonzero(ref < np.uint64(1 << 63)))
    assert bernoulli_count(0.0, 10, src) == 0 and bernoulli_count(1.0, 10, src) == 10


def test_bernoulli_tie_with_a_long_expansion():
    # p = 2^-70 + 2^-140: a word equal to p's first word (0) must read the next one
    p = 2.0 ** -70 + 2.0 ** -140
    src = ScriptedBits("0" * 64 + "0" * 5 + "1" + "0" * 58)  # U's second word = 2^58 -> U = 2^-70 + ...
    # U = 2^-70 exactly in the first 128 bits, then the next word decides against 2^-140's place
    k = bernoulli_count(p, 1, src)
    assert k in (0, 1)
    assert len(src.handed) >= 128


def test_bernoulli_count_law():
    src = SeededBits(10)
    n, p = 200_000, 0.137
    k = bernoulli_count(p, n, src)
    assert stats.binomtest(k, n, p).pvalue > ALPHA


def test_fed_count_applies_purification_then_flip():
    src = SeededBits(11)
    assert fed_count(7, 10, phi=0.0, s=1, source=src) == 7
    assert fed_count(7, 10, phi=0.0, s=-1, source=src) == 3
    with pytest.raises(MechanismError):
        fed_count(11, 10, phi=0.0, s=1, source=src)
    with pytest.raises(InvalidParameter):
        fed_count(1, 10, phi=0.6, s=1, source=src)
    # law: n = 40, k_raw = 30, phi = 0.25 -> K = 30 - Bin(30, .25) + Bin(10, .25)
    draws = np.array([fed_count(30, 40, phi=0.25, s=1, source=src) for _ in range(20000)])
    a = stats.binom.pmf(np.arange(31), 30, 0.25)
    b = stats.binom.pmf(np.arange(11), 10, 0.25)
    law = np.zeros(41)
    for i, pa in enumerate(a):
        for j, pb in enumerate(b):
            law[30 - i + j] += pa * pb
    assert g_test(np.bincount(draws, minlength=41), law) > ALPHA


def test_halts_is_algorithm_1s_rule():
    assert halts(6, 5, 1) and not halts(5, 5, 1)
    assert halts(5, 5, -1) and not halts(6, 5, -1)


def test_system_bits_are_the_only_deployable_source():
    assert SystemBits.deployable and not SeededBits(0).deployable
    assert not GeneratorBits(np.random.default_rng(0)).deployable
    x = SystemBits().bits(200)
    assert 0 <= x < 2**200
    assert SystemBits().words(3).dtype == np.uint64


# ---------------------------------------------------------------------------
# G-tests: sampled laws vs exact laws
# ---------------------------------------------------------------------------

N_DEFAULT, N_SLOW = 20_000, 1_000_000


def _exp_counts(scale, scale_law, n, seed):
    edges = exp_law_edges(scale_law)
    src = SeededBits(seed)
    counts = np.zeros(len(edges) + 1)
    for _ in range(n):
        counts[classify(LazyExponential(scale, LazyUniform(src)), edges)] += 1
    return counts, exp_bin_probs(scale_law, edges)


def test_exponential_g_test():
    counts, probs = _exp_counts(3.0, 3.0, N_DEFAULT, seed=101)
    assert g_test(counts, probs) > ALPHA


def test_exponential_g_test_has_power():
    counts, probs = _exp_counts(3.0 * 1.05, 3.0, N_DEFAULT, seed=101)  # scale off by 5%
    assert g_test(counts, probs) < ALPHA


def test_poisson_g_test():
    counts, probs = sample_poisson_counts(100, 100, N_DEFAULT, seed=102)
    assert g_test(counts, probs) > ALPHA


def test_poisson_g_test_has_power_lambda_off_by_one_percent():
    counts, probs = sample_poisson_counts(101, 100, N_DEFAULT, seed=102)
    assert g_test(counts, probs) < ALPHA


GTM_STREAM = [0.08, 0.1]
GTM_RUNS_DEFAULT = 5_000


def test_gtm_halting_time_matches_exact_engine():
    plan = make_plan(gtm_config(horizon=2))
    hist = halting_histogram(plan, GTM_STREAM, GTM_RUNS_DEFAULT, seed=103)
    assert g_test(hist, exact_run_distribution(plan, GTM_STREAM)) > ALPHA


def test_gtm_halting_time_test_has_power():
    plan = make_plan(gtm_config(horizon=2))
    hist = halting_histogram(plan, GTM_STREAM, GTM_RUNS_DEFAULT, seed=103, sampled_plan=RhoScaled(plan, 1.05))
    assert g_test(hist, exact_run_distribution(plan, GTM_STREAM)) < ALPHA


FLIPPED_STREAM = [0.97, 0.99]


def _flipped_purified_plan():
    plan = make_plan(gtm_config(horizon=2, eps_t=0.05, p_star=0.95, delta_t=0.02))
    sp = plan.step(1)
    assert sp.s == -1 and sp.phi > 0.1  # the flipped variant, with purification
    return plan


def test_flipped_purified_halting_time_matches_exact_engine():
    plan = _flipped_purified_plan()
    hist = halting_histogram(plan, FLIPPED_STREAM, GTM_RUNS_DEFAULT, seed=104)
    assert g_test(hist, exact_run_distribution(plan, FLIPPED_STREAM)) > ALPHA


def test_flipped_purified_test_has_power():
    plan = _flipped_purified_plan()
    broken = dataclasses.replace  # purification off: the GTM is fed -M instead of -purified(M)

    class NoPurification(RhoScaled):
        def step(self, t):
            return broken(self.plan.step(t), delta_t=0.0)

    hist = halting_histogram(plan, FLIPPED_STREAM, GTM_RUNS_DEFAULT, seed=104,
                             sampled_plan=NoPurification(plan, 1.0))
    assert g_test(hist, exact_run_distribution(plan, FLIPPED_STREAM)) < ALPHA


@pytest.mark.slow
def test_exponential_g_test_slow():
    counts, probs = _exp_counts(3.0, 3.0, N_SLOW, seed=201)
    assert g_test(counts, probs) > ALPHA


@pytest.mark.slow
def test_poisson_g_test_slow():
    counts, probs = sample_poisson_counts(10, 10, N_SLOW, seed=202)
    assert g_test(counts, probs) > ALPHA


@pytest.mark.slow
def test_poisson_g_test_slow_has_power():
    counts, probs = sample_poisson_counts(10.1, 10, N_SLOW, seed=202)
    assert g_test(counts, probs) < ALPHA


@pytest.mark.slow
def test_gtm_halting_time_slow():
    plan = make_plan(gtm_config(horizon=2))
    hist = halting_histogram(plan, GTM_STREAM, N_SLOW, seed=203)
    assert g_test(hist, exact_run_distribution(plan, GTM_STREAM)) > ALPHA


@pytest.mark.slow
def test_gtm_halting_time_slow_has_power_lambda_off_by_one_percent():
    # noncentrality of a 1% lambda error on this stream: ~400 per 10^6 runs (exact engine);
    # 3 * 10^5 runs give ~120, far above the 1e-3 critical value 13.8 (df 2)
    plan = make_plan(gtm_config(horizon=2))
    hist = halting_histogram(plan, GTM_STREAM, 300_000, seed=203, sampled_plan=RhoScaled(plan, 1.01))
    assert g_test(hist, exact_run_distribution(plan, GTM_STREAM)) < ALPHA


@pytest.mark.slow
def test_memory_is_flat_over_ten_thousand_steps():
    import tracemalloc

    plan = make_plan(GTMConfig.load("examples/default.toml"))
    src = SeededBits(204)
    noise = SharedNoise.draw(plan.tau1, plan.mu1, src)
    tracemalloc.start()
    try:
        marks = []
        for i in range(10_000):
            t = i % 1000 + 1
            draw_count(noise, src, **{k: v for k, v in step_kwargs(plan.step(t)).items()
                                      if k not in ("c", "phi")})
            if i in (999, 9_999):
                marks.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert marks[1] - marks[0] < 256 * 1024  # bytes: no growth with the number of steps


def _count_law_at_fixed_etas(rho_sampled, n, seed):
    """N_t's law with eta_1, eta_2 fixed: Po(rho e^{eps s (mu1 - eta1 + eta2)})."""
    from gtm_core.exact_sampling import PoissonMean

    rho, eps, s, mu1, eta1, eta2 = 40.0, 0.1, 1, 13.0, 4.5, 0.75
    src = SeededBits(seed)
    lam = PoissonMean(rho_sampled, eps, s, mu1, ExactConstant(eta1), ExactConstant(eta2))
    with mpmath.workdps(40):
        lam_law = float(rho * mpmath.exp(eps * s * (mu1 - eta1 + eta2)))  # ~ 99.5
    kmax = int(lam_law + 12 * math.sqrt(lam_law) + 20)
    counts = np.zeros(kmax + 2)
    for _ in range(n):
        counts[min(poisson_inverse(LazyUniform(src), lam, limit=10**12), kmax + 1)] += 1
    return counts, poisson_probs(lam_law, kmax)


def test_count_law_at_fixed_etas():
    counts, probs = _count_law_at_fixed_etas(40.0, N_DEFAULT, seed=105)
    assert g_test(counts, probs) > ALPHA


def test_count_law_at_fixed_etas_has_power_lambda_off_by_one_percent():
    counts, probs = _count_law_at_fixed_etas(40.0 * 1.01, N_DEFAULT, seed=105)
    assert g_test(counts, probs) < ALPHA


# ---------------------------------------------------------------------------
# (c) the float64 path's deviation, made concrete (docs/deployment.md, "Exact sampling")
# ---------------------------------------------------------------------------


def _untemper(y: int) -> int:
    """Inverse of MT19937's output tempering."""
    y ^= y >> 18
    y ^= (y << 15) & 0xEFC60000
    res = y
    for _ in range(5):
        res = y ^ ((res << 7) & 0x9D2C5680)
    y = res & 0xFFFFFFFF
    res = y
    for _ in range(3):
        res = y ^ (res >> 11)
    return res & 0xFFFFFFFF


def _forced_generator(outputs32):
    """A numpy Generator whose MT19937 returns the given 32-bit words next (state surgery:
    the key words are the untempered outputs and the position is 0)."""
    bg = np.random.MT19937(0)
    st = bg.state
    key = st["state"]["key"].copy()
    for i, o in enumerate(outputs32):
        key[i] = _untemper(o)
    st["state"]["key"], st["state"]["pos"] = key, 0
    bg.state = st
    return np.random.Generator(bg)


def _force_double(k: int) -> list[int]:
    """32-bit words making MT19937's next_double return k / 2^53 (a = k >> 26, b = k mod 2^26)."""
    return [(k >> 26) << 5, (k & ((1 << 26) - 1)) << 6]


ZIGGURAT_EXP_R = 7.69711747013104972  # numpy's ziggurat base-layer edge (ziggurat_constants.h)


def test_numpy_exponential_has_a_maximum_the_exact_law_exceeds():
    """numpy's exponential: the only unbounded branch is r - log1p(-U), U = k 2^-53 <= 1 - 2^-53,
    so it never exceeds M = r + 53 ln 2 = 44.4339...; forced bits reach M exactly. The exact
    law gives Pr[E > M tau] = e^{-M} = 5.06e-20; numpy gives 0 (an infinite privacy-loss ratio
    on that event)."""
    g = _forced_generator([0xFFFFFFFF, 0xFFFFF807, 0xFFFFFFFF, 0xFFFFFFFF])  # idx 0, tail, U max
    m = g.standard_exponential()
    assert m == ZIGGURAT_EXP_R + 53 * math.log(2) == 44.43391803980815
    with mpmath.workdps(40):
        p_exact = mpmath.exp(-mpmath.mpf(m))
    assert 5.0e-20 < p_exact < 5.1e-20
    # the exact sampler reaches beyond M: U < 2^-70 gives E > 70 ln 2 = 48.5
    e = LazyExponential(1.0, LazyUniform(ScriptedBits("0" * 70 + "1")))
    assert e.enclosure(64) > arb(m)


def test_numpy_poisson_underweights_a_tiny_lambda_by_one_eighth():
    """numpy's Poisson for lambda < 10 (multiplication method): N >= 1 iff U > fl(e^-lambda),
    U = k 2^-53. At lambda = 2^-50, fl(e^-lambda) = 1 - 8 2^-53, so Pr_numpy[N >= 1] = 7 2^-53
    exactly, while the exact law gives 1 - e^{-2^-50} ~ 8 2^-53: ratio 8/7 (privacy-loss units:
    ln(8/7) = 0.134). Forced bits show numpy's boundary at k = 2^53 - 8 / 2^53 - 7."""
    lam = 2.0 ** -50
    assert math.exp(-lam) == 1 - 8 * 2.0 ** -53
    below = _forced_generator(_force_double(2**53 - 8) + _force_double(0)).poisson(lam)
    above = _forced_generator(_force_double(2**53 - 7) + _force_double(0)).poisson(lam)
    assert (below, above) == (0, 1)  # so Pr_numpy[N >= 1] = #{k >= 2^53 - 7} / 2^53 = 7 / 2^53
    with mpmath.workdps(40):
        p_exact = -mpmath.expm1(-mpmath.mpf(2) ** -50)
        ratio = p_exact / (7 * mpmath.mpf(2) ** -53)
    assert abs(ratio - mpmath.mpf(8) / 7) < 1e-14
    # the exact sampler puts U = 1 - 7.5 2^-53 (numpy: N = 0) on the correct side: N = 1
    bits = format(2**54 - 15, "054b")  # 1 - 15 2^-54
    k = poisson_inverse(LazyUniform(ScriptedBits(bits)), ExactConstant(lam), limit=10)
    assert k == 1
    # below 2^-54 numpy never returns N >= 1 at all (e^-lambda rounds to 1)
    assert math.exp(-2.0 ** -55) == 1.0


@pytest.mark.slow
def test_flipped_purified_single_step_slow():
    """10^6 single-step runs of the flipped variant with purification (s = -1, phi ~ 0.22)."""
    plan = _flipped_purified_plan()
    stream = FLIPPED_STREAM[:1]
    hist = halting_histogram(plan, stream, N_SLOW, seed=205)
    assert g_test(hist, exact_run_distribution(plan, stream)) > ALPHA
