"""The arb ledger certifies the example configuration and exposes erratum E1."""

import pytest

from gtm_core.batchtoco.params import COConfig
from gtm_core.errors import InvalidParameter
from proofs.co_ledger import ledger, printed_formula_excess


def test_example_configuration_is_certified():
    r = ledger(COConfig(k=2), 200)
    assert r.certified
    assert r.total_upper <= r.total_with_tail_upper <= 0.9
    assert all(row.gtm_within_share for row in r.rows)


def test_power_ledger_refuses_plans_run_at_the_printed_eps(monkeypatch):
    """Power: run GTM_l at Algorithm 3's printed eps(l, t) (erratum E1) and the ledger refuses."""
    from gtm_core.batchtoco import gtm_instance
    from gtm_core.batchtoco import params as P

    def printed(config, level, j):
        return float(P.step_privacy_as_printed(level, level + j - 1, config.epsilon, config.beta,
                                               config.c_1, config.c_h))

    monkeypatch.setattr(gtm_instance, "step_privacy_used", printed)
    gtm_instance.clear_plan_cache()
    try:
        r = ledger(COConfig(epsilon=0.5, k=2), 50)
        assert not r.certified
        assert any(not row.gtm_within_share for row in r.rows)
    finally:
        gtm_instance.clear_plan_cache()


def test_erratum_e1_in_arb():
    loss, share = printed_formula_excess(COConfig(), 5, 5, 1)
    assert loss > share  # certified: lower end of the printed loss above the upper end of the share


def test_bad_arguments():
    with pytest.raises(InvalidParameter, match="horizon must be"):
        ledger(COConfig(), 0)
    with pytest.raises(InvalidParameter, match="delta = 0"):
        ledger(COConfig(delta=1e-6), 10)
