"""The session layer's own rules, on the in-memory repository (the backends run the
session conformance cases)."""

from __future__ import annotations

import pytest

from chatmem import (
    AssistantMessage,
    ConfigurationError,
    EventMessage,
    InMemoryChatMemoryRepository,
    MessageDecodeError,
    Sessions,
    StoredMessage,
    SystemMessage,
    UserMessage,
)
from chatmem.messages import decode_message, encode_message, searchable_text
from chatmem.sessions import REWOUND_EVENT, rewound_message
from chatmem.testing import ManualClock


@pytest.fixture
def sessions() -> Sessions:
    return Sessions(InMemoryChatMemoryRepository())


def test_a_repository_without_versions_is_refused() -> None:
    class FourMethods:
        def find_conversation_ids(self) -> list[str]:
            return []

    with pytest.raises(ConfigurationError, match="not a session log"):
        Sessions(FourMethods())  # type: ignore[arg-type]


@pytest.mark.parametrize("carry", [0, -1, True, 1.5])
def test_fork_carry_must_be_a_positive_integer(carry: object) -> None:
    with pytest.raises(ConfigurationError, match="fork_carry"):
        Sessions(InMemoryChatMemoryRepository(), fork_carry=carry)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["audit", ".audit", "acme.", "acme..audit", "acme audit", "1a.b"])
def test_event_types_are_namespaced(name: str) -> None:
    with pytest.raises(ValueError, match="event_type"):
        EventMessage(name, {})


def test_an_event_round_trips_and_is_searched_by_type_and_payload() -> None:
    event = EventMessage("Acme.Audit-v2", {"who": "ann", "n": [1, 2.5, None, True]})
    assert decode_message(encode_message(event)) == event
    assert searchable_text(event) == 'Acme.Audit-v2\n{"who":"ann","n":[1,2.5,null,true]}'
    with pytest.raises(ValueError, match="surrogate"):
        EventMessage("acme.audit", {"bad": "\ud800"})


def test_event_type_filter_pages_past_other_events(sessions: Sessions) -> None:
    noise = [EventMessage("acme.noise", {"i": i}) for i in range(450)]
    wanted = [EventMessage("acme.wanted", {"i": i}) for i in range(3)]
    sessions.append("c", [*noise[:300], wanted[0], *noise[300:], wanted[1], wanted[2]])
    page = sessions.read_history("c", event_types=["acme.wanted"], limit=2)
    assert [s.message for s in page.entries] == wanted[:2]
    rest = sessions.read_history(
        "c", event_types=["acme.wanted"], after=page.entries[-1].position, limit=5
    )
    assert [s.message for s in rest.entries] == wanted[2:]
    assert page.version == rest.version == 453


def test_a_fork_needs_an_id_of_its_own(sessions: Sessions) -> None:
    sessions.append("c", [UserMessage("q")])
    with pytest.raises(ConfigurationError, match="id of its own"):
        sessions.fork("c", "c")


def test_a_fork_of_an_empty_conversation_holds_only_its_origin(sessions: Sessions) -> None:
    fork = sessions.fork("nothing-yet", "f")
    assert fork.at is None
    parent = sessions.find_parent("f")
    assert parent is not None
    assert parent.parent_id == "nothing-yet"
    assert sessions.read_window("f", 10).messages == []


def test_a_fork_at_a_position_between_system_messages_takes_the_one_then_current(
    sessions: Sessions,
) -> None:
    stored = sessions.append(
        "c",
        [
            SystemMessage("first"),
            UserMessage("q0"),
            SystemMessage("second"),
            AssistantMessage("a0"),
            SystemMessage("third"),
            UserMessage("q1"),
        ],
    )
    sessions.fork("c", "f", at=stored[3].position)
    window = sessions.read_window("f", 10)
    assert window.system is not None
    assert window.system.message == stored[2].message
    assert [s.message for s in window.messages] == [stored[1].message, stored[3].message]


def test_rewound_message_reads_only_rewound_events(sessions: Sessions) -> None:
    assert rewound_message(StoredMessage(1, UserMessage("q"))) is None
    assert rewound_message(StoredMessage(1, EventMessage("acme.x", {}))) is None
    broken = StoredMessage(1, EventMessage(REWOUND_EVENT, {"position": 3}))
    with pytest.raises(MessageDecodeError, match="does not hold a message"):
        rewound_message(broken)


def test_rewinding_keeps_long_message_ids_within_limits(sessions: Sessions) -> None:
    long_id = "m" * 255
    sessions.append("c", [UserMessage("q0"), UserMessage("q1", id=long_id)])
    first = sessions.read_window("c", 10).messages[0]
    taken = sessions.rewind("c", first.position)
    assert [s.message.id for s in taken] == [long_id]
    event = sessions.read_history("c", event_types=[REWOUND_EVENT]).entries[0]
    assert len(event.message.id) < 64


def test_a_fork_lives_by_its_own_time_to_live() -> None:
    clock = ManualClock()
    repository = InMemoryChatMemoryRepository(ttl=60, clock=clock)
    sessions = Sessions(repository)
    sessions.append("parent", [UserMessage("q"), AssistantMessage("a")])
    clock.advance(50)
    sessions.fork("parent", "fork")  # a write to both: the fork, and the parent's event
    clock.advance(20)
    sessions.append("fork", [UserMessage("q2")])
    clock.advance(45)  # the parent's last write was 65 s ago, the fork's 45 s ago
    assert sessions.read_window("parent", 10).version == 0
    assert [s.message.text for s in sessions.read_window("fork", 10).messages] == [
        "q",
        "a",
        "q2",
    ]
    parent = sessions.find_parent("fork")
    assert parent is not None
    assert parent.parent_id == "parent"
    clock.advance(16)
    assert sessions.read_window("fork", 10).version == 0
