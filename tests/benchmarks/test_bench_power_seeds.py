"""The seed-distribution power benchmark: rows are a function of (variant, seed); bad input exits 2."""

import json

from benchmarks import bench_power_seeds as B


def test_rows_and_summary_on_a_small_budget(tmp_path):
    argv = ["--seeds", "2", "--max-samples", "200000", "--max-T", "4", "--variants", "correct,no-step-noise",
            "--results-dir", str(tmp_path), "--tag", "t"]
    assert B.main(argv) == 0
    doc = json.loads((tmp_path / "power_seeds-t.json").read_text())
    assert [(r["variant"], r["seed"]) for r in doc["rows"]] == [("correct", 1), ("correct", 2),
                                                                 ("no-step-noise", 1), ("no-step-noise", 2)]
    s = doc["summary"]
    assert s["no-step-noise"]["flagged"] == 2 and s["correct"]["flagged"] == 0  # a companion pair: power and not
    assert s["correct"]["min_bound"] <= s["correct"]["median_bound"] <= s["correct"]["max_bound"]
    again = B.row("examples/default.toml", ("correct", 1), max_samples=200_000, max_T=4)
    assert again["lower_bound"] == doc["rows"][0]["lower_bound"]


def test_a_bad_variant_exits_2_before_work(tmp_path, capsys):
    assert B.main(["--variants", "nope", "--results-dir", str(tmp_path)]) == 2
    assert "nope" in capsys.readouterr().err and not list(tmp_path.iterdir())
