"""Planners (Theorem 21, Theorem 23) against an independent computation written here from
the paper with mpmath - this file does not call gtm_core.formulas - plus rigorous (arb)
checks that the planned float64 numbers satisfy Lemmas 17, 19 and 20 exactly.

The only shared ingredient is zeta, taken from its *proved* arb enclosure
(gtm_core.zeta.zeta_enclosure, checked in test_zeta.py).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from flint import arb, ctx

from gtm_core.config import GTMConfig
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration
from gtm_core.planners import make_plan
from gtm_core.zeta import zeta_enclosure

DPS = 40


def _zeta():
    old = ctx.prec
    ctx.prec = 300
    try:
        return mpmath.mpf(zeta_enclosure(45).mid().str(50, radius=False))
    finally:
        ctx.prec = old


# --- the paper, independently --------------------------------------------------------


def paper_beta_t(t, beta):
    """Definition 7: beta_t = beta / (zeta t ln^3(t+2))."""
    t = mpmath.mpf(t)
    return mpmath.mpf(beta) / (_zeta() * t * mpmath.log(t + 2) ** 3)


def paper_lambda_left(x, alpha):
    L = mpmath.log(1 / mpmath.mpf(alpha))
    return x + L + mpmath.sqrt(2 * x * L + L**2)  # equation (3)


def paper_lambda_right(x, alpha):
    L = mpmath.log(1 / mpmath.mpf(alpha))
    return x + 1 - mpmath.sqrt(2 * (x + 1) * L)  # equation (4)


def paper_lemma11_c(alpha, beta, gamma):
    A, B = mpmath.log(1 / mpmath.mpf(alpha)), mpmath.log(1 / mpmath.mpf(beta))
    g = mpmath.mpf(gamma)
    a = mpmath.sqrt(2 * A) + g * mpmath.sqrt(2 * B)
    r = (a + mpmath.sqrt(a**2 + 8 * (g - 1) * A)) / (2 * (g - 1))
    return int(max(mpmath.floor(2 * max(A, B)), mpmath.ceil(r**2)))


def paper_step(p_star, gamma, Lambda, beta_I, beta_II):
    """Lemma 20 + the flipping rule of Theorem 21 (also used by Theorem 23)."""
    p, g, Lam = mpmath.mpf(p_star), mpmath.mpf(gamma), Lambda
    s = 1 if g * Lam * (1 - p) > p else -1
    if s == 1:
        c = paper_lemma11_c(beta_II, beta_I, gamma)
        rho = paper_lambda_left(c, beta_II) / p
    else:
        c = paper_lemma11_c(beta_I, beta_II, gamma)
        rho = paper_lambda_right(c, beta_II) / (1 - p)
    p_bar = max(p / (g * Lam), 1 - g * Lam * (1 - p))
    return dict(s=s, c=c, rho=rho, Lambda=Lam, p_bar=p_bar,
                lambda_max=rho * Lam if s == 1 else rho)


def paper_theorem21(t, epsilon, theta, gamma, beta, eps_t, p_star):
    eps, th = mpmath.mpf(epsilon), mpmath.mpf(theta)
    tau1 = 1 / (th * eps / (th + 2))  # 1/tau_1 = theta eps/(theta+2)
    tau2 = 2 / (2 * eps / (th + 2))  # 2/tau_2 = 2 eps/(theta+2)
    mu1 = tau1 * mpmath.log(4 / mpmath.mpf(beta))
    bt = paper_beta_t(t, beta)
    Lam = mpmath.exp(mpmath.mpf(eps_t) * (mu1 + tau2 * mpmath.log(4 / bt)))  # Lemma 19(2)
    out = paper_step(p_star, gamma, Lam, bt / 4, bt / 4)
    out.update(tau1=tau1, tau2=tau2, mu1=mu1, beta_t=bt)
    return out


def paper_theorem23(t, epsilon_c, c_h, gamma, beta, eps_t, p_star):
    ec, ch, e = mpmath.mpf(epsilon_c), mpmath.mpf(c_h), mpmath.mpf(eps_t)
    tau1 = 1 / ec
    mu1 = mpmath.log(4 / mpmath.mpf(beta)) / ec
    bt = paper_beta_t(t, beta)
    tau2 = 2 / (ch * e * mpmath.log(4 / bt)) if e > 0 else mpmath.inf
    Lam = mpmath.exp(e * (mu1 + tau2 * mpmath.log(4 / bt))) if e > 0 else mpmath.mpf(1)
    out = paper_step(p_star, gamma, Lam, bt / 6, bt / 6)
    out.update(tau1=tau1, tau2=tau2, mu1=mu1, beta_t=bt)
    return out


def _config(**over):
    gtm = {"parameterization": "theorem21", "epsilon": 1.0, "theta": 1.0, "gamma": 1.5,
           "beta": 0.05}
    stream = {"eps_t": 0.1, "p_star": 0.5, "horizon": 1000}
    for k, v in over.items():
        (stream if k in ("eps_t", "p_star", "horizon", "delta_t") else gtm)[k] = v
    if gtm["parameterization"] == "theorem23":
        gtm.pop("epsilon", None), gtm.pop("theta", None)
    return GTMConfig.from_dict({"gtm": gtm, "stream": stream})


def _close(planned, exact, rel=1e-12):
    exact = mpmath.mpf(exact)
    if mpmath.isinf(exact):
        return math.isinf(planned)
    return abs(mpmath.mpf(planned) - exact) <= rel * abs(exact)


def _assert_matches(step, paper, *, ex_post=False):
    assert step.s == paper["s"]
    assert step.c == paper["c"]
    for key in ("rho", "Lambda", "p_bar", "lambda_max", "tau2", "beta_t"):
        assert _close(getattr(step, key), paper[key]), (key, getattr(step, key), paper[key])
    divisor = 6 if ex_post else 4
    assert _close(step.beta_I, paper["beta_t"] / divisor)
    assert _close(step.beta_II, paper["beta_t"] / divisor)


# --- the issue's check values ------------------------------------------------------


def test_issue_check_values_direct_variant():
    with mpmath.workdps(DPS):
        paper = paper_theorem21(1, 1, 1, 1.5, 0.05, 0.1, 0.5)
    # the independent computation reproduces the printed values ...
    assert (paper["s"], paper["c"]) == (1, 282)
    assert mpmath.nstr(paper["rho"], 7) == "679.0568"
    assert mpmath.nstr(paper["Lambda"], 6) == "16.0662"
    assert mpmath.nstr(paper["p_bar"], 5) == "0.020748"
    # ... and the planner agrees with it to 1e-12
    step = make_plan(_config()).step(1)
    _assert_matches(step, paper)


def test_issue_check_values_flipped_variant():
    with mpmath.workdps(DPS):
        paper = paper_theorem21(1, 1, 1, 1.5, 0.05, 0.01, 0.95)
    assert (paper["s"], paper["c"]) == (-1, 282)
    assert mpmath.nstr(paper["rho"], 7) == "4609.569"
    step = make_plan(_config(eps_t=0.01, p_star=0.95)).step(1)
    _assert_matches(step, paper)
    assert step.flipped and step.lambda_max == step.rho


@pytest.mark.parametrize("t", [1, 2, 10, 100, 1000, 123456])
@pytest.mark.parametrize(
    "params",
    [
        dict(epsilon=1.0, theta=1.0, gamma=1.5, beta=0.05, eps_t=0.1, p_star=0.5),
        dict(epsilon=0.5, theta=3.0, gamma=1.1, beta=1e-6, eps_t=0.01, p_star=0.2),
        dict(epsilon=2.0, theta=0.5, gamma=2.0, beta=0.3, eps_t=0.001, p_star=0.99),
        dict(epsilon=1.0, theta=1.0, gamma=1.01, beta=0.05, eps_t=0.0, p_star=0.7),
    ],
)
def test_theorem21_matches_the_paper(params, t):
    with mpmath.workdps(DPS):
        paper = paper_theorem21(t, **params)
    plan = make_plan(_config(**params, horizon=200_000))
    _assert_matches(plan.step(t), paper)
    assert _close(plan.tau1, paper["tau1"]) and _close(plan.mu1, paper["mu1"])


@pytest.mark.parametrize("t", [1, 7, 1000, 10**6])
@pytest.mark.parametrize(
    "params",
    [
        dict(epsilon_c=1.0, c_h=2.0, gamma=1.5, beta=0.05, eps_t=0.1, p_star=0.5),
        dict(epsilon_c=0.3, c_h=0.5, gamma=1.2, beta=1e-4, eps_t=0.02, p_star=0.97),
        dict(epsilon_c=2.0, c_h=5.0, gamma=2.0, beta=0.2, eps_t=0.0, p_star=0.1),
    ],
)
def test_theorem23_matches_the_paper(params, t):
    with mpmath.workdps(DPS):
        paper = paper_theorem23(t, **params)
    plan = make_plan(_config(parameterization="theorem23", **params, horizon=10**6))
    step = plan.step(t)
    _assert_matches(step, paper, ex_post=True)
    assert plan.epsilon is None
    # Theorem 23's Lambda_t is (4/beta)^{eps_t/eps_C} e^{2/C_H}, whatever t is
    if params["eps_t"] > 0:
        closed = (4 / mpmath.mpf(params["beta"])) ** (mpmath.mpf(params["eps_t"]) / params["epsilon_c"]) \
            * mpmath.exp(2 / mpmath.mpf(params["c_h"]))
        assert _close(step.Lambda, closed)
    # claimed ex-post loss: eps_C, or eps_C + C_H eps_t ln(4/beta_t) at a halt
    halt = params["epsilon_c"] + params["c_h"] * params["eps_t"] * mpmath.log(4 / paper["beta_t"])
    assert _close(plan.claimed_loss(t, True), halt)
    assert plan.claimed_loss(t, False) == pytest.approx(params["epsilon_c"], rel=1e-15)


def test_theorem23_example_file():
    cfg = GTMConfig.load("examples/theorem23.toml")
    with mpmath.workdps(DPS):
        paper = paper_theorem23(1, 1.0, 2.0, 1.5, 0.05, 0.1, 0.5)
    assert (paper["s"], paper["c"]) == (1, 305)
    _assert_matches(make_plan(cfg).step(1), paper, ex_post=True)


def test_per_step_lists_adaptive_eps_and_targets():
    eps = [0.1, 0.01, 0.0, 0.3, 0.05]
    ps = [0.5, 0.95, 0.3, 0.01, 0.999]
    plan = make_plan(_config(horizon=5, eps_t=eps, p_star=ps))
    for t in range(1, 6):
        with mpmath.workdps(DPS):
            paper = paper_theorem21(t, 1.0, 1.0, 1.5, 0.05, eps[t - 1], ps[t - 1])
        _assert_matches(plan.step(t), paper)
    assert [plan.step(t).s for t in range(1, 6)] == [1, -1, 1, 1, -1]
    assert plan.step(3).Lambda == 1.0  # eps_t = 0: no noise range
    with pytest.raises(InvalidParameter, match="beyond horizon"):
        plan.step(6)


def test_theorem23_per_step_lists():
    eps = [0.1, 0.0, 0.02]
    ps = [0.5, 0.6, 0.97]
    plan = make_plan(_config(parameterization="theorem23", epsilon_c=1.0, c_h=2.0, horizon=3,
                             eps_t=eps, p_star=ps))
    for t in range(1, 4):
        with mpmath.workdps(DPS):
            paper = paper_theorem23(t, 1.0, 2.0, 1.5, 0.05, eps[t - 1], ps[t - 1])
        _assert_matches(plan.step(t), paper, ex_post=True)


def test_purification_crossover_and_thresholds():
    plan = make_plan(_config(delta_t=1e-6, horizon=100))
    step = plan.step(3)
    with mpmath.workdps(DPS):
        phi = mpmath.mpf(1e-6) / (mpmath.exp(mpmath.mpf(0.1)) - 1 + 2 * mpmath.mpf(1e-6))
    assert _close(step.phi, phi)
    assert step.phi < 1e-6 / 0.1  # Corollary 25: phi < delta/eps
    assert step.halt_threshold == step.p_star + step.phi
    assert step.continue_threshold == step.p_bar - step.phi
    # purification does not change the plan itself (Corollary 25(3))
    plain = make_plan(_config(horizon=100)).step(3)
    assert (plain.c, plain.rho, plain.Lambda, plain.p_bar) == (step.c, step.rho, step.Lambda, step.p_bar)
    assert plain.phi == 0.0


# --- the planned float64 numbers satisfy the lemmas exactly (arb / rationals) ----------


def _a(x) -> arb:
    return arb(x)  # floats convert exactly


def _aL(alpha) -> arb:
    return -_a(alpha).log()


def _lam_left(c, alpha):
    L = _aL(alpha)
    return arb(c) + L + (2 * arb(c) * L + L * L).sqrt()


def _lam_right(c, alpha):
    y = arb(c) + 1
    return y - (2 * y * _aL(alpha)).sqrt()


CONFIGS = [
    _config(),
    _config(eps_t=0.01, p_star=0.95),
    _config(epsilon=0.3, theta=5.0, gamma=1.05, beta=1e-9, eps_t=0.03, p_star=0.02),
    _config(epsilon=4.0, theta=0.2, gamma=2.0, beta=0.4, eps_t=0.5, p_star=0.6),
    _config(parameterization="theorem23", epsilon_c=1.0, c_h=2.0),
    _config(parameterization="theorem23", epsilon_c=0.2, c_h=0.7, eps_t=0.05, p_star=0.9),
]


@pytest.mark.parametrize("config", CONFIGS, ids=range(len(CONFIGS)))
@pytest.mark.parametrize("t", [1, 3, 50, 1000])
def test_planned_numbers_satisfy_lemmas_17_19_20_rigorously(config, t):
    plan = make_plan(config)
    step = plan.step(t)
    g = config.gtm
    old = ctx.prec
    ctx.prec = 256
    try:
        # Lemma 17: the claimed privacy loss is what the taus give, and <= eps for Theorem 21
        if plan.parameterization == "theorem21":
            assert 1 / Fraction(plan.tau1) + 2 / Fraction(step.tau2) <= Fraction(g.epsilon)
        # Lemma 19: Pr[eta_1 > mu_1] = exp(-mu_1/tau_1) <= beta/4
        assert (-_a(plan.mu1) / _a(plan.tau1)).exp() <= _a(g.beta) / 4
        # Lemma 19(2): Lambda_t >= exp(eps_t (mu_1 + tau_2 ln(4/beta_t)))
        if step.eps_t > 0:
            need = (_a(step.eps_t) * (_a(plan.mu1) + _a(step.tau2) * (4 / _a(step.beta_t)).log())).exp()
            assert _a(step.Lambda) >= need
        # Lemma 20 at the planned (c, rho, Lambda, p_bar), both error types
        Lam, p = _a(step.Lambda), _a(step.p_star)
        if step.s == 1:
            assert _a(step.rho) * p >= _lam_left(step.c, step.beta_II)  # halting
            assert _a(step.rho) * Lam * _a(step.p_bar) <= _lam_right(step.c, step.beta_I)  # continuation
            assert arb(step.c) + 1 > 2 * _aL(step.beta_I)  # Lemma 10(3b) validity
        else:
            q = 1 - p
            assert _a(step.rho) * q <= _lam_right(step.c, step.beta_II)  # halting (right tail)
            assert arb(step.c) + 1 > 2 * _aL(step.beta_II)
            assert (_a(step.rho) / Lam) * (1 - _a(step.p_bar)) >= _lam_left(step.c, step.beta_I)
    finally:
        ctx.prec = old


def test_planner_c_equals_exact_lemma11_threshold_over_many_steps():
    """The planner computes c in float64 with a tie guard; compare with the exact integer."""
    for config in CONFIGS:
        plan = make_plan(config)
        for t in (1, 2, 5, 17, 300, 999):
            step = plan.step(t)
            a, b = (step.beta_II, step.beta_I) if step.s == 1 else (step.beta_I, step.beta_II)
            with mpmath.workdps(60):
                assert step.c == paper_lemma11_c(mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(config.gtm.gamma))


def test_flipping_rule_picks_the_larger_threshold_in_plans():
    for p_star in (0.05, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
        step = make_plan(_config(p_star=p_star, eps_t=0.01)).step(1)
        x = 1.5 * step.Lambda
        direct, flipped = p_star / x, 1 - x * (1 - p_star)
        assert step.s == (1 if direct > flipped else -1)
        assert step.p_bar == pytest.approx(max(direct, flipped), rel=1e-14)


def test_theorem21_claimed_loss_and_good_event():
    plan = make_plan(_config())
    assert plan.claimed_loss(5, halted=False) == pytest.approx(1 / 3)
    assert plan.claimed_loss(5, halted=True) == pytest.approx(1.0)
    assert plan.claimed_loss(5, halted=True) <= 1.0
    assert plan.good_event_failure <= 0.05 / 2


def test_large_noise_range_is_planned_not_crashed():
    """Regression (found by property_tests): directed rounding of a Lambda ~ 1e148 needed more
    than 64 one-ulp nudges (ArithmeticError), and an evaluation budget above 2^63 broke
    scipy (TypeError). Both configurations are valid; their plans must be computed."""
    cfg = GTMConfig.from_dict({
        "gtm": {"parameterization": "theorem21", "gamma": 2.0, "beta": 1e-12, "epsilon": 1.0,
                "theta": 0.1},
        "stream": {"eps_t": 0.5, "p_star": 0.5, "horizon": 13},
    })
    step = make_plan(cfg).step(13)
    assert step.Lambda > 1e140 and 0 < step.p_bar < 1e-140
    assert step.evaluation_budget > 2**63
    old = ctx.prec
    ctx.prec = 256
    try:
        need = (_a(0.5) * (_a(make_plan(cfg).mu1) + _a(step.tau2) * (4 / _a(step.beta_t)).log())).exp()
        assert _a(step.Lambda) >= need
    finally:
        ctx.prec = old


def test_overflowing_configuration_is_a_typed_error():
    cfg = _config(epsilon=0.01, theta=100.0, beta=1e-12, eps_t=1.0)
    with pytest.raises(UnsupportedConfiguration, match="overflows"):
        make_plan(cfg)


# --- the one registry of parameterizations ----------------------------------------


def test_parameterization_properties_are_given_by_name():
    """The registry's booleans are keyword-only: a positional (name, planner, noise, flags...) list fails."""
    from gtm_core.planners import REGISTRY, Parameterization

    info = REGISTRY["exact"]
    with pytest.raises(TypeError):
        Parameterization("exact", info.step_planner, "theorem21", False, False, False)
    again = Parameterization(name="exact", step_planner=info.step_planner, noise="theorem21",
                             chernoff_thresholds=False, ex_post=False, in_paper=False)
    assert again == info


