"""proofs.co_certified_ledger: the certified split certified in arb; a share mutated upward is refused."""

from audits.power.batchtoco import variant
from gtm_core.batchtoco.params import COConfig
from proofs.co_certified_ledger import ledger

CONFIG = COConfig(variant="certified", horizon=2000, k=2)


def test_certified_split_spends_the_whole_budget_and_is_certified():
    r = ledger(CONFIG)
    assert r.certified
    assert r.total_upper <= CONFIG.epsilon
    assert r.shares["unspent"] < 1e-9  # the whole of eps is spent (up to the 1e-12 roundings)
    assert r.gtm_loss_upper <= r.gtm_share


def test_selection_up_is_refused():
    r = ledger(CONFIG, implementation=variant("selection_up"))
    assert not r.certified
    assert r.total_upper > CONFIG.epsilon
