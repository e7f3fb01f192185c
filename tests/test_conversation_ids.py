"""Conversation id validation and owner scoping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem import (
    MAX_CONVERSATION_ID_LENGTH,
    InvalidConversationIdError,
    owner_of,
    scoped_conversation_id,
    split_conversation_id,
    validate_conversation_id,
)


@pytest.mark.parametrize(
    "bad", ["", "a\x00b", "tab\there", "line\nbreak", "\x7f", "x" * 10_000, "\ud800", None, 7]
)
def test_invalid_ids_are_rejected_with_a_reason(bad: object) -> None:
    with pytest.raises(InvalidConversationIdError) as caught:
        validate_conversation_id(bad)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value)


def test_valid_ids_come_back_unchanged() -> None:
    for good in ["007", " spaced ", "'; DROP TABLE x; --", "x" * MAX_CONVERSATION_ID_LENGTH, "ü🎉"]:
        assert validate_conversation_id(good) == good


def test_unscoped_ids_have_no_owner() -> None:
    assert owner_of("plain") is None
    assert split_conversation_id("a:b:c") == (None, "a:b:c")


owners = st.text(alphabet=st.characters(exclude_categories=["Cc", "Cs"]), min_size=1, max_size=40)


@given(owner=owners, conversation=owners)
def test_scoping_is_unambiguous_and_reversible(owner: str, conversation: str) -> None:
    scoped = scoped_conversation_id(owner, conversation)
    assert split_conversation_id(scoped) == (owner, conversation)
    assert owner_of(scoped) == owner


def test_distinct_pairs_never_collide() -> None:
    pairs = [("a:b", "c"), ("a", "b:c"), ("a%3Ab", "c"), ("a", "b%3Ac")]
    assert len({scoped_conversation_id(o, c) for o, c in pairs}) == len(pairs)
