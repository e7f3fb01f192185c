"""Hypothesis strategies for conversations, shared by the interop tests."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from chatmem import (
    AssistantMessage,
    Media,
    Message,
    SystemMessage,
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


@st.composite
def conversations(draw: st.DrawFn, *, with_metadata: bool = True) -> list[Message]:
    """A conversation: an optional system message, then users, answers and tool rounds."""
    meta = metadata if with_metadata else st.just({})
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(SystemMessage(draw(text), metadata=draw(meta)))
    counter = 0
    for step in draw(st.lists(st.sampled_from(["user", "answer", "tools"]), max_size=6)):
        if step == "user":
            attached = draw(st.lists(media, max_size=2))
            out.append(UserMessage(draw(text), media=attached, metadata=draw(meta)))
        elif step == "answer":
            out.append(AssistantMessage(draw(text), metadata=draw(meta)))
        else:
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                counter += 1
                calls.append(
                    ToolCall(id=f"call_{counter}", name=draw(names), arguments=draw(arguments()))
                )
            out.append(AssistantMessage(draw(text), tool_calls=calls, metadata=draw(meta)))
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
