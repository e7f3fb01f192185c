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


# -- reasoning models: parts in the provider's order ------------------------------------------

encrypted = st.text(st.sampled_from("ABCDEFGHgAz09+/=_-"), min_size=1, max_size=24)


@st.composite
def openai_reasoning(draw: st.DrawFn, *, number: int, model: str | None) -> ReasoningPart:
    """An OpenAI Responses reasoning item as a reasoning part (one summary, or several)."""
    details: dict[str, Any] = draw(st.sampled_from([{}, {"status": "completed"}]))
    if draw(st.booleans()):
        summary = draw(st.lists(text, min_size=2, max_size=3))
        details = {**details, "summary": [{"type": "summary_text", "text": t} for t in summary]}
        thought = "\n\n".join(summary)
    else:
        thought = draw(text)
    return ReasoningPart(
        text=thought,
        signature=draw(st.none() | encrypted),
        id=draw(st.sampled_from([None, f"rs_{number}"])),
        provider="openai",
        model=model,
        details=details,
    )


def compaction(number: int, payload: str, model: str | None) -> ProviderItem:
    """An OpenAI compaction item."""
    data = {"type": "compaction", "id": f"cmp_{number}", "encrypted_content": payload}
    return ProviderItem(provider="openai", type="compaction", data=data, model=model)


def assistant_in_order(
    parts: list[ReasoningPart | ProviderItem | str | ToolCall], **fields: Any
) -> AssistantMessage:
    """The assistant message whose parts, in the provider's order, are ``parts``.

    Reasoning parts and provider items get an index only where the natural order (they
    first, reasoning before items, then text and calls) would not give ``parts`` back.
    """
    extras = [(i, p) for i, p in enumerate(parts) if isinstance(p, ReasoningPart | ProviderItem)]
    natural = sorted(extras, key=lambda e: isinstance(e[1], ProviderItem))
    indexed = [i for i, _ in extras] != list(range(len(extras))) or natural != extras
    placed = [p.model_copy(update={"index": i}) if indexed else p for i, p in extras]
    return AssistantMessage(
        "".join(p for p in parts if isinstance(p, str)),
        tool_calls=[p for p in parts if isinstance(p, ToolCall)],
        reasoning=[p for p in placed if isinstance(p, ReasoningPart)],
        provider_items=[p for p in placed if isinstance(p, ProviderItem)],
        **fields,
    )


@st.composite
def openai_turn_parts(
    draw: st.DrawFn, *, first_call: int, model: str | None
) -> list[ReasoningPart | ProviderItem | str | ToolCall]:
    """The parts of one Responses turn in the provider's order: reasoning items and
    compaction items anywhere, then the text before the calls (the index rule's order)."""
    extras: list[ReasoningPart | ProviderItem] = []
    for number in range(draw(st.integers(0, 3))):
        if draw(st.integers(0, 3)):
            extras.append(draw(openai_reasoning(number=first_call + number, model=model)))
        else:
            extras.append(compaction(first_call + number, draw(encrypted), model))
    rest: list[str | ToolCall] = []
    answer = draw(text)
    if answer:
        rest.append(answer)
    for number in range(draw(st.integers(0, 2))):
        call_id = f"call_{first_call + number}"
        rest.append(ToolCall(id=call_id, name=draw(names), arguments=draw(arguments())))
    slots = draw(st.permutations(["extra"] * len(extras) + ["rest"] * len(rest)))
    extra_parts, rest_parts = iter(draw(st.permutations(extras))), iter(rest)
    return [next(extra_parts) if s == "extra" else next(rest_parts) for s in slots]


@st.composite
def responses_conversations(draw: st.DrawFn) -> tuple[list[Message], str | None]:
    """A conversation of an OpenAI Responses model, and the model (one per conversation)."""
    model = draw(st.sampled_from([None, "gpt-5.1"]))
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(SystemMessage(draw(text)))
    counter = 0
    for step in draw(st.lists(st.sampled_from(["user", "turn"]), max_size=5)):
        if step == "user" or isinstance(out[-1:] and out[-1], AssistantMessage):
            attached = draw(st.lists(media, max_size=1)) if draw(st.integers(0, 4)) == 0 else []
            out.append(UserMessage(draw(text), media=attached))
            continue
        parts = draw(openai_turn_parts(first_call=counter, model=model))
        counter += 4
        calls = [p for p in parts if isinstance(p, ToolCall)]
        ids: dict[str, Any] = {}
        if draw(st.booleans()):
            if any(isinstance(p, str) for p in parts):
                ids["message_id"] = f"msg_{counter}"
            if calls:
                ids["call_item_ids"] = {c.id: f"fc_{c.id}" for c in calls}
        metadata = {"openai_responses": ids} if ids else {}
        out.append(assistant_in_order(parts, metadata=metadata))
        if calls:
            responses = [
                ToolResponse(id=c.id, name=c.name, response_data=draw(text)) for c in calls
            ]
            out.append(ToolResponseMessage(responses=responses))
    return out, model