@pytest.mark.parametrize("epsilon", [1.0, 0.3])  # at 0.3 rounding moves tau_2 by an ulp
def test_registry_is_the_configuration_s_list_and_its_properties_hold(epsilon):
    from gtm_core.config import PARAMETERIZATIONS
    from gtm_core.planners import REGISTRY, STEP_PLANNERS, global_noise, lemma11_c, theorem21_noise

    assert tuple(REGISTRY) == PARAMETERIZATIONS == tuple(STEP_PLANNERS)
    base = GTMConfig.load("examples/default.toml")
    for name, info in REGISTRY.items():
        own_example = name in ("theorem23", "horizon")  # their configurations carry more than a name
        cfg = (GTMConfig.load(f"examples/{name}.toml") if own_example
               else base.with_changes(parameterization=name, epsilon=epsilon))
        plan = make_plan(cfg)
        assert STEP_PLANNERS[name] is info.step_planner
        assert (plan.epsilon is None) is info.ex_post
        for t in (1, 7):
            sp = plan.step(t)
            if info.noise == "theorem21":  # the step carries Theorem 21's rounded noise, as the plan does
                n = theorem21_noise(cfg, t)
                assert (plan.tau1, plan.mu1, sp.tau2, sp.Lambda) == (n.tau1, n.mu1, n.tau2, n.Lambda)
                assert global_noise(cfg)[2] == sp.tau2
            if info.noise == "horizon":  # Theorem 21's global noise; Lambda_t at beta_t = beta/T, rounded up
                assert (plan.tau1, plan.mu1, sp.tau2) == global_noise(cfg)
                assert sp.beta_t == cfg.gtm.beta / cfg.stream.horizon
                old = ctx.prec
                ctx.prec = 256
                try:
                    need = (_a(sp.eps_t) * (_a(plan.mu1) + _a(sp.tau2) * (4 / _a(sp.beta_t)).log())).exp()
                    assert _a(sp.Lambda) >= need
                finally:
                    ctx.prec = old
            if info.chernoff_thresholds:  # Lemma 11's c at the step's error budgets
                alpha, beta = (sp.beta_II, sp.beta_I) if sp.s == 1 else (sp.beta_I, sp.beta_II)
                assert sp.c == lemma11_c(alpha, beta, cfg.gtm.gamma)
