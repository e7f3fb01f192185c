"""The encrypted log's own rules, over the in-memory repository: sealing, keys, rotation."""

from __future__ import annotations

import asyncio
import base64
import os

import pytest

from chatmem import (
    AssistantMessage,
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.encryption import (
    SEALED,
    AsyncEncryptedLog,
    EncryptedLog,
    EncryptedSearchLimitError,
    EnvKeyProvider,
    FileKeyProvider,
    KeyUnavailableError,
    StaticKeyProvider,
    generate_key,
)
from chatmem.exceptions import ConfigurationError, MessageDecodeError
from chatmem.messages import EventMessage, Media, MessageType, ReasoningPart, encode_message
from chatmem_repositories import create_async_repository, create_repository

SECRET = "hunter2-correct-horse"


def provider(*ids: str) -> StaticKeyProvider:
    return StaticKeyProvider({key_id: os.urandom(32) for key_id in ids or ("k1",)})


def every_kind() -> list[UserMessage | AssistantMessage | ToolResponseMessage | EventMessage]:
    return [
        UserMessage(
            text=f"user {SECRET}",
            media=[Media(mime_type="image/png", data=SECRET.encode())],
            metadata={"note": SECRET},
        ),
        AssistantMessage(
            text=f"assistant {SECRET}",
            tool_calls=[ToolCall(id="c1", name="lookup", arguments=f'{{"q": "{SECRET}"}}')],
            reasoning=[ReasoningPart(text=SECRET, signature=SECRET, provider="anthropic")],
        ),
        ToolResponseMessage(responses=[ToolResponse(id="c1", name="lookup", response_data=SECRET)]),
        EventMessage(event_type="acme.note", payload={"said": SECRET}),
    ]


def test_every_kind_reads_back_exactly_and_is_stored_without_its_content() -> None:
    inner = InMemoryChatMemoryRepository()
    log = EncryptedLog(inner, provider())
    written = [SystemMessage(text=f"system {SECRET}"), *every_kind()]
    log.append("c", written)

    assert [encode_message(m) for m in log.find_by_conversation_id("c")] == [
        encode_message(m) for m in written
    ]
    stored = inner.find_by_conversation_id("c")
    assert SECRET not in "".join(encode_message(m) for m in stored)
    assert [m.id for m in stored[1:]] == [m.id for m in written]  # ids stay in clear
    assert [m.type for m in stored[1:]] == [m.type for m in written]
    assert stored[0].type == MessageType.EVENT  # the conversation's wrapped data key


def test_a_record_copied_into_another_conversation_or_over_another_message_does_not_open() -> None:
    inner = InMemoryChatMemoryRepository()
    log = EncryptedLog(inner, provider())
    first, second = UserMessage(text=SECRET), UserMessage(text="other")
    log.append("a", [first, second])
    log.append("b", [UserMessage(text="b's own")])
    sealed = {m.id: m for m in inner.find_by_conversation_id("a")}

    inner.append("b", [sealed[first.id]])  # same record, another conversation
    with pytest.raises(MessageDecodeError):
        log.find_recent("b", 10)

    forged = second.model_copy(update={"metadata": sealed[first.id].metadata, "text": ""})
    log.delete_by_conversation_id("b")
    inner.append("a", [forged.model_copy(update={"id": "forged"})])  # first's ciphertext
    with pytest.raises(MessageDecodeError):
        log.find_recent("a", 10)


def test_an_altered_ciphertext_is_a_decode_error_and_the_other_messages_still_read() -> None:
    inner = InMemoryChatMemoryRepository()
    log = EncryptedLog(inner, provider())
    log.append("c", [UserMessage(text="one")])
    stored = inner.find_by_conversation_id("c")[-1]
    token = str(stored.metadata[SEALED])
    altered = token[:-6] + ("AAAA" if token[-6:-2] != "AAAA" else "BBBB") + token[-2:]
    inner.append("d", [stored.model_copy(update={"id": "x", "metadata": {SEALED: altered}})])
    log.append("d", [UserMessage(text="fine")])
    with pytest.raises(MessageDecodeError):
        log.find_recent("d", 10)
    assert [s.message.text for s in log.find_recent("d", 1)] == ["fine"]


def test_messages_stored_before_encryption_read_as_they_are_and_are_searched() -> None:
    inner = InMemoryChatMemoryRepository()
    plain = UserMessage(text=f"old {SECRET}")
    inner.append("c", [plain])
    log = EncryptedLog(inner, provider())
    log.append("c", [AssistantMessage(text=f"new {SECRET}")])

    assert [s.message.text for s in log.find_recent("c", 10)] == [f"old {SECRET}", f"new {SECRET}"]
    assert [s.message.text for s in log.find_history("c", text=SECRET.upper())] == [
        f"old {SECRET}",
        f"new {SECRET}",
    ]
    assert log.count_messages("c") == 2


def test_rotation_rewraps_data_keys_so_the_old_key_can_be_retired() -> None:
    old, new = os.urandom(32), os.urandom(32)
    inner = InMemoryChatMemoryRepository()
    EncryptedLog(inner, StaticKeyProvider({"old": old})).append("c", [UserMessage(text=SECRET)])
    rotating = EncryptedLog(inner, StaticKeyProvider({"new": new, "old": old}))

    assert rotating.rewrap("c") == 1
    assert rotating.rewrap("c") == 0  # idempotent: a re-run after an interruption is safe
    retired = EncryptedLog(inner, StaticKeyProvider({"new": new}))
    assert [s.message.text for s in retired.find_recent("c", 10)] == [SECRET]
    retired.append("c", [AssistantMessage(text="after")])  # new writes use the new key
    assert [s.message.text for s in retired.find_recent("c", 10)] == [SECRET, "after"]


def test_without_rotation_a_retired_key_leaves_messages_unreadable_with_a_clear_error() -> None:
    inner = InMemoryChatMemoryRepository()
    EncryptedLog(inner, provider("old")).append("c", [UserMessage(text=SECRET)])
    retired = EncryptedLog(inner, provider("new"))
    with pytest.raises(MessageDecodeError, match="no configured key unwraps"):
        retired.find_recent("c", 10)
    with pytest.raises(KeyUnavailableError, match="retired"):
        retired.rewrap("c")


def test_a_key_of_the_same_id_but_other_bytes_is_refused() -> None:
    inner = InMemoryChatMemoryRepository()
    EncryptedLog(inner, provider("k1")).append("c", [UserMessage(text=SECRET)])
    with pytest.raises(ConfigurationError, match="does not open"):
        EncryptedLog(inner, provider("k1")).find_recent("c", 10)


def test_deleting_a_conversation_destroys_its_data_key() -> None:
    inner = InMemoryChatMemoryRepository()
    log = EncryptedLog(inner, provider())
    log.append("c", [UserMessage(text=SECRET)])
    backup = inner.find_by_conversation_id("c")[-1]  # a copy of the record, as a backup has
    log.delete_by_conversation_id("c")

    assert inner.find_by_conversation_id("c") == []
    log.append("c", [UserMessage(text="a new life")])
    inner.append("c", [backup])  # restored without the key it was sealed with
    with pytest.raises(MessageDecodeError):
        EncryptedLog(inner, log.keys).find_recent("c", 10)


def test_a_write_after_another_process_deleted_the_conversation_stays_readable() -> None:
    inner = InMemoryChatMemoryRepository()
    keys = provider()
    writer, deleter = EncryptedLog(inner, keys), EncryptedLog(inner, keys)
    writer.append("c", [UserMessage(text="before")])
    deleter.delete_by_conversation_id("c")
    writer.append("c", [UserMessage(text=SECRET)])  # the writer's key is cached

    assert [s.message.text for s in EncryptedLog(inner, keys).find_recent("c", 10)] == [SECRET]


def test_text_search_reads_at_most_its_bound() -> None:
    log = EncryptedLog(InMemoryChatMemoryRepository(), provider(), search_scan_limit=500)
    log.append("c", [UserMessage(text=f"filler {i}") for i in range(1200)])
    log.append("c", [UserMessage(text=SECRET)])

    with pytest.raises(EncryptedSearchLimitError, match="narrow the search"):
        log.find_history("c", text=SECRET)
    last_page = log.find_history("c", after=log.find_recent("c", 2)[0].position, text=SECRET)
    assert [s.message.text for s in last_page] == [SECRET]
    assert len(log.find_history("c", text="filler 1", limit=3)) == 3


def test_the_newest_event_is_the_applications_not_a_data_key() -> None:
    inner = InMemoryChatMemoryRepository()
    log = EncryptedLog(inner, provider())
    event = EventMessage(event_type="acme.note", payload={"n": 1})
    log.append("c", [event])
    log.rewrap("c")
    EncryptedLog(inner, provider("k2")).append("c", [UserMessage(text="x")])  # a newer data key

    latest = log.find_latest("c", MessageType.EVENT)
    assert latest is not None
    assert encode_message(latest.message) == encode_message(event)
    assert [s.message.id for s in log.find_history("c", types=[MessageType.EVENT])] == [event.id]


def test_summaries_are_sealed() -> None:
    inner = InMemoryChatMemoryRepository()
    log = EncryptedLog(inner, provider())
    log.append("c", [UserMessage(text="hi")])
    assert log.save_summary("c", f"they said {SECRET}", 1, expected_version=0)

    stored = inner.find_summary("c")
    assert stored is not None
    assert SECRET not in stored.text
    found = log.find_summary("c")
    assert found is not None
    assert found.text == f"they said {SECRET}"
    assert found.version == 1


def test_no_summary_is_kept_for_a_conversation_that_holds_nothing() -> None:
    inner = InMemoryChatMemoryRepository()
    keys = provider()
    summarizer, deleter = EncryptedLog(inner, keys), EncryptedLog(inner, keys)
    stored = summarizer.append("c", [UserMessage(text="hi")])
    deleter.delete_by_conversation_id("c")  # while the summarizer holds the data key

    # As the store underneath refuses it, the write is refused: nothing comes back to life.
    assert not inner.save_summary("c", "plain", stored[0].position, expected_version=0)
    assert not summarizer.save_summary("c", SECRET, stored[0].position, expected_version=0)
    assert not summarizer.save_summary("never", SECRET, stored[0].position, expected_version=0)
    assert inner.find_conversation_ids() == []
    assert summarizer.find_summary("c") is None


def test_the_async_twin_reads_what_the_sync_one_wrote() -> None:
    keys = provider()

    async def scenario() -> list[str]:
        inner = AsyncInMemoryChatMemoryRepository()
        async with AsyncEncryptedLog(inner, keys) as log:
            await log.append("c", [UserMessage(text=SECRET)])
            stored = await inner.find_by_conversation_id("c")
            assert SECRET not in "".join(encode_message(m) for m in stored)
            return [s.message.text for s in await log.find_recent("c", 10)]

    assert asyncio.run(scenario()) == [SECRET]


def test_the_url_option_turns_encryption_on_for_any_backend(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    monkeypatch.setenv("CHATMEM_ENCRYPTION_KEYS", f"k1:{generate_key()}")
    with create_repository("memory://?encryption=env") as log:
        assert isinstance(log, EncryptedLog)
    key_file = os.path.join(tmp_path, "keys")
    with open(key_file, "w") as f:
        f.write(f"# current first\nk2:{generate_key()}\nk1:{generate_key()}\n")
    with create_repository(f"memory://?encryption=file:{key_file}") as log:
        assert isinstance(log, EncryptedLog)
        assert log.keys.current_key_id == "k2"
    with create_repository("memory://?encryption=off") as log:
        assert not isinstance(log, EncryptedLog)
    with pytest.raises(ConfigurationError, match="encryption must be"):
        create_repository("memory://?encryption=aes")

    async def async_one() -> bool:
        async with create_async_repository("memory://", encryption=provider()) as log:
            return isinstance(log, AsyncEncryptedLog)

    assert asyncio.run(async_one())


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "no key-encryption key"),
        ("k1", "not 'id:base64key'"),
        ("k1:not base64!", "not base64"),
        (f"k1:{base64.b64encode(b'short').decode()}", "32 bytes"),
        (f"k1:{generate_key()},k1:{generate_key()}", "given twice"),
        (f"bad id:{generate_key()}", "letters, digits"),
    ],
)
def test_malformed_key_lists_are_refused_without_echoing_keys(text: str, error: str) -> None:
    with pytest.raises(ConfigurationError, match=error) as caught:
        StaticKeyProvider.from_text(text)
    assert "not base64!" not in str(caught.value)


def test_env_and_file_providers_say_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    monkeypatch.delenv("CHATMEM_ENCRYPTION_KEYS", raising=False)
    with pytest.raises(ConfigurationError, match="CHATMEM_ENCRYPTION_KEYS is not set"):
        EnvKeyProvider()
    with pytest.raises(ConfigurationError, match="cannot read the key file"):
        FileKeyProvider(os.path.join(tmp_path, "absent"))
