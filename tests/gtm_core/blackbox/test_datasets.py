"""Datasets and functions of the black-box evaluator from files and names (gtm_core.blackbox.datasets):
CSV and JSON datasets, built-in and module:callable functions, typed errors naming the option."""

import json

import pytest

from gtm_core.blackbox import EvaluatorConfig
from gtm_core.blackbox.datasets import RECORD_DIM, build_function, read_dataset
from gtm_core.errors import InvalidParameter

CFG1 = EvaluatorConfig(1.0, 0.1, tuple([float(x)] for x in range(5)))


def test_json_list_object_and_records(tmp_path):
    p = tmp_path / "d.json"
    p.write_text("[1, 2, 3]")
    assert read_dataset(str(p), None, "median") == [1.0, 2.0, 3.0]
    p.write_text(json.dumps({"dataset": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]}))
    assert read_dataset(str(p), "x,y", "slope") == [(1.0, 2.0), (3.0, 4.0)]
    with pytest.raises(InvalidParameter, match="no field 'z'"):
        read_dataset(str(p), "z", "median")


def test_csv_needs_columns_and_numbers(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a,b\n1,2\n3,4\n")
    assert read_dataset(str(p), "b", "median") == [2.0, 4.0]
    with pytest.raises(InvalidParameter, match="--columns is required"):
        read_dataset(str(p), None, "median")
    with pytest.raises(InvalidParameter, match="no column 'c'"):
        read_dataset(str(p), "c", "median")
    p.write_text("a\n1\nx\n")
    with pytest.raises(InvalidParameter, match="row 3"):
        read_dataset(str(p), "a", "median")


def test_record_dimension_must_fit_the_function(tmp_path):
    p = tmp_path / "d.json"
    p.write_text("[1, 2, 3]")
    assert RECORD_DIM["slope"] == 2
    with pytest.raises(InvalidParameter, match="dimension 2"):
        read_dataset(str(p), None, "slope")


def test_duplicate_keys_in_a_dataset_are_refused(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"dataset": [1, 2], "dataset": [3]}')
    with pytest.raises(InvalidParameter, match="duplicate key 'dataset'"):
        read_dataset(str(p), None, "median")


def test_build_function_builtin_and_module_callable():
    f, monotone = build_function("median", CFG1)
    assert monotone is True and f([0.0, 1.0, 4.0]) in (0.0, 1.0, 4.0)
    g, monotone = build_function("examples.blackbox.my_function:trimmed_mean", CFG1)
    assert monotone is None and callable(g)
    with pytest.raises(InvalidParameter, match="dimension"):
        build_function("tukey-center", CFG1)
    with pytest.raises(InvalidParameter, match="cannot be imported"):
        build_function("no_such_module_xyz:f", CFG1)
    with pytest.raises(InvalidParameter, match="--function must be"):
        build_function("nope", CFG1)
