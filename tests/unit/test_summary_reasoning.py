"""Reasoning parts and provider items are never folded into a summary."""

from __future__ import annotations

from chatmem import AssistantMessage, MessageWindowChatMemory, UserMessage
from chatmem.memory import SummarizingChatMemory
from chatmem.testing import ScriptedChatModel, folding_summarizer, reasoning_turns


def test_the_summarizer_never_sees_reasoning_or_provider_items() -> None:
    turns = reasoning_turns()
    secret = [
        *(p.text for m in turns if isinstance(m, AssistantMessage) for p in m.reasoning if p.text),
        "EqQBCkgIARABGAIiQL2x",  # a signature
        "EmwKAhgBEgy3va3pzix",  # redacted thinking
        "gAAAAABo",  # encrypted reasoning and the compaction item
        "summary_text",  # a reasoning part's details
        "cmp_01",  # a provider item's data
        "compaction",
    ]
    model = ScriptedChatModel(respond=folding_summarizer)
    memory = SummarizingChatMemory(MessageWindowChatMemory(max_messages=3), model, background=False)
    memory.add("c", turns)
    for i in range(3):
        memory.add("c", [UserMessage(f"later {i}"), AssistantMessage(f"answer {i}")])
    sent = "\n".join(m.text for p in model.prompts for m in p.messages)  # type: ignore[union-attr]
    # What the turns said and did is folded in; what the model thought is not.
    assert "Sunny in Paris" in sent
    assert '"name":"weather"' in sent.replace(" ", "")
    for text in secret:
        assert text not in sent, text
    summary = memory.find_summary("c")
    assert summary is not None
    assert all(text not in summary.text for text in secret)
