"""A store's URL as logs and messages show it: without its password.

Its own module so that the PostgreSQL engine and the connections that open it each import it without importing
the other (``connection`` opens ``postgres`` lazily, so that a SQLite store never loads the driver).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["redacted_url"]


def redacted_url(url: str) -> str:
    """``url`` without its password, for logs and messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
