"""Conversation id validation and owner scoping."""

from __future__ import annotations

import unicodedata

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


@given(st.text(max_size=40))
def test_the_check_matches_the_unicode_categories(text: str) -> None:
    # Printable text is taken without a per-character look-up; anything else is looked up.
    refused = not text or any(unicodedata.category(c) in ("Cc", "Cs") for c in text)
    try:
        validate_conversation_id(text)
    except InvalidConversationIdError:
        assert refused
    else:
        assert not refused


def test_an_id_checked_before_does_not_let_the_next_one_through() -> None:
    # Separators and format characters are not printable, yet are not control characters.
    for good in ["a\u2028b", "zero\u200bwidth", "\u00ad"]:
        assert validate_conversation_id(good) == good
    good = "007"
    for bad in ["007\x00", "0\n07", "\ud800"]:
        assert validate_conversation_id(good) == good
        with pytest.raises(InvalidConversationIdError, match="control character"):
            validate_conversation_id(bad)
        with pytest.raises(InvalidConversationIdError, match="control character"):
            validate_conversation_id(bad)  # refused again, every time


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