def content(messages: list[Message]) -> list[dict[str, Any]]:
    """What a wire format carries: everything but the id and the creation time."""
    return [m.model_dump(exclude={"id", "created_at"}) for m in messages]


# -- reasoning models: reasoning parts, provider items, interleaved order --------------------

signatures = st.text(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", min_size=1, max_size=24
)


def _reasoning_part(draw: st.DrawFn, kind: str, provider: str, model: str | None) -> Any:
    if kind == "redacted":
        return ReasoningPart(
            redacted=True, signature=draw(signatures), provider=provider, model=model
        )
    if kind == "item":
        block_type = draw(st.sampled_from(["web_search_tool_result", "compaction"]))
        data = {"type": block_type, "tool_use_id": "srvtoolu_1", "content": draw(json_values)}
        return ProviderItem(provider=provider, type=block_type, data=data, model=model)
    signature = draw(st.none() | signatures)
    return ReasoningPart(text=draw(text), signature=signature, provider=provider, model=model)


def _indexed(parts: list[Any]) -> tuple[list[ReasoningPart], list[ProviderItem]]:
    # The contract's canonical form: no index while reasoning parts, then items, come first
    # in list order; otherwise every one of them has its place.
    reasoning = [p for p in parts if isinstance(p, ReasoningPart)]
    items = [p for p in parts if isinstance(p, ProviderItem)]
    plain = parts[: len(reasoning) + len(items)] == [*reasoning, *items]
    placed = [
        p.model_copy(update={"index": None if plain else i})
        for i, p in enumerate(parts)
        if isinstance(p, ReasoningPart | ProviderItem)
    ]
    return (
        [p for p in placed if isinstance(p, ReasoningPart)],
        [p for p in placed if isinstance(p, ProviderItem)],
    )


@st.composite
def reasoning_answers(
    draw: st.DrawFn,
    *,
    provider: str = "anthropic",
    model: str | None = "claude-test",
    foreign: str | None = None,
) -> tuple[AssistantMessage, AssistantMessage]:
    """An assistant message with reasoning parts, provider items, text and tool calls in any
    order a provider returns them (text at most once, before the calls).

    Returns the message and the same message without the parts of ``foreign`` (another
    provider whose parts are mixed in when given): what a converter for ``provider`` sends.
    """
    kinds = draw(
        st.lists(st.sampled_from(["thinking", "redacted", "item", "call", "foreign"]), max_size=6)
    )
    if foreign is None:
        kinds = [k for k in kinds if k != "foreign"]
    calls = [k for k in kinds if k == "call"]
    first_call = kinds.index("call") if calls else len(kinds)
    if draw(st.booleans()):
        kinds.insert(draw(st.integers(0, first_call)), "text")
    answer_text = draw(text.filter(bool)) if "text" in kinds else ""
    parts: list[Any] = []
    for number, kind in enumerate(kinds):
        if kind == "call":
            value = draw(st.dictionaries(st.sampled_from(["q", "n"]), json_values, max_size=2))
            arguments = json.dumps(value, ensure_ascii=False)
            parts.append(ToolCall(id=f"toolu_{number}", name=draw(names), arguments=arguments))
        elif kind == "text":
            parts.append("text")
        elif kind == "foreign":
            assert foreign is not None
            parts.append(_reasoning_part(draw, "thinking", foreign, None))
        else:
            parts.append(_reasoning_part(draw, kind, provider, model))

    def message(kept: list[Any]) -> AssistantMessage:
        reasoning, items = _indexed(kept)
        return AssistantMessage(
            answer_text,
            tool_calls=[p for p in kept if isinstance(p, ToolCall)],
            reasoning=reasoning,
            provider_items=items,
        )

    own = [p for p in parts if getattr(p, "provider", provider) == provider]
    return message(parts), message(own)


@st.composite
def reasoning_conversations(draw: st.DrawFn, *, provider: str = "anthropic") -> list[Message]:
    """A conversation (as :func:`conversations`) with reasoning answers and their tool
    results added, as a tool loop of a reasoning model leaves it."""
    out = draw(conversations(with_metadata=False))
    for _ in range(draw(st.integers(1, 3))):
        out.append(UserMessage(draw(text)))
        answer, _ = draw(reasoning_answers(provider=provider))
        out.append(answer)
        if answer.tool_calls:
            responses = [
                ToolResponse(id=c.id, name=c.name, response_data=draw(text))
                for c in answer.tool_calls
            ]
            out.append(ToolResponseMessage(responses=responses))
    return out
