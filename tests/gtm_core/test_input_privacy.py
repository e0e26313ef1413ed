"""InputPrivacy: eps_t built once, read per step through one rule."""

import math

import pytest

from gtm_core.errors import InvalidParameter
from gtm_core.input_privacy import InputPrivacy


def test_a_number_covers_every_step():
    privacy = InputPrivacy.from_user(0.5)
    assert privacy.steps is None and privacy.is_uniform and not privacy.per_step
    assert [privacy.at(t) for t in (1, 7, 10**6)] == [0.5, 0.5, 0.5]
    assert privacy.to_json() == 0.5 and isinstance(privacy.to_json(), float)
    assert privacy.longest_stream(50) == 50


@pytest.mark.parametrize("given", [[0.1, 0.2, 0.05], (0.1, 0.2, 0.05)])
def test_a_per_step_list_covers_its_steps_and_nothing_beyond(given):
    privacy = InputPrivacy.from_user(given)
    assert privacy.steps == 3 and not privacy.is_uniform
    assert [privacy.at(t) for t in (1, 2, 3)] == [0.1, 0.2, 0.05]
    with pytest.raises(InvalidParameter, match="3 per-step values, none for step t=4"):
        privacy.at(4)
    with pytest.raises(InvalidParameter, match="none for step t=0"):
        privacy.at(0)
    assert privacy.to_json() == [0.1, 0.2, 0.05]
    assert privacy.longest_stream(50) == 3 and privacy.longest_stream(2) == 2


def test_a_list_of_one_stays_a_list():
    privacy = InputPrivacy.from_user([0.1])
    assert privacy.steps == 1 and privacy.to_json() == [0.1] and privacy != InputPrivacy.from_user(0.1)
    assert privacy.values == InputPrivacy.from_user(0.1).values


def test_from_user_returns_a_value_as_is_and_is_frozen():
    privacy = InputPrivacy.from_user([0.1, 0.1])
    assert InputPrivacy.from_user(privacy) is privacy and privacy.is_uniform
    with pytest.raises(AttributeError):
        privacy.values = (1.0,)


@pytest.mark.parametrize("bad,message", [
    ([], "eps_t must be a number or a non-empty list of them, got []"),
    (-0.1, "eps_t must be >= 0, got -0.1"),
    ([0.1, math.inf], "eps_t must be finite"),
    ("0.1", "eps_t must be a real number"),
    (True, "eps_t must be a real number"),
])
def test_bad_values_are_typed_errors_naming_the_field(bad, message):
    with pytest.raises(InvalidParameter) as info:
        InputPrivacy.from_user(bad)
    assert message in str(info.value)


def test_the_field_name_is_the_callers():
    with pytest.raises(InvalidParameter, match="--eps-t must be >= 0"):
        InputPrivacy.from_user([0.1, -1.0], field="--eps-t")


def test_show_shortens_long_lists():
    assert InputPrivacy.from_user([0.1, 0.2]).show() == "0.1,0.2"
    assert InputPrivacy.from_user([0.1] * 8).show() == "0.1,0.1,0.1,0.1,0.1,0.1,... (8 steps)"
    assert not InputPrivacy.from_user([0.0, 0.0]).any_positive and InputPrivacy.from_user([0.0, 0.1]).any_positive
