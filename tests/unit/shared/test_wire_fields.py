"""The field parsing every wire shape shares (shared.wire_fields): values through, refusals naming the field."""
import pytest

from shared.errors import ValidationError
from shared.wire_fields import keyed, listed, required, strings


def test_values_pass_and_absent_optional_fields_take_their_default():
    assert required({"n": 3}, "n", int) == 3
    assert required({"n": None}, "n", int, optional=True, default=7) == 7
    assert required({}, "x", (int, float), optional=True) is None
    assert strings({}, "ids") == [] and strings({"ids": ["a"]}, "ids") == ["a"]
    assert keyed({"m": {"a": 1}}, "m", lambda v: v + 1) == {"a": 2} and keyed({}, "m", int) == {}
    assert listed({"l": [1, 2]}, "l", lambda v: -v) == (-1, -2) and listed({}, "l", int) == ()


def parse_count(value) -> int:
    return required(value, "count", int)


@pytest.mark.parametrize("call, field, message", [
    (lambda: required([], "n", int), None, "body must be a JSON object"),
    (lambda: required({}, "n", int), "n", "'n' is required"),
    (lambda: required({"n": True}, "n", int), "n", "'n' must be int"),
    (lambda: required({"n": "1"}, "n", int), "n", "'n' must be int"),
    (lambda: strings({"ids": ["a", 1]}, "ids"), "ids", "'ids' must be a list of strings"),
    (lambda: keyed({"m": []}, "m", parse_count), "m", "'m' must be dict"),
    (lambda: keyed({"m": {"w": {}}}, "m", parse_count), "m", "m.w: 'count' is required"),
    (lambda: listed({"l": {}}, "l", parse_count), "l", "'l' must be list"),
    (lambda: listed({"l": [{"count": 1}, {"count": "x"}]}, "l", parse_count), "l", "l[1]: 'count' must be int"),
])
def test_refusals_name_the_field(call, field, message):
    with pytest.raises(ValidationError) as caught:
        call()
    assert caught.value.field == field and caught.value.message == message
