"""Readers of the conversations other libraries stored, for ``chatmem migrate --from``.

One module per library whose stores are read, each reader opening the source with its own
driver (imported only when used):

- :mod:`chatmem_cli.importers.langchain`: LangChain's chat message histories;
- :mod:`chatmem_cli.importers.llama_index`: LlamaIndex's chat stores;
- :mod:`chatmem_cli.importers.spring_ai`: Spring AI's chat memory repositories;
- :mod:`chatmem_cli.importers.sources`: every source by kind name and URL
  (:func:`~chatmem_cli.importers.sources.read_source`), and
  :func:`~chatmem_cli.importers.sources.import_conversations`, which appends what a reader
  yields to a chatmem repository.

Unlike the rest of the command line, these need only chatmem and the source's driver (and
the framework, for LangChain and LlamaIndex), not the ``cli`` extra.

Example:
    ```python
    from chatmem import InMemoryChatMemoryRepository
    from chatmem_cli.importers.sources import import_conversations, read_source

    repository = InMemoryChatMemoryRepository()
    import_conversations(read_source("langchain-sql", "sqlite:///langchain.db"), repository)
    ```
"""

__all__: list[str] = []  # the readers and the catalogue are in the submodules
