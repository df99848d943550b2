"""The collector's tokens: ``bearer_matches`` (both receivers, and the pages' guard, ``_auth``).

Every comparison of a given token with the real one takes the same time whatever the given one is.
"""

from __future__ import annotations

import hmac

__all__ = ["bearer_matches"]


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an ``Authorization`` value is ``Bearer <token>``, the scheme in any case (RFC 7235 section 2.1).

    The token itself is compared in constant time.
    """
    scheme, _, credentials = authorization.strip().partition(" ")
    given = credentials.strip().encode("utf-8", errors="replace")
    # Compare even when the scheme is wrong, so the time taken does not tell which part was.
    same = hmac.compare_digest(given, token.encode("utf-8"))
    return scheme.lower() == "bearer" and same
