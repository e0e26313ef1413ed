"""The step-row value of a certificate (audits.certify.rows)."""

import dataclasses

import pytest

from audits.certify.rows import StepChecks, step_checks_of


def test_from_dict_reads_step_and_checks_and_round_trips():
    row = {"t": 3, "p_star": 0.5, "checks": {"a": True, "b": False, "c": None}}
    v = StepChecks.from_dict(row)
    assert v.t == 3 and v.result("a") is True and v.result("missing") is None
    assert v.fails("a", "b") and not v.fails("a", "c")
    assert v.applies("c", "a") and not v.applies("c", "missing")
    assert v.to_dict() == {"t": 3, "checks": {"a": True, "b": False, "c": None}}
    assert list(v.to_dict()["checks"]) == ["a", "b", "c"]


def test_value_is_frozen_and_detached_from_the_row():
    row = {"t": 1, "checks": {"a": True}}
    v = StepChecks.from_dict(row)
    row["checks"]["a"] = False
    assert v.result("a") is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.t = 2
    with pytest.raises(TypeError):
        v.checks["a"] = False


def test_a_row_without_checks_is_a_key_error():
    with pytest.raises(KeyError):
        step_checks_of([{"t": 1, "checks": {}}, {"t": 2}])
