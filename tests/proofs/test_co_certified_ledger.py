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


def test_warmup_after_checkpoint_leaves_the_ledger_identical():
    on = COConfig(variant="certified", horizon=2000, k=2, warmup_after_checkpoint=True)
    assert ledger(on).to_dict() == ledger(CONFIG).to_dict()
    r = ledger(on)
    assert r.certified and r.warmup_calls_charged == r.warmup_calls_reserved == 10  # R = floor(log2 2000)


def test_warmup_at_checkpoints_is_refused():
    """One warm-up call more per checkpoint (R + L at eps_W, R reserved): the total exceeds eps."""
    for cfg in (CONFIG, COConfig(variant="certified", horizon=2000, k=2, warmup_after_checkpoint=True)):
        r = ledger(cfg, implementation=variant("warmup_at_checkpoints"))
        assert not r.certified
        assert r.warmup_calls_charged == r.warmup_calls_reserved + r.levels
        assert r.total_upper > cfg.epsilon


def test_rebalanced_configuration_is_certified_and_a_larger_selection_is_refused():
    """The configuration selected by benchmarks/results/co/preregistration_rebalance.md (T = 1e4, one level,
    warm-up share 0.87425, gtm_share 0.4, warm-up continued): certified in arb with the whole of eps spent;
    ThresholdSelect's Q run above its charged eps_Q (x1.01 and the power suite's x8) is refused."""
    from dataclasses import replace

    from audits.bench.co import certified_config
    from audits.power.batchtoco import CORRECT

    cfg = certified_config(COConfig(), 10_000, "coverage", {"levels": 1, "warmup_share": 0.87425, "gtm_share": 0.4,
                                                            "warmup_after_checkpoint": True})
    r = ledger(cfg)
    assert r.certified and r.total_upper <= cfg.epsilon and r.shares["unspent"] < 1e-9
    assert r.levels == 1 and r.first_level == 12 and r.warmup_calls_charged == r.warmup_calls_reserved == 13
    assert abs(r.shares["threshold_select"] - 0.0749) < 1e-3 and abs(r.shares["gtm"] - 0.0499) < 1e-3
    for scale in (1.01, 8.0):
        bad = ledger(cfg, implementation=replace(CORRECT, selection_scale=scale))
        assert not bad.certified
        assert bad.selection_loss_upper > bad.selection_share
    assert ledger(cfg, implementation=variant("selection_up")).total_upper > cfg.epsilon
