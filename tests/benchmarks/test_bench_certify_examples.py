"""benchmarks/bench_certify_examples.py: which examples it certifies and what a timed run records."""

from __future__ import annotations

import os

from benchmarks import bench_certify_examples as B


def test_every_gtm_example_and_no_coverage_oracle_config_is_benchmarked():
    names = B.bundled_examples()
    assert "default" in names and "budget/capped" in names and "horizon" in names
    assert not any(n.startswith("co/") for n in names)  # examples/co/ is not a GTM configuration
    assert len(B.TUNE_QUESTIONS) == 6 and {T for _, T, _ in B.TUNE_QUESTIONS} == {10, 100, 1000}


def test_a_timed_run_records_wall_cpu_exit_code_and_load():
    row = B.timed(["plan", "examples/default.toml", "--steps", "1"], env=B.child_env(os.environ.get("TMPDIR", "/tmp")))
    assert row["exit_code"] == 0 and row["command"].startswith("gtm plan")
    assert row["wall_seconds"] > 0 and 0 < row["cpu_seconds"] and row["wait_seconds"] >= 0
    assert len(row["loadavg_before"]) == 3
    bad = B.timed(["plan", "no/such.toml"], env=B.child_env("/tmp"))
    assert bad["exit_code"] == 2 and bad["stderr_tail"]  # a failing command is recorded, not hidden
