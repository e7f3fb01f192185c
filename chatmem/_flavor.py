"""Guards against handing a sync object to an async class, or the reverse."""

from __future__ import annotations

import inspect

from chatmem.exceptions import ConfigurationError

__all__ = ["check_flavor"]


def check_flavor(obj: object, method: str, *, is_async: bool, role: str) -> None:
    """Raise ConfigurationError if ``obj.method`` is not of the expected flavor.

    Args:
        obj: The collaborator, such as a repository.
        method: A method every such collaborator has.
        is_async: Whether a coroutine function is expected.
        role: What the collaborator is, for the message.
    """
    function = getattr(obj, method, None)
    if function is None:
        raise ConfigurationError(f"{type(obj).__name__} is not a {role}: it has no {method}()")
    if inspect.iscoroutinefunction(function) != is_async:
        wanted, twin = ("an async", "Async") if is_async else ("a sync", "")
        raise ConfigurationError(
            f"{type(obj).__name__} is not {wanted} {role}; use the {twin or 'non-Async'} twin"
        )
