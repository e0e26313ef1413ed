"""The BatchToCO benchmark harness on the smallest bundled stream."""

import pytest

from audits.bench.co import clopper_pearson, lemma40_bound, markdown, measure, summarise
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.streams import bundled_stream


def test_clopper_pearson_known_values():
    assert clopper_pearson(10, 10) == (pytest.approx(0.6915, abs=1e-4), 1.0)
    lo, hi = clopper_pearson(5, 10)
    assert lo == pytest.approx(0.1871, abs=1e-4) and hi == pytest.approx(0.8129, abs=1e-4)


def test_measure_and_summary_on_florentine():
    cfg = COConfig(k=2)
    spec = {"stream": "florentine_families", "problem": "coverage", "k": 2, "seeds": 2}
    runs = [measure(cfg, bundled_stream("florentine_families"), s) for s in range(2)]
    for r in runs:
        assert r["T"] == 20 and r["opt_exact"]
        assert set(r["errors"]) == {"batchtoco", "basic", "advanced", "doubling"}
        assert all(0 <= e <= o for e, o in zip(r["errors"]["batchtoco"], r["opt"]))
        assert r["calls_within_bound"]
    s = summarise(cfg, spec, runs)
    assert s["runs"] == 2 and 0 <= s["theorem42"]["fraction"] <= 1
    assert "florentine_families" in markdown({"config": cfg.to_dict(), "quick": True, "seconds": 1.0,
                                              "delta_prime_advanced": 1e-6, "samplers": "x", "streams": [s]})


def test_lemma40_bound_grows_with_opt():
    cfg = COConfig()
    assert lemma40_bound(cfg, 10, 100) <= lemma40_bound(cfg, 10**6, 100)


def test_certified_comparison_on_a_short_bursty_stream():
    from audits.bench.co import compare, comparison_markdown
    from gtm_core.batchtoco.params import COConfig

    payload = compare(COConfig(), streams=("bursty",), T=600, seeds=1, progress=lambda m: None)
    s = payload["streams"][0]
    assert set(s["median_mean"]) == {"certified", "basic", "advanced", "doubling"}
    assert payload["ledger"]["certified"]
    assert "Certified BatchToCO" in comparison_markdown(payload)
    run = s["runs"][0]
    assert run["warmup_calls_charged"] == 9  # R = floor(log2 600)
    assert 1 <= run["warmup_calls"] <= 9 and (run["warmup_calls"] == 9 or run["checkpoints"])


def test_densest_comparison_checks_opt_by_maxflow_and_reports_the_literal_variant():
    from audits.bench.co import compare, comparison_markdown, maxflow_checkpoints
    from gtm_core.batchtoco.problems import make_problem
    from gtm_core.batchtoco.streams import densest_stream
    from gtm_core.errors import CheckFailed

    payload = compare(COConfig(), streams=("contact",), T=300, seeds=1, progress=lambda m: None, problem="densest")
    run = payload["streams"][0]["runs"][0]
    assert run["problem"] == "densest" and run["opt_maxflow_checked"] >= 10
    assert set(run["mean"]) == {"certified", "literal", "basic", "advanced", "doubling"}
    assert "densest" in comparison_markdown(payload) and "| literal |" in comparison_markdown(payload)
    stream = densest_stream("contact", 50, 0)
    problem = make_problem("densest", len(stream.vertices))
    with pytest.raises(CheckFailed, match="OPT_50"):  # a wrong OPT series is caught
        maxflow_checkpoints(problem, stream, [0.0] * 50, {50})


def test_certified_config_sets_certified_keys_and_refuses_others():
    from audits.bench.co import certified_config
    from gtm_core.batchtoco.certified import certified_split
    from gtm_core.batchtoco.params import COConfig
    from gtm_core.errors import ConfigError
    from proofs.co_certified_ledger import ledger

    default = certified_config(COConfig(), 10_000)
    single = certified_config(COConfig(), 10_000, certified={"levels": 1, "warmup_share": 0.87425})
    assert certified_split(default).levels == 4 and certified_split(single).levels == 1
    assert single.warmup_share == 0.87425 and default.warmup_share == 0.5
    assert ledger(single).certified
    cont = certified_config(COConfig(), 10_000, certified={"levels": 1, "warmup_share": 0.87425,
                                                           "warmup_after_checkpoint": True})
    assert cont.warmup_after_checkpoint is True and default.warmup_after_checkpoint is False
    assert certified_split(cont) == certified_split(single) and ledger(cont).to_dict() == ledger(single).to_dict()
    for bad in ({"epsilon": 2.0}, {"horizon": 5}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            certified_config(COConfig(), 10_000, certified=bad)
