"""Token windows count reasoning parts and provider items as the provider bills them."""

from __future__ import annotations

from chatmem import (
    AssistantMessage,
    InMemoryChatMemoryRepository,
    ProviderItem,
    ReasoningPart,
    TokenUsage,
    TokenWindowChatMemory,
    UserMessage,
)
from chatmem.tokens import (
    MESSAGE_OVERHEAD,
    OPAQUE_CHARS_PER_TOKEN,
    TOOL_CALL_OVERHEAD,
    CharacterTokenEstimator,
)

# One token per character: every count below is a length.
estimator = CharacterTokenEstimator(chars_per_token=1)
ANSWER = AssistantMessage("four")
PLAIN = MESSAGE_OVERHEAD + 4


def cost_of(**fields: object) -> int:
    """What reasoning parts or provider items add to the plain answer."""
    return estimator.estimate(ANSWER.model_copy(update=fields)) - PLAIN


def test_a_plain_answer_costs_what_it_did() -> None:
    assert estimator.estimate(ANSWER) == PLAIN
    assert estimator.estimate(AssistantMessage("four", usage=TokenUsage(output_tokens=9))) == PLAIN


def test_reasoning_of_no_provider_is_never_sent_so_costs_nothing() -> None:
    part = ReasoningPart(text="a long thought " * 20, signature="s" * 400)
    assert cost_of(reasoning=[part]) == 0


def test_thinking_costs_its_text_when_the_signature_is_shorter() -> None:
    part = ReasoningPart(text="x" * 120, signature="s" * 40, provider="anthropic")
    assert cost_of(reasoning=[part]) == TOOL_CALL_OVERHEAD + 120


def test_redacted_and_encrypted_reasoning_cost_their_payload() -> None:
    redacted = ReasoningPart(signature="d" * 400, redacted=True, provider="anthropic")
    assert cost_of(reasoning=[redacted]) == TOOL_CALL_OVERHEAD + 400 // OPAQUE_CHARS_PER_TOKEN
    # A short summary of reasoning the encrypted payload holds in full.
    summary = ReasoningPart(text="short", signature="e" * 4001, provider="openai")
    assert cost_of(reasoning=[summary]) == TOOL_CALL_OVERHEAD + 1001
    both = cost_of(reasoning=[redacted, summary])
    assert both == 2 * TOOL_CALL_OVERHEAD + 100 + 1001


def test_reported_reasoning_tokens_are_the_floor() -> None:
    part = ReasoningPart(text="short", signature="e" * 40, provider="openai")
    assert cost_of(reasoning=[part], usage=TokenUsage(reasoning_tokens=700)) == 700
    assert (
        cost_of(reasoning=[part], usage=TokenUsage(reasoning_tokens=2)) == TOOL_CALL_OVERHEAD + 10
    )
    # Usage alone (no reasoning part is sent back) costs nothing.
    assert cost_of(usage=TokenUsage(reasoning_tokens=700)) == 0


def test_provider_items_cost_their_json() -> None:
    item = ProviderItem(provider="openai", type="compaction", data={"k": "v" * 95})
    # {"k":"vvv…"} is 103 characters.
    assert cost_of(provider_items=[item]) == TOOL_CALL_OVERHEAD + 26


def test_a_token_window_makes_room_for_reasoning() -> None:
    repository = InMemoryChatMemoryRepository()
    memory = TokenWindowChatMemory(repository, max_tokens=100, token_estimator=estimator)
    thinking = ReasoningPart(text="t" * 60, provider="anthropic")
    memory.add("c", [UserMessage("q1"), AssistantMessage("a1")])
    memory.add("c", [UserMessage("q2"), AssistantMessage("a2", reasoning=[thinking])])
    # q1+a1 cost 10, q2 5 and a2 5 + 63: all 83 fit.
    assert [m.text for m in memory.get("c")] == ["q1", "a1", "q2", "a2"]  # type: ignore[union-attr]
    memory.add("c", [UserMessage("q3"), AssistantMessage("a3")])
    assert len(memory.get("c")) == 6  # 93 tokens
    # A second long thought: the two newest turns cost 83, the next would make 156.
    memory.add("c", [UserMessage("q4"), AssistantMessage("a4", reasoning=[thinking])])
    assert [m.text for m in memory.get("c")] == ["q3", "a3", "q4", "a4"]  # type: ignore[union-attr]
