"""The sync twin generator (``scripts/unasync.py``) renames code and leaves prose as written.

The generated twins themselves are checked by ``scripts/unasync.py --check``; these pin down
the line between code and prose, which that check cannot see.
"""

from __future__ import annotations

from collections import Counter

from tests.meta.test_public_api import GENERATOR


def transform(text: str) -> str:
    result: str = GENERATOR.transform(text)
    return result


def test_code_is_renamed() -> None:
    source = (
        "async def run(self) -> Awaitable[AsyncFoo]:\n"
        "    async with self._lock:\n"
        "        await async_sleep(1)\n"
        "        return [x async for x in self.aclose()]\n"
    )
    assert transform(source) == (
        "def run(self) -> Foo:\n"
        "    with self._lock:\n"
        "        sleep(1)\n"
        "        return [x for x in self.close()]\n"
    )


def test_a_name_spelled_as_a_string_is_renamed() -> None:
    assert transform('__all__ = ["AsyncFoo", "async_bar", "create_async_x"]\n') == (
        '__all__ = ["Foo", "bar", "create_async_x"]\n'
    )


def test_prose_keeps_its_words() -> None:
    source = (
        '"""Helpers with an async and a sync twin (async for a sync store)."""\n'
        "x = 1  # an async generator cannot yield from\n"
        'message = "await the async client"\n'
    )
    assert transform(source) == source


def test_code_quoted_in_prose_is_renamed() -> None:
    source = (
        '"""See :class:`~chatmem.AsyncFoo` and ``await foo.aclose()``, not ``http://a``.\n'
        "\n"
        "Example:\n"
        "    ```python\n"
        "    async with AsyncFoo() as foo:\n"
        "        await foo.run()\n"
        "    ```\n"
        '"""\n'
    )
    assert transform(source) == (
        '"""See :class:`~chatmem.Foo` and ``foo.close()``, not ``http://a``.\n'
        "\n"
        "Example:\n"
        "    ```python\n"
        "    with Foo() as foo:\n"
        "        foo.run()\n"
        "    ```\n"
        '"""\n'
    )


def test_sync_wording_comes_from_the_prose_table_only() -> None:
    phrase, sync_wording = GENERATOR.PROSE[0]
    uses: Counter[str] = Counter()
    assert GENERATOR.transform(f'"""{phrase}."""\n', uses) == f'"""{sync_wording}."""\n'
    assert uses[f"PROSE: {phrase}"] == 1
    # Code spelling the phrase is code, and the table never applies to it.
    assert transform(f"x = 1  # ``{phrase}``\n") == f"x = 1  # ``{phrase}``\n"


def test_a_quote_that_is_not_python_stays_as_written() -> None:
    # A stray quote: 3.11's tokenizer carries on past it and 3.12's stops; both leave it.
    source = "x = 1  # ``it's AsyncFoo`` but ``AsyncFoo``\n"
    assert transform(source) == "x = 1  # ``it's AsyncFoo`` but ``Foo``\n"


def test_the_asyncio_marker_line_is_dropped() -> None:
    source = "class T:\n    @pytest.mark.asyncio\n    async def test(self) -> None:\n        pass\n"
    assert transform(source) == "class T:\n    def test(self) -> None:\n        pass\n"
