"""benchmarks.bench_narrow_reach: the input counts match the fine family, and the account is priced from them."""

from benchmarks.bench_narrow_reach import inputs_per_level, main


def test_inputs_per_level_counts_constant_one_split_and_alternating_moves():
    assert [inputs_per_level(T) for T in (1, 2, 3, 4, 10)] == [1, 2, 4, 5, 11]


def test_account_is_priced_from_the_fine_family_and_reaches_every_length(tmp_path):
    doc = main(["--seeds", "6", "--repeats", "1", "--results-dir", str(tmp_path)])
    fam = doc["families"]
    today, ten, twenty = (fam[k] for k in fam)
    assert today["inputs"] == sum(doc["fine_inputs_by_length"].values()) == 9571
    assert ten["inputs"] == doc["levels"] * sum(inputs_per_level(T) for T in range(1, 11))
    # more inputs cost more, and a 4e7 budget spread over them affords fewer runs each
    assert today["seconds_at_needed_runs"] < ten["seconds_at_needed_runs"] < twenty["seconds_at_needed_runs"]
    assert today["seconds_at_floor_runs"] < today["seconds_at_needed_runs"]
    assert twenty["runs_per_input_at_4e7"] < ten["runs_per_input_at_4e7"] < today["runs_per_input_at_4e7"]
    assert doc["planted_reach"]["in_lengths_1_20"] == 6
    assert doc["planted_reach"]["in_fine_today"] <= doc["planted_reach"]["in_lengths_1_10"]
    assert (tmp_path / "narrow_reach.md").read_text().startswith("# Narrow planted target")


def test_verdicts_split_by_whether_the_fine_family_reaches_the_planted_seed(tmp_path):
    import json

    import pytest

    from benchmarks.bench_narrow_reach import split_by_reach

    f = tmp_path / "planted-narrow-x.json"
    f.write_text(json.dumps({"rows": [{"seed": 0, "flagged": True}, {"seed": 1, "flagged": False},
                                      {"seed": 2, "flagged": True}]}))
    split = split_by_reach([str(f)], {0: True, 1: True, 2: False})
    assert split["inside"] == {"flagged": 1, "of": 2} and split["outside"] == {"flagged": 1, "of": 1}
    with pytest.raises(SystemExit, match="seed 2"):
        split_by_reach([str(f)], {0: True, 1: True})
