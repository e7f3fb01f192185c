"""The share of property-test examples a run draws (``CHATMEM_PROPERTY_SCALE``)."""

from __future__ import annotations

import pytest

from tests.support.properties import examples, share_from


def test_the_full_count_without_a_share() -> None:
    assert examples(200, 1.0) == 200
    assert share_from("1") == 1.0


def test_a_share_scales_the_count_and_keeps_at_least_ten() -> None:
    assert examples(200, share_from("0.25")) == 50
    assert examples(20, 0.25) == 10


@pytest.mark.parametrize("raw", ["0", "-0.5", "2", "quarter", ""])
def test_a_share_outside_zero_to_one_is_refused_by_name(raw: str) -> None:
    with pytest.raises(ValueError, match=r"CHATMEM_PROPERTY_SCALE must be a number in \(0, 1\]"):
        share_from(raw)
