"""Hypothesis strategies for conversations, shared by the interop tests."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from chatmem import (
    AssistantMessage,
    Media,
    Message,
    ProviderItem,
    ReasoningPart,
    SystemMessage,
    TokenUsage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

# Text without lone surrogates (chatmem refuses them) and without NUL (some stores refuse it).
text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20)
names = st.sampled_from(["search", "weather", "lookup_user"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
metadata = st.dictionaries(text, json_values, max_size=2)


@st.composite
def arguments(draw: st.DrawFn) -> str:
    value = draw(st.dictionaries(st.sampled_from(["q", "city", "n"]), json_values, max_size=2))
    # Mostly the canonical json.dumps text; sometimes another formatting or not an object.
    return draw(
        st.sampled_from(
            [
                json.dumps(value, ensure_ascii=False),
                json.dumps(value, ensure_ascii=False),
                json.dumps(value, separators=(",", ":")),
                "not json",
            ]
        )
    )


media = st.one_of(
    st.builds(
        Media,
        mime_type=st.sampled_from(["image/png", "image/jpeg", "audio/wav", "application/pdf"]),
        data=st.binary(min_size=1, max_size=8),
        name=st.none() | st.just("a.bin"),
    ),
    st.builds(
        Media,
        mime_type=st.sampled_from(["image/png", "image/jpeg", "application/pdf"]),
        url=st.sampled_from(["https://example.com/a.png", "https://example.com/b.jpg"]),
    ),
    st.builds(Media, mime_type=st.just("text/plain"), data=text.map(str.encode)),
)


models = st.none() | st.sampled_from(["claude-sonnet-4-5", "gpt-5"])
details = st.just({}) | st.dictionaries(st.sampled_from(["status", "raw"]), json_values, max_size=2)
reasoning_parts = st.one_of(
    # Anthropic's thinking and redacted thinking blocks.
    st.builds(
        ReasoningPart,
        text=text,
        signature=text,
        provider=st.just("anthropic"),
        model=models,
    ),
    st.builds(
        ReasoningPart,
        signature=text,
        redacted=st.just(True),
        provider=st.just("anthropic"),
        model=models,
    ),
    # OpenAI's Responses reasoning items: a summary, maybe encrypted, with an id.
    st.builds(
        ReasoningPart,
        text=text,
        signature=st.none() | text,
        id=st.sampled_from(["rs_1", "rs_2"]),
        provider=st.just("openai"),
        model=models,
        details=details,
    ),
    # Anything else the model allows.
    st.builds(
        ReasoningPart,
        text=text,
        signature=st.none() | text,
        redacted=st.booleans(),
        id=st.none() | text,
        provider=st.none() | st.sampled_from(["anthropic", "openai", "aws.bedrock"]),
        model=models,
        details=details,
    ),
)
provider_items = st.builds(
    ProviderItem,
    provider=st.sampled_from(["anthropic", "openai"]),
    type=st.just("compaction"),
    data=st.fixed_dictionaries({"type": st.just("compaction"), "encrypted_content": text}),
    model=models,
)
usages = st.builds(
    TokenUsage,
    input_tokens=st.integers(0, 5000),
    output_tokens=st.integers(0, 5000),
    reasoning_tokens=st.integers(0, 500),
    cache_read_tokens=st.integers(0, 500),
    cache_write_tokens=st.integers(0, 500),
)


@st.composite
def reasoning_fields(
    draw: st.DrawFn, *, text: str, calls: int, with_items: bool = True
) -> dict[str, Any]:
    """Reasoning parts, provider items and usage for an assistant message.

    Mostly reasoning first (no index); sometimes interleaved with the text and ``calls`` tool
    calls, each part at its index, in order.
    """
    reasoning = draw(st.lists(reasoning_parts, max_size=3))
    items = draw(st.lists(provider_items, max_size=1)) if with_items else []
    extras: list[ReasoningPart | ProviderItem] = [*reasoning, *items]
    if extras and draw(st.booleans()):
        size = len(extras) + (1 if text else 0) + calls
        slots = sorted(draw(st.permutations(range(size)))[: len(extras)])
        extras = [p.model_copy(update={"index": i}) for p, i in zip(extras, slots, strict=True)]
    return {
        "reasoning": [p for p in extras if isinstance(p, ReasoningPart)],
        "provider_items": [p for p in extras if isinstance(p, ProviderItem)],
        "usage": draw(st.none() | usages),
    }


@st.composite
def conversations(
    draw: st.DrawFn, *, with_metadata: bool = True, with_reasoning: bool = False
) -> list[Message]:
    """A conversation: an optional system message, then users, answers and tool rounds.

    With ``with_reasoning``, assistant messages may hold reasoning parts, provider items and
    usage (see :func:`reasoning_fields`).
    """
    meta = metadata if with_metadata else st.just({})

    def extras(answer: str, calls: int) -> dict[str, Any]:
        return draw(reasoning_fields(text=answer, calls=calls)) if with_reasoning else {}

    out: list[Message] = []
    if draw(st.booleans()):
        out.append(SystemMessage(draw(text), metadata=draw(meta)))
    counter = 0
    for step in draw(st.lists(st.sampled_from(["user", "answer", "tools"]), max_size=6)):
        if step == "user":
            attached = draw(st.lists(media, max_size=2))
            out.append(UserMessage(draw(text), media=attached, metadata=draw(meta)))
        elif step == "answer":
            answer = draw(text)
            out.append(AssistantMessage(answer, metadata=draw(meta), **extras(answer, 0)))
        else:
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                counter += 1
                calls.append(
                    ToolCall(id=f"call_{counter}", name=draw(names), arguments=draw(arguments()))
                )
            answer = draw(text)
            out.append(
                AssistantMessage(
                    answer, tool_calls=calls, metadata=draw(meta), **extras(answer, len(calls))
                )
            )
            # The answers, in one message or one per call.
            responses = [
                ToolResponse(id=c.id, name=c.name, response_data=draw(text)) for c in calls
            ]
            if draw(st.booleans()):
                out.append(ToolResponseMessage(responses=responses, metadata=draw(meta)))
            else:
                out.extend(
                    ToolResponseMessage(responses=[r], metadata=draw(meta)) for r in responses
                )
    return out


def content(messages: list[Message]) -> list[dict[str, Any]]:
    """What a wire format carries: everything but the id and the creation time."""
    return [m.model_dump(exclude={"id", "created_at"}) for m in messages]
