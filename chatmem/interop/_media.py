"""Data URLs and MIME types shared by the dict formats."""

from __future__ import annotations

import base64
import binascii
import mimetypes

from chatmem.interop._common import ConversionError
from chatmem.messages import Media

__all__ = ["data_url", "guess_mime", "parse_data_url"]


def data_url(media: Media) -> str:
    """Return the media's URL, or a base64 data URL for inline bytes.

    Args:
        media: The media.
    """
    if media.url is not None:
        return media.url
    assert media.data is not None
    return f"data:{media.mime_type};base64,{base64.b64encode(media.data).decode('ascii')}"


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """Return the MIME type and bytes of a base64 data URL, or ``None`` for any other URL.

    Args:
        url: The URL.

    Raises:
        ConversionError: If it is a data URL that is not base64 or not valid base64.
    """
    if not url.startswith("data:"):
        return None
    header, _, payload = url[5:].partition(",")
    mime, _, encoding = header.partition(";")
    if encoding != "base64":
        raise ConversionError(f"only base64 data URLs are supported, not {url[:40]!r}")
    try:
        return mime, base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ConversionError(f"data URL {url[:40]!r} is not valid base64") from exc


def guess_mime(url: str, default: str) -> str:
    """Guess a MIME type from a URL's extension.

    Args:
        url: The URL.
        default: What to return when the extension says nothing.
    """
    guessed, _ = mimetypes.guess_type(url.split("?", 1)[0], strict=False)
    return guessed or default
