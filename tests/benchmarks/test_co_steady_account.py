"""The steady-stream budget account: its parts add up to eps, and it reads the committed comparison."""

import json

import pytest

from benchmarks.co_steady_account import OUT, account, markdown


def test_account_parts_sum_to_the_whole_budget():
    a = account(json.loads((OUT / "co_comparison_b.json").read_text()))
    assert sum(a["spent_median_run"].values()) == pytest.approx(1.0, abs=1e-9)
    assert a["R_doubling"] == 14 and len(a["runs"]) == 10
    assert a["per_call_privacy"]["warm-up eps_W"] < a["per_call_privacy"]["doubling eps/R"]
    assert "levels never started" in markdown(a)


def test_account_of_the_longer_stream_reads_its_own_file(tmp_path, monkeypatch):
    import benchmarks.co_steady_account as S

    a = account(json.loads((OUT / "co_comparison_synthetic30k.json").read_text()), "co_comparison_synthetic30k.json")
    assert a["T"] == 30000 and a["R_doubling"] == 15 and len(a["runs"]) == 10
    assert sum(a["spent_median_run"].values()) == pytest.approx(1.0, abs=1e-9)
    monkeypatch.setattr(S, "OUT", tmp_path)
    (tmp_path / "in.json").write_text((OUT / "co_comparison_synthetic30k.json").read_text())
    assert S.main(["--source", "in.json", "--name", "acc"]) == 0
    assert "T = 30000" in (tmp_path / "acc.md").read_text() and (tmp_path / "acc.json").exists()
