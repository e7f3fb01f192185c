"""Converters between chatmem messages and other libraries' message types, both ways.

One submodule per format; each converts losslessly what the other side can hold and raises
:class:`ConversionError` for what it cannot (``lossy=True`` leaves that out instead). Each
submodule's docstring lists what its format cannot hold.

- :mod:`chatmem.interop.openai`: Chat Completions message dicts (needs nothing);
- :mod:`chatmem.interop.openai_responses`: Responses API items, with reasoning items and
  provider items (needs nothing);
- :mod:`chatmem.interop.anthropic`: Messages API content blocks (needs nothing);
- :mod:`chatmem.interop.langchain`: ``BaseMessage`` and a chat message history
  (``chatmem[langchain]``);
- :mod:`chatmem.interop.pydantic_ai`: ``ModelMessage``, history loading and a history
  processor (``chatmem[pydantic-ai]``);
- :mod:`chatmem.interop.llama_index`: ``ChatMessage`` and chat stores
  (``chatmem[llama-index]``);
- :mod:`chatmem.interop.openai_agents`: the OpenAI Agents SDK's session over any repository
  (``chatmem[openai-agents]``).

Reading the conversations those libraries' own stores wrote, to import them, is the command
line's job (``chatmem migrate --from``, :mod:`chatmem_cli.importers`).

Importing this package imports no framework; importing a framework's submodule without the
framework installed raises an ``ImportError`` naming the ``pip install`` line.

Example:
    ```python
    from chatmem import UserMessage
    from chatmem.interop import ConversionError
    from chatmem.interop.openai import to_openai

    assert to_openai([UserMessage("Hi")]) == [{"role": "user", "content": "Hi"}]
    try:
        to_openai([UserMessage("Hi", metadata={"lang": "en"})])
    except ConversionError as exc:
        print(exc)  # OpenAI chat messages cannot hold message metadata ...
    ```
"""

from chatmem.interop._common import ConversionError

__all__ = ["ConversionError"]
