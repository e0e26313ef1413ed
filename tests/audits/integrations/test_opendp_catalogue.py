"""The OpenDP catalogue (benchmarks/bench_opendp_catalogue.py): a few entries reach their verdicts by
default, the whole catalogue under ``-m slow``; OpenDP 0.16's thresholded-histogram delta is checked
against its exact law.

Statistics: OpenDP's noise cannot be seeded, so verdicts are random even at a fixed audit seed (the
engine seed takes fresh entropy). A test expecting *no* violation on a mechanism whose loss attains its
claim uses confidence 0.999 (alpha = 0.001); a test expecting a violation uses 0.95 on a measurement whose
true loss is at least twice its claim. Audit seed 1 throughout.
"""

import math

import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp_audit import audit_measurement
from audits.integrations.opendp_catalogue import (
    CATALOGUE,
    FEATURES,
    POWER_COMPANIONS,
    count_by_laplace_threshold,
    entry,
    laplace_threshold_new_key_delta,
)
from audits.statistics import cp_lower
from gtm_core.errors import InvalidParameter

dp.enable_features(*FEATURES)
SEED = 1


def test_catalogue_is_wide_enough():
    families = {e.family for e in CATALOGUE}
    assert len(CATALOGUE) >= 15 and {"randomized response", "laplace", "gaussian", "geometric", "noisy max",
                                     "noisy top-k", "thresholded histogram", "private selection", "composition",
                                     "gtm"} <= families
    assert all(e.flagged for e in POWER_COMPANIONS) and not any(e.flagged for e in CATALOGUE)
    with pytest.raises(InvalidParameter, match="name"):
        entry("no-such-entry")


@pytest.mark.parametrize("name", ["randomized_response_categorical", "noisy_top_k_pure"])
def test_correct_entries_are_not_flagged(name):
    """alpha = 0.001, seed 1, 6 s."""
    e = entry(name)
    result = audit_measurement(e.build(), seconds=6, seed=SEED, confidence=0.999, **e.audit_kwargs())
    assert result.verdict == "no-violation-found" and 0 < result.epsilon_lower_bound <= result.claim.points[0].epsilon


def test_scale_halved_companion_is_flagged():
    """Runs Laplace scale 1/2 (loss 2) declaring scale 1's map (1): alpha = 0.05, seed 1, 6 s."""
    e = entry("laplace_count_scale_halved")
    result = audit_measurement(e.build(), seconds=6, seed=SEED, **e.audit_kwargs())
    assert result.verdict == "violation" and result.epsilon_lower_bound > 1.0


def test_opendp_threshold_delta_is_one_atom_short():
    """OpenDP 0.16: make_laplace_threshold's map gives delta = Pr[Z >= threshold]; a key of count 1 absent
    from the neighbour is released with Pr[Z >= threshold - 1] = e^(1/scale) times more (exact law), and
    2000 fresh releases confirm it (99.9% one-sided Clopper-Pearson lower bound above OpenDP's delta)."""
    m = count_by_laplace_threshold(3)
    eps, delta = m.map(1)
    exact = laplace_threshold_new_key_delta(1.0, 3)
    assert exact == pytest.approx(math.e * delta, rel=1e-9)
    hits = sum("u" in m(["u"]) for _ in range(2000))
    assert float(cp_lower(hits, 2000, 0.001)) > delta
    assert not any("u" in m([]) for _ in range(200))  # on the neighbour the key is never released


def test_delta_too_small_companion_is_flagged():
    """The thresholded release declaring its exact delta / 20 (0.005; true 0.099), audited on the pair where
    its delta sits (a key absent from one dataset; the search over all pairs is the slow test's):
    alpha = 0.05, seed 1, 8 s."""
    e = entry("threshold_delta_too_small")
    result = audit_measurement(e.build(), seconds=8, seed=SEED, pairs=[[[], ["u"]]], search=False)
    assert result.verdict == "violation"


@pytest.mark.slow
@pytest.mark.parametrize("e", CATALOGUE + POWER_COMPANIONS, ids=lambda e: e.name)
def test_every_catalogue_entry_reaches_its_verdict_within_60s(e):
    """alpha = 0.05, seed 1, 60 s each (the catalogue run's settings) - except the entries with their own
    budget (CatalogueEntry.seconds: the two make_gtm step-pair entries, 240 s, too slow a measurement for
    60 s). Expected: no violation, except the power companions and OpenDP 0.16's thresholded histograms
    (their maps under-report delta)."""
    from benchmarks.bench_opendp_catalogue import audit_row

    row = audit_row(e, seconds=60, seed=SEED)
    assert row["verdict"] == row["expected"], row
    assert row["within_budget"], row["wall_seconds"]  # budget x 1.02 + 1 s (opendp_budget.wall_bound)


def test_exact_false_alarm_matches_the_conditional_law():
    """The bench's exact false-alarm probability of one calibration audit (two independent Poisson hit
    counts) equals the same probability computed through the conditional law (total hits K ~ Po(M), K_A
    given K binomial(K, 3/4), rejection above the critical count), and is below alpha; a witness in the
    non-leaking direction never rejects. Deterministic (no sampling)."""
    from scipy import stats

    from audits.early_stop import critical_count
    from benchmarks.bench_opendp_catalogue import exact_false_alarm

    m, eps, alpha = 300, math.log(3), 0.05
    got = exact_false_alarm({"input": True, "input_prime": False, "event_outputs": ["True"]}, m, eps, alpha)
    ks = range(0, 3 * m)
    want = sum(stats.poisson.pmf(k, m) * stats.binom.sf(critical_count(k, eps, alpha) - 1, k, 0.75) for k in ks)
    assert got == pytest.approx(want, rel=1e-6)
    assert 0.04 < got < alpha
    assert exact_false_alarm({"input": False, "input_prime": True, "event_outputs": ["True"]}, m, eps, alpha) < 1e-12


@pytest.mark.parametrize("name", ["alp_queryable", "gaussian_sum_int"])
def test_alp_and_gaussian_integer_sum_entries_are_coded_and_not_flagged(name):
    """make_alp_queryable (a Queryable, released as its answers to fixed keys: a tuple of floats) and the
    discrete Gaussian on an integer sum (zCDP) reach a no-violation verdict on their own maps: alpha = 0.001,
    seed 1, 6 s (the 60 s runs: benchmarks/results/opendp_catalogue_additions.md)."""
    e = entry(name)
    m = e.build()
    if name == "alp_queryable":
        out = m(["a", "a", "unique"])
        assert isinstance(out, tuple) and len(out) == 3 and all(isinstance(v, float) for v in out)
        assert m.map(1) == 1.0
    else:
        assert m.map(1) == pytest.approx(0.5) and isinstance(m([1, 2, 3]), int)
    result = audit_measurement(m, seconds=6, seed=SEED, confidence=0.999, **e.audit_kwargs())
    assert result.verdict == "no-violation-found", result.to_dict()
