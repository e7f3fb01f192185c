"""A scripted summarizer whose summary lists what it folded, for summarizing-memory tests."""

from __future__ import annotations

import json

from chatmem.model import Prompt

__all__ = ["folding_summarizer"]


def folding_summarizer(prompt: Prompt) -> str:
    """A scripted summarizer: the previous summary followed by the folded user texts.

    Reads the JSON lines a summarizing memory sends, so the summary is a list of the user
    messages folded, in order: a turn folded twice or lost shows up in it.

    Args:
        prompt: The summarizing request.
    """
    lines = (prompt.messages[-1].text or "").splitlines()  # type: ignore[union-attr]
    previous = json.loads(lines[1])["summary"]
    folded = [json.loads(line) for line in lines[3:]]
    texts = [entry["text"] for entry in folded if entry.get("role") == "user"]
    return " ".join([previous, *texts]).strip() or "(empty)"
