"""``codec``: what the message codec and message construction cost (pyperf).

One turn of the memory advisor decodes a window of stored messages, and encodes and builds
the user message and the answer. The cases time exactly those pieces: ``decode`` (20 stored
records one at a time), ``decode many`` (the same 20 in one call), ``encode`` (a user message
and an answer), ``construct`` (``UserMessage`` plus ``AssistantMessage``), ``uuid7`` (one
message id), and ``encode +r`` / ``construct +r`` for an answer of a reasoning model (a thinking
part with a signature, and token usage). 200-character texts.
"""

from __future__ import annotations

from benchmarks._micro import bench
from benchmarks.harness import TEXT, Run, scenario
from chatmem import messages

WINDOW = 20


@scenario("codec", backends=None, micro=True)
def codec(run: Run) -> None:
    """Encode, decode and build messages: microseconds per call (pyperf)."""
    window = [
        (messages.UserMessage if i % 2 == 0 else messages.AssistantMessage)(TEXT, metadata={})
        for i in range(WINDOW)
    ]
    stored = [messages.encode_message(message) for message in window]
    user, answer = window[0], window[1]

    def reasoning() -> messages.AssistantMessage:
        part = messages.ReasoningPart(
            text=TEXT, signature="EqQB" + "x" * 396, provider="anthropic", model="claude"
        )
        usage = messages.TokenUsage(input_tokens=1200, output_tokens=300, cache_read_tokens=1024)
        return messages.AssistantMessage(TEXT, reasoning=[part], usage=usage)

    thinking = reasoning()
    bench(
        run,
        {
            "decode": lambda: [messages.decode_message(r, conversation_id="c") for r in stored],
            "decode many": lambda: messages.decode_messages(stored, conversation_id="c"),
            "encode": lambda: (messages.encode_message(user), messages.encode_message(answer)),
            "construct": lambda: (messages.UserMessage(TEXT), messages.AssistantMessage(TEXT)),
            "uuid7": messages.uuid7,
            "encode +r": lambda: messages.encode_message(thinking),
            "construct +r": reasoning,
        },
    )
