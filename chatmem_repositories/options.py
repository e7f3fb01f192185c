"""The URL option rule, public for backends written outside chatmem.

Every built-in backend parses its URL and keyword options with :func:`parse_url_options`;
a third-party backend (registered through the ``chatmem.repositories`` entry point) imports
the same names from here. The rule: a query parameter or keyword option is one of chatmem's
options for the backend (its pydantic model) or one of the driver parameters the backend
declares it passes through; anything else is a :class:`~chatmem.ConfigurationError` naming it,
with the closest name from both lists. Other driver arguments go in ``driver_options={...}``.

Example:
    ```python
    from datetime import timedelta

    from pydantic import BaseModel, ConfigDict

    from chatmem_repositories.options import Duration, InitializeSchema, parse_url_options


    class StoreOptions(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")
        ttl: Duration | None = None
        initialize_schema: InitializeSchema = "always"
        read_timeout: Duration = timedelta(seconds=5)


    parsed = parse_url_options(
        StoreOptions,
        "store://db.example/chat?ttl=3600&tls=true",
        {"driver_options": {"pool_size": 4}},
        backend="store",
        driver_parameters=("tls",),
    )
    assert parsed.url == "store://db.example/chat?tls=true"  # for the driver
    assert parsed.options.ttl == timedelta(hours=1)
    assert parsed.driver_options == {"pool_size": 4}
    ```
"""

from chatmem_repositories._options import (
    DRIVER_OPTIONS,
    Duration,
    InitializeSchema,
    ParsedUrl,
    did_you_mean,
    parse_url_options,
    split_url,
)

__all__ = [
    "DRIVER_OPTIONS",
    "Duration",
    "InitializeSchema",
    "ParsedUrl",
    "did_you_mean",
    "parse_url_options",
    "split_url",
]
