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
