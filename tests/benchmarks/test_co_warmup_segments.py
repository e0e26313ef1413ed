"""benchmarks.co_warmup_segments: the segment contributions add up to the comparison's mean errors."""

import pytest

from audits.bench.co import compare_one
from benchmarks.co_warmup_segments import SEGMENTS, markdown, segments
from gtm_core.batchtoco.params import COConfig

OVERRIDES = {"levels": 1, "warmup_share": 0.87425, "warmup_after_checkpoint": True}


def test_segments_reproduce_the_comparison_and_add_up():
    payload = segments("bursty", 600, 1, OVERRIDES)
    run = payload["runs"][0]
    ref = compare_one(COConfig(), "bursty", 600, 0, certified=OVERRIDES)
    for a in ("certified", "doubling"):
        assert sum(run["contribution"][a][g] for g in SEGMENTS) == pytest.approx(ref["mean"][a], rel=1e-12)
    assert run["cuts"][1] == 512 and run["cuts"][0] <= 512
    assert run["warmup_calls"] == 9 and run["checkpoints"] == ref["checkpoints"]
    assert "| last_doubling_to_T |" in markdown(payload)
