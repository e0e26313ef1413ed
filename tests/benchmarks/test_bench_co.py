import pytest

from benchmarks.bench_co import parse_overrides
from gtm_core.errors import ConfigError


def test_parse_overrides_types_and_errors():
    assert parse_overrides(["levels=1", "warmup_share=0.87425"]) == {"levels": 1, "warmup_share": 0.87425}
    assert isinstance(parse_overrides(["levels=1"])["levels"], int)
    assert parse_overrides(["warmup_after_checkpoint=true"]) == {"warmup_after_checkpoint": True}
    assert parse_overrides(["warmup_after_checkpoint=False"]) == {"warmup_after_checkpoint": False}
    for bad in ("levels", "=1", "warmup_share=lots"):
        with pytest.raises(ConfigError, match="--certified"):
            parse_overrides([bad])


def test_first_seed_is_validated_before_any_run():
    from audits.bench.co import compare
    from gtm_core.batchtoco.params import COConfig

    for bad in (-1, 1.5, True, "100"):
        with pytest.raises(ConfigError, match="first_seed"):
            compare(COConfig(), streams=("bursty",), T=200, seeds=1, first_seed=bad)


def test_first_seed_cli_error_is_one_line_exit_2(capsys):
    from benchmarks.bench_co import main

    assert main(["--comparison-only", "--streams", "bursty", "--seeds", "1", "--horizon", "200",
                 "--first-seed", "-3", "--name", "never_written"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "first_seed" in err[0] and "-3" in err[0]


def test_first_seed_shifts_the_stream_and_run_seeds():
    """seeds = 1 from first_seed 3 is exactly the run of stream seed 3 (compare_one), not of seed 0."""
    from audits.bench.co import compare, compare_one
    from gtm_core.batchtoco.params import COConfig

    over = {"levels": 1, "warmup_share": 0.5}
    got = compare(COConfig(), streams=("bursty",), T=300, seeds=1, first_seed=3, certified=over, progress=lambda m: None)
    run = got["streams"][0]["runs"][0]
    assert run["seed"] == 3 and got["first_seed"] == 3 and "s = 3..3" in got["seed_rule"]
    assert run["mean"] == compare_one(COConfig(), "bursty", 300, 3, certified=over)["mean"]
    assert run["mean"] != compare_one(COConfig(), "bursty", 300, 0, certified=over)["mean"]
