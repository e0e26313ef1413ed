"""The planted-violation bench's own contract: the confidence it audits at, its output files."""

from __future__ import annotations

import json

from benchmarks import bench_planted


def test_confidence_is_passed_to_every_audit_and_recorded(tmp_path):
    """A calibration at a stricter confidence is a different audit (its bounds are lower), and says so;
    the in-progress file is removed once the results file is written."""
    bounds = {}
    for conf in (0.95, 0.999):
        d = tmp_path / str(conf)
        d.mkdir()
        bench_planted.main(["--count", "1", "--calibration", "2", "--max-samples", "40000", "--confidence", str(conf),
                            "--results-dir", str(d)])
        doc = json.loads((d / "planted.json").read_text())
        assert doc["confidence"] == conf
        assert sorted(p.name for p in d.iterdir()) == ["planted.json"]
        # every row records whether the fine family's first round ran (a calibration must say which path it tested)
        assert all("fine_first_round" in c for c in doc["calibration"] + doc["rows"])
        bounds[conf] = [c["lower_bound"] for c in doc["calibration"]] + [r["lower_bound"] for r in doc["rows"]]
    assert all(strict < loose for strict, loose in zip(bounds[0.999], bounds[0.95]))
